import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expectCode, sha256Hex } from '@tensorfs/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  commit,
  convertSnapshot,
  diffJson,
  diffSnapshots,
  diffTensors,
  openTensors,
  TensorWriter,
} from '../src/index.js';
import { type TestStore, tempStore } from './helpers.js';

const SAMPLE = fileURLToPath(new URL('../../../samples/tiny-model/', import.meta.url));
const MODEL = 'model.safetensors';

let t: TestStore;
beforeEach(async () => {
  t = await tempStore('local');
  await t.local!.importPath(SAMPLE, { threads: 1, name: 'base' });
});
afterEach(async () => {
  await t.close();
});

/** Rewrites `file` of `base` into `ref`: `replace` gives new (dtype, shape, bytes) for some tensors, `rename` new names. */
async function derive(
  ref: string,
  file: string,
  replace: Record<string, { dtype: string; shape: bigint[]; bytes: Uint8Array }>,
  rename: Record<string, string> = {},
  extra: Record<string, string> = {},
): Promise<void> {
  const set = await openTensors(t.store, 'base', { file });
  const writer = new TensorWriter(t.store, file);
  for (const view of set) {
    const r = replace[view.name];
    if (r) await writer.add(view.name, r.dtype, r.shape, r.bytes);
    else await writer.inherit(view, rename[view.name] ? { name: rename[view.name]! } : {});
  }
  const entry = await writer.finish();
  const put = [entry];
  for (const [p, text] of Object.entries(extra)) {
    const dir = await fsp.mkdtemp(path.join(t.scratch, 'extra-'));
    await fsp.writeFile(path.join(dir, 'f'), text);
    const { snapshot } = await t.local!.importPath(dir, { threads: 1 });
    const m = await t.store.getManifest(snapshot);
    put.push({ ...(m.entries[0] as typeof entry), path: p });
  }
  await commit(t.store, { base: 'base', put, ref, lease: writer.lease });
  await writer.close();
}

const ones = (n: number) => new Uint8Array(n).fill(1);

