/**
 * Canonical CBOR (RFC 8949 §4.2.1 "core deterministic encoding"), strict in both directions.
 *
 * The encoder always produces the one canonical form; the decoder accepts only that form, so a
 * value has exactly one encoding and `encodeCbor(decodeCbor(b))` equals `b` for every accepted `b`.
 * Supported items: unsigned and negative integers (major 0/1), byte strings (2), text strings
 * (3, strict UTF-8), arrays (4), maps (5) with text or integer keys, `false`, `true`, `null` and
 * floats (major 7). Tags, `undefined`, other simple values and indefinite lengths are rejected.
 *
 * Numbers follow the data model of this codec, which is what makes decoding canonical: an
 * integral JS number in [-2^64, 2^64) (and `-0`) is always an integer item; a float item never
 * holds an integer of that range, and uses the shortest of float16/32/64 that keeps the value
 * exactly (NaN is `f9 7e00`, ±Infinity `f9 7c00`/`f9 fc00`).
 * Integers decode to `number` when |v| ≤ 2^53 − 1, else to `bigint`.
 */
import { requireBytes, requireOptions } from '../args.js';
import { TensorFSError } from '../errors.js';
import { grown } from './grow.js';
import { putHead } from './head.js';

/** A map key: a text string or an integer. */
export type CborKey = string | number | bigint;

/** A value this codec encodes and decodes. Maps decode to `Map`; the encoder also takes plain objects. */
export type CborValue =
  | number
  | bigint
  | string
  | Uint8Array
  | boolean
  | null
  | readonly CborValue[]
  | ReadonlyMap<CborKey, CborValue>
  | { readonly [key: string]: CborValue };

/** Decoder bounds. */
export interface CborDecodeOptions {
  /**
   * Deepest nesting of arrays and maps accepted (CWE-674: a few bytes of `81 81 81 …` would
   * otherwise recurse until the stack overflows).
   * @default 64
   */
  maxDepth?: number;
  /**
   * Return byte strings as views into `bytes` instead of copies (faster for many small byte
   * strings; the views alias the input).
   * @default false
   */
  views?: boolean;
}

/** The default nesting bound of {@link decodeCbor}. */
export const CBOR_MAX_DEPTH = 64;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const U64_MAX = (1n << 64n) - 1n;
const TWO_64 = 2 ** 64;
const utf8Encoder = new TextEncoder();
const LONE_SURROGATE = /\p{Cs}/u;
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

// ---------------------------------------------------------------------------------------------
// Encoding

