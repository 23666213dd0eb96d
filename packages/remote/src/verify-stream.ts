/** Streams that check length and SHA-256 on the way, withholding the last chunk until they match. */
import { createHash } from 'node:crypto';
import { type ObjectId, TensorFSError } from '@tensorfs/format';

/** `sha256:<hex>` of bytes. */
export function sha256Id(bytes: Uint8Array): ObjectId {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** Base64 of an id's 32 digest bytes (S3's `x-amz-checksum-sha256`). */
export function idBase64(id: ObjectId): string {
  return Buffer.from(id.slice(7), 'hex').toString('base64');
}

/**
 * Re-yields `source`, holding back the last chunk until the total length is `length` and the
 * digest is `id`; throws `corrupt` (`remote.digest_mismatch` / `remote.length_mismatch`) instead
 * of yielding it otherwise, so a consumer that publishes only at end-of-stream never publishes
 * bytes that do not match.
 */
export async function* verified(
  source: AsyncIterable<Uint8Array>,
  id: ObjectId,
  length: number,
): AsyncGenerator<Uint8Array> {
  const h = createHash('sha256');
  let n = 0;
  let held: Uint8Array | undefined;
  for await (const c of source) {
    if (c.length === 0) continue;
    n += c.length;
    if (n > length) throw lengthMismatch(id, length, n);
    h.update(c);
    if (held) yield held;
    held = c;
  }
  if (n !== length) throw lengthMismatch(id, length, n);
  const got = `sha256:${h.digest('hex')}`;
  if (got !== id) {
    throw new TensorFSError('corrupt', 'object bytes do not match their id', {
      details: { rule: 'remote.digest_mismatch', digest: id, actual: got },
    });
  }
  if (held) yield held;
}

function lengthMismatch(id: ObjectId, expected: number, actual: number): TensorFSError {
  return new TensorFSError('corrupt', 'object length does not match', {
    details: { rule: 'remote.length_mismatch', digest: id, expected, actual },
  });
}