describe('diffSnapshots', () => {
  it('lists exactly the tensors a fine-tune changed, the config change and the pull cost', async () => {
    await derive(
      'ft',
      MODEL,
      {
        'layers.0.attn.qkv.weight': { dtype: 'F16', shape: [24n, 8n], bytes: ones(24 * 8 * 2) },
        'layers.0.norm.weight': { dtype: 'F32', shape: [8n], bytes: ones(32) },
      },
      {},
      {
        'diffusers/unet/config.json':
          '{"_class_name":"UNet2DConditionModel","in_channels":4,"out_channels":8,"lora":true}',
      },
    );
    const d = await diffSnapshots(t.store, 'base', 'ft', { file: MODEL });
    expect(d.tensors.changed.map((c) => c.name)).toEqual(['layers.0.norm.weight', 'layers.0.attn.qkv.weight']);
    expect(d.tensors.changed.every((c) => !c.dtypeChanged && !c.shapeChanged)).toBe(true);
    expect(d.tensors.added).toEqual([]);
    expect(d.tensors.removed).toEqual([]);
    expect(d.tensors.renamed).toEqual([]);
    expect(d.tensors.unchanged).toBe(6);
    expect(d.files.map((f) => [f.path, f.status])).toEqual([
      ['diffusers/unet/config.json', 'changed'],
      ['model.safetensors', 'changed'],
    ]);
    expect(d.configs).toEqual([
      {
        path: 'diffusers/unet/config.json',
        changes: [
          { pointer: '/lora', status: 'added', after: true },
          { pointer: '/out_channels', status: 'changed', before: 4, after: 8 },
        ],
      },
    ]);
    // Two tensors, the new header, the new config and the manifest: five objects.
    const base = await t.store.getManifest(d.a);
    const ft = await t.store.getManifest(d.b);
    const headerA = base.entries.find((e) => e.path === MODEL);
    const headerB = ft.entries.find((e) => e.path === MODEL);
    expect(headerA?.kind === 'file' && headerB?.kind === 'file').toBe(true);
    expect(d.pull.objects).toBe(5);
    const manifestBytes = (await t.store.readObject(d.b)).length;
    const configBytes = 83;
    const headerBytes = headerB!.kind === 'file' ? headerB!.records[0]!.length : 0;
    expect(d.pull.bytes).toBe(24 * 8 * 2 + 32 + configBytes + headerBytes + manifestBytes);
  });

  it('a snapshot against itself is all unchanged and costs nothing', async () => {
    const d = await diffSnapshots(t.store, 'base', 'base');
    expect(d.tensors).toEqual({ added: [], removed: [], changed: [], renamed: [], unchanged: 18 });
    expect(d.files).toEqual([]);
    expect(d.pull).toEqual({ objects: 0, bytes: 0 });
  });

  it('reports renames, removals and dtype/shape changes apart', async () => {
    await derive(
      'ft',
      MODEL,
      {
        'embed.weight': { dtype: 'F16', shape: [16n, 8n], bytes: ones(256) },
        logit_scale: { dtype: 'F32', shape: [1n], bytes: ones(4) },
      },
      { 'layers.0.mlp.up.weight': 'layers.0.mlp.fc1.weight' },
    );
    const d = await diffSnapshots(t.store, 'base', 'ft', { file: MODEL });
    expect(
      d.tensors.changed.map((c) => [c.name, c.dtypeChanged, c.shapeChanged, c.before.dtype, c.after.dtype]),
    ).toEqual([
      ['embed.weight', true, false, 'F32', 'F16'],
      ['logit_scale', false, true, 'F32', 'F32'],
    ]);
    expect(d.tensors.changed[1]!.before.shape).toEqual([]);
    expect(d.tensors.changed[1]!.after.shape).toEqual([1]);
    expect(d.tensors.renamed.map((r) => [r.from.name, r.to.name, r.to.dtype])).toEqual([
      ['layers.0.mlp.up.weight', 'layers.0.mlp.fc1.weight', 'BF16'],
    ]);
    expect(d.tensors.renamed[0]!.from.objects).toEqual(d.tensors.renamed[0]!.to.objects);
    expect(d.tensors.added).toEqual([]);
    expect(d.tensors.removed).toEqual([]);
    expect(d.tensors.unchanged).toBe(5);
  });

  it('lines a GGUF up with a safetensors file of the same tensors by their objects', async () => {
    const set = await openTensors(t.store, 'base', { file: MODEL });
    const names: Record<string, string> = {
      'embed.weight': 'token_embd.weight',
      'layers.0.norm.weight': 'blk.0.attn_norm.weight',
      'layers.0.attn.qkv.weight': 'blk.0.attn_qkv.weight',
    };
    const writer = new TensorWriter(t.store, 'converted.gguf');
    for (const [from, to] of Object.entries(names)) await writer.inherit(set.get(from), { name: to });
    await writer.add('output.weight', 'F32', [2n], ones(8));
    const entry = await writer.finish();
    await commit(t.store, { put: [entry], ref: 'gguf', lease: writer.lease });
    await writer.close();
    const a = await openTensors(t.store, 'base', { file: MODEL });
    const b = await openTensors(t.store, 'gguf');
    const d = diffTensors(a, b);
    expect(d.renamed.map((r) => [r.from.file, r.from.name, r.to.file, r.to.name])).toEqual([
      ['model.safetensors', 'embed.weight', 'converted.gguf', 'token_embd.weight'],
      ['model.safetensors', 'layers.0.norm.weight', 'converted.gguf', 'blk.0.attn_norm.weight'],
      ['model.safetensors', 'layers.0.attn.qkv.weight', 'converted.gguf', 'blk.0.attn_qkv.weight'],
    ]);
    expect(d.added.map((x) => x.name)).toEqual(['output.weight']);
    expect(d.removed.map((x) => x.name)).toEqual([
      'position_ids',
      'logit_scale',
      'layers.0.mlp.up.weight',
      'unused.bias',
      'attention_mask',
    ]);
    expect(d.unchanged).toBe(0);
  });

  it('a shard index is the place of its tensors, so re-sharding changes nothing', async () => {
    const d = await diffSnapshots(t.store, 'base', 'base', {
      file: 'diffusers/text_encoder/model.safetensors.index.json',
    });
    expect(d.tensors.unchanged).toBe(3);
    const set = await openTensors(t.store, 'base', { file: 'diffusers/text_encoder/model.safetensors.index.json' });
    expect(diffTensors(set, set).unchanged).toBe(3);
  });

  it('fails with the open error for a missing ref, and cancels', async () => {
    await expectCode(() => diffSnapshots(t.store, 'base', 'nope'), 'not_found');
    const ac = new AbortController();
    ac.abort();
    await expectCode(() => diffSnapshots(t.store, 'base', 'base', { signal: ac.signal }), 'cancelled');
  });
});

