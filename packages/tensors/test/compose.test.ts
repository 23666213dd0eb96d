import type { ManifestFileEntry } from '@tensorfs/format';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commit, openTensors, rekey, TensorWriter, trim } from '../src/index.js';
import { expectCode, sha256Hex } from '@tensorfs/testkit';
import { expectedTensors, importTree, type TestStore, tempStore, STORE_KINDS } from './helpers.js';

describe.each(STORE_KINDS)('compose: rekey and trim share every tensor object (%s store)', (kind) => {
  let t: TestStore;
  beforeEach(async () => {
    t = await tempStore(kind);
    await importTree(t, { 'm.safetensors': 'tiny.safetensors', 'm.gguf': 'tiny.gguf' }, 'base');
  });
  afterEach(() => t.close());

  /** The objects `fn` adds to the store. */
  async function added(fn: () => Promise<unknown>): Promise<Set<string>> {
    const before = await t.objects();
    await fn();
    return new Set([...(await t.objects())].filter((x) => !before.has(x)));
  }

  it('rekey of a safetensors file costs one header object and one manifest', async () => {
    const source = await openTensors(t.store, 'base', { file: 'm.safetensors' });
    let result: Awaited<ReturnType<typeof rekey>> | undefined;
    const fresh = await added(async () => {
      result = await rekey(
        t.store,
        'base',
        'm.safetensors',
        { 'embed.weight': 'tok.weight', mask: 'attn_mask' },
        { ref: 'renamed' },
      );
    });
    expect(result!.entries.map((e) => e.path)).toEqual(['m.safetensors']);
    expect(fresh).toEqual(new Set([result!.entries[0]!.records[0]!.digest.slice(7), result!.snapshot.slice(7)]));
    const renamed = await openTensors(t.store, 'renamed', { file: 'm.safetensors' });
    expect(renamed.names()).toEqual(
      source.names().map((n) => ({ 'embed.weight': 'tok.weight', mask: 'attn_mask' })[n] ?? n),
    );
    for (const view of source) {
      const name = view.name === 'embed.weight' ? 'tok.weight' : view.name === 'mask' ? 'attn_mask' : view.name;
      const moved = renamed.get(name);
      expect(moved.digests).toEqual(view.digests);
      expect([moved.byteOffset, moved.dtype, moved.shape]).toEqual([view.byteOffset, view.dtype, view.shape]);
    }
    // The metadata is kept and the untouched file is the same entry.
    const header = renamed.header('m.safetensors');
    expect(header.format === 'safetensors' && header.header.metadata).toEqual(new Map([['format', 'pt']]));
    const baseGguf = (await openTensors(t.store, 'base', { file: 'm.gguf' })).entry('m.gguf');
    expect((await openTensors(t.store, 'renamed', { file: 'm.gguf' })).entry('m.gguf')).toEqual(baseGguf);
    expect(result!.base).toBe(source.snapshot);
  });

  it('trim by names, pattern and predicate drops exactly those tensors and shares the rest', async () => {
    const expected = (await expectedTensors())['tiny.safetensors']!;
    let r1: Awaited<ReturnType<typeof trim>> | undefined;
    const fresh = await added(async () => {
      r1 = await trim(t.store, 'base', 'm.safetensors', ['mask', 'positions'], { ref: 't1' });
    });
    expect(fresh.size).toBe(2);
    const t1 = await openTensors(t.store, 't1', { file: 'm.safetensors' });
    expect(t1.names().sort()).toEqual(
      expected
        .map((e) => e.name)
        .filter((n) => n !== 'mask' && n !== 'positions')
        .sort(),
    );
    for (const e of expected.filter((x) => t1.has(x.name))) {
      expect(sha256Hex(await t1.get(e.name).read({ verify: true }))).toBe(e.sha256);
    }
    expect(r1!.entries[0]!.records.length).toBe(t1.entry('m.safetensors').records.length);

    await trim(t.store, 'base', 'm.safetensors', /^layer\.0\.attn\./, { ref: 't2' });
    const t2 = await openTensors(t.store, 't2', { file: 'm.safetensors' });
    expect(t2.names().some((n) => n.startsWith('layer.0.attn.'))).toBe(false);
    expect(t2.size).toBe(expected.length - 2);

    await trim(t.store, 'base', 'm.gguf', (name) => name.startsWith('blk.'), { ref: 't3' });
    const t3 = await openTensors(t.store, 't3', { file: 'm.gguf' });
    expect(t3.names()).toEqual(['token_embd.weight', 'output.weight']);
    const src = await openTensors(t.store, 'base', { file: 'm.gguf' });
    expect(t3.get('output.weight').digests).toEqual(src.get('output.weight').digests);
    expect(t3.ggufHeader('m.gguf').metadata.raw).toEqual(src.ggufHeader('m.gguf').metadata.raw);
  });

  it('rekey of a GGUF file keeps the metadata block verbatim', async () => {
    const fresh = await added(() =>
      rekey(t.store, 'base', 'm.gguf', new Map([['output.weight', 'lm_head.weight']]), { ref: 'g' }),
    );
    expect(fresh.size).toBe(2);
    const src = await openTensors(t.store, 'base', { file: 'm.gguf' });
    const out = await openTensors(t.store, 'g', { file: 'm.gguf' });
    expect(out.ggufHeader('m.gguf')).toEqual(src.ggufHeader('m.gguf'));
    expect(out.get('lm_head.weight').digests).toEqual(src.get('output.weight').digests);
  });

  it('names that collide after rekey are invalid_argument and nothing is written', async () => {
    const before = await t.objects();
    await expectCode(
      () => rekey(t.store, 'base', 'm.safetensors', { mask: 'positions' }, { ref: 'x' }),
      'invalid_argument',
    );
    await expectCode(
      () => rekey(t.store, 'base', 'm.safetensors', { mask: 'same', positions: 'same' }, { ref: 'x' }),
      'invalid_argument',
    );
    await expectCode(() => rekey(t.store, 'base', 'm.safetensors', { nope: 'x' }), 'not_found');
    await expectCode(() => trim(t.store, 'base', 'm.safetensors', ['nope']), 'not_found');
    await expectCode(() => rekey(t.store, 'base', 'm.gguf', { 'output.weight': 'x'.repeat(70) }), 'invalid_argument');
    expect(await t.objects()).toEqual(before);
    expect(await t.store.getRef('x')).toBeNull();
  });

  it('a composed snapshot keeps every object it shares alive through GC once its base is gone', async () => {
    const expected = (await expectedTensors())['tiny.safetensors']!;
    await rekey(t.store, 'base', 'm.safetensors', { mask: 'attention_mask' }, { ref: 'renamed' });
    await t.deleteRef('base');
    await t.gc();
    const set = await openTensors(t.store, 'renamed', { file: 'm.safetensors' });
    for (const e of expected) {
      const view = set.get(e.name === 'mask' ? 'attention_mask' : e.name);
      expect(sha256Hex(await view.read({ verify: true }))).toBe(e.sha256);
    }
  });

  it('moves a ref by compare-and-swap: a ref moved meanwhile is conflict', async () => {
    const base = await t.store.resolve('base');
    await rekey(t.store, 'base', 'm.safetensors', { mask: 'm2' }, { ref: 'base' });
    expect(await t.store.resolve('base')).not.toBe(base);
    await expectCode(
      () => rekey(t.store, base, 'm.safetensors', { mask: 'm3' }, { ref: 'base', expected: base }),
      'conflict',
    );
  });
});

