import { createHash, randomBytes } from 'node:crypto';
import type { ObjectId } from '@tensorfs/format';

/** `sha256:<hex>` of the concatenated pieces, computed independently of the code under test. */
export function idOf(...pieces: Uint8Array[]): ObjectId {
  return `sha256:${sha256Hex(...pieces)}`;
}

/** Lower-case hex SHA-256 of the concatenated pieces. */
export function sha256Hex(...pieces: Uint8Array[]): string {
  const h = createHash('sha256');
  for (const p of pieces) h.update(p);
  return h.digest('hex');
}

/**
 * `length` deterministic pseudo-random bytes (xorshift32 over little-endian words), fast enough
 * for tens of MiB; the same `(length, seed)` always gives the same bytes.
 */
export function noise(length: number, seed = 1): Uint8Array {
  const out = new Uint8Array(length);
  const words = new Uint32Array(out.buffer, 0, length >>> 2);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x >>> 0;
  }
  for (let i = words.length * 4; i < length; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
}

/** `n` deterministic pseudo-random bytes, one xorshift step per byte (the cas tests' historic generator). */
export function bytesOf(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed * 2654435761 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** `n` bytes from the OS random source. */
export function randomOf(n: number): Uint8Array {
  return new Uint8Array(randomBytes(n));
}

/** Byte equality without a deep-equal walk (fast for large buffers). */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}
