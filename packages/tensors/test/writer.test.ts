import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { createNodeHasher } from '@tensorfs/cas';
import {
  bytesSource,
  type ManifestFileEntry,
  writeGguf,
  writeSafetensors,
  writeSafetensorsHeader,
} from '@tensorfs/format';
import { planAndHash } from '@tensorfs/planner';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { commit, openTensors, TensorWriter } from '../src/index.js';
import { expectCode, noise } from '@tensorfs/testkit';
import { FIXTURES, importTree, type TestStore, tempStore, STORE_KINDS } from './helpers.js';

const MiB = 1024 * 1024;

/** The records the planner cuts `bytes` into. */
async function plannerRecords(bytes: Uint8Array) {
  const hasher = createNodeHasher({ threads: 1 });
  try {
    const plan = await planAndHash(bytesSource(bytes), { hasher });
    return { profile: plan.profile, records: plan.records.map((r) => ({ digest: r.digest, length: r.length })) };
  } finally {
    await hasher.close?.();
  }
}

/** The bytes of a written entry, read back through its records. */
async function entryBytes(t: TestStore, entry: ManifestFileEntry): Promise<Uint8Array> {
  return (await t.store.recordsSource(entry.records, { verify: true }).read(0, entry.size)).slice();
}

/** Yields `bytes` in pieces of `size` (the last one shorter). */
async function* piecesOf(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

describe.each(STORE_KINDS)('TensorWriter: byte-exact round trips (%s store)', (kind) => {
  let t: TestStore;
  beforeAll(async () => {
    t = await tempStore(kind);
  });
  afterAll(() => t.close());

  /**
   * Imports a fixture, reads every tensor, writes them back in source order with `add`, commits,
   * exports, and compares with the original bytes and the planner's records.
   */
  async function roundTrip(fixture: string | Uint8Array, name: string) {
    const original =
      typeof fixture === 'string' ? new Uint8Array(await fsp.readFile(path.join(FIXTURES, fixture))) : fixture;
    await importTree(t, { [name]: original }, `rt/${name}`);
    const set = await openTensors(t.store, `rt/${name}`);
    const header = set.header(name);
    const writer = new TensorWriter(t.store, name, {
      ...(header.format === 'gguf'
        ? { ggufHeader: set.ggufHeader(name) }
        : header.header.metadata
          ? { metadata: header.header.metadata }
          : {}),
    });
    for (const view of set) await writer.add(view.name, view.dtype, view.shape, await view.read());
    const entry = await writer.finish();
    expect(entry).toEqual(set.entry(name));
    const { snapshot } = await commit(t.store, { put: [entry], ref: `rt/${name}-written` });
    await writer.close();
    expect(await t.fileBytes(snapshot, name)).toEqual(original);
    expect({ profile: entry.profile, records: entry.records }).toEqual(await plannerRecords(original));
  }

  it('reproduces a file written by the Python safetensors package', async () => {
    await roundTrip('tiny.safetensors', 'tiny.safetensors');
  });

  it('reproduces both shards of a sharded model', async () => {
    await roundTrip('sharded/model-00001-of-00002.safetensors', 'a.safetensors');
    await roundTrip('sharded/model-00002-of-00002.safetensors', 'b.safetensors');
  });

  it('reproduces a GGUF file written by gguf-py, metadata block and paddings included', async () => {
    await roundTrip('tiny.gguf', 'tiny.gguf');
  });

  it('reproduces a big-endian GGUF file (tensor bytes stay as stored)', async () => {
    await roundTrip('tiny-be.gguf', 'be.gguf');
  });

  it('reproduces a file of our canonical writer with several metadata keys', async () => {
    const tensors = [
      { name: 'z', dtype: 'F32', shape: [3n, 5n], data: noise(60, 3) },
      { name: 'a', dtype: 'BF16', shape: [7n], data: noise(14, 4) },
      { name: 'm', dtype: 'U8', shape: [0n], data: new Uint8Array(0) },
      { name: 'q', dtype: 'I8', shape: [9n], data: noise(9, 5) },
    ];
    const metadata = new Map([
      ['zeta', '1'],
      ['alpha', 'two'],
      ['mid', '{"json": true}'],
    ]);
    const { bytes, tensors: infos } = writeSafetensorsHeader(
      tensors.map((x) => ({ name: x.name, dtype: x.dtype, shape: x.shape })),
      { metadata },
    );
    const file = new Uint8Array(bytes.length + tensors.reduce((n, x) => n + x.data.length, 0));
    file.set(bytes);
    for (const info of infos) file.set(tensors.find((x) => x.name === info.name)!.data, info.byteOffset);
    await roundTrip(file, 'canon.safetensors');
  });
});

describe.each(STORE_KINDS)('TensorWriter: the planner grid (%s store)', (kind) => {
  let t: TestStore;
  beforeAll(async () => {
    t = await tempStore(kind);
  });
  afterAll(() => t.close());

  it('cuts a tensor above 64 MiB every 64 MiB from its start, exactly as the planner (safetensors)', async () => {
    const big = noise(64 * MiB + 8, 11);
    const small = noise(12, 12);
    const writer = new TensorWriter(t.store, 'big.safetensors', { metadata: { format: 'pt' } });
    await writer.add('small', 'F32', [3], small);
    // Odd piece sizes: the writer regroups them on the 64 MiB grid.
    await writer.add('big', 'U8', [big.length], piecesOf(big, MiB + 7));
    const entry = await writer.finish();
    await writer.close();
    expect(entry.records.map((r) => r.length)).toEqual([entry.records[0]!.length, 12, 64 * MiB, 8]);
    const bytes = await entryBytes(t, entry);
    expect({ profile: entry.profile, records: entry.records }).toEqual(await plannerRecords(bytes));
    // Read back: a two-object tensor, by pieces, whole and into a buffer, with and without verify.
    await commit(t.store, { put: [entry], ref: 'big' });
    const view = (await openTensors(t.store, 'big')).get('big');
    expect(view.digests.length).toBe(2);
    const pieces: number[] = [];
    for await (const piece of view.pieces()) pieces.push(piece.length);
    expect(pieces).toEqual([64 * MiB, 8]);
    expect(Buffer.compare(await view.read({ verify: true }), big)).toBe(0);
    const into = new Uint8Array(big.length + 1);
    await view.readInto(into, 1);
    expect(Buffer.compare(into.subarray(1), big)).toBe(0);
    const aborted = AbortSignal.abort();
    await expectCode(() => view.read({ signal: aborted }), 'cancelled');
  });

  it('cuts and pads GGUF tensors exactly as the planner, one object per distinct padding', async () => {
    const big = noise(64 * MiB + 5, 21);
    const writer = new TensorWriter(t.store, 'big.gguf');
    await writer.add('a', 'F32', [3], noise(12, 22));
    await writer.add('big', 'I8', [big.length], big);
    await writer.add('c', 'F16', [2, 3], noise(12, 23));
    await writer.add('q', 'Q8_0', [1, 32], noise(34, 24));
    const entry = await writer.finish();
    await writer.close();
    // header, a, pad(20), big 64 MiB, big 5, pad(27), c, pad(20), q, pad(30)
    expect(entry.records.slice(1).map((r) => r.length)).toEqual([12, 20, 64 * MiB, 5, 27, 12, 20, 34, 30]);
    expect(entry.records[2]!.digest).toBe(entry.records[7]!.digest);
    const bytes = await entryBytes(t, entry);
    expect({ profile: entry.profile, records: entry.records }).toEqual(await plannerRecords(bytes));
  });

  it('writes a GGUF equal to format.writeGguf for the same tensors', async () => {
    const tensors = [
      { name: 'w', type: 'Q4_K', dims: [256n, 2n], data: noise(288, 31) },
      { name: 'n', type: 'F32', dims: [5n], data: noise(20, 32) },
    ];
    const expected = writeGguf({ metadata: [{ key: 'general.architecture', type: 'string', value: 'x' }], tensors });
    await importTree(t, { 'x.gguf': expected }, 'x');
    const template = (await openTensors(t.store, 'x')).ggufHeader('x.gguf');
    const writer = new TensorWriter(t.store, 'x.gguf', { ggufHeader: template });
    for (const x of tensors) await writer.add(x.name, x.type, [...x.dims].reverse(), x.data);
    expect(await entryBytes(t, await writer.finish())).toEqual(expected);
    await writer.close();
  });
});

describe.each(STORE_KINDS)('TensorWriter: seams (%s store)', (kind) => {
  let t: TestStore;
  beforeAll(async () => {
    t = await tempStore(kind);
  });
  afterAll(() => t.close());

  it('inherits a tensor cut at seams with its seam objects; the file equals the seamed plan', async () => {
    // A fused qkv [12, 4] F32 stored with seams where q, k and v split (every 64 bytes).
    const qkv = noise(192, 41);
    const bytes = writeSafetensors([
      { name: 'qkv', dtype: 'F32', shape: [12, 4], data: qkv },
      { name: 'o', dtype: 'F32', shape: [4], data: noise(16, 42) },
    ]);
    const seams = { qkv: [64, 128] };
    const hasher = createNodeHasher({ threads: 1 });
    const plan = await planAndHash(bytesSource(bytes), {
      hasher,
      seams,
      onRecord: async (_record, pieces) => {
        await t.store.put(pieces!);
      },
    });
    await hasher.close?.();
    const entry: ManifestFileEntry = {
      path: 'fused.safetensors',
      kind: 'file',
      mode: 0o644,
      size: bytes.length,
      profile: plan.profile,
      records: plan.records,
    };
    await commit(t.store, { put: [entry], ref: 'fused' });
    const set = await openTensors(t.store, 'fused');
    const view = set.get('qkv');
    expect(view.records.map((r) => r.length)).toEqual([64, 64, 64]);
    expect(Buffer.compare(await view.read({ verify: true }), qkv)).toBe(0);
    const writer = new TensorWriter(t.store, 'fused.safetensors');
    for (const v of set) await writer.inherit(v);
    const written = await writer.finish();
    await writer.close();
    expect(written.records).toEqual(plan.records);
  });

  it('adds a tensor with seams: the same objects as the planner cutting the same file with the same seams', async () => {
    // The writer used to re-implement the grid and could not honour seams; both now use cutTensor.
    const qkv = noise(192, 43);
    const o = noise(16, 44);
    const bytes = writeSafetensors([
      { name: 'qkv', dtype: 'F32', shape: [12, 4], data: qkv },
      { name: 'o', dtype: 'F32', shape: [4], data: o },
    ]);
    const seams = { qkv: [128, 64, 64] }; // unsorted and repeated: normalised as the planner does
    const hasher = createNodeHasher({ threads: 1 });
    const plan = await planAndHash(bytesSource(bytes), { hasher, seams });
    await hasher.close?.();
    const writer = new TensorWriter(t.store, 'split.safetensors', { seams });
    await writer.add('qkv', 'F32', [12, 4], piecesOf(qkv, 50));
    await writer.add('o', 'F32', [4], o);
    const written = await writer.finish();
    await writer.close();
    expect(written.records).toEqual(plan.records);
    expect(written.records.map((r) => r.length).slice(1)).toEqual([64, 64, 64, 16]);
  });

  it('refuses seams outside a tensor as the planner does', async () => {
    const writer = new TensorWriter(t.store, 'bad.safetensors', { seams: { w: [16] } });
    await expectCode(() => writer.add('w', 'F32', [4], noise(16, 45)), 'invalid_argument', 'planner.seam_offset');
  });
});

describe.each(STORE_KINDS)('TensorWriter: refusals (%s store)', (kind) => {
  let t: TestStore;
  beforeEach(async () => {
    t = await tempStore(kind);
  });
  afterEach(() => t.close());

  it('refuses bad names, dtypes and shapes before writing anything', async () => {
    const before = await t.objects();
    const st = new TensorWriter(t.store, 'x.safetensors');
    const cases: [string, string, (number | bigint)[]][] = [
      ['__metadata__', 'F32', [1]],
      ['a', 'F33', [1]],
      ['a', 'f32', [1]],
      ['a', 'F32', [-1]],
      ['a', 'F4', [3]],
    ];
    for (const [name, dtype, shape] of cases) {
      const w = new TensorWriter(t.store, 'x.safetensors');
      await expectCode(() => w.add(name, dtype, shape, new Uint8Array(4)), 'invalid_argument');
    }
    await st.add('a', 'F32', [1], new Uint8Array(4));
    await expectCode(() => st.add('a', 'F32', [1], new Uint8Array(4)), 'invalid_argument');
    const gguf = [
      ['x'.repeat(64), 'F32', [1]],
      ['a', 'Q4_2', [32]],
      ['a', 'NOPE', [32]],
      ['a', 'Q8_0', [31]],
      ['a', 'F32', [1, 1, 1, 1, 1]],
    ] as const;
    for (const [name, dtype, shape] of gguf) {
      const w = new TensorWriter(t.store, 'x.gguf');
      await expectCode(() => w.add(name, dtype, [...shape], new Uint8Array(4)), 'invalid_argument');
    }
    const after = await t.objects();
    expect(after.size).toBe(before.size + 1); // only st's 'a'
  });

  it('refuses data of the wrong length, fails the writer, and leaves nothing referenced', async () => {
    const w = new TensorWriter(t.store, 'x.safetensors');
    await w.add('ok', 'F32', [2], new Uint8Array(8));
    await expectCode(() => w.add('short', 'F32', [4], new Uint8Array(15)), 'invalid_argument');
    await expectCode(() => w.finish(), 'invalid_argument');
    const w2 = new TensorWriter(t.store, 'y.safetensors');
    await expectCode(() => w2.add('long', 'U8', [10], piecesOf(noise(11, 1), 4)), 'invalid_argument');
    const w3 = new TensorWriter(t.store, 'z.gguf');
    await expectCode(() => w3.add('q', 'Q8_0', [32], new Uint8Array(32)), 'invalid_argument');
    expect(await t.refNames()).toEqual([]);
    // A failed writer releases its own lease at once: GC takes what it stored, no close() needed.
    await t.gc();
    expect((await t.objects()).size).toBe(0);
  });

  it('refuses a second add while one is pending, and any use after finish', async () => {
    const w = new TensorWriter(t.store, 'x.safetensors');
    const pending = w.add('a', 'U8', [4], new Uint8Array(4));
    await expectCode(() => w.add('b', 'U8', [4], new Uint8Array(4)), 'invalid_argument');
    await pending;
    await w.finish();
    await expectCode(() => w.add('c', 'U8', [1], new Uint8Array(1)), 'invalid_argument');
    await expectCode(() => w.finish(), 'invalid_argument');
    await w.close();
  });

  it('a cancelled add is cancelled and fails the writer', async () => {
    const controller = new AbortController();
    const w = new TensorWriter(t.store, 'x.safetensors', { signal: controller.signal });
    await w.add('a', 'U8', [4], new Uint8Array(4));
    async function* slow(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(2);
      controller.abort();
      yield new Uint8Array(2);
    }
    await expectCode(() => w.add('b', 'U8', [4], slow()), 'cancelled');
    await expectCode(() => w.finish(), 'invalid_argument');
    await w.close();
  });

  it('refuses a path that is not .safetensors or .gguf, and options of the other format', async () => {
    await expectCode(() => new TensorWriter(t.store, 'x.bin'), 'invalid_argument');
    await expectCode(() => new TensorWriter(t.store, '/abs.safetensors'), 'invalid_argument');
    await expectCode(() => new TensorWriter(t.store, 'x.gguf', { metadata: { a: 'b' } }), 'invalid_argument');
  });

  it('inherits across formats when the dtype exists in both, and refuses when it does not', async () => {
    await importTree(t, { 'm.safetensors': 'tiny.safetensors', 'm.gguf': 'tiny.gguf' }, 'm');
    const set = await openTensors(t.store, 'm');
    const before = await t.objects();
    const g = new TensorWriter(t.store, 'out.gguf');
    await g.inherit(set.get('embed.weight'));
    await g.inherit(set.get('layer.0.attn.q.weight'), { name: 'renamed.q' });
    const s = new TensorWriter(t.store, 'out.safetensors');
    await expectCode(() => s.inherit(set.get('blk.0.attn_q.weight')), 'invalid_argument');
    const entry = await g.finish();
    const out = new Set([...(await t.objects())].filter((x) => !before.has(x)));
    // New: the header and the paddings only.
    expect(out.size).toBeLessThanOrEqual(3);
    for (const digest of set.get('embed.weight').digests)
      expect(entry.records.some((r) => r.digest === digest)).toBe(true);
    await g.close();
    await s.close();
  });
});