describe.each(STORE_KINDS)('compose: sharded models keep their index consistent (%s store)', (kind) => {
  let t: TestStore;
  const SHARDED = {
    'model-00001-of-00002.safetensors': 'sharded/model-00001-of-00002.safetensors',
    'model-00002-of-00002.safetensors': 'sharded/model-00002-of-00002.safetensors',
    'model.safetensors.index.json': 'sharded/model.safetensors.index.json',
  };
  const INDEX = 'model.safetensors.index.json';
  beforeEach(async () => {
    t = await tempStore(kind);
    await importTree(t, SHARDED, 'base');
  });
  afterEach(() => t.close());

  async function indexJson(ref: string) {
    const set = await openTensors(t.store, ref, { file: INDEX });
    return { set, index: set.shardIndex(INDEX) };
  }

  it('rekey of one shard rewrites that shard header and the index, nothing else', async () => {
    const before = await t.objects();
    const r = await rekey(t.store, 'base', 'model-00001-of-00002.safetensors', { 'a.weight': 'a.w' }, { ref: 'r' });
    const fresh = [...(await t.objects())].filter((x) => !before.has(x));
    expect(r.entries.map((e) => e.path)).toEqual(['model-00001-of-00002.safetensors', INDEX]);
    expect(fresh.length).toBe(3); // shard header, index, manifest
    const { set, index } = await indexJson('r');
    expect(index.weightMap.get('a.w')).toBe('model-00001-of-00002.safetensors');
    expect(index.weightMap.has('a.weight')).toBe(false);
    expect(index.totalSize).toBe((await indexJson('base')).index.totalSize);
    const base = await openTensors(t.store, 'base');
    expect(set.get('a.w').digests).toEqual(base.get('a.weight').digests);
    expect((await openTensors(t.store, 'r')).size).toBe(4);
  });

  it('trim through the index drops tensors in any shard, removes an emptied shard, recomputes total_size', async () => {
    const r = await trim(t.store, 'base', INDEX, ['b.weight', 'c.weight'], { ref: 'r' });
    expect(r.removed).toEqual(['model-00002-of-00002.safetensors']);
    expect(r.entries.map((e) => e.path)).toEqual([INDEX]);
    const { set, index } = await indexJson('r');
    expect(set.files.map((f) => f.path)).toEqual(['model-00001-of-00002.safetensors']);
    expect([...index.weightMap.keys()].sort()).toEqual(['a.bias', 'a.weight']);
    expect(index.totalSize).toBe(BigInt(set.get('a.bias').byteLength + set.get('a.weight').byteLength));
    const manifest = await t.store.getManifest(r.snapshot);
    expect(manifest.entries.map((e) => e.path)).toEqual(['model-00001-of-00002.safetensors', INDEX]);
  });

  it('refuses a new name another shard has, and a model left without tensors; nothing is written', async () => {
    const before = await t.objects();
    await expectCode(
      () => rekey(t.store, 'base', 'model-00001-of-00002.safetensors', { 'a.bias': 'b.weight' }),
      'invalid_argument',
    );
    await expectCode(() => trim(t.store, 'base', INDEX, /./), 'invalid_argument');
    expect(await t.objects()).toEqual(before);
  });
});

