/**
 * SHA-256 over bytes, synchronous, from `@noble/hashes` (the portable implementation the planner
 * uses too), so document digests need neither `node:crypto` nor an async WebCrypto call in a
 * browser. Lanes hash kilobyte-sized JSON documents, never tensor bytes.
 */
import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';
import { wrongArgument } from '@tensorfs/format';

/** The SHA-256 digest of `data` (32 bytes). */
export function sha256(data: Uint8Array): Uint8Array {
  if (!(data instanceof Uint8Array)) wrongArgument('lanes', 'data', 'a Uint8Array', data);
  return nobleSha256(data);
}
