/**
 * Dedup invariance: a tensor's objects depend on its bytes alone. Editing everything around a
 * tensor (its name, position, neighbours, shard, the file's metadata) changes only header and
 * padding records.
 */
import { bytesSource, type GgufKV, RECORD_GRID_BYTES, writeGguf, writeSafetensors } from '@tensorfs/format';
import { type Plan, planAndHash } from '@tensorfs/planner';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { seededBytes, sha256Id, testHasher } from './helpers.js';

/** TENSORFS_SLOW=1 runs the property tests 20 times longer. */
const SCALE = process.env.TENSORFS_SLOW ? 20 : 1;

const hasher = testHasher();

interface T {
  name: string;
  dtype: string;
  shape: number[];
  data: Uint8Array;
}

const t = (name: string, dtype: string, shape: number[], bytesPer: number, seed: number): T => ({
  name,
  dtype,
  shape,
  data: seededBytes(
    seed,
    shape.reduce((n, d) => n * d, bytesPer),
  ),
});

const base: T[] = [
  t('embed.weight', 'F32', [16, 8], 4, 1),
  t('layers.0.attn.qkv.weight', 'BF16', [96, 8], 2, 2),
  t('layers.0.norm.weight', 'F16', [8], 2, 3),
  t('layers.0.mlp.weight', 'U8', [5000], 1, 4),
  t('lm_head.weight', 'F32', [16, 8], 4, 5),
];

async function st(tensors: T[], metadata?: Record<string, string>): Promise<Plan> {
  const bytes = writeSafetensors(tensors, metadata ? { metadata } : {});
  const plan = await planAndHash(bytesSource(bytes), { hasher });
  expect(plan.profile).toBe('safetensors-v1');
  return plan;
}

/** Tensor name → its record digests. */
function objects(plan: Plan): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [name, [first, last]] of plan.tensors!) {
    out.set(
      name,
      plan.records.slice(first, last + 1).map((r) => r.digest),
    );
  }
  return out;
}

/** Record indexes that belong to no tensor (header, padding). */
function nonTensorRecords(plan: Plan): number[] {
  const owned = new Set<number>();
  for (const [first, last] of plan.tensors!.values()) for (let i = first; i <= last; i++) owned.add(i);
  return plan.records.map((_, i) => i).filter((i) => !owned.has(i));
}

describe('safetensors dedup invariance', () => {
  it('inserting, deleting, reordering, renaming tensors or editing __metadata__ keeps every other tensor object', async () => {
    const reference = objects(await st(base, { format: 'pt' }));
    const variants: [string, T[], Record<string, string> | undefined, Record<string, string>][] = [
      ['insert', [base[0]!, t('new.bias', 'F32', [8], 4, 9), ...base.slice(1)], { format: 'pt' }, {}],
      ['delete', base.filter((_, i) => i !== 2), { format: 'pt' }, {}],
      ['reorder', [...base].reverse(), { format: 'pt' }, {}],
      [
        'rename',
        base.map((x) => (x.name === 'embed.weight' ? { ...x, name: 'model.embed_tokens.weight' } : x)),
        { format: 'pt' },
        { 'model.embed_tokens.weight': 'embed.weight' },
      ],
      ['metadata', base, { format: 'pt', trained_by: 'someone', steps: '1000' }, {}],
      ['no metadata', base, undefined, {}],
    ];
    for (const [what, tensors, metadata, renamed] of variants) {
      const plan = await st(tensors, metadata);
      for (const [name, digests] of objects(plan)) {
        const original = reference.get(renamed[name] ?? name);
        if (original) expect(digests, `${what}: ${name}`).toEqual(original);
      }
      // Only the header record is outside the tensors (safetensors has no padding).
      expect(nonTensorRecords(plan), what).toEqual([0]);
    }
  });

  it('moving a tensor to another shard keeps its objects, including a tensor cut on the 64 MiB grid', async () => {
    const big = t('big.weight', 'U8', [RECORD_GRID_BYTES + 3], 1, 7);
    const whole = objects(await st([...base, big]));
    const shard1 = objects(await st(base.slice(0, 2)));
    const shard2 = objects(await st([base[4]!, big, ...base.slice(2, 4)]));
    expect(new Map([...shard1, ...shard2])).toEqual(whole);
    expect(whole.get('big.weight')).toHaveLength(2);
  });

  it('holds for any tensors under any permutation and renaming (property)', async () => {
    const tensorSet = fc.uniqueArray(fc.record({ seed: fc.nat(1000), length: fc.integer({ min: 0, max: 300 }) }), {
      minLength: 1,
      maxLength: 6,
      selector: (x) => x.seed,
    });
    await fc.assert(
      fc.asyncProperty(tensorSet, fc.infiniteStream(fc.nat()), async (specs, randoms) => {
        const tensors = specs.map((s) => t(`t${s.seed}`, 'U8', [s.length], 1, s.seed));
        const shuffled = [...tensors]
          .map((x) => ({ x, k: randoms.next().value }))
          .sort((a, b) => a.k - b.k)
          .map(({ x }) => ({ ...x, name: `renamed.${x.name}` }));
        const a = objects(await st(tensors));
        const b = objects(await st(shuffled));
        for (const [name, digests] of a) expect(b.get(`renamed.${name}`)).toEqual(digests);
        // zero-length tensors own no object in either
        expect(a.size).toBe(tensors.filter((x) => x.data.length > 0).length);
      }),
      { numRuns: 40 * SCALE },
    );
  });
});

describe('GGUF dedup invariance', () => {
  const kv = (key: string, value: string): GgufKV => ({ key, type: 'string', value });
  const tensors = [
    { name: 'token_embd.weight', type: 'F32', dims: [8, 5], data: seededBytes(20, 160) },
    { name: 'blk.0.attn_q.weight', type: 'F16', dims: [7, 3], data: seededBytes(21, 42) },
    { name: 'blk.0.ffn_up.weight', type: 'Q8_0', dims: [64, 2], data: seededBytes(22, 136) },
    { name: 'output_norm.weight', type: 'F32', dims: [5], data: seededBytes(23, 20) },
  ];
  const gguf = async (metadata: GgufKV[], list = tensors, alignment?: number) => {
    const bytes = writeGguf({ metadata, tensors: list, ...(alignment ? { alignment } : {}) });
    const plan = await planAndHash(bytesSource(bytes), { hasher });
    expect(plan.profile).toBe('gguf-v1');
    return plan;
  };

  it('changing KVs, the alignment, or the tensor list changes only header and padding records', async () => {
    const metadata = [kv('general.architecture', 'llama'), kv('general.name', 'tiny')];
    const reference = await gguf(metadata);
    const want = objects(reference);
    const variants = [
      await gguf([...metadata, kv('tokenizer.ggml.model', 'gpt2'), kv('general.license', 'mit')]),
      await gguf([kv('general.architecture', 'llama'), kv('general.name', 'renamed')]),
      await gguf(metadata, [...tensors].reverse()),
      await gguf(metadata, tensors.slice(1)),
      await gguf(metadata, tensors, 64),
    ];
    for (const plan of variants) {
      for (const [name, digests] of objects(plan)) expect(digests, name).toEqual(want.get(name));
      expect(plan.records[0]!.digest).not.toBe(reference.records[0]!.digest);
      // Every non-tensor record after the header is zero padding.
      for (const i of nonTensorRecords(plan).slice(1)) {
        const { digest, length } = plan.records[i]!;
        expect(length).toBeLessThan(64);
        expect(digest).toBe(sha256Id(new Uint8Array(length)));
      }
    }
    expect(nonTensorRecords(reference)[0]).toBe(0);
  });
});
