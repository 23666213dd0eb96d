import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTensors, type TensorSet } from '../src/index.js';
import { expectCode, sha256Hex } from '@tensorfs/testkit';
import { type ExpectedTensor, expectedTensors, importTree, type TestStore, tempStore, STORE_KINDS } from './helpers.js';

/** A snapshot holding every fixture: a single safetensors file, a sharded model and a GGUF file. */
const TREE = {
  'tiny.safetensors': 'tiny.safetensors',
  'tiny.gguf': 'tiny.gguf',
  'be.gguf': 'tiny-be.gguf',
  'shards/model-00001-of-00002.safetensors': 'sharded/model-00001-of-00002.safetensors',
  'shards/model-00002-of-00002.safetensors': 'sharded/model-00002-of-00002.safetensors',
  'shards/model.safetensors.index.json': 'sharded/model.safetensors.index.json',
  'README.md': new TextEncoder().encode('# not a tensor file\n'),
};

/** expected.json paths → the snapshot paths of TREE. */
const IN_TREE: Record<string, string> = {
  'tiny.safetensors': 'tiny.safetensors',
  'tiny.gguf': 'tiny.gguf',
  'tiny-be.gguf': 'be.gguf',
  'sharded/model-00001-of-00002.safetensors': 'shards/model-00001-of-00002.safetensors',
  'sharded/model-00002-of-00002.safetensors': 'shards/model-00002-of-00002.safetensors',
};