/** A growable output buffer. */
class Writer {
  private buf = new Uint8Array(256);
  private len = 0;

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    this.buf = grown(this.buf, this.len, n);
  }

  byte(b: number): void {
    this.reserve(1);
    this.buf[this.len++] = b;
  }

  bytes(b: Uint8Array): void {
    this.reserve(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }

  /** The head of an item: major type and argument in the shortest form. */
  head(major: number, arg: number | bigint): void {
    const m = major << 5;
    if (typeof arg === 'number' && arg <= 0xffffffff) {
      this.reserve(5);
      this.len = putHead(this.buf, this.len, major, arg);
      return;
    }
    const v = BigInt(arg);
    if (v <= 0xffffffffn) {
      this.head(major, Number(v));
      return;
    }
    this.byte(m | 27);
    for (let i = 7; i >= 0; i--) this.byte(Number((v >> BigInt(i * 8)) & 0xffn));
  }

  result(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}

/**
 * Encodes a value as canonical CBOR.
 * @throws {TensorFSError} `invalid_argument` for values outside the data model (undefined, functions,
 * integers beyond 64 bits, duplicate map keys, lone surrogates in strings, nesting deeper than
 * {@link CBOR_MAX_DEPTH} — which is also how a cycle shows up).
 */
export function encodeCbor(value: CborValue): Uint8Array {
  const w = new Writer();
  encodeItem(w, value, { keys: new Map() }, 0);
  return w.result();
}

/** State of one encoding: encoded map keys, reused across the maps of one value. */
interface EncodeContext {
  keys: Map<CborKey, Uint8Array>;
}

function encodeItem(w: Writer, value: unknown, ctx: EncodeContext, depth: number): void {
  if (typeof value === 'number') {
    encodeNumber(w, value);
    return;
  }
  if (typeof value === 'bigint') {
    encodeInteger(w, value);
    return;
  }
  if (typeof value === 'string') {
    const b = encodeText(value);
    w.head(3, b.length);
    w.bytes(b);
    return;
  }
  if (typeof value === 'boolean') {
    w.byte(value ? 0xf5 : 0xf4);
    return;
  }
  if (value === null) {
    w.byte(0xf6);
    return;
  }
  if (value instanceof Uint8Array) {
    w.head(2, value.length);
    w.bytes(value);
    return;
  }
  if (typeof value !== 'object') {
    invalid(`cannot encode a ${typeof value}`, 'cbor.type');
  }
  if (depth >= CBOR_MAX_DEPTH) {
    invalid(`nesting deeper than ${CBOR_MAX_DEPTH} (or a cycle)`, 'cbor.depth');
  }
  if (Array.isArray(value)) {
    w.head(4, value.length);
    for (const item of value) encodeItem(w, item, ctx, depth + 1);
  } else {
    encodeMap(w, value instanceof Map ? [...value.entries()] : Object.entries(value), ctx, depth);
  }
}

function encodeMap(w: Writer, entries: [unknown, unknown][], ctx: EncodeContext, depth: number): void {
  const keyed = entries.map(([k, v]) => {
    if (typeof k !== 'string' && typeof k !== 'number' && typeof k !== 'bigint') {
      invalid('map keys must be text strings or integers', 'cbor.key_type');
    }
    let key = ctx.keys.get(k);
    if (key === undefined) {
      const kw = new Writer();
      encodeItem(kw, k, ctx, depth + 1);
      key = kw.result();
      ctx.keys.set(k, key);
    }
    return { key, value: v };
  });
  keyed.sort((a, b) => compareBytes(a.key, b.key));
  for (let i = 1; i < keyed.length; i++) {
    if (compareBytes(keyed[i - 1]!.key, keyed[i]!.key) === 0) invalid('duplicate map key', 'cbor.duplicate_key');
  }
  w.head(5, keyed.length);
  for (const { key, value } of keyed) {
    w.bytes(key);
    encodeItem(w, value, ctx, depth + 1);
  }
}

function encodeNumber(w: Writer, v: number): void {
  if (Number.isSafeInteger(v)) {
    encodeSafeInteger(w, v);
    return;
  }
  if (Number.isInteger(v) && v >= -TWO_64 && v < TWO_64) {
    encodeInteger(w, BigInt(v));
    return;
  }
  if (Number.isNaN(v)) {
    w.byte(0xf9);
    w.byte(0x7e);
    w.byte(0x00);
    return;
  }
  const half = toHalf(v);
  if (half !== undefined) {
    w.byte(0xf9);
    w.byte(half >> 8);
    w.byte(half & 0xff);
    return;
  }
  const dv = new DataView(new ArrayBuffer(8));
  if (Math.fround(v) === v) {
    dv.setFloat32(0, v);
    w.byte(0xfa);
    w.bytes(new Uint8Array(dv.buffer, 0, 4));
    return;
  }
  dv.setFloat64(0, v);
  w.byte(0xfb);
  w.bytes(new Uint8Array(dv.buffer));
}

function encodeSafeInteger(w: Writer, v: number): void {
  if (v >= 0) w.head(0, v);
  else w.head(1, -1 - v);
}

function encodeInteger(w: Writer, v: bigint): void {
  if (v >= 0n) {
    if (v > U64_MAX) invalid('integer beyond 64 bits', 'cbor.int_range');
    w.head(0, v);
    return;
  }
  const arg = -1n - v;
  if (arg > U64_MAX) invalid('integer beyond 64 bits', 'cbor.int_range');
  w.head(1, arg);
}

function encodeText(s: string): Uint8Array {
  if (LONE_SURROGATE.test(s)) invalid('text contains a lone surrogate (not encodable as UTF-8)', 'cbor.utf8');
  return utf8Encoder.encode(s);
}

/** The float16 bits of `v` if float16 holds it exactly (finite non-integral values and ±Infinity). */
function toHalf(v: number): number | undefined {
  if (v === Number.POSITIVE_INFINITY) return 0x7c00;
  if (v === Number.NEGATIVE_INFINITY) return 0xfc00;
  const sign = v < 0 ? 0x8000 : 0;
  const a = Math.abs(v);
  // Subnormal float16: multiples of 2^-24 below 2^-14.
  if (a < 2 ** -14) {
    const m = a * 2 ** 24;
    return Number.isInteger(m) ? sign | m : undefined;
  }
  const e = Math.floor(Math.log2(a));
  // Math.log2 may be off by one near powers of two; settle the exponent exactly.
  const exp = 2 ** e > a ? e - 1 : 2 ** (e + 1) <= a ? e + 1 : e;
  if (exp > 15) return undefined;
  const m = (a / 2 ** exp - 1) * 1024;
  if (!Number.isInteger(m)) return undefined;
  return sign | ((exp + 15) << 10) | m;
}

function fromHalf(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (exp === 0) return sign * m * 2 ** -24;
  if (exp === 31) return m === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  return sign * (1 + m / 1024) * 2 ** (exp - 15);
}

/** Bytewise lexicographic order (RFC 8949 §4.2.1 key order). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return a[i]! - b[i]!;
  }
  return a.length - b.length;
}

/** The rules of the `cbor` area: what encoding refuses (`invalid_argument`) and strict decoding refuses (`malformed`). */
export type CborRule =
  | 'cbor.type'
  | 'cbor.depth'
  | 'cbor.key_type'
  | 'cbor.duplicate_key'
  | 'cbor.int_range'
  | 'cbor.utf8'
  | 'cbor.truncated'
  | 'cbor.head'
  | 'cbor.non_shortest'
  | 'cbor.simple'
  | 'cbor.tag'
  | 'cbor.float'
  | 'cbor.key_order'
  | 'cbor.trailing';

function invalid(message: string, rule: CborRule): never {
  throw new TensorFSError('invalid_argument', message, { details: { rule } });
}

// ---------------------------------------------------------------------------------------------
// Decoding

/**
 * Decodes exactly one canonical CBOR item filling all of `bytes`.
 * @throws {TensorFSError} `malformed` (details `rule`, `offset`) for anything but the canonical
 * encoding of a supported value: non-shortest heads, indefinite lengths, unsorted or duplicate map
 * keys, invalid UTF-8, tags, unsupported simple values, non-canonical floats, lengths past the
 * end, trailing bytes, or nesting deeper than `maxDepth`.
 */
export function decodeCbor(bytes: Uint8Array, options: CborDecodeOptions = {}): CborValue {
  requireBytes(bytes, 'bytes', 'cbor');
  requireOptions(options, 'options', 'cbor');
  const reader = new Reader(bytes, options.maxDepth ?? CBOR_MAX_DEPTH, options.views === true);
  const value = reader.item(0);
  if (reader.pos !== bytes.length) {
    reader.fail('trailing bytes after the CBOR item', 'cbor.trailing', reader.pos);
  }
  return value;
}

class Reader {
  pos = 0;
  private readonly view: DataView;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly maxDepth: number,
    private readonly views: boolean,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  fail(message: string, rule: CborRule, offset: number): never {
    throw new TensorFSError('malformed', message, { details: { rule, offset } });
  }

  private need(n: number, at: number): void {
    if (n > this.bytes.length - this.pos) this.fail('CBOR item runs past the end of the input', 'cbor.truncated', at);
  }

  /** Reads a head; returns the major type and argument, rejecting non-shortest forms. */
  private head(): { major: number; info: number; arg: number | bigint; at: number } {
    const at = this.pos;
    this.need(1, at);
    const initial = this.bytes[this.pos++]!;
    const major = initial >> 5;
    const info = initial & 0x1f;
    if (info < 24) return { major, info, arg: info, at };
    if (info > 27) {
      this.fail(
        info === 31 ? 'indefinite lengths are not canonical' : 'reserved additional information',
        'cbor.head',
        at,
      );
    }
    if (major === 7) return { major, info, arg: 0, at };
    const n = 1 << (info - 24);
    this.need(n, at);
    let arg: number | bigint;
    let min: number;
    if (n === 1) {
      arg = this.view.getUint8(this.pos);
      min = 24;
    } else if (n === 2) {
      arg = this.view.getUint16(this.pos);
      min = 0x100;
    } else if (n === 4) {
      arg = this.view.getUint32(this.pos);
      min = 0x10000;
    } else {
      const big = this.view.getBigUint64(this.pos);
      arg = big <= MAX_SAFE ? Number(big) : big;
      min = 0x100000000;
    }
    this.pos += n;
    if (arg < min) this.fail('integer or length not in its shortest form', 'cbor.non_shortest', at);
    return { major, info, arg, at };
  }

  /** A length argument as a number, bounded by the bytes that remain (each element takes ≥ `unit` bytes). */
  private length(arg: number | bigint, unit: number, at: number): number {
    if (typeof arg === 'bigint' || arg * unit > this.bytes.length - this.pos) {
      this.fail('CBOR length runs past the end of the input', 'cbor.truncated', at);
    }
    return arg;
  }

  item(depth: number): CborValue {
    const { major, info, arg, at } = this.head();
    switch (major) {
      case 0:
        return arg;
      case 1:
        return typeof arg === 'number' && arg < Number.MAX_SAFE_INTEGER ? -1 - arg : -1n - BigInt(arg);
      case 2: {
        const n = this.length(arg, 1, at);
        const out = this.views ? this.bytes.subarray(this.pos, this.pos + n) : this.bytes.slice(this.pos, this.pos + n);
        this.pos += n;
        return out;
      }
      case 3: {
        const n = this.length(arg, 1, at);
        const raw = this.bytes.subarray(this.pos, this.pos + n);
        this.pos += n;
        try {
          return utf8Decoder.decode(raw);
        } catch (cause) {
          throw new TensorFSError('malformed', 'text string is not valid UTF-8', {
            details: { rule: 'cbor.utf8', offset: at },
            cause,
          });
        }
      }
      case 4: {
        if (depth >= this.maxDepth) this.fail('CBOR nesting too deep', 'cbor.depth', at);
        const n = this.length(arg, 1, at);
        const out: CborValue[] = [];
        for (let i = 0; i < n; i++) out.push(this.item(depth + 1));
        return out;
      }
      case 5:
        if (depth >= this.maxDepth) this.fail('CBOR nesting too deep', 'cbor.depth', at);
        return this.map(this.length(arg, 2, at), depth);
      case 6:
        return this.fail('CBOR tags are not supported', 'cbor.tag', at);
      default:
        return this.simple(info, at);
    }
  }

  private map(n: number, depth: number): Map<CborKey, CborValue> {
    const out = new Map<CborKey, CborValue>();
    let prev: Uint8Array | undefined;
    for (let i = 0; i < n; i++) {
      const keyAt = this.pos;
      const key = this.item(depth + 1);
      if (typeof key !== 'string' && typeof key !== 'number' && typeof key !== 'bigint') {
        this.fail('map keys must be text strings or integers', 'cbor.key_type', keyAt);
      }
      const keyBytes = this.bytes.subarray(keyAt, this.pos);
      if (prev !== undefined && compareBytes(prev, keyBytes) >= 0) {
        this.fail('map keys are not in canonical order or repeat', 'cbor.key_order', keyAt);
      }
      prev = keyBytes;
      out.set(key, this.item(depth + 1));
    }
    return out;
  }

  private simple(info: number, at: number): CborValue {
    if (info === 20) return false;
    if (info === 21) return true;
    if (info === 22) return null;
    if (info < 25 || info > 27) return this.fail('unsupported CBOR simple value', 'cbor.simple', at);
    const n = 1 << (info - 24);
    this.need(n, at);
    let v: number;
    if (n === 2) v = fromHalf(this.view.getUint16(this.pos));
    else if (n === 4) v = this.view.getFloat32(this.pos);
    else v = this.view.getFloat64(this.pos);
    this.pos += n;
    // Canonical iff re-encoding gives the same bytes (shortest width, no integral value, NaN as f97e00).
    const w = new Writer();
    encodeNumber(w, v);
    const again = w.result();
    if (compareBytes(again, this.bytes.subarray(at, this.pos)) !== 0) {
      this.fail('float not in its canonical form', 'cbor.float', at);
    }
    return v;
  }
}
