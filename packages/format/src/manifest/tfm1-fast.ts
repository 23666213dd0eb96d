/**
 * @internal The TFM1 hot paths: a manifest written straight to bytes and canonical bytes read
 * straight into a manifest, without the generic CBOR value tree in between.
 *
 * Both sides know the one canonical layout of a v1 manifest (map keys are fixed literals in
 * RFC 8949 bytewise order, so they are compared as bytes):
 *
 * ```
 * a2 "entries" [entry...] "version" 1
 * file:    a6 "kind" "file" "mode" uint "path" tstr "size" uint "profile" tstr "records" [[bstr(32), uint]...]
 * symlink: a3 "kind" "symlink" "path" tstr "target" tstr
 * ```
 *
 * The reader never throws: it returns `undefined` for anything but that layout in its canonical
 * form (shortest heads, valid UTF-8, integers below 2^53, a known profile, nothing trailing), and
 * the caller then takes the generic path, which names the exact error. Because every head is
 * checked for its shortest form, every key is the canonical literal in canonical order and no other
 * item kind is accepted, the bytes it accepts are exactly the canonical encoding of what it returns
 * — the single-pass equivalent of decoding and re-encoding.
 */
import type { ObjectId } from '../ids.js';
import type { Manifest, ManifestEntry, RecordRef } from './types.js';
import { PLAN_PROFILES, type PlanProfile } from './profiles.js';
import { TensorFSError } from '../errors.js';
import { putHead } from './head.js';

const enc = new TextEncoder();
const NO_OUTPUT = new Uint8Array(0);
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const asciiText = new TextDecoder('utf-8', { ignoreBOM: true });

/** CBOR of a text string (head + UTF-8), for the fixed keys and values. */
function tstr(s: string): Uint8Array {
  const b = enc.encode(s);
  return Uint8Array.of(0x60 | b.length, ...b);
}
const concat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

const K_ENTRIES = tstr('entries');
const K_VERSION = tstr('version');
/** `a6 "kind" "file" "mode"`: a file entry up to its mode value. */
const FILE_OPEN = concat(Uint8Array.of(0xa6), tstr('kind'), tstr('file'), tstr('mode'));
/** `a3 "kind" "symlink" "path"`: a symlink entry up to its path value. */
const LINK_OPEN = concat(Uint8Array.of(0xa3), tstr('kind'), tstr('symlink'), tstr('path'));
const K_PATH = tstr('path');
const K_SIZE = tstr('size');
const K_PROFILE = tstr('profile');
const K_RECORDS = tstr('records');
const K_TARGET = tstr('target');
const PROFILES = PLAN_PROFILES.map((p) => ({ name: p, bytes: tstr(p) }));

const ID_LENGTH = 71; // 'sha256:' + 64 hex digits
const HEX = /* @__PURE__ */ Uint8Array.from('0123456789abcdef', (c) => c.charCodeAt(0));
/** The byte of each pair of lowercase hex digits' char codes (`hi << 8 | lo`); -1 for other pairs. */
const PAIR: Int16Array = /* @__PURE__ */ (() => {
  const t = new Int16Array(0x10000).fill(-1);
  for (let h = 0; h < 16; h++) for (let l = 0; l < 16; l++) t[(HEX[h]! << 8) | HEX[l]!] = (h << 4) | l;
  return t;
})();

/** An id's UTF-8, copied out by one native call (fewer than 71 units read means it was not ASCII). */
const idBytes = new Uint8Array(ID_LENGTH + 1);

/** Writes the 32 bytes of an id's 64 hex digits at `b[at]`; false unless it is `sha256:` + lowercase hex. */
function hexInto(id: string, b: Uint8Array, at: number): boolean {
  // One `encodeInto` copies the id out whatever its string representation (flat, concatenated,
  // sliced); reading 71 bytes from a typed array is cheaper than 71 `charCodeAt` calls, which
  // dispatch on the representation each time.
  const { read, written } = enc.encodeInto(id, idBytes);
  if (read !== ID_LENGTH || written !== ID_LENGTH) return false;
  const d = idBytes;
  let prefix = 0;
  for (let i = 0; i < 7; i++) prefix |= d[i]! ^ PREFIX[i + 1]!; // `sha256:`
  if (prefix !== 0) return false;
  let bad = 0;
  for (let i = 7; i < ID_LENGTH; i += 2) {
    const v = PAIR[(d[i]! << 8) | d[i + 1]!]!;
    bad |= v; // -1 for anything but two lowercase hex digits
    b[at++] = v;
  }
  return bad >= 0;
}
/**
 * Writes one id's slot (pad byte, `sha256:`, the hex of `bytes[p, p + 32)`) at 16-bit unit `j`.
 * A function of its own so the loop gets typed arrays it can rely on (the caller's may be regrown).
 */
