/**
 * Conversion round trips over files written by the Python reference writers
 * (samples/make_samples.py: safetensors 0.8, gguf-py): folder → checkpoint → export → the same bytes.
 */
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { isTensorFSError } from '@tensorfs/format';
import { SAMPLES, sha256Hex, storedObjects } from '@tensorfs/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CheckpointWriter,
  convertPath,
  convertSnapshot,
  exportCheckpoint,
  exportComponentFiles,
  importPortable,
  openCheckpoint,
  openTensors,
} from '../src/index.js';
import { importTree, STORE_KINDS, type TestStore, tempStore } from './helpers.js';

const DIFFUSERS = path.join(SAMPLES, 'tiny-model', 'diffusers');

/** Every file under `dir` (relative path → SHA-256). */
async function treeHashes(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string, rel: string) => {
    for (const e of await fsp.readdir(d, { withFileTypes: true })) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) await walk(path.join(d, e.name), r);
      else out[r] = sha256Hex(new Uint8Array(await fsp.readFile(path.join(d, e.name))));
    }
  };
  await walk(dir, '');
  return out;
}

async function ruleOf(fn: () => Promise<unknown>): Promise<{ code: string; rule: unknown }> {
  try {
    await fn();
  } catch (error) {
    if (!isTensorFSError(error)) throw error;
    return { code: error.code, rule: error.details.rule };
  }
  throw new Error('expected a TensorFSError');
}

