/**
 * A strict JSON reader for headers from strangers (internal).
 *
 * The caller decodes the whole document as strict UTF-8 first ({@link decodeUtf8Strict}); this
 * cursor then walks the UTF-16 string with `charCodeAt` and hands out decoded strings, exact
 * unsigned integers and, for values nobody asked for, an exact generic tree. It never rounds a
 * number, never keeps one of two duplicate keys and never recurses past {@link MAX_JSON_DEPTH}.
 * Byte offsets for errors are computed only when an error is raised.
 * @internal
 */
import { type Int, toInt, U64_MAX } from '../dtypes.js';
import { TensorFSError } from '../errors.js';

/**
 * Most containers open at once, the root included. serde_json's recursion limit of 128 lets
 * 127 containers be open (measured against safetensors 0.8: a descriptor field holding 125
 * nested arrays parses, 126 does not).
 */
export const MAX_JSON_DEPTH = 127;

/** A JSON number that is not an integer of at most 20 digits, kept as its exact source text. */
export class JsonNumberText {
  /** The number exactly as written. */
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/**
 * An exact JSON value: integers of at most 20 digits are `bigint`, other numbers
 * {@link JsonNumberText}, objects `Map`s (insertion order, duplicate keys rejected).
 */
export type ExactJsonValue =
  | null
  | boolean
  | string
  | bigint
  | JsonNumberText
  | ExactJsonValue[]
  | Map<string, ExactJsonValue>;

const CHAR = {
  quote: 0x22,
  backslash: 0x5c,
  comma: 0x2c,
  colon: 0x3a,
  openBrace: 0x7b,
  closeBrace: 0x7d,
  openBracket: 0x5b,
  closeBracket: 0x5d,
  minus: 0x2d,
  zero: 0x30,
  nine: 0x39,
  dot: 0x2e,
  e: 0x65,
  E: 0x45,
} as const;

/** A backslash or a control character: what ends the fast path of a string. */
const SPECIAL = /[\\\u0000-\u001f]/g;

let decoder: TextDecoder | undefined;

/**
 * Decodes strict UTF-8: invalid sequences, overlongs, surrogates and truncation are rejected and
 * a BOM is kept as U+FEFF (so the JSON grammar rejects it). On failure throws `malformed` with the
 * byte offset (`origin` + index) of the first invalid byte.
 */
export function decodeUtf8Strict(bytes: Uint8Array, origin: number, rule: string): string {
  decoder ??= new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  try {
    return decoder.decode(isShared(bytes) ? bytes.slice() : bytes);
  } catch (cause) {
    const at = firstInvalidUtf8(bytes);
    throw new TensorFSError('malformed', 'header is not valid UTF-8', {
      details: { rule: `safetensors.${rule}`, offset: origin + at },
      cause,
    });
  }
}

function isShared(bytes: Uint8Array): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && bytes.buffer instanceof SharedArrayBuffer;
}

/** Index of the first byte that starts an invalid UTF-8 sequence (bytes.length if none). */
function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lo = 0xa0;
      if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) lo = 0x90;
      if (b === 0xf4) hi = 0x8f;
    } else return i;
    if (i + need >= bytes.length) return i;
    const second = bytes[i + 1]!;
    if (second < lo || second > hi) return i;
    for (let k = 2; k <= need; k++) {
      const c = bytes[i + k]!;
      if (c < 0x80 || c > 0xbf) return i;
    }
    i += need + 1;
  }
  return i;
}

/**
 * True if `bytes` hold a backslash or a byte below 0x20. Such bytes only ever stand for themselves
 * in UTF-8 (every byte of a multi-byte sequence is 0x80 or above), so for valid UTF-8 this is
 * exactly whether the decoded text holds a backslash or a control character. It reads four bytes
 * at a time, in about half the time a regular expression takes to scan the decoded text.
 */