function writeId(hex16: Uint16Array, j: number, bytes: Uint8Array, p: number): void {
  hex16[j] = PREFIX16[0]!;
  hex16[j + 1] = PREFIX16[1]!;
  hex16[j + 2] = PREFIX16[2]!;
  hex16[j + 3] = PREFIX16[3]!;
  for (let k = 0; k < 32; k++) hex16[j + 4 + k] = HEX_PAIR[bytes[p + k]!]!;
}

/** A pad byte and `sha256:`: the first 8 bytes of an id's slot. */
const PREFIX = /* @__PURE__ */ Uint8Array.from(enc.encode(' sha256:'));
/** {@link PREFIX} as four 16-bit units in platform byte order. */
const PREFIX16 = /* @__PURE__ */ new Uint16Array(PREFIX.buffer);
const SLOT = 72;
/** The two hex digits of each byte as one 16-bit unit in platform byte order. */
const HEX_PAIR: Uint16Array = /* @__PURE__ */ (() => {
  const t = new Uint16Array(256);
  const b = new Uint8Array(t.buffer);
  for (let i = 0; i < 256; i++) {
    b[2 * i] = HEX[i >> 4]!;
    b[2 * i + 1] = HEX[i & 15]!;
  }
  return t;
})();

// ---------------------------------------------------------------------------------------------
// Encoding

/**
 * The output of {@link encodeManifestFast}: exactly as many bytes as the manifest needs, counted
 * up front, so nothing is ever regrown or copied (a reservation rounded up for the last entry used
 * to double the whole buffer and then slice it back). Writers do not check for room; the caller
 * checks at the end that the count was exact.
 */
class Out {
  buf: Uint8Array = NO_OUTPUT;
  len = 0;

  raw(b: Uint8Array): void {
    // `set` throws past the end; a miscount then surfaces as the internal error below, not a RangeError.
    if (this.len + b.length > this.buf.length) this.len = Number.POSITIVE_INFINITY;
    else this.buf.set(b, this.len);
    this.len += b.length;
  }

  /** A head with an argument below 2^53 in its shortest form. */
  head(major: number, arg: number): void {
    this.len = putHead(this.buf, this.len, major, arg);
  }

  /** A text string already known to be well-formed (no lone surrogate). */
  text(s: string): void {
    const n = s.length;
    let ascii = true;
    for (let i = 0; i < n; i++) {
      if (s.charCodeAt(i) > 0x7f) {
        ascii = false;
        break;
      }
    }
    if (ascii) {
      this.head(3, n);
      const b = this.buf;
      let at = this.len;
      for (let i = 0; i < n; i++) b[at++] = s.charCodeAt(i);
      this.len = at;
      return;
    }
    const bytes = enc.encode(s);
    this.head(3, bytes.length);
    this.raw(bytes);
  }
}

/**
 * The one encoder of the module, reused by every call (they never overlap: encoding is
 * synchronous). A live instance keeps the shape (map) every {@link Out} has across full garbage
 * collections; with a fresh instance per call, a full GC between calls collected that map and
 * with it the optimized code of every method compiled against it, and the next large encode ran
 * unoptimized while V8 recompiled (+40–80 % at 100k records). It holds no output between calls.
 */
const out = new Out();

/**
 * TFM1 bytes of a manifest that passed validation except for its record digests, which are checked
 * here while they are converted. Returns `undefined` if a digest is not an object id (the caller
 * then reports the first error in manifest order).
 */
export function encodeManifestFast(manifest: Manifest, magic: Uint8Array, version: number): Uint8Array | undefined {
  const { entries } = manifest;
  // The exact size, so the output is allocated once and never copied.
  let size = magic.length + 1 + K_ENTRIES.length + headSize(entries.length) + K_VERSION.length + headSize(version);
  for (const e of entries) {
    if (e.kind === 'symlink') {
      size += LINK_OPEN.length + textSize(e.path) + K_TARGET.length + textSize(e.target);
      continue;
    }
    const { records } = e;
    size += FILE_OPEN.length + headSize(e.mode) + K_PATH.length + textSize(e.path) + K_SIZE.length;
    size += headSize(e.size) + K_PROFILE.length + profileBytes(e.profile).length + K_RECORDS.length;
    size += headSize(records.length) + 35 * records.length;
    for (let r = 0; r < records.length; r++) size += headSize(records[r]!.length);
  }
  const w = out;
  w.buf = new Uint8Array(size);
  w.len = 0;
  try {
    return encodeInto(w, manifest, magic, version, size);
  } finally {
    w.buf = NO_OUTPUT;
  }
}

