import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SAMPLES, sha256Hex } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tfs as run } from './helpers.js';

const DIFFUSERS = path.join(SAMPLES, 'tiny-model', 'diffusers');

async function files(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string, rel: string) => {
    for (const e of await fsp.readdir(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(path.join(d, e.name), r);
      else out[r] = sha256Hex(new Uint8Array(await fsp.readFile(path.join(d, e.name))));
    }
  };
  await walk(dir, '');
  return out;
}

describe('tfs convert / inspect / tensors / cat / ls / export on checkpoints', () => {
  let dir: string;
  let store: string;
  const tfs = (argv: string[]) => run([...argv, '--store', store]);

  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-cli-cp-'));
    store = path.join(dir, 'store');
  });
  afterAll(() => fsp.rm(dir, { recursive: true, force: true }));

  it('converts a Diffusers folder and inspects it in the exact --json shape', async () => {
    const c = await tfs(['convert', DIFFUSERS, '--name', 'local/pipe', '--threads', '1', '--json']);
    expect(c.code, c.stderr).toBe(0);
    const converted = JSON.parse(c.stdout);
    expect(converted).toMatchObject({
      ref: 'local/pipe',
      converter: 'diffusers',
      components: 4,
      tensors: 6,
      assets: 4,
    });
    const r = await tfs(['inspect', 'local/pipe', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const d = JSON.parse(r.stdout);
    expect(Object.keys(d)).toEqual(['format', 'id', 'pipeline', 'components']);
    expect(d.format).toBe('cozytensors');
    expect(d.id).toBe(converted.id);
    expect(d.pipeline.cls).toBe('TinyPipeline');
    expect(d.components.map((x: { name: string }) => x.name)).toEqual([
      'scheduler',
      'text_encoder',
      'tokenizer',
      'unet',
    ]);
    const unet = d.components[3];
    expect(Object.keys(unet)).toEqual(['name', 'cls', 'config', 'tensors', 'assets']);
    expect(unet.config).toEqual({ _class_name: 'UNet2DConditionModel', in_channels: 4, out_channels: 4 });
    expect(unet.tensors.find((t: { name: string }) => t.name === 'conv_in.weight')).toEqual({
      name: 'conv_in.weight',
      dtype: 'F16',
      shape: [8, 4, 3, 3],
      encoding: null,
    });
    const size = (await fsp.stat(path.join(DIFFUSERS, 'unet', 'config.json'))).size;
    expect(unet.assets).toEqual([{ name: 'config.json', size }]);
  });

  it('ls marks checkpoints; tensors and cat take --component', async () => {
    await tfs([
      'import',
      path.join(SAMPLES, 'tiny-model', 'model.safetensors'),
      '--name',
      'local/snap',
      '--threads',
      '1',
    ]);
    const ls = JSON.parse((await tfs(['ls', '--json'])).stdout);
    expect(ls.refs.map((r: { name: string; kind: string }) => [r.name, r.kind])).toEqual([
      ['local/pipe', 'checkpoint'],
      ['local/snap', 'snapshot'],
    ]);
    const human = (await tfs(['ls'])).stdout;
    expect(human).toMatch(/local\/pipe {2}\(checkpoint\)/);
    const t = await tfs(['tensors', 'local/pipe', '--component', 'text_encoder', '--json']);
    expect(t.code, t.stderr).toBe(0);
    const rows = JSON.parse(t.stdout).tensors;
    expect(rows.map((x: { name: string }) => x.name)).toEqual([
      'text_model.embeddings.token_embedding.weight',
      'text_model.final_layer_norm.bias',
      'text_model.final_layer_norm.weight',
    ]);
    expect(rows[0]).toMatchObject({ component: 'text_encoder', dtype: 'F32', shape: [5, 8], bytes: 160 });
    const cat = await tfs(['cat', 'local/pipe', 'text_model.final_layer_norm.weight', '--component', 'text_encoder']);
    expect(cat.code, cat.stderr).toBe(0);
    expect(new Float32Array(new Uint8Array(cat.bytes).buffer)).toEqual(new Float32Array(8).fill(1));
    expect((await tfs(['cat', 'local/pipe', 'nope'])).code).not.toBe(0);
    const wrong = await tfs(['tensors', 'local/snap', '--component', 'x', '--json']);
    expect(JSON.parse(wrong.stderr).error.code).toBe('invalid_argument');
  });

  it('export --safetensors (default) is byte-identical; --cozytensors and --portable; inspect of the header file', async () => {
    const out = path.join(dir, 'out');
    const e = await tfs(['export', 'local/pipe', out]);
    expect(e.code, e.stderr).toBe(0);
    expect(await files(out)).toEqual(await files(DIFFUSERS));
    const hdr = path.join(dir, 'hdr');
    expect((await tfs(['export', 'local/pipe', hdr, '--cozytensors', '--variant', 'fp32'])).code).toBe(0);
    expect(await fsp.readdir(hdr)).toEqual(['fp32.cozytensors']);
    const fromFile = JSON.parse((await tfs(['inspect', path.join(hdr, 'fp32.cozytensors'), '--json'])).stdout);
    const fromRef = JSON.parse((await tfs(['inspect', 'local/pipe', '--json'])).stdout);
    expect(fromFile).toEqual(fromRef);
    const portable = path.join(dir, 'portable');
    expect((await tfs(['export', 'local/pipe', portable, '--portable'])).code).toBe(0);
    expect((await fsp.readdir(portable)).sort()).toEqual(['chunks', 'model.cozytensors', 'refs']);
    expect((await tfs(['export', 'local/snap', path.join(dir, 'x'), '--portable'])).code).not.toBe(0);
  });

  it('GC keeps what the checkpoint reaches; verify and du follow it', async () => {
    const before = JSON.parse((await tfs(['gc', '--grace', '0', '--json'])).stdout);
    expect(before.removed).toBe(0);
    const v = await tfs(['verify', '--data', '--json']);
    expect(v.code, v.stderr).toBe(0);
    const du = JSON.parse((await tfs(['du', '--json'])).stdout);
    expect(du.refs.find((r: { name: string }) => r.name === 'local/pipe').logicalBytes).toBeGreaterThan(0);
    const again = await tfs(['export', 'local/pipe', path.join(dir, 'again')]);
    expect(again.code, again.stderr).toBe(0);
  });

  it('convert refuses an unknown layout with the reason and a nonzero exit', async () => {
    const bad = path.join(dir, 'bad');
    await fsp.mkdir(bad);
    await fsp.writeFile(path.join(bad, 'README.md'), 'hi');
    await fsp.writeFile(path.join(bad, 'notes.txt'), 'x');
    const r = await tfs(['convert', bad, '--name', 'local/bad', '--json', '--threads', '1']);
    expect(r.code).not.toBe(0);
    expect(JSON.parse(r.stderr).error).toMatchObject({ code: 'unsupported' });
    expect((await tfs(['convert', 'no/such/ref', '--name', 'local/bad2'])).code).not.toBe(0);
  });
});