describe('diffJson', () => {
  it('compares objects by key, equal-length arrays by element, anything else whole', () => {
    expect(diffJson({ a: 1, 'x/y': [1, 2], z: [1] }, { a: 1, 'x/y': [1, 3], z: [1, 2], n: null })).toEqual([
      { pointer: '/n', status: 'added', after: null },
      { pointer: '/x~1y/1', status: 'changed', before: 2, after: 3 },
      { pointer: '/z', status: 'changed', before: [1], after: [1, 2] },
    ]);
    expect(diffJson(1, 1)).toEqual([]);
    expect(diffJson({ a: 1 }, {})).toEqual([{ pointer: '/a', status: 'removed', before: 1 }]);
  });
});

describe('diffSnapshots over checkpoints', () => {
  const UNET = 'diffusers/unet/diffusion_pytorch_model.safetensors';

  /** The sample Diffusers folder as a snapshot and a checkpoint; a fine-tune of its unet as both too. */
  async function checkpoints(): Promise<void> {
    await t.local!.importPath(path.join(SAMPLE, 'diffusers'), { threads: 1, name: 'sd' });
    await convertSnapshot(t.store, 'sd', { name: 'sd-ckpt' });
    const set = await openTensors(t.store, 'sd', { file: 'unet/diffusion_pytorch_model.safetensors' });
    const writer = new TensorWriter(t.store, 'unet/diffusion_pytorch_model.safetensors', {
      metadata: { format: 'pt' },
    });
    for (const view of set) {
      if (view.name === 'conv_in.bias') await writer.add(view.name, 'F16', [8n], ones(16));
      else await writer.inherit(view);
    }
    const entry = await writer.finish();
    const dir = await fsp.mkdtemp(path.join(t.scratch, 'cfg-'));
    await fsp.writeFile(
      path.join(dir, 'config.json'),
      '{"_class_name":"UNet2DConditionModel","in_channels":4,"out_channels":8}',
    );
    const { snapshot } = await t.local!.importPath(dir, { threads: 1 });
    const cfg = (await t.store.getManifest(snapshot)).entries[0] as typeof entry;
    await commit(t.store, {
      base: 'sd',
      put: [entry, { ...cfg, path: 'unet/config.json' }],
      ref: 'sd-ft',
      lease: writer.lease,
    });
    await writer.close();
    await convertSnapshot(t.store, 'sd-ft', { name: 'sd-ft-ckpt' });
  }

  it('lists the changed tensor in its component and the config change', async () => {
    await checkpoints();
    const d = await diffSnapshots(t.store, 'sd-ckpt', 'sd-ft-ckpt');
    expect(d.kinds).toEqual(['checkpoint', 'checkpoint']);
    expect(d.tensors.changed.map((c) => [c.file, c.name, c.dtypeChanged, c.shapeChanged])).toEqual([
      ['unet', 'conv_in.bias', false, false],
    ]);
    expect(d.tensors.changed[0]!.after.objects).toEqual([`sha256:${sha256Hex(ones(16))}`]);
    expect([d.tensors.added, d.tensors.removed, d.tensors.renamed]).toEqual([[], [], []]);
    expect(d.tensors.unchanged).toBe(5);
    expect(d.configs).toEqual([
      { path: 'unet/config', changes: [{ pointer: '/config/out_channels', status: 'changed', before: 4, after: 8 }] },
    ]);
    // The converter keeps config.json as written, as an asset of its component.
    expect(d.files).toEqual([{ path: 'unet/config.json', status: 'changed', before: 85, after: 71 }]);
    const only = await diffSnapshots(t.store, 'sd-ckpt', 'sd-ft-ckpt', { component: 'text_encoder' });
    expect(only.tensors.unchanged).toBe(3);
    expect(only.tensors.changed).toEqual([]);
    expect(only.configs).toEqual([]);
    await expectCode(() => diffSnapshots(t.store, 'sd-ckpt', 'sd-ft-ckpt', { component: 'nope' }), 'not_found');
    await expectCode(() => diffSnapshots(t.store, 'sd-ckpt', 'sd-ft-ckpt', { file: UNET }), 'invalid_argument');
  });

  it('a checkpoint lines up with the snapshot it was converted from: same objects, only its header to pull', async () => {
    await checkpoints();
    const d = await diffSnapshots(t.store, 'sd', 'sd-ckpt', { component: 'unet' });
    expect(d.kinds).toEqual(['snapshot', 'checkpoint']);
    expect(d.tensors).toEqual({ added: [], removed: [], changed: [], renamed: [], unchanged: 3 });
    const header = await t.store.readObject(d.b);
    expect(d.pull).toEqual({ objects: 1, bytes: header.length });
  });
});
