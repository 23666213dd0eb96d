import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalStore } from '@tensorfs/cas';
import { commit, convertSnapshot, openTensors, TensorWriter } from '@tensorfs/tensors';
import { sha256Hex } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tfs as run } from './helpers.js';

const SAMPLE = fileURLToPath(new URL('../../../samples/tiny-model/', import.meta.url));

describe('tfs diff', () => {
  let dir: string;
  let storeDir: string;
  const qkv = new Uint8Array(24 * 8 * 2).fill(7);
  const embed = new Uint8Array(16 * 8 * 2).fill(3);

  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-cli-diff-'));
    storeDir = path.join(dir, 'store');
    const store = await LocalStore.open(storeDir);
    try {
      await store.importPath(SAMPLE, { name: 'base', threads: 1 });
      // The fine-tune: qkv retrained, embed.weight cast to F16, the MLP weight renamed.
      const set = await openTensors(store, 'base', { file: 'model.safetensors' });
      const writer = new TensorWriter(store, 'model.safetensors');
      for (const v of set) {
        if (v.name === 'layers.0.attn.qkv.weight') await writer.add(v.name, 'F16', [24n, 8n], qkv);
        else if (v.name === 'embed.weight') await writer.add(v.name, 'F16', [16n, 8n], embed);
        else await writer.inherit(v, v.name === 'layers.0.mlp.up.weight' ? { name: 'layers.0.mlp.fc1.weight' } : {});
      }
      const entry = await writer.finish();
      await commit(store, { base: 'base', put: [entry], ref: 'ft', lease: writer.lease });
      await writer.close();
    } finally {
      await store.close();
    }
  });
  afterAll(() => fsp.rm(dir, { recursive: true, force: true }));

  it('--json gives exactly the changed, renamed and unchanged tensors, files and the pull cost', async () => {
    const r = await run(['diff', 'base', 'ft', '--file', 'model.safetensors', '--json', '--store', storeDir]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const d = JSON.parse(r.stdout);
    const base = await run(['tensors', 'base', '--file', 'model.safetensors', '--json', '--store', storeDir]);
    const before = Object.fromEntries(
      JSON.parse(base.stdout).tensors.map((t: { name: string; objects: string[] }) => [t.name, t.objects]),
    );
    const tensor = (name: string, dtype: string, shape: number[], bytes: number, objects: string[]) => ({
      file: 'model.safetensors',
      name,
      dtype,
      shape,
      bytes,
      objects,
    });
    expect(d.tensors).toEqual({
      added: [],
      removed: [],
      changed: [
        {
          file: 'model.safetensors',
          name: 'embed.weight',
          before: tensor('embed.weight', 'F32', [16, 8], 512, before['embed.weight']),
          after: tensor('embed.weight', 'F16', [16, 8], 256, [`sha256:${sha256Hex(embed)}`]),
          dtypeChanged: true,
          shapeChanged: false,
        },
        {
          file: 'model.safetensors',
          name: 'layers.0.attn.qkv.weight',
          before: tensor('layers.0.attn.qkv.weight', 'F16', [24, 8], 384, before['layers.0.attn.qkv.weight']),
          after: tensor('layers.0.attn.qkv.weight', 'F16', [24, 8], 384, [`sha256:${sha256Hex(qkv)}`]),
          dtypeChanged: false,
          shapeChanged: false,
        },
      ],
      renamed: [
        {
          from: tensor('layers.0.mlp.up.weight', 'BF16', [16, 8], 256, before['layers.0.mlp.up.weight']),
          to: tensor('layers.0.mlp.fc1.weight', 'BF16', [16, 8], 256, before['layers.0.mlp.up.weight']),
        },
      ],
      unchanged: 5,
    });
    const size = (await fsp.stat(path.join(SAMPLE, 'model.safetensors'))).size;
    expect(d.files).toEqual([{ path: 'model.safetensors', status: 'changed', before: size, after: d.files[0].after }]);
    // 256 bytes fewer for the F16 embedding; the header differs by the dtype and the new name.
    expect(size - 256 - d.files[0].after).toBeLessThan(64);
    expect(d.configs).toEqual([]);
    // embed + qkv + the new header + the manifest.
    expect(d.pull.objects).toBe(4);
    expect(Object.keys(d).sort()).toEqual(['a', 'b', 'configs', 'files', 'kinds', 'pull', 'tensors']);
    expect(d.kinds).toEqual(['snapshot', 'snapshot']);
  });

  it('prints one line per difference and the totals', async () => {
    const r = await run(['diff', 'base', 'ft', '--store', storeDir]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines.slice(2)).toEqual([
      '~ model.safetensors: embed.weight  dtype F32 -> F16',
      '~ model.safetensors: layers.0.attn.qkv.weight  bytes',
      '> model.safetensors: layers.0.mlp.up.weight -> model.safetensors: layers.0.mlp.fc1.weight  BF16 [16, 8]',
      'file changed model.safetensors',
      'tensors: 2 changed, 1 renamed, 0 removed, 0 added, 15 unchanged',
      expect.stringMatching(/^pull of b with a: 4 objects, /),
    ]);
  });

  it('--component compares checkpoints (and a snapshot folder) component by component', async () => {
    const store = await LocalStore.open(storeDir);
    try {
      await store.importPath(path.join(SAMPLE, 'diffusers'), { name: 'sd', threads: 1 });
      await convertSnapshot(store, 'sd', { name: 'base-ckpt' });
    } finally {
      await store.close();
    }
    const r = await run(['diff', 'base-ckpt', 'base-ckpt', '--json', '--store', storeDir]);
    expect(r.code).toBe(0);
    const d = JSON.parse(r.stdout);
    expect(d.kinds).toEqual(['checkpoint', 'checkpoint']);
    expect(d.pull).toEqual({ objects: 0, bytes: 0 });
    const unet = JSON.parse(
      (await run(['diff', 'sd', 'base-ckpt', '--component', 'unet', '--json', '--store', storeDir])).stdout,
    );
    expect(unet.kinds).toEqual(['snapshot', 'checkpoint']);
    expect(unet.tensors.unchanged).toBe(3);
    expect(unet.pull.objects).toBe(1);
    const wrong = await run(['diff', 'base-ckpt', 'base-ckpt', '--component', 'nope', '--json', '--store', storeDir]);
    expect(JSON.parse(wrong.stderr).error.code).toBe('not_found');
  });

  it('a missing ref is not_found (exit code and JSON error)', async () => {
    const r = await run(['diff', 'base', 'nope', '--json', '--store', storeDir]);
    expect(JSON.parse(r.stderr || r.stdout).error.code).toBe('not_found');
    expect(r.code).not.toBe(0);
  });
});

