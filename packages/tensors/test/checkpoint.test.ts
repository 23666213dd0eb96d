import { readFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { decodeCheckpoint, isTensorFSError, type ObjectId } from '@tensorfs/format';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointWriter, openCheckpoint, openTensors, type TensorData } from '../src/index.js';
import { noise, sha256Hex as sha256, storedObjects as listObjects } from '@tensorfs/testkit';
import { importTree, STORE_KINDS, type TestStore, tempStore } from './helpers.js';

/** The TensorFSError code `fn` throws (fails the test if it throws anything else, or nothing). */
async function codeOf(fn: () => unknown): Promise<string> {
  try {
    await fn();
  } catch (error) {
    if (!isTensorFSError(error)) throw error;
    return error.code;
  }
  throw new Error('expected a TensorFSError');
}

const MiB = 1024 * 1024;

/** The seeded bytes of vectors/generate.py (`seeded_bytes`): fmix32 words, little-endian. */
function seeded(seed: number, n: number): Uint8Array {
  const words = Math.ceil(n / 4);
  const out = new Uint8Array(words * 4);
  const view = new DataView(out.buffer);
  const base = Math.imul(seed, 0x9e3779b9) >>> 0;
  for (let j = 0; j < words; j++) {
    let h = (base + j) >>> 0;
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b) >>> 0;
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35) >>> 0;
    h ^= h >>> 16;
    view.setUint32(j * 4, h >>> 0, true);
  }
  return out.subarray(0, n);
}

const vectors = JSON.parse(
  readFileSync(new URL('../../../vectors/v1/cozytensors/headers.json', import.meta.url), 'utf8'),
) as {
  valid: {
    name: string;
    hex: string;
    id: string;
    header: {
      components: {
        name: string;
        cls: string;
        config: never;
        tensors: { name: string; dtype: string; shape: number[] }[];
      }[];
    };
    inputs?: Record<string, { seed: number; length: number }>;
  }[];
};