describe.each(STORE_KINDS)('commit (%s store)', (kind) => {
  let t: TestStore;
  beforeEach(async () => {
    t = await tempStore(kind);
  });
  afterEach(() => t.close());

  it('adds, replaces and removes entries of a base snapshot', async () => {
    const base = await importTree(
      t,
      { 'a.safetensors': 'tiny.safetensors', 'b.gguf': 'tiny.gguf', 'c.txt': new Uint8Array([1]) },
      'main',
    );
    const w = new TensorWriter(t.store, 'a.safetensors');
    await w.add('only', 'U8', [3], new Uint8Array([1, 2, 3]));
    const entry = await w.finish();
    const r = await commit(t.store, { base: 'main', put: [entry], remove: ['c.txt'], ref: 'main' });
    await w.close();
    expect(r.base).toBe(base);
    expect(r.manifest.entries.map((e) => e.path)).toEqual(['a.safetensors', 'b.gguf']);
    expect(await t.store.resolve('main')).toBe(r.snapshot);
    const set = await openTensors(t.store, 'main');
    expect(Array.from(await set.get('only').read())).toEqual([1, 2, 3]);
    expect(set.get('token_embd.weight').file).toBe('b.gguf');
  });

  it('refuses missing objects, unknown paths and double claims; a moved ref is conflict', async () => {
    await importTree(t, { 'a.safetensors': 'tiny.safetensors' }, 'main');
    const ghost: ManifestFileEntry = {
      path: 'ghost.bin',
      kind: 'file',
      mode: 0o644,
      size: 3,
      profile: 'blob-v1',
      records: [{ digest: `sha256:${'ab'.repeat(32)}`, length: 3 }],
    };
    await expectCode(() => commit(t.store, { base: 'main', put: [ghost] }), 'not_found');
    await expectCode(() => commit(t.store, { base: 'main', remove: ['nope'] }), 'not_found');
    await expectCode(
      () => commit(t.store, { base: 'main', remove: ['a.safetensors', 'a.safetensors'] }),
      'invalid_argument',
    );
    const first = await commit(t.store, { base: 'main', remove: ['a.safetensors'], ref: 'side', expected: null });
    await expectCode(
      () => commit(t.store, { base: 'main', remove: ['a.safetensors'], ref: 'side', expected: null }),
      'conflict',
    );
    expect(await t.store.resolve('side')).toBe(first.snapshot);
  });
});
