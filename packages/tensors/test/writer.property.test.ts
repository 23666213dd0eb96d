import { createNodeHasher } from '@tensorfs/cas';
import {
  bytesSource,
  ggmlTypeByName,
  type ManifestFileEntry,
  parseGgufHeader,
  safetensorsByteLength,
  writeGguf,
  writeSafetensors,
} from '@tensorfs/format';
import { planAndHash } from '@tensorfs/planner';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TensorData, TensorWriter } from '../src/index.js';
import { noise } from '@tensorfs/testkit';
import { type TestStore, tempStore } from './helpers.js';

/** Hands the data over whole, in pieces of `split` bytes, or as a sync iterable. */
function feed(data: Uint8Array, how: number): TensorData {
  if (how === 0) return data;
  const pieces: Uint8Array[] = [];
  for (let at = 0; at < data.length; at += how) pieces.push(data.subarray(at, at + how));
  if (how % 2 === 0) return pieces;
  return (async function* () {
    yield* pieces;
  })();
}

describe('TensorWriter equals the in-memory writers and the planner for any tensor list (property)', () => {
  let t: TestStore;
  const hasher = createNodeHasher({ threads: 1 });
  beforeAll(async () => {
    t = await tempStore();
  });
  afterAll(async () => {
    await hasher.close?.();
    await t.close();
  });

  async function check(entry: ManifestFileEntry, expected: Uint8Array) {
    const bytes = (await t.store.recordsSource(entry.records).read(0, entry.size)).slice();
    expect(bytes).toEqual(expected);
    const plan = await planAndHash(bytesSource(expected), { hasher });
    expect(entry.profile).toBe(plan.profile);
    expect(entry.records).toEqual(plan.records.map((r) => ({ digest: r.digest, length: r.length })));
  }

  const dim = fc.integer({ min: 0, max: 5 });
  const feedHow = fc.constantFrom(0, 1, 2, 3, 7);

  it('safetensors', async () => {
    const tensor = fc.record({
      dtype: fc.constantFrom('F32', 'F16', 'BF16', 'U8', 'I64', 'BOOL', 'F8_E4M3', 'C64'),
      shape: fc.array(dim, { maxLength: 3 }),
      how: feedHow,
      seed: fc.nat(),
    });
    const metadata = fc.option(fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }));
    await fc.assert(
      fc.asyncProperty(fc.array(tensor, { maxLength: 6 }), metadata, async (list, meta) => {
        const tensors = list.map((x, i) => {
          const length = Number(safetensorsByteLength(x.dtype, x.shape));
          return { name: `t${i}`, dtype: x.dtype, shape: x.shape, data: noise(length, x.seed), how: x.how };
        });
        const options = meta === null ? {} : { metadata: meta };
        const writer = new TensorWriter(t.store, 'p.safetensors', options);
        for (const x of tensors) await writer.add(x.name, x.dtype, x.shape, feed(x.data, x.how));
        const entry = await writer.finish();
        await writer.close();
        await check(entry, writeSafetensors(tensors, { ...options, order: 'given' }));
      }),
      { numRuns: 25 },
    );
  });

  it('GGUF', async () => {
    const tensor = fc.record({
      dtype: fc.constantFrom('F32', 'F16', 'I8', 'Q8_0', 'Q4_0', 'Q4_K'),
      rows: fc.array(dim, { maxLength: 2 }),
      blocks: fc.integer({ min: 0, max: 2 }),
      how: feedHow,
      seed: fc.nat(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(tensor, { maxLength: 5 }), fc.constantFrom(8, 32, 64), async (list, alignment) => {
        const tensors = list.map((x, i) => {
          const type = ggmlTypeByName(x.dtype)!;
          // Row-major shape: outer dims, then the contiguous dim (a whole number of blocks).
          const shape = [...x.rows, x.blocks * type.blockSize];
          const elements = shape.reduce((n, d) => n * d, 1);
          const data = noise((elements / type.blockSize) * type.typeSize, x.seed);
          return { name: `t${i}`, type: x.dtype, shape, dims: [...shape].reverse(), data, how: x.how };
        });
        const metadata = [
          { key: 'general.architecture', type: 'string' as const, value: 'p' },
          { key: 'general.alignment', type: 'uint32' as const, value: alignment },
        ];
        const expected = writeGguf({ metadata, tensors });
        // The template comes from a header carrying this metadata block verbatim.
        const header = parseGgufHeader(expected);
        const { offset, length } = header.metadataBlock;
        const template = {
          version: header.version,
          endianness: header.endianness,
          alignment: header.alignment,
          metadata: { raw: expected.slice(offset, offset + length), count: header.metadata.length },
        };
        const writer = new TensorWriter(t.store, 'p.gguf', { ggufHeader: template });
        for (const x of tensors) await writer.add(x.name, x.type, x.shape, feed(x.data, x.how));
        const entry = await writer.finish();
        await writer.close();
        await check(entry, expected);
      }),
      { numRuns: 25 },
    );
  });
});