export function hasBackslashOrControlByte(bytes: Uint8Array): boolean {
  const n = bytes.length;
  const lead = Math.min(n, (4 - (bytes.byteOffset & 3)) & 3);
  let i = 0;
  for (; i < lead; i++) if (isBackslashOrControl(bytes[i]!)) return true;
  const count = (n - i) >> 2;
  if (count > 0) {
    const words = new Int32Array(bytes.buffer, bytes.byteOffset + i, count);
    let flags = 0;
    for (let k = 0; k < count; k++) {
      const x = words[k]!;
      // Each byte on its own (no carry crosses a byte): with its top bit cleared, adding 0x60 sets
      // the top bit unless it is below 0x20, and xor 0x5c then adding 0x7f sets it unless it is
      // 0x5c. A byte whose top bit was set in x is neither.
      const low = x & 0x7f7f7f7f;
      const atLeast20 = (low + 0x60606060) | 0;
      const notBackslash = ((low ^ 0x5c5c5c5c) + 0x7f7f7f7f) | 0;
      flags |= ~(x | (atLeast20 & notBackslash));
    }
    if ((flags & 0x80808080) !== 0) return true;
    i += count * 4;
  }
  for (; i < n; i++) if (isBackslashOrControl(bytes[i]!)) return true;
  return false;
}

function isBackslashOrControl(b: number): boolean {
  return b < 0x20 || b === CHAR.backslash;
}

