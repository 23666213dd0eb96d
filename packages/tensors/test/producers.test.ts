/**
 * Issue 13's acceptance test: a checkpoint converted from each producer convention
 * (vectors/v1/producers, written by generate.py from the documented conventions) decodes to the
 * producer's reference decode; the producer's metadata tensors become params/parts, not tensors;
 * and `export --safetensors` gives the producer's files back byte for byte.
 */
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { isTensorFSError } from '@tensorfs/format';
import { REPO_ROOT, expectCode, safetensorsBytes, sha256Hex } from '@tensorfs/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CheckpointWriter,
  type ConvertOptions,
  convertPath,
  exportCheckpoint,
  openCheckpoint,
  type ProducerConvention,
} from '../src/index.js';
import { type TestStore, tempStore } from './helpers.js';

const DIR = path.join(REPO_ROOT, 'vectors', 'v1', 'producers');

interface Weight {
  name: string;
  scheme: string;
  dtype: 'F32' | 'F16' | 'BF16';
  shape: number[];
  consumed: string[];
  f32: string;
  logical: string;
  rel_tol: number;
}
interface Case {
  name: string;
  source: string;
  producer?: ProducerConvention;
  dtype?: 'F32' | 'F16' | 'BF16';
  refused?: { code: string; fact: string };
  conventions: string[];
  weights: Weight[];
  plain: string[];
}

const CASES = (JSON.parse(await fsp.readFile(path.join(DIR, 'expected.json'), 'utf8')) as { cases: Case[] }).cases;

const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.length).toString('hex');
const floats = (b: Uint8Array) => new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
const fromHex = (h: string) => new Uint8Array(Buffer.from(h, 'hex'));

async function treeHashes(p: string): Promise<Record<string, string>> {
  const st = await fsp.stat(p);
  if (st.isFile()) return { [path.basename(p)]: sha256Hex(new Uint8Array(await fsp.readFile(p))) };
  const out: Record<string, string> = {};
  for (const e of await fsp.readdir(p)) Object.assign(out, await treeHashes(path.join(p, e)));
  return out;
}

