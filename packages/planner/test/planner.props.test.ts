/** Properties of planAndHash over arbitrary input: it always plans, and the plan rebuilds the input. */
import { bytesSource, type ByteSource, RECORD_GRID_BYTES } from '@tensorfs/format';
import { ALIGNED_RECORD_MIN, planAndHash } from '@tensorfs/planner';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ggufBytes, safetensorsBytes, seededBytes, sha256Id, testHasher } from './helpers.js';

/** TENSORFS_SLOW=1 runs the property tests 20 times longer. */
const SCALE = process.env.TENSORFS_SLOW ? 20 : 1;

const hasher = testHasher();

const seeds = [
  safetensorsBytes(
    [
      { name: 'a', data: seededBytes(1, 40) },
      { name: 'b', dtype: 'F32', shape: [3, 2], data: seededBytes(2, 24) },
    ],
    { format: 'pt' },
  ),
  ggufBytes({ 'general.name': 'x' }, [
    { name: 'w', values: 3, data: seededBytes(3, 12) },
    { name: 'v', values: 9, data: seededBytes(4, 36) },
  ]),
];

/** Valid tensor files with random byte edits and cuts, and plain random bytes. */
const inputs = fc.oneof(
  fc.uint8Array({ maxLength: 300 }),
  fc
    .tuple(
      fc.constantFrom(...seeds),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 3 }),
      fc.option(fc.nat(), { nil: undefined }),
    )
    .map(([seed, edits, cut]) => {
      const bytes = seed.slice(0, cut === undefined ? seed.length : cut % (seed.length + 1));
      for (const [at, v] of edits) if (bytes.length > 0) bytes[at % bytes.length] = v;
      return bytes;
    }),
);

describe('planAndHash properties', () => {
  it('any bytes get a plan whose records rebuild them exactly (never an error)', async () => {
    await fc.assert(
      fc.asyncProperty(inputs, async (bytes) => {
        const pieces: Uint8Array[] = [];
        const plan = await planAndHash(bytesSource(bytes), {
          hasher,
          onRecord: (r, b) => {
            const joined = Buffer.concat(b!);
            expect(sha256Id(joined)).toBe(r.digest);
            pieces.push(Uint8Array.from(joined));
          },
        });
        expect(Buffer.concat(pieces).equals(Buffer.from(bytes))).toBe(true);
        expect(plan.size).toBe(bytes.length);
        expect(plan.records.reduce((n, r) => n + r.length, 0)).toBe(bytes.length);
        expect(plan.records.every((r) => r.length >= 1)).toBe(true);
        if (plan.profile === 'blob-v1') {
          expect(plan.records.length).toBe(bytes.length === 0 ? 0 : 1);
          expect(plan.tensors).toBeUndefined();
        } else {
          expect(plan.records.every((r) => r.length <= RECORD_GRID_BYTES)).toBe(true);
        }
      }),
      { numRuns: 400 * SCALE },
    );
  });

  it('any align gives the packed plan, the same bytes, and aligned starts for big records', async () => {
    const lengths = fc.array(
      fc.oneof(
        fc.integer({ min: 1, max: 5000 }),
        fc.integer({ min: ALIGNED_RECORD_MIN - 1, max: ALIGNED_RECORD_MIN + 70_000 }),
      ),
      { minLength: 1, maxLength: 5 },
    );
    const aligns = fc.constantFrom(2, 512, 4096, 65536, 1 << 20);
    await fc.assert(
      fc.asyncProperty(lengths, aligns, fc.integer({ min: 1, max: 3 }), async (sizes, align, concurrency) => {
        const file = safetensorsBytes(sizes.map((n, i) => ({ name: `t${i}`, data: seededBytes(i + 7, n) })));
        const packed = await planAndHash(bytesSource(file), { hasher });
        const aligned = await planAndHash(bytesSource(file), {
          hasher,
          align,
          concurrency,
          onRead: (r, b) => {
            expect(b).toHaveLength(1);
            const v = b[0]!;
            expect(Buffer.from(v).equals(Buffer.from(file.subarray(r.offset, r.offset + r.length)))).toBe(true);
            if (r.length >= ALIGNED_RECORD_MIN) {
              expect(v.byteOffset % align).toBe(0);
              expect(v.byteOffset + Math.ceil(r.length / align) * align).toBeLessThanOrEqual(v.buffer.byteLength);
            }
          },
        });
        expect(aligned).toEqual(packed);
      }),
      { numRuns: 40 * SCALE },
    );
  });

  it('reads every data byte exactly once, in order', async () => {
    const file = safetensorsBytes([
      { name: 'x', data: seededBytes(5, 100_000) },
      { name: 'y', data: seededBytes(6, 3_000_000) },
    ]);
    const base = bytesSource(file);
    const reads: [number, number][] = [];
    const source: ByteSource = {
      size: file.length,
      read: (offset, length, signal) => {
        reads.push([offset, length]);
        return base.read(offset, length, signal);
      },
    };
    for (const align of [1, 4096]) {
      reads.length = 0;
      await planAndHash(source, { hasher, concurrency: 3, align });
      // Detection reads the magic and the header; the data pass then covers [0, size) once, sequentially.
      const start = reads.map(([offset]) => offset).lastIndexOf(0);
      expect(start).toBeLessThanOrEqual(3);
      const data = reads.slice(start);
      let at = 0;
      for (const [offset, length] of data) {
        expect(offset).toBe(at);
        at += length;
      }
      expect(at).toBe(file.length);
    }
  });
});