/** Bytes of the UTF-8 encoding of `text[0, end)` (well-formed text). */
function utf8Length(text: string, end: number): number {
  let n = 0;
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** A position in a decoded JSON document, with strict token readers. */
export class JsonCursor {
  /** Current index into {@link text} (UTF-16 code units). */
  pos = 0;
  /** The decoded document. */
  readonly text: string;
  private readonly origin: number;
  private readonly syntaxRule: string;
  /** Cached result of {@link nextSpecial}. */
  private special = -1;

  /**
   * @param text the decoded document
   * @param origin byte offset of `text[0]` in the file (for error offsets)
   * @param syntaxRule the rule named by JSON syntax errors
   * @param bytes the UTF-8 `text` was decoded from: when they hold no backslash and no control
   *   byte, strings are never searched for escapes
   */
  constructor(text: string, origin: number, syntaxRule: string, bytes?: Uint8Array) {
    this.text = text;
    this.origin = origin;
    this.syntaxRule = syntaxRule;
    if (bytes !== undefined && !hasBackslashOrControlByte(bytes)) this.special = Number.POSITIVE_INFINITY;
  }

  /** Byte offset in the file of code unit `at` (default: the current position). */
  byteOffset(at = this.pos): number {
    return this.origin + utf8Length(this.text, Math.min(at, this.text.length));
  }

  /** Throws `malformed` at `at` (default: the current position). */
  fail(message: string, rule: string = this.syntaxRule, details: Record<string, unknown> = {}, at = this.pos): never {
    throw new TensorFSError('malformed', message, {
      details: { rule: `safetensors.${rule}`, ...details, offset: this.byteOffset(at) },
    });
  }

  /** True when every code unit has been consumed. */
  atEnd(): boolean {
    return this.pos >= this.text.length;
  }

  /** The code unit at the current position (NaN at the end). */
  peek(): number {
    return this.text.charCodeAt(this.pos);
  }

  /** Skips JSON whitespace. */
  ws(): void {
    const t = this.text;
    let p = this.pos;
    for (;;) {
      const c = t.charCodeAt(p);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) p++;
      else break;
    }
    this.pos = p;
  }

  /** Consumes `{` and whitespace; returns false (having consumed `}`) for an empty object. */
  objectStart(): boolean {
    if (this.peek() !== CHAR.openBrace) this.fail('expected an object');
    this.pos++;
    this.ws();
    if (this.peek() === CHAR.closeBrace) {
      this.pos++;
      return false;
    }
    return true;
  }

  /** Consumes a key (decoded), whitespace, `:` and whitespace. */
  key(): string {
    const t = this.text;
    const start = this.pos;
    // Fast path: a quoted key without escapes directly followed by `:` and a non-blank.
    if (t.charCodeAt(start) === CHAR.quote) {
      const end = t.indexOf('"', start + 1);
      if (end > 0 && this.nextSpecial(start + 1) > end && t.charCodeAt(end + 1) === CHAR.colon) {
        const after = t.charCodeAt(end + 2);
        if (after !== 0x20 && after !== 0x0a && after !== 0x0d && after !== 0x09) {
          this.pos = end + 2;
          return t.slice(start + 1, end);
        }
      }
    }
    const k = this.string();
    this.colon();
    return k;
  }

  /** Consumes whitespace, `:` and whitespace. */
  colon(): void {
    this.ws();
    if (this.peek() !== CHAR.colon) this.fail('expected ":"');
    this.pos++;
    this.ws();
  }

  /** After a member: consumes whitespace and `,` + whitespace (true) or `}` (false). */
  objectNext(): boolean {
    const t = this.text;
    if (t.charCodeAt(this.pos) === CHAR.comma && t.charCodeAt(this.pos + 1) === CHAR.quote) {
      this.pos++;
      return true;
    }
    this.ws();
    const c = this.peek();
    this.pos++;
    if (c === CHAR.comma) {
      this.ws();
      return true;
    }
    if (c !== CHAR.closeBrace) this.fail('expected "," or "}"', this.syntaxRule, {}, this.pos - 1);
    return false;
  }

  /** Consumes `[` and whitespace; returns false (having consumed `]`) for an empty array. */
  arrayStart(rule: string, what: string): boolean {
    if (this.peek() !== CHAR.openBracket) this.fail(`${what} must be an array`, rule);
    this.pos++;
    this.ws();
    if (this.peek() === CHAR.closeBracket) {
      this.pos++;
      return false;
    }
    return true;
  }

  /** After an element: consumes whitespace and `,` + whitespace (true) or `]` (false). */
  arrayNext(): boolean {
    this.ws();
    const c = this.peek();
    this.pos++;
    if (c === CHAR.comma) {
      this.ws();
      return true;
    }
    if (c !== CHAR.closeBracket) this.fail('expected "," or "]"', this.syntaxRule, {}, this.pos - 1);
    return false;
  }

  /** True if the next code unit can start a JSON value. */
  startsValue(): boolean {
    const c = this.peek();
    return (
      c === CHAR.quote ||
      c === CHAR.openBrace ||
      c === CHAR.openBracket ||
      c === CHAR.minus ||
      (c >= CHAR.zero && c <= CHAR.nine) ||
      c === 0x74 ||
      c === 0x66 ||
      c === 0x6e
    );
  }

  /** True (and consumed) if the next token is the literal `null`. */
  eatNull(): boolean {
    if (this.text.startsWith('null', this.pos)) {
      this.pos += 4;
      return true;
    }
    return false;
  }

  /** True (and consumed) if the text continues with `literal` exactly (no decoding). */
  eatLiteral(literal: string): boolean {
    if (this.text.startsWith(literal, this.pos)) {
      this.pos += literal.length;
      return true;
    }
    return false;
  }

  /** Reads a string token and returns it decoded. */
  string(rule: string = this.syntaxRule, what = 'a string'): string {
    const t = this.text;
    const start = this.pos;
    if (t.charCodeAt(start) !== CHAR.quote) this.fail(`expected ${what}`, rule);
    const end = t.indexOf('"', start + 1);
    if (end < 0 || this.nextSpecial(start + 1) < end) return this.escapedString(start + 1, start + 1);
    this.pos = end + 1;
    return t.slice(start + 1, end);
  }

  /**
   * Index of the first backslash or control character at or after `from` (Infinity if none).
   * Cached: the search only restarts once the cursor has passed the last hit, so all calls
   * together scan the text once.
   */
  private nextSpecial(from: number): number {
    if (this.special >= from) return this.special;
    SPECIAL.lastIndex = from;
    const m = SPECIAL.exec(this.text);
    this.special = m === null ? Number.POSITIVE_INFINITY : m.index;
    return this.special;
  }

  private failInString(p: number): never {
    if (p >= this.text.length) this.fail('unterminated string', this.syntaxRule, {}, p);
    return this.fail('raw control character in a string', this.syntaxRule, {}, p);
  }

  /** Slow path: a string with escapes; `from` is its first code unit, `p` the first backslash. */
  private escapedString(from: number, p: number): string {
    const t = this.text;
    let out = t.slice(from, p);
    let run = p;
    for (;;) {
      const c = t.charCodeAt(p);
      if (c === CHAR.quote) {
        this.pos = p + 1;
        return out + t.slice(run, p);
      }
      if (c === CHAR.backslash) {
        out += t.slice(run, p);
        const [decoded, next] = this.escape(p);
        out += decoded;
        p = next;
        run = p;
        continue;
      }
      if (!(c >= 0x20)) this.failInString(p);
      p++;
    }
  }

  /** Decodes the escape at `p` (a backslash); returns the text and the index after it. */
  private escape(p: number): [string, number] {
    const e = this.text.charCodeAt(p + 1);
    switch (e) {
      case 0x22:
        return ['"', p + 2];
      case 0x5c:
        return ['\\', p + 2];
      case 0x2f:
        return ['/', p + 2];
      case 0x62:
        return ['\b', p + 2];
      case 0x66:
        return ['\f', p + 2];
      case 0x6e:
        return ['\n', p + 2];
      case 0x72:
        return ['\r', p + 2];
      case 0x74:
        return ['\t', p + 2];
      case 0x75: {
        const u = this.hex4(p + 2);
        if (u >= 0xdc00 && u <= 0xdfff) this.fail('lone low surrogate escape', this.syntaxRule, {}, p);
        if (u < 0xd800 || u > 0xdbff) return [String.fromCharCode(u), p + 6];
        if (this.text.charCodeAt(p + 6) !== CHAR.backslash || this.text.charCodeAt(p + 7) !== 0x75) {
          this.fail('lone high surrogate escape', this.syntaxRule, {}, p);
        }
        const low = this.hex4(p + 8);
        if (low < 0xdc00 || low > 0xdfff) this.fail('lone high surrogate escape', this.syntaxRule, {}, p);
        return [String.fromCharCode(u, low), p + 12];
      }
      default:
        return this.fail('invalid escape', this.syntaxRule, {}, p);
    }
  }

  private hex4(p: number): number {
    let v = 0;
    for (let i = 0; i < 4; i++) {
      const c = this.text.charCodeAt(p + i);
      let d: number;
      if (c >= 0x30 && c <= 0x39) d = c - 0x30;
      else if (c >= 0x61 && c <= 0x66) d = c - 0x57;
      else if (c >= 0x41 && c <= 0x46) d = c - 0x37;
      else return this.fail('invalid \\u escape', this.syntaxRule, {}, p - 2);
      v = v * 16 + d;
    }
    return v;
  }

  /**
   * Reads an exact unsigned integer: grammar `0|[1-9][0-9]*`, at most 2^64 − 1. Signs,
   * fractions, exponents and leading zeros are errors under `rule`; a non-number is an error
   * under `typeRule`.
   */
  uint(rule: string, typeRule: string, what: string): Int {
    const t = this.text;
    const start = this.pos;
    let p = start;
    let c = t.charCodeAt(p);
    let n = 0;
    if (c === CHAR.zero) {
      p++;
      c = t.charCodeAt(p);
      if (c >= CHAR.zero && c <= CHAR.nine) this.fail(`${what}: leading zero`, rule);
    } else if (c > CHAR.zero && c <= CHAR.nine) {
      do {
        n = n * 10 + (c - CHAR.zero);
        p++;
        c = t.charCodeAt(p);
      } while (c >= CHAR.zero && c <= CHAR.nine);
    } else if (c === CHAR.minus) {
      this.fail(`${what} must not be negative`, rule);
    } else {
      this.fail(`${what} must be an unsigned integer`, this.startsValue() ? typeRule : this.syntaxRule);
    }
    if (c === CHAR.dot || c === CHAR.e || c === CHAR.E) this.fail(`${what} must be an integer`, rule);
    this.pos = p;
    const digits = p - start;
    if (digits <= 15) return n;
    const value = digits > 20 ? U64_MAX + 1n : BigInt(t.slice(start, p));
    if (value > U64_MAX) this.fail(`${what} exceeds 2^64 − 1`, rule, {}, start);
    return toInt(value);
  }

  /**
   * Reads any JSON value exactly. `depth` is the number of containers already open; opening one
   * more than {@link MAX_JSON_DEPTH} fails under `depthRule`. Object keys are decoded and a
   * duplicate fails under `duplicateRule`.
   */
  value(depth: number, depthRule: string, duplicateRule: string): ExactJsonValue {
    const c = this.peek();
    if (c === CHAR.quote) return this.string();
    if (c === CHAR.openBrace || c === CHAR.openBracket) {
      if (depth + 1 > MAX_JSON_DEPTH) this.fail('JSON nesting too deep', depthRule, { limit: MAX_JSON_DEPTH });
      return c === CHAR.openBrace
        ? this.objectValue(depth + 1, depthRule, duplicateRule)
        : this.arrayValue(depth + 1, depthRule, duplicateRule);
    }
    if (c === CHAR.minus || (c >= CHAR.zero && c <= CHAR.nine)) return this.number();
    if (this.eatLiteral('true')) return true;
    if (this.eatLiteral('false')) return false;
    if (this.eatNull()) return null;
    return this.fail(this.atEnd() ? 'unexpected end of JSON' : 'expected a JSON value');
  }

  private objectValue(depth: number, depthRule: string, duplicateRule: string): Map<string, ExactJsonValue> {
    const out = new Map<string, ExactJsonValue>();
    if (!this.objectStart()) return out;
    do {
      const at = this.pos;
      const k = this.key();
      if (out.has(k)) this.fail('duplicate key', duplicateRule, { key: k }, at);
      out.set(k, this.value(depth, depthRule, duplicateRule));
    } while (this.objectNext());
    return out;
  }

  private arrayValue(depth: number, depthRule: string, duplicateRule: string): ExactJsonValue[] {
    const out: ExactJsonValue[] = [];
    if (!this.arrayStart(this.syntaxRule, 'value')) return out;
    do out.push(this.value(depth, depthRule, duplicateRule));
    while (this.arrayNext());
    return out;
  }

  /** Any JSON number, lexically checked (RFC 8259 grammar). */
  private number(): bigint | JsonNumberText {
    const t = this.text;
    const start = this.pos;
    let p = start;
    if (t.charCodeAt(p) === CHAR.minus) p++;
    const intStart = p;
    p = this.digits(p);
    if (p === intStart) this.fail('invalid number', this.syntaxRule, {}, start);
    if (t.charCodeAt(intStart) === CHAR.zero && p - intStart > 1) this.fail('invalid number: leading zero');
    let integer = true;
    if (t.charCodeAt(p) === CHAR.dot) {
      integer = false;
      const f = p + 1;
      p = this.digits(f);
      if (p === f) this.fail('invalid number', this.syntaxRule, {}, start);
    }
    const e = t.charCodeAt(p);
    if (e === CHAR.e || e === CHAR.E) {
      integer = false;
      p++;
      const s = t.charCodeAt(p);
      if (s === 0x2b || s === CHAR.minus) p++;
      const f = p;
      p = this.digits(f);
      if (p === f) this.fail('invalid number', this.syntaxRule, {}, start);
    }
    this.pos = p;
    const text = t.slice(start, p);
    return integer && p - intStart <= 20 ? BigInt(text) : new JsonNumberText(text);
  }

  private digits(p: number): number {
    const t = this.text;
    for (;;) {
      const c = t.charCodeAt(p);
      if (c >= CHAR.zero && c <= CHAR.nine) p++;
      else return p;
    }
  }
}