/** The body of {@link encodeManifestFast}, writing into `w` (sized `size` exactly). */
function encodeInto(
  w: Out,
  manifest: Manifest,
  magic: Uint8Array,
  version: number,
  size: number,
): Uint8Array | undefined {
  const { entries } = manifest;
  w.raw(magic);
  w.raw(Uint8Array.of(0xa2));
  w.raw(K_ENTRIES);
  w.head(4, entries.length);
  for (const e of entries) {
    if (e.kind === 'symlink') {
      w.raw(LINK_OPEN);
      w.text(e.path);
      w.raw(K_TARGET);
      w.text(e.target);
      continue;
    }
    w.raw(FILE_OPEN);
    w.head(0, e.mode);
    w.raw(K_PATH);
    w.text(e.path);
    w.raw(K_SIZE);
    w.head(0, e.size);
    w.raw(K_PROFILE);
    w.raw(profileBytes(e.profile));
    w.raw(K_RECORDS);
    const { records } = e;
    w.head(4, records.length);
    const b = w.buf;
    for (let r = 0; r < records.length; r++) {
      const { digest, length } = records[r]!;
      if (typeof digest !== 'string' || digest.length !== ID_LENGTH) return undefined;
      const at = w.len;
      b[at] = 0x82;
      b[at + 1] = 0x58;
      b[at + 2] = 0x20;
      if (!hexInto(digest, b, at + 3)) return undefined;
      w.len = at + 35;
      w.head(0, length);
    }
  }
  w.raw(K_VERSION);
  w.head(0, version);
  if (w.len !== size) {
    throw new TensorFSError('internal', 'TFM1 encoder miscounted its output', {
      details: { rule: 'manifest.internal', expected: size, actual: w.len },
    });
  }
  return w.buf;
}

const headSize = (n: number): number => (n < 24 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : n <= 0xffffffff ? 5 : 9);

/** Bytes of a text string item (head + UTF-8) of a well-formed string. */
function textSize(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c < 0xdc00) {
      n += 2; // a pair: 2 units, 4 bytes
      i++;
    } else n += 2;
  }
  return headSize(n) + n;
}

function profileBytes(profile: string): Uint8Array {
  for (const p of PROFILES) if (p.name === profile) return p.bytes;
  throw new Error('unreachable: the profile was validated');
}

// ---------------------------------------------------------------------------------------------
// Decoding

/** Where the reader failed: nothing to report, the generic path will name the error. */
const BAIL = -1;

/**
 * The decoder's input and position: module state rather than an object, so no object shape is
 * involved in the hot reads (a cursor object's shape died at every full GC, taking the optimized
 * code of its methods with it). Set by {@link decodeManifestFast} for one call (never re-entered)
 * and cleared after it, so no input is kept alive.
 */
const NO_INPUT = new Uint8Array(0);
let inB: Uint8Array = NO_INPUT;
let inPos = 0;
/** Consumes `lit` if the input continues with it. */
function readLit(lit: Uint8Array | readonly number[]): boolean {
  const b = inB;
  const at = inPos;
  if (at + lit.length > b.length) return false;
  for (let i = 0; i < lit.length; i++) if (b[at + i] !== lit[i]) return false;
  inPos = at + lit.length;
  return true;
}

/** The argument of a head of `major` in its shortest form, below 2^53; {@link BAIL} otherwise. */
function readHead(major: number): number {
  const b = inB;
  let at = inPos;
  if (at >= b.length) return BAIL;
  const initial = b[at++]!;
  if (initial >> 5 !== major) return BAIL;
  const info = initial & 0x1f;
  let v: number;
  if (info < 24) v = info;
  else if (info === 24) {
    if (at + 1 > b.length) return BAIL;
    v = b[at++]!;
    if (v < 24) return BAIL;
  } else if (info === 25) {
    if (at + 2 > b.length) return BAIL;
    v = (b[at]! << 8) | b[at + 1]!;
    at += 2;
    if (v < 0x100) return BAIL;
  } else if (info === 26) {
    if (at + 4 > b.length) return BAIL;
    v = ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
    at += 4;
    if (v < 0x10000) return BAIL;
  } else if (info === 27) {
    if (at + 8 > b.length) return BAIL;
    const hi = ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
    const lo = ((b[at + 4]! << 24) | (b[at + 5]! << 16) | (b[at + 6]! << 8) | b[at + 7]!) >>> 0;
    at += 8;
    if (hi === 0 || hi > 0x1fffff) return BAIL; // non-shortest, or 2^53 and above
    v = hi * 0x100000000 + lo;
    if (v > Number.MAX_SAFE_INTEGER) return BAIL;
  } else return BAIL;
  inPos = at;
  return v;
}