describe.each(STORE_KINDS)('openTensors over a snapshot (%s store)', (kind) => {
  let t: TestStore;
  let set: TensorSet;
  let expected: Record<string, ExpectedTensor[]>;

  beforeAll(async () => {
    t = await tempStore(kind);
    await importTree(t, TREE, 'local/all');
    set = await openTensors(t.store, 'local/all');
    expected = await expectedTensors();
  });
  afterAll(() => t.close());

  it('lists every tensor file and index, in path order, and nothing else', () => {
    expect(set.files.map((f) => [f.path, f.format, f.profile, f.aligned])).toEqual([
      ['be.gguf', 'gguf', 'gguf-v1', true],
      ['shards/model-00001-of-00002.safetensors', 'safetensors', 'safetensors-v1', true],
      ['shards/model-00002-of-00002.safetensors', 'safetensors', 'safetensors-v1', true],
      ['tiny.gguf', 'gguf', 'gguf-v1', true],
      ['tiny.safetensors', 'safetensors', 'safetensors-v1', true],
    ]);
    expect(set.indexes).toEqual(['shards/model.safetensors.index.json']);
    expect(set.files[1]!.index).toBe('shards/model.safetensors.index.json');
    expect(set.files[0]!.index).toBeUndefined();
    expect(set.skipped).toEqual([]);
    expect(set.size).toBe(Object.values(expected).reduce((n, l) => n + l.length, 0));
  });

  it('describes every tensor exactly as the reference readers do, and reads its exact bytes', async () => {
    for (const [file, tensors] of Object.entries(expected)) {
      for (const e of tensors) {
        const view = set.get(e.name, IN_TREE[file]);
        expect(view.file).toBe(IN_TREE[file]);
        expect(view.dtype).toBe(e.dtype);
        expect(view.shape).toEqual(e.shape.map(BigInt));
        expect(view.byteOffset).toBe(e.offset);
        expect(view.byteLength).toBe(e.length);
        expect(view.aligned).toBe(true);
        const bytes = await view.read();
        expect(bytes.length).toBe(e.length);
        expect(sha256Hex(bytes)).toBe(e.sha256);
        // One object per non-empty tensor (all fixtures are far below 64 MiB).
        expect(view.digests).toEqual(e.length === 0 ? [] : [`sha256:${e.sha256}`]);
        const pieces: Uint8Array[] = [];
        for await (const piece of view.pieces({ verify: true })) pieces.push(piece);
        expect(pieces.length).toBe(view.digests.length);
        const into = new Uint8Array(e.length + 3);
        const filled = await view.readInto(into, 3);
        expect(filled.byteOffset - into.byteOffset).toBe(3);
        expect(sha256Hex(filled)).toBe(e.sha256);
      }
    }
  });

  it('iterates files in path order and tensors in data order', () => {
    const seen = [...set].map((v) => `${v.file}:${v.name}`);
    const order = Object.keys(IN_TREE)
      .map((k) => IN_TREE[k]!)
      .sort()
      .flatMap((file) => set.files.find((f) => f.path === file)!.tensors.map((n) => `${file}:${n}`));
    expect(seen).toEqual(order);
    const offsets = [...set].filter((v) => v.file === 'tiny.gguf').map((v) => v.byteOffset);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
  });

  it('gives GGUF block geometry and the ggml type names', () => {
    const q8 = set.get('blk.0.attn_q.weight', 'tiny.gguf');
    expect([q8.dtype, q8.blockSize, q8.typeSize, q8.shape]).toEqual(['Q8_0', 32, 34, [2n, 32n]]);
    const q4k = set.get('output.weight', 'be.gguf');
    expect([q4k.dtype, q4k.blockSize, q4k.typeSize, q4k.byteLength]).toEqual(['Q4_K', 256, 144, 144]);
    const f32 = set.get('embed.weight');
    expect([f32.blockSize, f32.typeSize]).toEqual([1, 4]);
  });

  it('returns the parsed headers, metadata included', () => {
    const st = set.header('tiny.safetensors');
    expect(st.format).toBe('safetensors');
    if (st.format === 'safetensors') expect(st.header.metadata).toEqual(new Map([['format', 'pt']]));
    const gg = set.header('tiny.gguf');
    expect(gg.format).toBe('gguf');
    if (gg.format === 'gguf') {
      expect(gg.header.metadataMap.get('general.architecture')?.value).toBe('llama');
      expect(gg.header.metadataMap.get('tiny.extra')?.value).toBe(7);
    }
    const template = set.ggufHeader('tiny.gguf');
    expect([template.version, template.endianness, template.alignment]).toEqual([3, 'little', 32]);
    expect(set.ggufHeader('be.gguf').endianness).toBe('big');
    expect(template.metadata.count).toBe(gg.format === 'gguf' ? gg.header.metadata.length : -1);
  });

  it('fails clearly for a missing tensor, an unknown file and a non-GGUF template', async () => {
    await expectCode(() => set.get('no.such.tensor'), 'not_found');
    await expectCode(() => set.get('a.weight', 'tiny.safetensors'), 'not_found');
    await expectCode(() => set.header('README.md'), 'not_found');
    await expectCode(() => set.ggufHeader('tiny.safetensors'), 'invalid_argument');
    expect(set.has('a.weight')).toBe(true);
    expect(set.has('nope')).toBe(false);
  });

  it('opens one file, or one sharded model through its index', async () => {
    const one = await openTensors(t.store, 'local/all', { file: 'tiny.gguf' });
    expect(one.files.map((f) => f.path)).toEqual(['tiny.gguf']);
    expect(one.names()).toEqual(expected['tiny.gguf']!.map((e) => e.name));
    const sharded = await openTensors(t.store, 'local/all', { file: 'shards/model.safetensors.index.json' });
    expect(sharded.files.map((f) => f.path)).toEqual([
      'shards/model-00001-of-00002.safetensors',
      'shards/model-00002-of-00002.safetensors',
    ]);
    expect(sharded.names().sort()).toEqual(['a.bias', 'a.weight', 'b.weight', 'c.weight']);
    expect(sharded.get('c.weight', 'shards/model.safetensors.index.json').file).toBe(
      'shards/model-00002-of-00002.safetensors',
    );
    await expectCode(() => openTensors(t.store, 'local/all', { file: 'README.md' }), 'invalid_argument');
    await expectCode(() => openTensors(t.store, 'local/all', { file: 'nope.safetensors' }), 'not_found');
    await expectCode(() => openTensors(t.store, 'local/none'), 'not_found');
  });

  it('asks which file when two files have a tensor of the same name', async () => {
    const t2 = await tempStore(kind);
    try {
      await importTree(t2, { 'a/x.safetensors': 'tiny.safetensors', 'b/x.safetensors': 'tiny.safetensors' }, 'two');
      const two = await openTensors(t2.store, 'two');
      await expectCode(() => two.get('embed.weight'), 'invalid_argument');
      const a = two.get('embed.weight', 'a/x.safetensors');
      const b = two.get('embed.weight', 'b/x.safetensors');
      expect(a.digests).toEqual(b.digests);
      expect(a.file).toBe('a/x.safetensors');
    } finally {
      await t2.close();
    }
  });
});