describe('tfs diff pairs tensors by the model names', () => {
  let dir: string;
  let storeDir: string;
  const tfs = (argv: string[]) => run([...argv, '--store', storeDir]);

  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-cli-diff-names-'));
    storeDir = path.join(dir, 'store');
    for (const name of ['base', 'tuned']) {
      await fsp.mkdir(path.join(dir, name));
      await fsp.copyFile(path.join(SAMPLE, 'model.safetensors'), path.join(dir, name, `${name}.safetensors`));
    }
  });
  afterAll(() => fsp.rm(dir, { recursive: true, force: true }));

  it('the same model saved under another file name is no tensor change', async () => {
    for (const name of ['base', 'tuned']) {
      expect((await tfs(['import', path.join(dir, name), '--name', name, '--threads', '1'])).code).toBe(0);
    }
    const r = await tfs(['diff', 'base', 'tuned']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trimEnd().split('\n').slice(2)).toEqual([
      'file removed base.safetensors',
      'file added tuned.safetensors',
      'tensors: 0 changed, 0 renamed, 0 removed, 0 added, 8 unchanged',
      expect.stringMatching(/^pull of b with a: 1 objects, /),
    ]);
  });

  it('a snapshot against the checkpoint converted from it is 0 changed, both ways', async () => {
    expect((await tfs(['import', path.join(SAMPLE, 'diffusers'), '--name', 'sd', '--threads', '1'])).code).toBe(0);
    expect((await tfs(['convert', 'sd', '--name', 'sd-ckpt', '--threads', '1'])).code).toBe(0);
    for (const [a, b] of [
      ['sd', 'sd-ckpt'],
      ['sd-ckpt', 'sd'],
    ]) {
      const r = await tfs(['diff', a!, b!, '--json']);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout).tensors).toEqual({ added: [], removed: [], changed: [], renamed: [], unchanged: 6 });
    }
    const line = (await tfs(['diff', 'sd', 'sd-ckpt'])).stdout.trimEnd().split('\n');
    expect(line).toContain('tensors: 0 changed, 0 renamed, 0 removed, 0 added, 6 unchanged');
  });
});