describe('convert', () => {
  let t: TestStore;
  beforeEach(async () => {
    t = await tempStore();
  });
  afterEach(async () => {
    await t.close();
  });

  it('Diffusers folder → checkpoint → export --safetensors gives the folder back byte for byte', async () => {
    const r = await convertPath(t.local!, DIFFUSERS, { name: 'local/sd', threads: 1 });
    expect(r.converter).toBe('diffusers');
    const cp = await openCheckpoint(t.store, 'local/sd');
    expect(cp.id).toBe(r.id);
    expect(cp.pipeline?.cls).toBe('TinyPipeline');
    expect([...cp.components.keys()]).toEqual(['scheduler', 'text_encoder', 'tokenizer', 'unet']);
    const te = cp.component('text_encoder');
    expect(te.cls).toBe('CLIPTextModel');
    expect(te.config).toEqual({ architectures: ['CLIPTextModel'], hidden_size: 8 });
    // Two shards through their index, in shard then data order.
    expect([...te.tensors.keys()].sort()).toEqual([
      'text_model.embeddings.token_embedding.weight',
      'text_model.final_layer_norm.bias',
      'text_model.final_layer_norm.weight',
    ]);
    expect(te.assets).toEqual(['config.json']);
    const sched = cp.component('scheduler');
    expect(sched.tensors.size).toBe(0);
    expect(sched.config).toEqual({ _class_name: 'DDIMScheduler', num_train_timesteps: 1000 });
    expect(cp.component('tokenizer').assets).toEqual(['vocab.json']);
    expect(new TextDecoder().decode(await cp.component('tokenizer').asset('vocab.json'))).toBe(
      await fsp.readFile(path.join(DIFFUSERS, 'tokenizer', 'vocab.json'), 'utf8'),
    );
    // Tensor bytes are the file's bytes at the header's offsets.
    const unetFile = new Uint8Array(
      await fsp.readFile(path.join(DIFFUSERS, 'unet', 'diffusion_pytorch_model.safetensors')),
    );
    const snap = await openTensors(t.store, r.snapshot);
    const view = snap.get('conv_in.weight');
    const mine = cp.component('unet').tensors.get('conv_in.weight')!;
    expect(mine.records).toEqual(view.records);
    expect(sha256Hex(await mine.read({ verify: true }))).toBe(
      sha256Hex(unetFile.subarray(view.byteOffset, view.byteOffset + view.byteLength)),
    );

    const out = path.join(t.scratch, 'export');
    await exportCheckpoint(t.local!, cp, out);
    expect(await treeHashes(out)).toEqual(await treeHashes(DIFFUSERS));
  });

  it('converting an imported snapshot writes only the header: no tensor byte read or written', async () => {
    const imported = await t.local!.importPath(DIFFUSERS, { name: 'snap', threads: 1 });
    const before = await storedObjects(t.root);
    const r = await convertSnapshot(t.local!, 'snap', { name: 'cp' });
    const added = [...(await storedObjects(t.root))].filter((o) => !before.has(o));
    expect(added).toEqual([r.id.slice(7)]);
    expect(r.snapshot).toBe(imported.snapshot);
    expect(r.bytesWritten).toBe((await openCheckpoint(t.store, 'cp')).bytes.length);
    // Converting the same folder again is the same checkpoint.
    const again = await convertPath(t.local!, DIFFUSERS, { threads: 1 });
    expect(again.id).toBe(r.id);
    expect(again.bytesWritten).toBe(r.bytesWritten);
  });

  it('Transformers folder (sharded, with index) as one component', async () => {
    const r = await convertPath(t.local!, path.join(DIFFUSERS, 'text_encoder'), { name: 'te', threads: 1 });
    expect(r.converter).toBe('transformers');
    const cp = await openCheckpoint(t.store, 'te');
    expect([...cp.components.keys()]).toEqual(['model']);
    expect(cp.component('model').cls).toBe('CLIPTextModel');
    expect(cp.component('model').tensors.size).toBe(3);
    expect(cp.component('model').assets).toEqual(['config.json']);
    const out = path.join(t.scratch, 'te');
    await exportCheckpoint(t.local!, cp, out);
    expect(await treeHashes(out)).toEqual(await treeHashes(path.join(DIFFUSERS, 'text_encoder')));
  });

  it('single .safetensors and .gguf files; GGUF block types become ggml encodings', async () => {
    const st = await convertPath(t.local!, path.join(SAMPLES, 'tiny-model', 'model.safetensors'), { threads: 1 });
    expect(st.converter).toBe('single-file');
    const cp = await openCheckpoint(t.store, st.id);
    expect(cp.component('model').tensors.size).toBe(8);
    expect(cp.component('model').tensors.get('logit_scale')!.shape).toEqual([]);

    const gg = await convertPath(t.local!, path.join(SAMPLES, 'tiny-model', 'model.gguf'), { name: 'g', threads: 1 });
    const g = await openCheckpoint(t.store, 'g');
    const q = g.component('model').tensors.get('blk.0.attn_q.weight')!;
    expect(q.encoding).toEqual({
      scheme: 'ggml',
      params: { shape: q.shape.map(Number), dtype: 'F32', type: 'Q8_0' },
      parts: { blocks: { dtype: 'U8', shape: [136n] } },
    });
    // The checkpoint tensor decodes to what the GGUF snapshot tensor decodes to.
    const snap = (await openTensors(t.store, gg.snapshot)).get('blk.0.attn_q.weight');
    expect(await q.read({ decode: true })).toEqual(await snap.read({ decode: true }));
    expect(await q.read({ decode: true, dtype: 'BF16' })).toEqual(await snap.read({ decode: true, dtype: 'BF16' }));
    expect(gg.encoded).toBe(1);
    expect(g.component('model').tensors.get('token_embd.weight')!.encoding).toBeNull();
    const out = path.join(t.scratch, 'g');
    await exportCheckpoint(t.local!, g, out);
    expect(await treeHashes(out)).toEqual({
      'model.gguf': sha256Hex(new Uint8Array(await fsp.readFile(path.join(SAMPLES, 'tiny-model', 'model.gguf')))),
    });
    expect(gg.tensors).toBe(4);
  });

  it('checkpoint → portable folder → checkpoint opened in another store', async () => {
    const r = await convertPath(t.local!, DIFFUSERS, { threads: 1 });
    const cp = await openCheckpoint(t.store, r.id);
    const portable = path.join(t.scratch, 'portable');
    await exportCheckpoint(t.local!, cp, portable, { format: 'portable' });
    const names = await fsp.readdir(path.join(portable, 'chunks'));
    expect(names.every((n) => /^[0-9a-f]{64}$/.test(n))).toBe(true);
    const other = await tempStore();
    try {
      const back = await importPortable(other.local!, portable, { name: 'p' });
      expect(back.id).toBe(r.id);
      const out = path.join(other.scratch, 'out');
      await exportCheckpoint(other.local!, back, out);
      expect(await treeHashes(out)).toEqual(await treeHashes(DIFFUSERS));
      expect((await other.local!.verify({ data: true })).corrupt).toEqual([]);
      // A tampered chunk is refused.
      const third = await tempStore();
      try {
        const victim = path.join(portable, 'chunks', names[0]!);
        await fsp.chmod(victim, 0o644);
        await fsp.writeFile(victim, 'tampered');
        expect((await ruleOf(() => importPortable(third.local!, portable))).code).toBe('corrupt');
      } finally {
        await third.close();
      }
    } finally {
      await other.close();
    }
  });

  it('--cozytensors writes only the header file; exportComponentFiles gives one component', async () => {
    const r = await convertPath(t.local!, DIFFUSERS, { threads: 1 });
    const cp = await openCheckpoint(t.store, r.id);
    const out = path.join(t.scratch, 'h');
    await exportCheckpoint(t.local!, cp, out, { format: 'cozytensors' });
    expect(await fsp.readdir(out)).toEqual(['model.cozytensors']);
    expect(new Uint8Array(await fsp.readFile(path.join(out, 'model.cozytensors')))).toEqual(cp.bytes);
    const unet = path.join(t.scratch, 'unet');
    await exportComponentFiles(t.local!, cp, 'unet', unet);
    expect(await treeHashes(unet)).toEqual(await treeHashes(path.join(DIFFUSERS, 'unet')));
  });

  it('refuses bad sources with the reason, committing nothing', async () => {
    const mk = async (files: Record<string, string | Uint8Array>) => {
      const dir = await fsp.mkdtemp(path.join(t.scratch, 'bad-'));
      for (const [p, v] of Object.entries(files)) {
        await fsp.mkdir(path.dirname(path.join(dir, p)), { recursive: true });
        await fsp.writeFile(path.join(dir, p), v);
      }
      return dir;
    };
    const unet = await fsp.readFile(path.join(DIFFUSERS, 'unet', 'diffusion_pytorch_model.safetensors'));
    const cases: [Record<string, string | Uint8Array>, { code: string; rule: unknown }][] = [
      [
        { 'model_index.json': '{"_class_name": "P", "vae": ["diffusers", "AutoencoderKL"]}' },
        { code: 'not_found', rule: 'convert.missing_component' },
      ],
      [{ 'model_index.json': '{"a": 1, "a": 2}' }, { code: 'malformed', rule: 'cozytensors.config_json' }],
      [
        { 'model_index.json': '{"u": ["d", "U"]}', 'u/config.json': '{not json' },
        { code: 'malformed', rule: 'cozytensors.config_json' },
      ],
      [
        { 'model_index.json': '{"u": ["d", "U"]}', 'u/model.safetensors': unet.subarray(0, 100) },
        { code: 'malformed', rule: undefined },
      ],
      [
        { 'model_index.json': '{"u": ["d", "U"]}', 'u/a.safetensors': unet, 'u/b.safetensors': unet },
        { code: 'unsupported', rule: 'convert.ambiguous_weights' },
      ],
      [
        { 'README.md': 'hi', 'x.bin': 'y' },
        { code: 'unsupported', rule: 'convert.layout' },
      ],
    ];
    for (const [files, expected] of cases) {
      const dir = await mk(files);
      const got = await ruleOf(() => convertPath(t.local!, dir, { name: 'never', threads: 1 }));
      expect(got.code, JSON.stringify(files).slice(0, 80)).toBe(expected.code);
      if (expected.rule !== undefined) expect(got.rule).toBe(expected.rule);
      expect(await t.store.getRef('never')).toBeNull();
    }
  });

  it('a written checkpoint (no source) exports a Hugging Face layout of its components', async () => {
    const w = new CheckpointWriter(t.store);
    w.pipeline({ cls: 'P', config: { _class_name: 'P', unet: ['diffusers', 'U'] } });
    const u = w.component('unet', { cls: 'U', config: { in_channels: 4 } });
    const a = new Float32Array([1, 2, 3, 4]);
    await u.put('w', new Uint8Array(a.buffer), { dtype: 'F32', shape: [2, 2] });
    await u.asset('notes/readme.txt', new TextEncoder().encode('hi'));
    const { id } = await w.commit();
    const cp = await openCheckpoint(t.store, id);
    const out = path.join(t.scratch, 'written');
    await exportCheckpoint(t.local!, cp, out);
    expect(Object.keys(await treeHashes(out)).sort()).toEqual([
      'model_index.json',
      'unet/config.json',
      'unet/model.safetensors',
      'unet/notes/readme.txt',
    ]);
    expect(JSON.parse(await fsp.readFile(path.join(out, 'unet', 'config.json'), 'utf8'))).toEqual({ in_channels: 4 });
    const back = await t.local!.importPath(out, { threads: 1 });
    const set = await openTensors(t.store, back.snapshot);
    expect(await set.get('w').read()).toEqual(new Uint8Array(a.buffer));
    expect(set.get('w').records).toEqual(cp.component('unet').tensors.get('w')!.records);
    // An encoded tensor has no plain safetensors form.
    const e = new CheckpointWriter(t.store);
    e.component('m', { cls: '', config: null });
    await e.putEncoded('q', {
      dtype: 'F32',
      shape: [2],
      scheme: 'x',
      params: null,
      parts: { d: { dtype: 'U8', shape: [1], data: new Uint8Array(1) } },
    });
    const enc = await openCheckpoint(t.store, (await e.commit()).id);
    expect(await ruleOf(() => exportCheckpoint(t.local!, enc, path.join(t.scratch, 'enc')))).toEqual({
      code: 'unsupported',
      rule: 'cozytensors.export_encoded',
    });
  });

  it('base: reports how many tensors changed (a fine-tune of one component)', async () => {
    await convertPath(t.local!, DIFFUSERS, { name: 'sd', threads: 1 });
    const tuned = path.join(t.scratch, 'tuned');
    await fsp.cp(DIFFUSERS, tuned, { recursive: true });
    // Swap two tensors' bytes in the unet file: same header, different data.
    const file = path.join(tuned, 'unet', 'diffusion_pytorch_model.safetensors');
    const bytes = new Uint8Array(await fsp.readFile(file));
    bytes[bytes.length - 1] = bytes.at(-1)! ^ 0xff;
    await fsp.writeFile(file, bytes);
    const r = await convertPath(t.local!, tuned, { name: 'sd-ft', base: 'sd', threads: 1 });
    expect(r.changedTensors).toBe(1);
  });
});

