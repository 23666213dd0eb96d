/**
 * Internal: large GGUF metadata arrays kept as validated bytes that decode on first access.
 *
 * A 262k-token vocabulary is hundreds of thousands of strings and numbers that `inspect`, `plan`
 * and `import` never look at. Such an array is validated in full while the header is parsed
 * (lengths, bounds, strict UTF-8, bool bytes: the same checks, in the same order, with the same
 * errors as decoding it), its bytes are copied out of the caller's buffer, and `items` becomes a
 * plain JS array only when someone reads it.
 */
import type { Cursor } from './_cursor.js';
import { NeedMoreBytes } from './_cursor.js';
import type { GgufArray, GgufScalar, GgufValue, GgufValueType } from './types.js';

/** Arrays with at least this many items are kept lazy; smaller ones are decoded at once. */
export let LAZY_ARRAY_ITEMS = 256;

/** Tests compare the lazy path with eager decoding by raising the threshold (`Infinity`: never lazy). */
export function setLazyArrayItems(n: number): void {
  LAZY_ARRAY_ITEMS = n;
}

/** Item counts of lazy arrays (their `items` may not exist yet). */
const LENGTHS = new WeakMap<object, number>();

/** Items of an array value, without decoding a lazy one. */
export function arrayLength(value: GgufValue): number {
  if (typeof value !== 'object') return 0;
  return LENGTHS.get(value) ?? value.items.length;
}

/**
 * A `GgufArray` whose enumerable `items` property decodes on first read and then becomes an
 * ordinary data property holding the plain array (so equality, spreading, JSON and the writer all
 * see the usual shape).
 */
function lazy(itemType: GgufValueType, count: number, decode: () => GgufScalar[]): GgufArray {
  const array = { itemType } as GgufArray;
  Object.defineProperty(array, 'items', {
    enumerable: true,
    configurable: true,
    get() {
      const items = decode();
      Object.defineProperty(array, 'items', { value: items, enumerable: true, writable: true, configurable: true });
      return items;
    },
    set(items: GgufScalar[]) {
      Object.defineProperty(array, 'items', { value: items, enumerable: true, writable: true, configurable: true });
    },
  });
  LENGTHS.set(array, count);
  return array;
}

/**
 * Where a string array cut short by the end of a prefix stopped: its first `done` strings are
 * validated and end at `ends[0..done)`. The next, longer prefix of the same file holds the same bytes
 * there, so the reader resumes at string `done` instead of validating them again.
 */
export interface PartialStrings {
  /** Offset of the array's first string. */
  start: number;
  count: number;
  done: number;
  ends: Float64Array;
}

/**
 * `count` strings at the cursor, validated as {@link Cursor.string} would read them, kept lazy. A
 * prefix that runs out part-way asks for more by extrapolating from the strings seen so far, and
 * leaves where it stopped in `resume.partial` for the call on the longer prefix.
 */
export function lazyStrings(
  c: Cursor,
  itemType: GgufValueType,
  count: number,
  resume?: { partial?: PartialStrings },
): GgufArray {
  const start = c.pos;
  const bytes = c.bytes;
  const before = resume?.partial;
  const resumed = before !== undefined && before.start === start && before.count === count ? before : undefined;
  if (resume) resume.partial = undefined;
  // ends[i] is the end of string i; string i starts 8 bytes after ends[i - 1] (or `start`).
  const ends = resumed?.ends ?? new Float64Array(count);
  let i = resumed?.done ?? 0;
  try {
    for (;;) {
      i = scanStrings(bytes, ends, count, i, i === 0 ? start : ends[i - 1]!, c.avail, c.little);
      if (i === count) break;
      // Anything the fast path leaves goes through the cursor, which raises exactly the eager
      // reader's errors (or asks for more bytes).
      c.pos = i === 0 ? start : ends[i - 1]!;
      const length = c.stringLength(Number.POSITIVE_INFINITY, 'string_length');
      c.ensure(length);
      const from = c.pos;
      const to = from + length;
      if (!isUtf8(bytes, from, to)) c.text(from, to); // throws the decoder's own error
      ends[i++] = to;
    }
    c.pos = count === 0 ? start : ends[count - 1]!;
  } catch (err) {
    if (!(err instanceof NeedMoreBytes) || i === 0) throw err;
    if (resume) resume.partial = { start, count, done: i, ends };
    const estimate = start + Math.ceil(((c.pos - start) / i) * count * 1.05);
    throw new NeedMoreBytes(Math.min(Math.max(err.needed, estimate), c.fileSize, c.maxBytes));
  }
  const own = bytes.slice(start, c.pos);
  return lazy(itemType, count, () => {
    const items = new Array<string>(count);
    let from = 8;
    for (let k = 0; k < count; k++) {
      const to = ends[k]! - start;
      items[k] = decodeText(own, from, to);
      from = to + 8;
    }
    return items;
  });
}

