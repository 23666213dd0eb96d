import { randomFillSync } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { isTensorFSError, type Progress, writeSafetensorsHeader } from '@tensorfs/format';
import { objectFile } from '@tensorfs/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ARENA_ALIGN,
  CheckpointWriter,
  loadedByteLength,
  loadTensors,
  openCheckpoint,
  openTensors,
  TensorPool,
  type TensorSet,
} from '../src/index.js';
import { type TestStore, tempStore } from './helpers.js';

const NAMES = ['a.weight', 'b.weight', 'c.bias', 'd.weight', 'e.empty'];

/** A safetensors file of distinct random tensors (F32, BF16, I8), one of them empty. */
function model(): { bytes: Uint8Array; byName: Map<string, Uint8Array> } {
  const shapes = [[64, 33], [1000, 17], [9], [256, 256], [0, 4]];
  const dtypes = ['F32', 'BF16', 'I8', 'BF16', 'F32'];
  const { bytes: header, tensors } = writeSafetensorsHeader(
    NAMES.map((name, i) => ({ name, dtype: dtypes[i]!, shape: shapes[i]!.map(BigInt) })),
    { order: 'given' },
  );
  const size = tensors.reduce((n, t) => Math.max(n, t.byteOffset + t.byteLength), header.length);
  const out = new Uint8Array(size);
  out.set(header);
  randomFillSync(out, header.length);
  const byName = new Map(tensors.map((t) => [t.name, out.slice(t.byteOffset, t.byteOffset + t.byteLength)]));
  return { bytes: out, byName };
}

async function failure(p: Promise<unknown>): Promise<{ code: string; rule: unknown }> {
  try {
    await p;
  } catch (e) {
    if (!isTensorFSError(e)) throw e;
    return { code: e.code, rule: e.details.rule };
  }
  throw new Error('expected a failure');
}

