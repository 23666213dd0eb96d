import { bytesSource, toHex } from '@tensorfs/format';
import { nobleHasher, planAndHash, webCryptoHasher } from '@tensorfs/planner';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { safetensorsBytes, seededBytes, testHasher } from './helpers.js';

const sha = (...pieces: Uint8Array[]) => {
  const h = createHash('sha256');
  for (const p of pieces) h.update(p);
  return h.digest('hex');
};

describe.each([
  ['nobleHasher', nobleHasher()],
  ['webCryptoHasher', webCryptoHasher()],
])('%s', (_name, hasher) => {
  it('digests the concatenation of its pieces, shared or not, without touching them', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.uint8Array({ maxLength: 3000 }), { maxLength: 4 }), async (pieces) => {
        const before = pieces.map((p) => sha(p));
        expect(toHex(await hasher.digest(pieces))).toBe(sha(...pieces));
        expect(pieces.map((p) => sha(p))).toEqual(before);
        const shared = pieces.map((p) => {
          const s = new Uint8Array(new SharedArrayBuffer(p.length + 3), 3, p.length);
          s.set(p);
          return s;
        });
        expect(toHex(await hasher.digest(shared))).toBe(sha(...pieces));
      }),
      { numRuns: 100 },
    );
  });

  it('streams', async () => {
    const bytes = seededBytes(9, 10_000);
    const s = hasher.stream();
    await s.update(bytes.subarray(0, 1234));
    await s.update(bytes.subarray(1234));
    expect(toHex(await s.digest())).toBe(sha(bytes));
  });

  it('gives planAndHash the same plan as node:crypto', async () => {
    const file = safetensorsBytes([
      { name: 'a', data: seededBytes(1, 5000) },
      { name: 'b', data: seededBytes(2, 70_000) },
    ]);
    const want = await planAndHash(bytesSource(file), { hasher: testHasher() });
    expect(await planAndHash(bytesSource(file), { hasher })).toEqual(want);
  });
});
