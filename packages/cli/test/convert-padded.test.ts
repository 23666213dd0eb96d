/**
 * `tfs convert --shapes-from` of ComfyUI padded NVFP4 and MXFP8 layers, laid out as comfy-kitchen
 * writes them (producers/comfy_padded.py, numpy + safetensors): refused without the flag (naming
 * it), each layer's logical shape taken from the unquantized model's header (a file or a store
 * ref) and checked against the padding, `cat --decode` equal to the reference decode byte for
 * byte (error 0), `export --safetensors` byte-identical. python3 with numpy, torch and safetensors
 * must be there (no skip).
 */
import { execFileSync } from 'node:child_process';
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { safetensorsBytes } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tfs as run } from './helpers.js';

const SCRIPT = path.join(import.meta.dirname, 'producers', 'comfy_padded.py');
const NVFP4 = 'model.diffusion_model.blocks.0.attn.qkv.weight';
const MXFP8 = 'model.diffusion_model.blocks.0.mlp.fc1.weight';

describe('tfs convert --shapes-from (ComfyUI padded NVFP4 / MXFP8)', () => {
  let dir: string;
  let store: string;
  let expected: Record<string, { shape: number[]; f32: string }>;
  const tfs = (argv: string[]) => run([...argv, '--store', store]);
  const convert = (extra: string[]) =>
    tfs(['convert', path.join(dir, 'model'), '--name', 'comfy/padded', '--dtype', 'BF16', '--json', ...extra]);

  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-cli-padded-'));
    store = path.join(dir, 'store');
    await fsp.mkdir(path.join(dir, 'model'));
    execFileSync('python3', [SCRIPT, dir], { stdio: ['ignore', 'ignore', 'pipe'] });
    expected = JSON.parse(await fsp.readFile(path.join(dir, 'expected.json'), 'utf8'));
  }, 120_000);
  afterAll(() => fsp.rm(dir, { recursive: true, force: true }));

  it('without --shapes-from the refusal names the flag', async () => {
    const r = await convert([]);
    expect(r.code, r.stderr).toBe(5);
    const err = JSON.parse(r.stderr).error;
    expect(err).toMatchObject({
      code: 'unsupported',
      details: { fact: 'logical_shape', flag: '--shapes-from', tensor: NVFP4 },
    });
    expect(err.message).toContain('--shapes-from');
  });

  it('takes each logical shape from the reference header; decode is the reference decode exactly', async () => {
    const r = await convert(['--shapes-from', path.join(dir, 'reference.safetensors')]);
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout);
    expect(result).toMatchObject({ converter: 'single-file', tensors: 3, encoded: 2, conventions: ['comfy_quant'] });
    const inspected = JSON.parse((await tfs(['inspect', 'comfy/padded', '--json'])).stdout);
    const byName = new Map(
      inspected.components[0].tensors.map((t: { name: string }) => [t.name, t] as [string, unknown]),
    );
    expect(byName.get(NVFP4)).toMatchObject({
      shape: [40, 72],
      encoding: {
        scheme: 'nvfp4',
        params: { shape: [40, 72], padded_shape: [48, 80], nibble_order: 'hi_first', scale_layout: 'cublas_128x4' },
      },
    });
    expect(byName.get(MXFP8)).toMatchObject({
      shape: [50, 70],
      encoding: { scheme: 'mxfp8', params: { shape: [50, 70], padded_shape: [64, 96], scale_layout: 'cublas_128x4' } },
    });
    for (const name of [NVFP4, MXFP8]) {
      const out = path.join(dir, 'decoded.f32');
      const d = await tfs(['cat', 'comfy/padded', name, '--decode', '--dtype', 'F32', '-o', out]);
      expect(d.code, d.stderr).toBe(0);
      const want = expected[name]!;
      expect((await fsp.readFile(out)).toString('hex'), name).toBe(want.f32);
    }
    const exported = path.join(dir, 'export');
    expect((await tfs(['export', 'comfy/padded', exported, '--safetensors'])).code).toBe(0);
    const a = await fsp.readFile(path.join(dir, 'model', 'padded.safetensors'));
    expect((await fsp.readFile(path.join(exported, 'padded.safetensors'))).equals(a)).toBe(true);

    // the same reference as a snapshot in the store gives the same checkpoint
    const imp = await tfs(['import', path.join(dir, 'reference.safetensors'), '--name', 'ref/unquantized']);
    expect(imp.code, imp.stderr).toBe(0);
    const again = await tfs([
      'convert',
      path.join(dir, 'model'),
      '--name',
      'comfy/again',
      '--dtype',
      'BF16',
      '--shapes-from',
      'ref/unquantized',
      '--json',
    ]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).id).toBe(result.id);
  });

  it('refuses a logical shape the padding does not fit, and a reference without the layer', async () => {
    const wrong = await convert(['--shapes-from', path.join(dir, 'wrong.safetensors')]);
    expect(wrong.code, wrong.stderr).toBe(2);
    const err = JSON.parse(wrong.stderr).error;
    expect(err).toMatchObject({
      code: 'invalid_argument',
      details: { rule: 'convert.logical_shape', tensor: NVFP4, logical: [30, 72], padded: [48, 80], multiple: 16 },
    });
    expect(err.message).toContain('[30,72]');
    expect(err.message).toContain('[48,80]');
    const partial = await convert(['--shapes-from', path.join(dir, 'partial.safetensors')]);
    expect(partial.code, partial.stderr).toBe(2);
    expect(JSON.parse(partial.stderr).error).toMatchObject({
      code: 'invalid_argument',
      details: { rule: 'convert.shapes_from', tensor: MXFP8 },
    });
    const lane = await convert(['--shapes-from', 'lane:no-such-topology']);
    expect(lane.code, lane.stderr).toBe(6);
    expect(JSON.parse(lane.stderr).error.details.rule).toBe('lanes.unknown_document');
  });

  it('takes logical shapes from a lane topology', async () => {
    // an NVFP4 layer named as the bundled CLIP text topology names [77, 768]: stored [80, 768 / 2]
    const layer = 'embeddings.position_embedding';
    const file = safetensorsBytes([
      { name: `${layer}.weight`, dtype: 'U8', shape: [80, 384], data: new Uint8Array(80 * 384).fill(0x12) },
      { name: `${layer}.weight_scale`, dtype: 'F8_E4M3', shape: [128, 48], data: new Uint8Array(128 * 48).fill(0x38) },
      {
        name: `${layer}.weight_scale_2`,
        dtype: 'F32',
        shape: [],
        data: new Uint8Array(new Float32Array([0.5]).buffer),
      },
      { name: `${layer}.comfy_quant`, dtype: 'U8', data: new TextEncoder().encode('{"format": "nvfp4"}') },
    ]);
    const src = path.join(dir, 'clip');
    await fsp.mkdir(src);
    await fsp.writeFile(path.join(src, 'te.safetensors'), file);
    const args = ['convert', src, '--name', 'comfy/clip', '--dtype', 'F16', '--json'];
    const r = await tfs([...args, '--shapes-from', 'lane:clip-vit-large-patch14-text']);
    expect(r.code, r.stderr).toBe(0);
    const t = JSON.parse((await tfs(['inspect', 'comfy/clip', '--json'])).stdout).components[0].tensors[0];
    expect(t).toMatchObject({ name: `${layer}.weight`, shape: [77, 768] });
    expect(t.encoding.params).toMatchObject({ shape: [77, 768], padded_shape: [80, 768] });
    // a decode of it: every code 1 (0.5) hi and 2 (1.0) lo, times scale 1.0 × 0.5
    const out = path.join(dir, 'clip.f32');
    expect((await tfs(['cat', 'comfy/clip', `${layer}.weight`, '--decode', '--dtype', 'F32', '-o', out])).code).toBe(0);
    const v = new Float32Array((await fsp.readFile(out)).buffer.slice(0));
    expect(v.length).toBe(77 * 768);
    expect(v[0]).toBe(0.25);
    expect(v[1]).toBe(0.5);
    expect(v[77 * 768 - 1]).toBe(0.5);
  });
});