describe('loadTensors', () => {
  let t: TestStore;
  let set: TensorSet;
  let byName: Map<string, Uint8Array>;
  beforeEach(async () => {
    t = await tempStore('local');
    const m = model();
    byName = m.byName;
    const file = path.join(t.scratch, 'model.safetensors');
    await fsp.writeFile(file, m.bytes);
    // d.weight is cut into 4 objects (a tensor of several records).
    await t.local!.importPath(file, {
      name: 'm',
      threads: 1,
      seams: { 'model.safetensors': { 'd.weight': [32768, 65536, 98304] } },
    });
    set = await openTensors(t.store, 'm');
  });
  afterEach(async () => {
    await t.close();
  });

  it('loads every tensor byte-exact, in one aligned arena, with progress', async () => {
    const events: Progress[] = [];
    const out = await loadTensors(set, { onProgress: (p) => events.push(p), concurrency: 3, allocation: 'arena' });
    expect([...out.keys()]).toEqual(NAMES);
    for (const [name, bytes] of out) expect(bytes, name).toEqual(byName.get(name));
    const buffers = new Set([...out.values()].map((b) => b.buffer));
    expect(buffers.size).toBe(1);
    for (const b of out.values()) expect(b.byteOffset % ARENA_ALIGN).toBe(0);
    expect(events.length).toBe(NAMES.length);
    const total = [...byName.values()].reduce((n, b) => n + b.length, 0);
    const last = events.at(-1)!;
    expect(last).toEqual({
      phase: 'load',
      unit: 'bytes',
      done: total,
      total,
      bytes: total,
      bytesTotal: total,
      tensors: 5,
      tensorsTotal: 5,
      tensor: last.tensor,
    });
    expect(events.map((e) => e.tensors)).toEqual([1, 2, 3, 4, 5]);
    expect(new Set(events.map((e) => e.tensor))).toEqual(new Set(NAMES));
    // One buffer per tensor gives the same bytes.
    const each = await loadTensors(set, { verify: true, allocation: 'each' });
    for (const [name, bytes] of each) expect(bytes, name).toEqual(byName.get(name));
    expect(new Set([...each.values()].map((b) => b.buffer)).size).toBe(NAMES.length);
  });

  it('selects by names and prefix, and loads into a caller arena', async () => {
    const picked = await loadTensors(set, { names: ['d.weight', 'a.weight'] });
    expect([...picked.keys()]).toEqual(['a.weight', 'd.weight']);
    expect(picked.get('d.weight')).toEqual(byName.get('d.weight'));
    const prefixed = await loadTensors(set, { prefix: 'c.' });
    expect([...prefixed.keys()]).toEqual(['c.bias']);
    const need = loadedByteLength(set, { prefix: 'b' });
    expect(need).toBe(Math.ceil((1000 * 17 * 2) / ARENA_ALIGN) * ARENA_ALIGN);
    const arena = new Uint8Array(need + 5);
    const into = await loadTensors(set, { prefix: 'b', into: arena });
    expect(into.get('b.weight')!.buffer).toBe(arena.buffer);
    expect(into.get('b.weight')).toEqual(byName.get('b.weight'));
    expect(await failure(loadTensors(set, { into: new Uint8Array(10) }))).toEqual({
      code: 'invalid_argument',
      rule: 'tensors.load_into',
    });
    expect(await failure(loadTensors(set, { names: ['nope'] }))).toEqual({
      code: 'not_found',
      rule: 'tensors.load_name',
    });
    expect(await failure(loadTensors(set, { concurrency: 0 }))).toMatchObject({ code: 'invalid_argument' });
    expect(await failure(loadTensors({} as never))).toMatchObject({ code: 'invalid_argument' });
  });

  it('a corrupt object under verify is corrupt and nothing is returned; without verify its bytes load', async () => {
    const d = set.get('d.weight');
    const victim = d.records[2]!;
    const file = objectFile(t.root, victim.digest);
    const bytes = await fsp.readFile(file);
    bytes[100] = bytes[100]! ^ 0xff;
    await fsp.chmod(file, 0o644);
    await fsp.writeFile(file, bytes);
    expect(await failure(loadTensors(set, { verify: true }))).toEqual({
      code: 'corrupt',
      rule: 'tensors.object_digest',
    });
    expect(await failure(loadTensors(set, { verify: true, allocation: 'each', names: ['d.weight'] }))).toEqual({
      code: 'corrupt',
      rule: 'tensors.object_digest',
    });
    const unverified = await loadTensors(set, { names: ['d.weight'] });
    expect(unverified.get('d.weight')![2 * 32768 + 100]).toBe(byName.get('d.weight')![2 * 32768 + 100]! ^ 0xff);
  });

  it('is cancellable: an aborted signal fails cancelled and leaves no read running', async () => {
    const ac = new AbortController();
    ac.abort();
    expect(await failure(loadTensors(set, { signal: ac.signal }))).toMatchObject({ code: 'cancelled' });
    const mid = new AbortController();
    const arena = new Uint8Array(loadedByteLength(set));
    const p = loadTensors(set, {
      concurrency: 1,
      into: arena,
      onProgress: (e) => {
        if (e.tensors === 1) mid.abort();
      },
      signal: mid.signal,
    });
    expect(await failure(p)).toMatchObject({ code: 'cancelled' });
    // Nothing after the first tensor was written once the load settled.
    const copy = arena.slice();
    await new Promise((r) => setTimeout(r, 20));
    expect(arena).toEqual(copy);
  });

  it('loads checkpoint components: plain tensors and the parts of encoded ones', async () => {
    const w = new CheckpointWriter(t.store);
    const a = randomFillSync(new Uint8Array(64));
    await w.component('text', { cls: 'T', config: null }).put('w', a, { dtype: 'F32', shape: [4, 4] });
    const unet = w.component('unet', { cls: 'U', config: null });
    const b = randomFillSync(new Uint8Array(32));
    await unet.put('w', b, { dtype: 'BF16', shape: [16] });
    const q = randomFillSync(new Uint8Array(8));
    const s = new Uint8Array(new Float32Array([0.5, 2]).buffer);
    await w.putEncoded('q.weight', {
      dtype: 'F32',
      shape: [2, 4],
      scheme: 'int8',
      params: { shape: [2, 4], dtype: 'F32', granularity: 'row', scale_kind: 'scale' },
      parts: { q: { dtype: 'I8', shape: [2, 4], data: q }, scale: { dtype: 'F32', shape: [2], data: s } },
    });
    await w.commit({ name: 'cp' });
    const cp = await openCheckpoint(t.store, 'cp');
    const all = await loadTensors(cp, { verify: true });
    expect([...all.keys()]).toEqual(['text/w', 'unet/w', 'unet/q.weight#q', 'unet/q.weight#scale']);
    expect(all.get('text/w')).toEqual(a);
    expect(all.get('unet/q.weight#q')).toEqual(q);
    expect(all.get('unet/q.weight#scale')).toEqual(s);
    const one = await loadTensors(cp, { component: 'unet' });
    expect([...one.keys()]).toEqual(['w', 'q.weight#q', 'q.weight#scale']);
    expect(one.get('w')).toEqual(b);
    expect([...(await loadTensors(cp.component('text'))).keys()]).toEqual(['w']);
    expect(await failure(loadTensors(cp, { component: 'vae' }))).toEqual({
      code: 'not_found',
      rule: 'tensors.load_component',
    });
  });

  const total = (): number => [...byName.values()].reduce((n, b) => n + b.length, 0);

  it('release gives the buffers back to the pool and detaches every tensor; the next load reuses them, exact', async () => {
    const pool = new TensorPool();
    const first = await loadTensors(set, { pool, allocation: 'each' });
    expect(pool.byteLength).toBe(0);
    const memory = new Map([...first].map(([k, b]) => [k, b.buffer]));
    expect(new Set(memory.values()).size).toBe(NAMES.length);
    first.release();
    // Use after release reads nothing: each view and its ArrayBuffer are detached.
    for (const b of memory.values()) expect(b.byteLength).toBe(0);
    expect(first.size).toBe(0);
    // The empty tensor owns no memory; the others are held for reuse.
    expect(pool.byteLength).toBe(total());
    first.release(); // again: nothing
    expect(pool.byteLength).toBe(total());
    const second = await loadTensors(set, { pool, allocation: 'each' });
    expect(pool.byteLength).toBe(0);
    for (const [name, bytes] of second) expect(bytes, name).toEqual(byName.get(name));
    // The arena form releases its one buffer the same way.
    const arena = await loadTensors(set, { pool, allocation: 'arena' });
    const arenaBuffer = arena.get('a.weight')!.buffer;
    arena[Symbol.dispose]();
    expect(arenaBuffer.byteLength).toBe(0);
    expect(pool.byteLength).toBe(loadedByteLength(set));
    second.release();
  });

  it('two live loads from one pool never share memory; releasing one leaves the other exact', async () => {
    const pool = new TensorPool();
    const seed = await loadTensors(set, { pool, allocation: 'each' });
    seed.release();
    const a = await loadTensors(set, { pool, allocation: 'each' });
    const b = await loadTensors(set, { pool, allocation: 'each' });
    const buffers = [...a.values(), ...b.values()].map((x) => x.buffer).filter((x) => x.byteLength > 0);
    expect(new Set(buffers).size).toBe(buffers.length);
    a.release();
    // The released buffers go to the next load; b is untouched by it.
    const c = await loadTensors(set, { pool, names: ['d.weight'], allocation: 'each' });
    for (const [name, bytes] of b) expect(bytes, name).toEqual(byName.get(name));
    expect(c.get('d.weight')).toEqual(byName.get('d.weight'));
    b.release();
    c.release();
  });

  it('a pool takes and gives whole buffers, up to its limit', () => {
    const pool = new TensorPool({ limit: 100 });
    const x = pool.take(64);
    expect(x.length).toBe(64);
    expect(x.byteOffset).toBe(0);
    expect(x.buffer.byteLength).toBe(64);
    x.fill(7);
    pool.give(x);
    expect(x.byteLength).toBe(0);
    expect(pool.byteLength).toBe(64);
    // The same memory comes back (its old bytes with it: a taker overwrites it).
    const y = pool.take(64);
    expect(y).toEqual(new Uint8Array(64).fill(7));
    expect(pool.byteLength).toBe(0);
    // Beyond the limit a buffer is detached but not kept.
    const z = pool.take(64);
    pool.give(y);
    pool.give(z);
    expect(z.byteLength).toBe(0);
    expect(pool.byteLength).toBe(64);
    pool.clear();
    expect(pool.byteLength).toBe(0);
    const whole = pool.take(32);
    expect(() => pool.give(whole.subarray(1))).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(() => new TensorPool({ limit: -1 })).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    // An allocator's Buffer-like subclass becomes a plain Uint8Array over the same memory.
    class Sub extends Uint8Array {}
    const sub = new TensorPool({ allocate: (n) => new Sub(n) }).take(8);
    expect(sub.constructor).toBe(Uint8Array);
  });

  it('a cancelled or corrupt load gives every buffer it took back to the pool and returns nothing', async () => {
    const pool = new TensorPool();
    const mid = new AbortController();
    const p = loadTensors(set, {
      pool,
      allocation: 'each',
      concurrency: 1,
      onProgress: (e) => {
        if (e.tensors === 1) mid.abort();
      },
      signal: mid.signal,
    });
    expect(await failure(p)).toMatchObject({ code: 'cancelled' });
    expect(pool.byteLength).toBe(total());
    const victim = set.get('d.weight').records[1]!;
    const file = objectFile(t.root, victim.digest);
    const bytes = await fsp.readFile(file);
    bytes[5] = bytes[5]! ^ 1;
    await fsp.chmod(file, 0o644);
    await fsp.writeFile(file, bytes);
    for (const allocation of ['each', 'arena'] as const) {
      pool.clear();
      expect(await failure(loadTensors(set, { pool, verify: true, allocation }))).toEqual({
        code: 'corrupt',
        rule: 'tensors.object_digest',
      });
      expect(pool.byteLength).toBe(allocation === 'each' ? total() : loadedByteLength(set));
    }
  });
});