/**
 * The fast path of {@link lazyStrings}: from string `i` at offset `p`, records the ends of the
 * strings that lie whole in the first `avail` bytes with a length below 2^32 and are valid UTF-8;
 * returns the index of the first that does not (or `count`). Kept apart from the error and resume
 * paths so that the optimizing compiler sees one small loop, compiles it once and never has to
 * throw it away when a prefix ends (a vocabulary is hundreds of thousands of strings, read once
 * by a process that has not warmed up).
 */
function scanStrings(
  bytes: Uint8Array,
  ends: Float64Array,
  count: number,
  i: number,
  p: number,
  avail: number,
  little: boolean,
): number {
  for (; i < count; i++) {
    if (p + 8 > avail) return i;
    const q = little ? p : p + 4;
    const r = little ? p + 4 : p;
    const lo = little
      ? (bytes[q]! | (bytes[q + 1]! << 8) | (bytes[q + 2]! << 16) | (bytes[q + 3]! << 24)) >>> 0
      : ((bytes[q]! << 24) | (bytes[q + 1]! << 16) | (bytes[q + 2]! << 8) | bytes[q + 3]!) >>> 0;
    const hi = bytes[r]! | bytes[r + 1]! | bytes[r + 2]! | bytes[r + 3]!;
    const from = p + 8;
    const to = from + lo;
    if (hi !== 0 || to > avail) return i;
    let k = from;
    while (k < to && bytes[k]! < 0x80) k++;
    if (k !== to && !isUtf8(bytes, k, to)) return i;
    ends[i] = to;
    p = to;
  }
  return count;
}

/** `count` fixed-size items (numbers or bools) at the cursor; bools are checked to be 0 or 1 now. */
export function lazyFixed(
  c: Cursor,
  itemType: GgufValueType,
  count: number,
  size: number,
  read: (v: DataView, p: number, le: boolean) => GgufScalar,
  checkBool: boolean,
): GgufArray {
  const start = c.pos;
  if (checkBool) {
    // Item by item, as a decoding reader meets them: a bad byte before the prefix ends is reported
    // first, and running out is reported at the first missing byte.
    const b = c.bytes;
    const availEnd = Math.min(start + count, c.avail);
    for (let p = start; p < availEnd; p++) {
      if (b[p]! > 1) throw c.error('malformed', 'bool_value', `a bool is ${b[p]}, not 0 or 1`, { actual: b[p] }, p);
    }
    c.pos = availEnd;
    if (availEnd < start + count) c.ensure(1);
  } else c.ensure(count * size);
  c.pos = start + count * size;
  const own = c.bytes.slice(start, c.pos);
  const little = c.little;
  return lazy(itemType, count, () => {
    const v = new DataView(own.buffer);
    const items = new Array<GgufScalar>(count);
    for (let k = 0; k < count; k++) items[k] = read(v, k * size, little);
    return items;
  });
}

const UTF8 = /* @__PURE__ */ new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Decodes validated UTF-8 (ASCII built directly; short strings are most tokens). */
function decodeText(b: Uint8Array, from: number, to: number): string {
  if (to - from <= 16) {
    let out = '';
    for (let i = from; i < to; i++) {
      const x = b[i]!;
      if (x > 0x7f) return UTF8.decode(b.subarray(from, to));
      out += String.fromCharCode(x);
    }
    return out;
  }
  return UTF8.decode(b.subarray(from, to));
}

/**
 * True if `b[from, to)` is strict UTF-8 as the fatal `TextDecoder` defines it: no overlongs, no
 * surrogates, nothing above U+10FFFF, no truncated sequence.
 */
export function isUtf8(b: Uint8Array, from: number, to: number): boolean {
  let i = from;
  while (i < to) {
    const x = b[i]!;
    if (x < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (x >= 0xc2 && x <= 0xdf) need = 1;
    else if (x >= 0xe0 && x <= 0xef) {
      need = 2;
      if (x === 0xe0) lo = 0xa0;
      else if (x === 0xed) hi = 0x9f;
    } else if (x >= 0xf0 && x <= 0xf4) {
      need = 3;
      if (x === 0xf0) lo = 0x90;
      else if (x === 0xf4) hi = 0x8f;
    } else return false;
    if (i + need >= to) return false;
    const second = b[i + 1]!;
    if (second < lo || second > hi) return false;
    for (let k = 2; k <= need; k++) {
      const y = b[i + k]!;
      if (y < 0x80 || y > 0xbf) return false;
    }
    i += need + 1;
  }
  return true;
}