describe('tfs convert of producer conventions (vectors/v1/producers)', () => {
  let t: TestStore;
  beforeEach(async () => {
    t = await tempStore();
  });
  afterEach(async () => {
    await t.close();
  });

  it('has a case for every producer convention', () => {
    expect(new Set(CASES.flatMap((c) => c.conventions))).toEqual(
      new Set([
        'bitsandbytes_4bit',
        'llm_int8',
        'scaled_fp8',
        'comfy_quant',
        'block_fp8',
        'modelopt_nvfp4',
        'gptq',
        'awq',
        'kohya_lora',
      ]),
    );
  });

  for (const c of CASES) {
    it(`${c.name}: decodes to the reference; export gives the files back byte-identical`, async () => {
      const src = path.join(DIR, c.source);
      if (c.refused) {
        // Without the declared fact the convert refuses, naming it, and writes no ref.
        let caught: unknown;
        try {
          await convertPath(t.local!, src, { name: 'refused', threads: 1 });
        } catch (error) {
          caught = error;
        }
        expect(isTensorFSError(caught)).toBe(true);
        if (!isTensorFSError(caught)) return;
        expect(caught.code).toBe(c.refused.code);
        expect(caught.details.fact).toBe(c.refused.fact);
        expect(await t.refNames()).not.toContain('refused');
      }
      const options: ConvertOptions = {
        name: 'cp',
        threads: 1,
        ...(c.producer ? { producer: c.producer } : {}),
        ...(c.dtype ? { dtype: c.dtype } : {}),
      };
      const r = await convertPath(t.local!, src, options);
      expect(r.conventions).toEqual([...c.conventions].sort());
      expect(r.encoded).toBe(c.weights.length);
      const cp = await openCheckpoint(t.store, 'cp');
      const model = cp.component('model');
      const names = [...model.tensors.keys()];
      expect(names.sort()).toEqual([...c.weights.map((w) => w.name), ...c.plain].sort());
      for (const w of c.weights) {
        for (const gone of w.consumed) if (gone !== w.name) expect(model.tensors.has(gone)).toBe(false);
        const view = model.tensors.get(w.name)!;
        expect(view.encoding?.scheme).toBe(w.scheme);
        expect(view.dtype).toBe(w.dtype);
        expect(view.shape.map(Number)).toEqual(w.shape);
        const params = view.encoding!.params as { shape: number[]; dtype: string };
        expect(params.shape).toEqual(w.shape);
        expect(params.dtype).toBe(w.dtype);
        // F32: the reference decode within its tolerance (bit-exact for all but float64 references).
        const got = floats(await view.read({ decode: true, dtype: 'F32', verify: true }));
        const want = floats(fromHex(w.f32));
        expect(got.length).toBe(want.length);
        let worst = 0;
        for (let i = 0; i < want.length; i++) {
          const a = got[i]!;
          const b = want[i]!;
          if (Number.isNaN(b)) expect(Number.isNaN(a)).toBe(true);
          else worst = Math.max(worst, Math.abs(a - b) / Math.max(Math.abs(b), 1e-30));
        }
        expect(worst).toBeLessThanOrEqual(w.rel_tol);
        if (w.rel_tol <= 1e-6) {
          // the logical dtype (the default): one rounding of the same float32 values
          const logical = await view.read({ decode: true });
          expect(hex(logical)).toBe(w.logical);
          const buf = new Uint8Array(logical.length + 3);
          const into = await view.readInto(buf, 3, { decode: true });
          expect(hex(into)).toBe(w.logical);
        }
      }
      for (const p of c.plain) expect(model.tensors.get(p)!.encoding).toBeNull();
      const out = path.join(t.scratch, 'export');
      await exportCheckpoint(t.local!, cp, out);
      expect(await treeHashes(out)).toEqual(await treeHashes(src));
    });
  }

  it('reading an encoded tensor without decode is unsupported; a part reads as the producer tensor', async () => {
    await convertPath(t.local!, path.join(DIR, 'cases', 'llm_int8'), { name: 'cp', threads: 1 });
    const cp = await openCheckpoint(t.store, 'cp');
    const view = cp.component('model').tensors.get('model.layers.0.self_attn.q_proj.weight')!;
    await expect(view.read()).rejects.toMatchObject({ code: 'unsupported' });
    expect(view.encoding!.params).toEqual({
      shape: [8, 16],
      dtype: 'F16',
      granularity: 'row',
      scale_kind: 'absmax_over_127',
    });
    expect(Object.keys(view.encoding!.parts)).toEqual(['q', 'scale']);
    expect((await view.part('scale').read()).length).toBe(32);
  });

  it('a declared producer settles an NVFP4 layer with no ModelOpt config; undeclared it is refused', async () => {
    const dir = path.join(t.scratch, 'nv');
    await fsp.mkdir(dir);
    await fsp.copyFile(
      path.join(DIR, 'cases', 'modelopt_nvfp4', 'model.safetensors'),
      path.join(dir, 'model.safetensors'),
    );
    await expect(convertPath(t.local!, dir, { name: 'a', threads: 1, dtype: 'BF16' })).rejects.toMatchObject({
      code: 'unsupported',
      details: { fact: 'producer' },
    });
    const r = await convertPath(t.local!, dir, { name: 'a', threads: 1, dtype: 'BF16', producer: 'modelopt_nvfp4' });
    expect(r.conventions).toEqual(['modelopt_nvfp4']);
  });

  /** A safetensors file of `tensors` (name → dtype, shape, bytes), packed in name order. */
  function safetensors(tensors: Record<string, [string, number[], Uint8Array]>): Uint8Array {
    const names = Object.keys(tensors).sort();
    return safetensorsBytes(
      names.map((name) => ({ name, dtype: tensors[name]![0], shape: tensors[name]![1], data: tensors[name]![2] })),
    );
  }

  it('hostile producer files: a missing part is malformed naming it; an unstated fact is unsupported; nothing is committed', async () => {
    const P = 'l.weight';
    const state = new TextEncoder().encode(
      JSON.stringify({ quant_type: 'nf4', blocksize: 64, dtype: 'float16', shape: [4, 32] }),
    );
    const bnb = path.join(t.scratch, 'bnb.safetensors');
    await fsp.writeFile(
      bnb,
      safetensors({
        [P]: ['U8', [64, 1], new Uint8Array(64)],
        [`${P}.quant_map`]: ['F32', [16], new Uint8Array(64)],
        [`${P}.quant_state.bitsandbytes__nf4`]: ['U8', [state.length], state],
      }),
    );
    await expectCode(() => convertPath(t.local!, bnb, { name: 'h', threads: 1 }), 'malformed', undefined, {
      tensor: `${P}.absmax`,
      layer: P,
    });
    const int8 = path.join(t.scratch, 'int8.safetensors');
    const tensors: Record<string, [string, number[], Uint8Array]> = {
      'l.weight': ['I8', [2, 4], new Uint8Array(8)],
      'l.SCB': ['F32', [2], new Uint8Array(8)],
      'l.weight_format': ['U8', [], new Uint8Array([1])],
    };
    await fsp.writeFile(int8, safetensors(tensors));
    // the legacy tiled layout is refused, naming the fact, even with the dtype declared
    await expectCode(
      () => convertPath(t.local!, int8, { name: 'h', threads: 1, dtype: 'F16' }),
      'unsupported',
      undefined,
      {
        fact: 'weight_format',
      },
    );
    tensors['l.weight_format'] = ['U8', [], new Uint8Array([0])];
    await fsp.writeFile(int8, safetensors(tensors));
    await expectCode(() => convertPath(t.local!, int8, { name: 'h', threads: 1 }), 'unsupported', undefined, {
      fact: 'dtype',
      layer: 'l',
    });
    expect(await t.refNames()).not.toContain('h');
    const ok = await convertPath(t.local!, int8, { name: 'h', threads: 1, dtype: 'F16' });
    expect(ok.conventions).toEqual(['llm_int8']);
    // One weight read by two conventions (a bitsandbytes weight that also has a block-FP8 scale):
    // refused, naming both, instead of one of them silently winning (found by the property test).
    const both = path.join(t.scratch, 'both.safetensors');
    await fsp.writeFile(
      both,
      safetensors({
        [P]: ['F8_E5M2', [64, 1], new Uint8Array(64)],
        [`${P}.absmax`]: ['F32', [2], new Uint8Array(8)],
        [`${P}.quant_map`]: ['F32', [16], new Uint8Array(64)],
        [`${P}.quant_state.bitsandbytes__nf4`]: ['U8', [state.length], state],
        'l.weight_scale_inv': ['F32', [1, 1], new Uint8Array(4)],
      }),
    );
    await expectCode(
      () => convertPath(t.local!, both, { name: 'b', threads: 1, dtype: 'BF16' }),
      'malformed',
      undefined,
      {
        rule: 'convert.producer_overlap',
        tensor: P,
      },
    );
    expect(await t.refNames()).not.toContain('b');
  });

  it('decoding a checkpoint tensor: an unknown scheme is unsupported, a missing part malformed, both naming the tensor', async () => {
    const w = new CheckpointWriter(t.store);
    const m = w.component('model', { cls: '', config: null });
    const q = { dtype: 'I8', shape: [2, 4], data: new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]) };
    await m.putEncoded('odd', { dtype: 'F32', shape: [2, 4], scheme: 'acme.int4', params: {}, parts: { q } });
    await m.putEncoded('noscale', {
      dtype: 'F32',
      shape: [2, 4],
      scheme: 'int8',
      params: { shape: [2, 4], dtype: 'F32', granularity: 'row', scale_kind: 'scale' },
      parts: { q },
    });
    const scale = { dtype: 'F32', shape: [2], data: new Uint8Array(new Float32Array([0.5, 2]).buffer) };
    await m.putEncoded('ok', {
      dtype: 'F16',
      shape: [2, 4],
      scheme: 'int8',
      params: { shape: [2, 4], dtype: 'F16', granularity: 'row', scale_kind: 'scale' },
      parts: { q, scale },
    });
    const { id } = await w.commit();
    const cp = await openCheckpoint(t.store, id);
    const tensors = cp.component('model').tensors;
    await expectCode(() => tensors.get('odd')!.read({ decode: true }), 'unsupported', 'encodings.unknown_scheme', {
      tensor: 'odd',
      scheme: 'acme.int4',
    });
    await expectCode(() => tensors.get('noscale')!.read({ decode: true }), 'malformed', undefined, {
      tensor: 'noscale',
      part: 'scale',
    });
    // the default output is the logical dtype (F16 here); F32 on request
    expect(floats(await tensors.get('ok')!.read({ decode: true, dtype: 'F32' }))).toEqual(
      new Float32Array([0.5, 1, 1.5, 2, 10, 12, 14, 16]),
    );
    expect((await tensors.get('ok')!.read({ decode: true })).length).toBe(16);
    await expectCode(() => tensors.get('ok')!.readInto(new Uint8Array(15), 0, { decode: true }), 'invalid_argument');
  });
});
