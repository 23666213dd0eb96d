import { TensorFSError } from './errors.js';

/** An object id as text: `sha256:` and 64 lowercase hex digits. */
export type ObjectId = `sha256:${string}`;

const ID_RE = /^sha256:[0-9a-f]{64}$/;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Lowercase hex of bytes. */
export function toHex(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += HEX[bytes[i]!];
  return s;
}

/** Bytes of an even-length lowercase hex string; `malformed` otherwise. */
export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-f]*$/.test(hex)) {
    throw new TensorFSError('malformed', 'not lowercase hex', { details: { length: hex.length } });
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
    throw new TensorFSError('invalid_argument', 'not an object id (expected sha256:<64 lowercase hex>)', {
      details: { actual: value.length > 80 ? `${value.slice(0, 80)}…` : value },
    });
  }
  return value;
}

/** The object id of a 32-byte SHA-256 digest. */
export function objectIdFromDigest(digest: Uint8Array): ObjectId {
  if (digest.length !== 32) {
    throw new TensorFSError('invalid_argument', 'a SHA-256 digest is 32 bytes', { details: { actual: digest.length } });
  }
  return `sha256:${toHex(digest)}`;
}

/** The 32 raw digest bytes of an object id. */
export function digestFromObjectId(id: string): Uint8Array {
  return fromHex(parseObjectId(id).slice(7));
}