describe.each(STORE_KINDS)('CheckpointWriter → openCheckpoint (%s store)', (kind) => {
  let t: TestStore;
  beforeEach(async () => {
    t = await tempStore(kind);
  });
  afterEach(async () => {
    await t.close();
  });

  it('reproduces the split-64mib vector exactly (the 64 MiB grid from the tensor start)', async () => {
    const v = vectors.valid.find((x) => x.name === 'split-64mib')!;
    const w = new CheckpointWriter(t.store);
    const c = v.header.components[0]!;
    const comp = w.component(c.name, { cls: c.cls, config: c.config });
    for (const tensor of c.tensors) {
      const input = v.inputs![`${c.name}/${tensor.name}`]!;
      await comp.put(tensor.name, seeded(input.seed, input.length), { dtype: tensor.dtype, shape: tensor.shape });
    }
    const { id, bytes } = await w.commit({ name: 'v' });
    expect(id).toBe(v.id);
    expect(Buffer.from(bytes).toString('hex')).toBe(v.hex);
  });

  it('reproduces the pipeline vector tensors (ids of the records match hashlib)', async () => {
    const v = vectors.valid.find((x) => x.name === 'pipeline')!;
    const w = new CheckpointWriter(t.store);
    const unet = v.header.components.find((c) => c.name === 'unet')!;
    const comp = w.component('unet', { cls: unet.cls, config: unet.config });
    for (const tensor of unet.tensors) {
      const input = v.inputs![`unet/${tensor.name}`]!;
      await comp.put(tensor.name, seeded(input.seed, input.length), { dtype: tensor.dtype, shape: tensor.shape });
    }
    const { header } = await w.commit();
    const expected = decodeCheckpoint(Buffer.from(v.hex, 'hex')).components.find((c) => c.name === 'unet')!;
    expect(header.components[0]!.tensors).toEqual(expected.tensors);
  });

  it('round-trips tensors, encodings, configs and assets; construction order kept', async () => {
    const w = new CheckpointWriter(t.store);
    w.pipeline({ cls: 'Pipe', config: { steps: 20, guidance: 7.5 } });
    const te = w.component('text_encoder', { cls: 'CLIPTextModel', config: { hidden_size: 4 } });
    const a = noise(64, 3);
    const b = noise(MiB + 3, 4).subarray(0, MiB);
    await te.put('z.weight', a, { dtype: 'F32', shape: [4, 4] });
    await te.put(
      'a.weight',
      (async function* () {
        yield b.subarray(0, 1000);
        yield b.subarray(1000);
      })(),
      { dtype: 'BF16', shape: [MiB / 2] },
    );
    await te.asset('tokenizer.json', new TextEncoder().encode('{"v": 1}'));
    await te.asset('empty.txt', new Uint8Array(0));
    w.component('scheduler', { cls: 'Euler', config: { beta: 0.1 } });
    await w.asset('scheduler_config.json', new TextEncoder().encode('{}'));
    const q = noise(16, 5);
    const s = noise(4, 6);
    w.component('unet', { cls: 'UNet', config: null });
    await w.putEncoded('q', {
      dtype: 'F16',
      shape: [4, 8],
      scheme: 'acme.int4',
      params: { group: 16 },
      parts: { qweight: { dtype: 'U8', shape: [16], data: q }, scales: { dtype: 'F16', shape: [2], data: s } },
    });
    const { id, bytes } = await w.commit({ name: 'local/cp' });

    for (const source of ['local/cp', id, bytes] as const) {
      const cp = await openCheckpoint(t.store, source);
      expect(cp.id).toBe(id);
      expect(cp.pipeline).toEqual({ cls: 'Pipe', config: { steps: 20, guidance: 7.5 } });
      expect([...cp.components.keys()]).toEqual(['text_encoder', 'scheduler', 'unet']);
      const tec = cp.component('text_encoder');
      expect(tec.cls).toBe('CLIPTextModel');
      expect([...tec.tensors.keys()]).toEqual(['z.weight', 'a.weight']);
      expect(tec.assets).toEqual(['empty.txt', 'tokenizer.json']);
      expect(new TextDecoder().decode(await tec.asset('tokenizer.json'))).toBe('{"v": 1}');
      expect(await tec.asset('empty.txt')).toEqual(new Uint8Array(0));
      expect(sha256(await tec.tensors.get('z.weight')!.read({ verify: true }))).toBe(sha256(a));
      const big = tec.tensors.get('a.weight')!;
      expect(big.shape).toEqual([BigInt(MiB / 2)]);
      expect(sha256(await big.read())).toBe(sha256(b));
      const buf = new Uint8Array(MiB + 10);
      expect(sha256(await big.readInto(buf, 10))).toBe(sha256(b));
      const pieces: Uint8Array[] = [];
      for await (const p of big.pieces()) pieces.push(p);
      expect(pieces).toHaveLength(1);
      const enc = cp.component('unet').tensors.get('q')!;
      expect(enc.encoding).toEqual({
        scheme: 'acme.int4',
        params: { group: 16 },
        parts: { qweight: { dtype: 'U8', shape: [16n] }, scales: { dtype: 'F16', shape: [2n] } },
      });
      expect(await enc.part('qweight').read()).toEqual(q);
      expect(await enc.part('scales').read()).toEqual(s);
      expect(await codeOf(() => enc.read())).toBe('unsupported');
      expect(await codeOf(() => enc.part('nope'))).toBe('not_found');
      expect(await codeOf(() => cp.component('vae'))).toBe('not_found');
      expect(await codeOf(() => tec.asset('nope'))).toBe('not_found');
    }
  });

  it('a tensor of 64 MiB + 4 bytes is two objects, shared with a safetensors snapshot of the same bytes', async () => {
    const data = noise(64 * MiB + 4, 9);
    const w = new CheckpointWriter(t.store);
    w.component('m', { cls: '', config: {} });
    await w.put('big', data, { dtype: 'U8', shape: [data.length] });
    const { header } = await w.commit({ name: 'cp' });
    const records = header.components[0]!.tensors[0]!.records!;
    expect(records.map((r) => r.length)).toEqual([64 * MiB, 4]);
    // The same tensor imported as a safetensors file uses the very same objects.
    const { writeSafetensors } = await import('@tensorfs/format');
    const file = writeSafetensors([{ name: 'big', dtype: 'U8', shape: [BigInt(data.length)], data }]);
    const before = await t.objects();
    await importTree(t, { 'model.safetensors': file }, 'snap');
    const set = await openTensors(t.store, 'snap');
    expect(set.get('big').records).toEqual(records);
    const added = [...(await t.objects())].filter((o) => !before.has(o));
    // the safetensors header object and the manifest: no tensor bytes. (A local store's import also
    // records the tree's whole-file SHA-256 list: the very object the checkpoint's writer recorded
    // for its export, the same file.)
    const tree = (await t.store.getRef('snap'))!;
    const list = await t.store.getRef(`_hf/sha256/${tree.slice(7)}`);
    if (list !== null) expect(list).toBe(await t.store.getRef(`_hf/sha256/${(await t.store.getRef('cp'))!.slice(7)}`));
    expect(added).toHaveLength(2);
  });

  it('base: keeps every tensor of the base without reading it, replaces in place, adds at the end', async () => {
    const w = new CheckpointWriter(t.store);
    w.component('unet', { cls: 'U', config: { v: 1 } });
    await w.put('a', noise(8, 1), { dtype: 'U8', shape: [8] });
    await w.put('b', noise(8, 2), { dtype: 'U8', shape: [8] });
    w.component('vae', { cls: 'V', config: {} });
    await w.put('c', noise(8, 3), { dtype: 'U8', shape: [8] });
    const base = await w.commit({ name: 'sd' });

    const f = new CheckpointWriter(t.store, { base: 'sd' });
    const unet = f.component('unet', { cls: 'U', config: { v: 2 } });
    await unet.put('a', noise(8, 7), { dtype: 'U8', shape: [8] });
    await unet.put('d', noise(8, 8), { dtype: 'U8', shape: [8] });
    const tuned = await f.commit({ name: 'sd' });
    expect(tuned.base).toBe(base.id);
    const cp = await openCheckpoint(t.store, 'sd');
    expect([...cp.components.keys()]).toEqual(['unet', 'vae']);
    expect([...cp.component('unet').tensors.keys()]).toEqual(['a', 'b', 'd']);
    expect(cp.component('unet').config).toEqual({ v: 2 });
    expect(await cp.component('unet').tensors.get('a')!.read()).toEqual(noise(8, 7));
    expect(cp.component('unet').tensors.get('b')!.records).toEqual(base.header.components[0]!.tensors[1]!.records);
    expect(cp.component('vae').header).toEqual(base.header.components[1]);
  });

  it("resume: a killed writer's journal lets the next one skip what it stored, reading none of its data", async () => {
    const journal = path.join(t.scratch, 'convert.journal');
    const encoded = (data: TensorData) => ({
      dtype: 'F32',
      shape: [2],
      scheme: 'x.int8',
      params: { group: 2 },
      parts: { d: { dtype: 'U8', shape: [4], data } },
    });
    const killed = new CheckpointWriter(t.store, { resume: journal });
    killed.component('m', { cls: 'M', config: {} });
    await killed.put('a', noise(1000, 1), { dtype: 'U8', shape: [1000] });
    await killed.putEncoded('q', encoded(noise(4, 3)));
    // Killed mid-append: a torn last line.
    await fsp.appendFile(journal, '{"component":"m","tens');

    const untouchable: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]() {
        throw new Error('the data of a journaled tensor was read');
      },
    };
    const resumed = new CheckpointWriter(t.store, { resume: journal });
    resumed.component('m', { cls: 'M', config: {} });
    await resumed.put('a', untouchable, { dtype: 'U8', shape: [1000] });
    await resumed.putEncoded('q', encoded(untouchable));
    // A different shape is not the journaled tensor: its data is read.
    await resumed.put('b', noise(8, 2), { dtype: 'U8', shape: [8] });
    expect(resumed.resumed).toBe(2);
    const done = await resumed.commit({ name: 'r' });
    await expect(fsp.access(journal)).rejects.toThrow();

    const straight = new CheckpointWriter(t.store);
    straight.component('m', { cls: 'M', config: {} });
    await straight.put('a', noise(1000, 1), { dtype: 'U8', shape: [1000] });
    await straight.putEncoded('q', encoded(noise(4, 3)));
    await straight.put('b', noise(8, 2), { dtype: 'U8', shape: [8] });
    expect((await straight.commit()).id).toBe(done.id);
  });

  it('assetRecords takes stored objects without reading them, and refuses absent ones', async () => {
    const { id, length } = await t.store.put([new TextEncoder().encode('{"vocab": 1}')]);
    const w = new CheckpointWriter(t.store);
    w.component('tok', { cls: '', config: null });
    await w.assetRecords('vocab.json', [{ digest: id, length }]);
    const cp = await openCheckpoint(t.store, (await w.commit()).id);
    expect(new TextDecoder().decode(await cp.component('tok').asset('vocab.json'))).toBe('{"vocab": 1}');
    const bad = new CheckpointWriter(t.store);
    bad.component('tok', { cls: '', config: null });
    expect(await codeOf(() => bad.assetRecords('x', [{ digest: `sha256:${'0'.repeat(64)}`, length: 1 }]))).toBe(
      'not_found',
    );
  });

  it('commit moves a ref only by compare-and-swap', async () => {
    const w1 = new CheckpointWriter(t.store);
    w1.component('m', { cls: '', config: 1 });
    await w1.commit({ name: 'r' });
    const w2 = new CheckpointWriter(t.store);
    w2.component('m', { cls: '', config: 2 });
    expect(await codeOf(() => w2.commit({ name: 'r', expected: null }))).toBe('conflict');
  });

  it('a failed writer leaves nothing referenced: GC takes its objects', async () => {
    const w = new CheckpointWriter(t.store);
    w.component('m', { cls: '', config: {} });
    await w.put('ok', noise(100, 1), { dtype: 'U8', shape: [100] });
    expect(await codeOf(() => w.put('short', noise(10, 2), { dtype: 'F32', shape: [4] }))).toBe('invalid_argument');
    expect(await codeOf(() => w.put('again', noise(4, 2), { dtype: 'U8', shape: [4] }))).toBe('invalid_argument');
    expect((await t.objects()).size).toBe(2); // the good tensor and the short one (stored before its length was known)
    await t.gc();
    expect([...(await t.objects())]).toEqual([]);
  });

  it('a cancelled writer is cancelled and leaves nothing', async () => {
    const ac = new AbortController();
    const w = new CheckpointWriter(t.store, { signal: ac.signal });
    w.component('m', { cls: '', config: {} });
    await w.put('ok', noise(100, 1), { dtype: 'U8', shape: [100] });
    ac.abort();
    expect(await codeOf(() => w.put('x', noise(4, 1), { dtype: 'U8', shape: [4] }))).toBe('cancelled');
    await t.gc();
    expect([...(await t.objects())]).toEqual([]);
  });

  it('header bytes whose objects are missing open as not_found naming the object', async () => {
    const w = new CheckpointWriter(t.store);
    w.component('m', { cls: '', config: {} });
    await w.put('t', noise(32, 1), { dtype: 'U8', shape: [32] });
    const { bytes, header } = await w.commit();
    const other = await tempStore(kind);
    try {
      const err = await openCheckpoint(other.store, bytes).catch((e: unknown) => e);
      expect(isTensorFSError(err) && err.code).toBe('not_found');
      expect(isTensorFSError(err) && err.details.digest).toBe(
        header.components[0]!.tensors[0]!.records![0]!.digest as ObjectId,
      );
    } finally {
      await other.close();
    }
  });

  it('a snapshot ref is not a checkpoint', async () => {
    await importTree(t, { 'a.txt': new Uint8Array([1]) }, 'snap');
    expect(await codeOf(() => openCheckpoint(t.store, 'snap'))).toBe('invalid_argument');
  });
});

describe('checkpoints in the local store: GC, verify and du', () => {
  let t: TestStore;
  beforeEach(async () => {
    t = await tempStore('local');
  });
  afterEach(async () => {
    await t.close();
  });

  it('GC and verify follow a committed checkpoint to its tensors, assets and source', async () => {
    const snap = await importTree(t, { 'README.md': new TextEncoder().encode('hello') });
    const w = new CheckpointWriter(t.store);
    w.setSource(snap);
    w.component('m', { cls: '', config: {} });
    await w.put('t', noise(32, 1), { dtype: 'U8', shape: [32] });
    await w.asset('a.txt', new TextEncoder().encode('asset'));
    const { id } = await w.commit({ name: 'cp' });
    const before = await listObjects(t.root);
    await t.local!.gc({ graceMs: 0 });
    expect(await listObjects(t.root)).toEqual(before);
    const v = await t.local!.verify({ data: true });
    expect(v.missing).toEqual([]);
    expect(v.corrupt).toEqual([]);
    expect(v.objects).toBe(before.size);
    const usage = await t.local!.usage();
    expect(usage.refs).toEqual([expect.objectContaining({ name: 'cp', id, logicalBytes: 37 })]);
  });
});
