import { describe, requireBytes, requireString } from './args.js';
import { TensorFSError } from './errors.js';

/** An object id as text: `sha256:` and 64 lowercase hex digits. */
export type ObjectId = `sha256:${string}`;

const ID_RE = /^sha256:[0-9a-f]{64}$/;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const HEX_CODES = /* @__PURE__ */ Array.from('0123456789abcdef', (c) => c.charCodeAt(0));
/** Nibble of each lowercase hex digit's char code (-1 for anything else). */
const NIBBLE: Int8Array = /* @__PURE__ */ (() => {
  const t = new Int8Array(128).fill(-1);
  for (let i = 0; i < 16; i++) t['0123456789abcdef'.charCodeAt(i)] = i;
  return t;
})();
/** Scratch char codes of one id; filled per call so an id is built as one flat string. */
const ID_CODES: number[] = /* @__PURE__ */ Array.from('sha256:', (c) => c.charCodeAt(0)).concat(new Array(64).fill(0));

/** Lowercase hex of bytes. */
export function toHex(bytes: Uint8Array): string {
  requireBytes(bytes, 'bytes', 'ids');
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += HEX[bytes[i]!];
  return s;
}

/** Bytes of an even-length lowercase hex string; `malformed` otherwise. */
export function fromHex(hex: string): Uint8Array {
  requireString(hex, 'hex', 'ids');
  if (hex.length % 2 !== 0 || !/^[0-9a-f]*$/.test(hex)) {
    throw new TensorFSError('malformed', 'not lowercase hex', { details: { rule: 'ids.hex', length: hex.length } });
  }
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** True if `value` is a well-formed object id (`sha256:` + 64 lowercase hex). */
export function isObjectId(value: unknown): value is ObjectId {
  return typeof value === 'string' && ID_RE.test(value);
}

/** Validates an object id; `invalid_argument` if it is not `sha256:<64 lowercase hex>`. */
export function parseObjectId(value: string): ObjectId {
  if (!isObjectId(value)) {
    // Callers from plain JavaScript may pass anything: describe it without assuming a string.
    const text = typeof value === 'string' ? value : String(describe(value));
    throw new TensorFSError('invalid_argument', 'not an object id (expected sha256:<64 lowercase hex>)', {
      details: { rule: 'ids.object_id', actual: text.length > 80 ? `${text.slice(0, 80)}…` : text },
    });
  }
  return value;
}

/**
 * The object id of a 32-byte SHA-256 digest. Built as one flat string (not 32 concatenated
 * pieces), which matters when a manifest of a million records is decoded.
 */
export function objectIdFromDigest(digest: Uint8Array): ObjectId {
  requireBytes(digest, 'digest', 'ids');
  if (digest.length !== 32) {
    throw new TensorFSError('invalid_argument', 'a SHA-256 digest is 32 bytes', {
      details: { rule: 'ids.digest_length', actual: digest.length },
    });
  }
  for (let i = 0; i < 32; i++) {
    ID_CODES[7 + 2 * i] = HEX_CODES[digest[i]! >> 4]!;
    ID_CODES[8 + 2 * i] = HEX_CODES[digest[i]! & 15]!;
  }
  return String.fromCharCode.apply(null, ID_CODES) as ObjectId;
}

/** The 32 raw digest bytes of an object id; `invalid_argument` if it is not one. */
export function digestFromObjectId(id: string): Uint8Array {
  const out = new Uint8Array(32);
  digestInto(parseObjectId(id), out);
  return out;
}

/**
 * Writes the 32 digest bytes of an already validated id ({@link isObjectId}) into `out[0..32)`,
 * without allocating: the hot path of manifest encoding.
 */
export function digestInto(id: ObjectId, out: Uint8Array): void {
  if (typeof id !== 'string' || !(out instanceof Uint8Array) || out.length < 32) {
    throw new TensorFSError('invalid_argument', 'digestInto takes an object id and 32 bytes of room', {
      details: { rule: 'ids.argument', actual: describe(typeof id !== 'string' ? id : out) },
    });
  }
  for (let i = 0; i < 32; i++) {
    out[i] = (NIBBLE[id.charCodeAt(7 + 2 * i)]! << 4) | NIBBLE[id.charCodeAt(8 + 2 * i)]!;
  }
}