/** A text string (strict UTF-8, BOM kept); `undefined` otherwise. */
function readText(): string | undefined {
  const n = readHead(3);
  if (n === BAIL || n > inB.length - inPos) return undefined;
  const b = inB;
  const start = inPos;
  const end = start + n;
  inPos = end;
  let ascii = true;
  for (let i = start; i < end; i++) {
    if (b[i]! > 0x7f) {
      ascii = false;
      break;
    }
  }
  const raw = b.subarray(start, end);
  if (ascii) return asciiText.decode(raw);
  try {
    return strictUtf8.decode(raw);
  } catch {
    return undefined;
  }
}

/**
 * A manifest from TFM1 bytes (magic already checked) in the canonical v1 layout; `undefined` for
 * anything else. The result still needs the manifest rules checked (paths, order, sizes).
 */
export function decodeManifestFast(bytes: Uint8Array, start: number, version: number): Manifest | undefined {
  inB = bytes;
  inPos = start;
  try {
    return decodeFrom(bytes, version);
  } finally {
    inB = NO_INPUT;
  }
}

function decodeFrom(bytes: Uint8Array, version: number): Manifest | undefined {
  if (!readLit([0xa2]) || !readLit(K_ENTRIES)) return undefined;
  const count = readHead(4);
  // Each entry takes more than 16 bytes: a count beyond that is a lie the generic path reports.
  if (count === BAIL || count > (bytes.length - inPos) / 16) return undefined;
  const entries: ManifestEntry[] = new Array(count);
  // Object ids are written as hex into one buffer while parsing, decoded as one string and
  // sliced: one string conversion for all of them instead of one per record. Each id takes a
  // 72-byte slot (a pad byte, `sha256:`, 64 hex digits) so its hex digits start at an even
  // offset and are written two at a time.
  let hex = new Uint8Array(Math.max(256, Math.ceil(bytes.length / 40) * SLOT));
  let hex16 = new Uint16Array(hex.buffer);
  let ids = 0;
  for (let i = 0; i < count; i++) {
    if (readLit(LINK_OPEN)) {
      const path = readText();
      if (path === undefined || !readLit(K_TARGET)) return undefined;
      const target = readText();
      if (target === undefined) return undefined;
      entries[i] = { path, kind: 'symlink', target };
      continue;
    }
    if (!readLit(FILE_OPEN)) return undefined;
    const mode = readHead(0);
    if (mode === BAIL || !readLit(K_PATH)) return undefined;
    const path = readText();
    if (path === undefined || !readLit(K_SIZE)) return undefined;
    const size = readHead(0);
    if (size === BAIL || !readLit(K_PROFILE)) return undefined;
    let profile: PlanProfile | undefined;
    for (const p of PROFILES) {
      if (readLit(p.bytes)) {
        profile = p.name;
        break;
      }
    }
    if (profile === undefined || !readLit(K_RECORDS)) return undefined;
    const n = readHead(4);
    if (n === BAIL || n > (bytes.length - inPos) / 36) return undefined;
    if ((ids + n) * SLOT > hex.length) {
      const next = new Uint8Array(Math.max(hex.length * 2, (ids + n) * SLOT));
      next.set(hex.subarray(0, ids * SLOT));
      hex = next;
      hex16 = new Uint16Array(hex.buffer);
    }
    const records: RecordRef[] = new Array(n);
    for (let k = 0; k < n; k++) {
      let p = inPos;
      if (p + 35 > bytes.length || bytes[p] !== 0x82 || bytes[p + 1] !== 0x58 || bytes[p + 2] !== 0x20)
        return undefined;
      p += 3;
      writeId(hex16, (ids * SLOT) >> 1, bytes, p);
      ids++;
      inPos = p + 32;
      const length = readHead(0);
      if (length === BAIL) return undefined;
      records[k] = { digest: '' as ObjectId, length }; // the id is filled in below
    }
    entries[i] = { path, kind: 'file', mode, size, profile, records };
  }
  if (!readLit(K_VERSION) || readHead(0) !== version || inPos !== bytes.length) return undefined;

  const text = asciiText.decode(hex.subarray(0, ids * SLOT));
  let at = 1;
  for (const entry of entries) {
    if (entry.kind !== 'file') continue;
    for (const record of entry.records) {
      record.digest = text.slice(at, at + ID_LENGTH) as ObjectId;
      at += SLOT;
    }
  }
  return { entries };
}
