/**
 * Results that tell the truth (issue 28 items 2 and 6): converting a model layout whose weights
 * all end up as assets is refused naming what was found; `compose --trim` of a shard index
 * recomputes (or drops) `metadata.total_parameters`; a partial pull into an empty store counts the
 * headers it read to select tensors as fetched; `cat --from … -o <missing folder>/f` fails before
 * fetching anything.
 */
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { safetensorsBytes } from '@tensorfs/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { tfs } from './helpers.js';

const dirs: string[] = [];
async function temp(): Promise<string> {
  const d = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-cli-honest-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const d of dirs.splice(0)) await fsp.rm(d, { recursive: true, force: true });
});

function f32(n: number, seed: number): Uint8Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = Math.sin(seed * 1000 + i);
  return new Uint8Array(a.buffer);
}

/** Every file under `dir` (recursively); [] when it does not exist. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await fsp.readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => e.name);
}

describe('convert refuses a model layout with no tensors', () => {
  it('a Transformers folder whose weights are blobs (names that do not say .safetensors)', async () => {
    const dir = await temp();
    const src = path.join(dir, 'blobs');
    await fsp.mkdir(src);
    await fsp.writeFile(path.join(src, 'config.json'), JSON.stringify({ architectures: ['LlamaForCausalLM'] }));
    const blobs: string[] = [];
    for (let i = 0; i < 7; i++) {
      const name = `${String(i).repeat(8)}deadbeef${i}`;
      blobs.push(name);
      const st = safetensorsBytes([{ name: `w${i}`, dtype: 'F32', shape: [4], data: f32(4, i) }]);
      await fsp.writeFile(path.join(src, name), st);
    }
    const store = path.join(dir, 'store');
    const r = await tfs(['convert', src, '--name', 'm', '--converter', 'transformers', '--store', store, '--json']);
    expect(r.code, r.stdout).toBe(2);
    const err = JSON.parse(r.stderr).error;
    expect(err).toMatchObject({
      code: 'invalid_argument',
      details: { rule: 'convert.no_tensors', converter: 'transformers', component: 'model', files: 8 },
    });
    expect([...err.details.found].sort()).toEqual([...blobs, 'config.json'].sort());
    expect(err.message).toContain('has no tensors');
    expect(err.message).toContain(blobs[0]);
    // nothing named
    expect((await tfs(['ls', '--store', store, '--json'])).stdout).not.toContain('"m"');
  });

  it('a detected Diffusers layout whose model component has only .bin weights', async () => {
    const dir = await temp();
    const src = path.join(dir, 'pipe');
    await fsp.mkdir(path.join(src, 'unet'), { recursive: true });
    await fsp.mkdir(path.join(src, 'text_encoder'), { recursive: true });
    await fsp.mkdir(path.join(src, 'scheduler'), { recursive: true });
    await fsp.writeFile(
      path.join(src, 'model_index.json'),
      JSON.stringify({
        _class_name: 'P',
        unet: ['diffusers', 'UNet2DConditionModel'],
        text_encoder: ['transformers', 'CLIPTextModel'],
        scheduler: ['diffusers', 'DDIMScheduler'],
      }),
    );
    await fsp.writeFile(path.join(src, 'unet', 'config.json'), '{}');
    await fsp.writeFile(path.join(src, 'unet', 'diffusion_pytorch_model.bin'), 'pickle');
    await fsp.writeFile(path.join(src, 'text_encoder', 'config.json'), '{}');
    await fsp.writeFile(
      path.join(src, 'text_encoder', 'model.safetensors'),
      safetensorsBytes([{ name: 'w', dtype: 'F32', shape: [2], data: f32(2, 1) }]),
    );
    await fsp.writeFile(path.join(src, 'scheduler', 'scheduler_config.json'), '{}');
    const r = await tfs(['convert', src, '--name', 'p', '--store', path.join(dir, 'store'), '--json']);
    expect(r.code, r.stdout).toBe(2);
    expect(JSON.parse(r.stderr).error).toMatchObject({
      code: 'invalid_argument',
      details: {
        rule: 'convert.no_tensors',
        converter: 'diffusers',
        component: 'unet',
        found: ['unet/config.json', 'unet/diffusion_pytorch_model.bin'],
      },
    });
  });
});

describe('compose --trim of a shard index', () => {
  it('recomputes total_parameters and total_size, and drops a total_parameters it cannot recompute', async () => {
    for (const [stated, want] of [
      [12 + 6 + 20, 12 + 20],
      [999, undefined],
    ] as const) {
      const dir = await temp();
      const src = path.join(dir, 'sharded');
      await fsp.mkdir(src);
      const s1 = safetensorsBytes([
        { name: 'a.weight', dtype: 'F32', shape: [3, 4], data: f32(12, 1) },
        { name: 'b.weight', dtype: 'F32', shape: [6], data: f32(6, 2) },
      ]);
      const s2 = safetensorsBytes([{ name: 'c.weight', dtype: 'F32', shape: [4, 5], data: f32(20, 3) }]);
      await fsp.writeFile(path.join(src, 'model-00001-of-00002.safetensors'), s1);
      await fsp.writeFile(path.join(src, 'model-00002-of-00002.safetensors'), s2);
      const index = {
        metadata: { total_parameters: stated, total_size: (12 + 6 + 20) * 4 },
        weight_map: {
          'a.weight': 'model-00001-of-00002.safetensors',
          'b.weight': 'model-00001-of-00002.safetensors',
          'c.weight': 'model-00002-of-00002.safetensors',
        },
      };
      await fsp.writeFile(path.join(src, 'model.safetensors.index.json'), JSON.stringify(index, null, 2));
      const store = path.join(dir, 'store');
      expect((await tfs(['import', src, '--name', 's', '--store', store])).code).toBe(0);
      const c = await tfs([
        'compose',
        's',
        '--file',
        'model.safetensors.index.json',
        '--trim',
        'b.*',
        '--name',
        't',
        '--store',
        store,
      ]);
      expect(c.code, c.stderr).toBe(0);
      const out = path.join(dir, 'out');
      expect((await tfs(['export', 't', out, '--store', store])).code).toBe(0);
      const trimmed = JSON.parse(await fsp.readFile(path.join(out, 'model.safetensors.index.json'), 'utf8'));
      expect(trimmed.weight_map).toEqual({
        'a.weight': 'model-00001-of-00002.safetensors',
        'c.weight': 'model-00002-of-00002.safetensors',
      });
      expect(trimmed.metadata).toEqual({
        ...(want !== undefined ? { total_parameters: want } : {}),
        total_size: (12 + 20) * 4,
      });
    }
  });
});

describe('partial pull and cat --from', () => {
  async function origin() {
    const dir = await temp();
    const src = path.join(dir, 'src');
    await fsp.mkdir(src);
    await fsp.writeFile(
      path.join(src, 'model.safetensors'),
      safetensorsBytes([
        { name: 'a.attn.weight', dtype: 'F32', shape: [1000], data: f32(1000, 1) },
        { name: 'a.mlp.weight', dtype: 'F32', shape: [2000], data: f32(2000, 2) },
      ]),
    );
    const a = path.join(dir, 'a');
    expect((await tfs(['import', src, '--name', 'team/st', '--store', a])).code).toBe(0);
    const folder = path.join(dir, 'origin');
    const p = await tfs(['push', folder, 'team/st', '--store', a]);
    expect(p.code, p.stderr).toBe(0);
    return { dir, folder };
  }

  it('a partial pull into an empty store counts the headers it read as fetched, not as present', async () => {
    const { dir, folder } = await origin();
    const b = path.join(dir, 'b');
    const p = await tfs(['pull', folder, 'team/st', '--tensors', '*.attn.*', '--store', b, '--json']);
    expect(p.code, p.stderr).toBe(0);
    const r = JSON.parse(p.stdout.trim().split('\n').pop()!);
    // the manifest, the file's header (read to select) and the one tensor; the trimmed header is made here
    expect(r.objects).toEqual({ total: 3, present: 0, fetched: 3 });
    expect(r.bytes.present).toBe(0);
    expect(r.bytes.fetched).toBe(r.bytes.total);
    expect(r.bytes.fetched).toBeGreaterThan(4000);
    const c = path.join(dir, 'c');
    const human = await tfs(['pull', folder, 'team/st', '--tensors', '*.attn.*', '--store', c]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/fetched 3 objects \([^)]+\), already present 0 \(0 B\)/);
  });

  it('cat --from -o into a missing folder fails before fetching anything', async () => {
    const { dir, folder } = await origin();
    const c = path.join(dir, 'c');
    const out = path.join(dir, 'missing', 'mlp.bin');
    const r = await tfs(['cat', '--from', folder, 'team/st', 'a.mlp.weight', '-o', out, '--store', c, '--json']);
    expect(r.code, r.stderr).toBe(6);
    expect(JSON.parse(r.stderr).error).toMatchObject({
      code: 'not_found',
      details: { rule: 'cli.output_folder', path: 'mlp.bin' },
    });
    expect(await filesUnder(path.join(c, 'objects'))).toEqual([]);
  });
});