describe.each(STORE_KINDS)('convertSnapshot through the Store port only (%s store)', (kind) => {
  it('a Diffusers snapshot becomes a checkpoint sharing its objects', async () => {
    const t = await tempStore(kind);
    try {
      const files: Record<string, Uint8Array> = {};
      const walk = async (d: string, rel: string) => {
        for (const e of await fsp.readdir(d, { withFileTypes: true })) {
          const r = rel ? `${rel}/${e.name}` : e.name;
          if (e.isDirectory()) await walk(path.join(d, e.name), r);
          else files[r] = new Uint8Array(await fsp.readFile(path.join(d, e.name)));
        }
      };
      await walk(DIFFUSERS, '');
      const snapshot = await importTree(t, files, 'snap');
      const before = await t.objects();
      const r = await convertSnapshot(t.store, 'snap', { name: 'cp' });
      expect(r.snapshot).toBe(snapshot);
      expect([...(await t.objects())].filter((o) => !before.has(o))).toEqual([r.id.slice(7)]);
      const cp = await openCheckpoint(t.store, 'cp');
      expect([...cp.components.keys()]).toEqual(['scheduler', 'text_encoder', 'tokenizer', 'unet']);
      const view = cp.component('unet').tensors.get('conv_out.weight')!;
      const file = files['unet/diffusion_pytorch_model.safetensors']!;
      const set = await openTensors(t.store, 'snap');
      const src = set.get('conv_out.weight');
      expect(await view.read({ verify: true })).toEqual(file.subarray(src.byteOffset, src.byteOffset + src.byteLength));
    } finally {
      await t.close();
    }
  });
});
