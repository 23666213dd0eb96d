/**
 * Internal: a bounds-checked reader over a prefix of a GGUF file. Not exported from the package.
 */
import { type ErrorCode, type ErrorDetails, TensorFSError } from '../errors.js';

/**
 * Thrown (internally only) when the parser needs bytes of the file beyond the prefix it was given.
 * `readGgufHeader` catches it, reads more and parses again; `parseGgufHeader` turns it into
 * `invalid_argument`. It never escapes a public API.
 */
export class NeedMoreBytes extends Error {
  constructor(readonly needed: number) {
    super('need more bytes');
  }
}

/** Builds a GGUF error with the rule and context in its details. */
export function ggufError(code: ErrorCode, rule: string, message: string, details: ErrorDetails): TensorFSError {
  return new TensorFSError(code, `GGUF: ${message}`, { details: { format: 'gguf', rule: `gguf.${rule}`, ...details } });
}

const STRICT_UTF8 = /* @__PURE__ */ new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Strings up to this many bytes take the ASCII fast path (faster than TextDecoder for tokens). */
const SHORT_STRING = 64;

/** 2^53 as the high word limit: a u64 whose high word exceeds this is above Number.MAX_SAFE_INTEGER. */
const MAX_SAFE_HIGH = 0x1fffff;

/** Reads little- or big-endian values from `bytes`, knowing where the real file ends. */
export class Cursor {
  readonly view: DataView;
  /** Bytes that may be read: the prefix given, capped by the file size and the header size cap. */
  readonly avail: number;
  pos = 0;
  /** Merged into every error's details (`{ key }` or `{ tensor }`). */
  context: ErrorDetails = {};

  constructor(
    readonly bytes: Uint8Array,
    readonly little: boolean,
    /** The real size of the file (or block) `bytes` is a prefix of. */
    readonly fileSize: number,
    /** Reading past this offset is `limit_exceeded` (the header size cap). */
    readonly maxBytes: number,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.avail = Math.min(bytes.length, fileSize, maxBytes);
  }

  /** A `code` error at `offset` for `rule`, with the current context. */
  error(code: ErrorCode, rule: string, message: string, details: ErrorDetails = {}, offset = this.pos): TensorFSError {
    return ggufError(code, rule, message, { ...this.context, offset, ...details });
  }

  /** Ensures `n` more bytes can be read at `pos`. */
  ensure(n: number): void {
    if (this.pos + n > this.avail) this.short(this.pos + n);
  }

  private short(end: number): never {
    if (end > this.fileSize) {
      throw this.error('malformed', 'truncated', 'the header runs past the end of the file', {
        needed: end,
        fileSize: this.fileSize,
      });
    }
    if (end > this.maxBytes) {
      throw this.error('limit_exceeded', 'header_size', 'the header is larger than the configured maximum', {
        limit: this.maxBytes,
        needed: end,
      });
    }
    throw new NeedMoreBytes(end);
  }

  u8(): number {
    this.ensure(1);
    return this.bytes[this.pos++]!;
  }

  u32(): number {
    this.ensure(4);
    const v = this.view.getUint32(this.pos, this.little);
    this.pos += 4;
    return v;
  }

  u64(): bigint {
    this.ensure(8);
    const v = this.view.getBigUint64(this.pos, this.little);
    this.pos += 8;
    return v;
  }

  /**
   * A u64 length or count as a number; values above 2^53 − 1 come back as `Infinity` (callers compare
   * them with the bytes that remain, and report the exact value by re-reading with {@link peekU64}).
   */
  size(): number {
    this.ensure(8);
    const p = this.pos;
    const lo = this.view.getUint32(this.little ? p : p + 4, this.little);
    const hi = this.view.getUint32(this.little ? p + 4 : p, this.little);
    this.pos = p + 8;
    return hi > MAX_SAFE_HIGH ? Number.POSITIVE_INFINITY : hi * 0x100000000 + lo;
  }

  /** The u64 at `offset` (already read), for error details. */
  peekU64(offset: number): bigint {
    return this.view.getBigUint64(offset, this.little);
  }

  /** Bytes of the file left after `pos` (the real file, not just the prefix). */
  remaining(): number {
    return this.fileSize - this.pos;
  }

  /**
   * Reads a gguf_string (u64 length + bytes) as strict UTF-8. `maxLength` (exclusive cap checked before
   * any byte is read) and `rule` name the length rule that fires when it is exceeded.
   */
  string(maxLength: number, rule: string): string {
    const length = this.stringLength(maxLength, rule);
    this.ensure(length);
    const start = this.pos;
    this.pos = start + length;
    return this.text(start, this.pos);
  }

  /** The length of a gguf_string, checked as {@link string} checks it; leaves `pos` at its first byte. */
  stringLength(maxLength: number, rule: string): number {
    const at = this.pos;
    const length = this.size();
    if (length > this.remaining()) {
      throw this.error(
        'malformed',
        'string_length',
        'a string runs past the end of the file',
        {
          length: this.peekU64(at),
          remaining: this.remaining(),
        },
        at,
      );
    }
    if (length > maxLength) {
      throw this.error(
        'malformed',
        rule,
        `a string is longer than ${maxLength} bytes`,
        {
          length: this.peekU64(at),
          limit: maxLength,
        },
        at,
      );
    }
    return length;
  }

  /** Decodes `bytes[start, end)` as strict UTF-8 (a BOM is kept as U+FEFF). */
  text(start: number, end: number): string {
    if (end - start > SHORT_STRING) return this.utf8(start, end);
    const bytes = this.bytes;
    let out = '';
    for (let i = start; i < end; i++) {
      const b = bytes[i]!;
      if (b > 0x7f) return this.utf8(start, end);
      out += String.fromCharCode(b);
    }
    return out;
  }

  private utf8(start: number, end: number): string {
    try {
      return STRICT_UTF8.decode(this.bytes.subarray(start, end));
    } catch (cause) {
      // The decoder's TypeError is the cause, not a detail: details stay plain facts.
      const error = this.error('malformed', 'utf8', 'a string is not valid UTF-8', { length: end - start }, start);
      throw new TensorFSError(error.code, error.message, { details: error.details, cause });
    }
  }
}
