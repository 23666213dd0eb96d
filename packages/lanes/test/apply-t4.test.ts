/**
 * T4 apply end to end: casts and quantization through `@tensorfs/format/encodings`, gated when
 * lossy, streamed in row batches; the result binds `admit` and decodes within each encoder's error
 * bound of the source.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { decode, E4M3FN, type Encoded } from '@tensorfs/format/encodings';
import {
  BUNDLED_CATALOG,
  bind,
  type Catalog,
  type CatalogIndex,
  deriveTopology,
  documentDigest,
  type LaneDocument,
  loadCatalog,
  refOf,
} from '@tensorfs/lanes';
import { applyLane } from '@tensorfs/lanes/apply';
import { commit, openTensors, TensorWriter } from '@tensorfs/tensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withStoreAt } from './helpers.js';

const N = 8;
const K = 64;
/** A tiny architecture: three quantizable matrices (one wide enough for Q4_K's 256) and a norm. */
const SHAPES: Record<string, number[]> = {
  'a.weight': [N, K],
  'b.weight': [4, K],
  'c.weight': [2, 256],
  'norm.weight': [K],
};

function tinyCatalog(): Catalog {
  const rules = (BUNDLED_CATALOG.documents as readonly LaneDocument[]).filter((d) => d.kind === 'tensorfs.lanes.rule');
  const topo = deriveTopology(
    { tensors: Object.entries(SHAPES).map(([name, shape]) => ({ name, dtype: 'F32', shape })) },
    { name: 'tq', header: 'tiny' },
  );
  const documents = [topo, ...rules];
  const index: CatalogIndex = { kind: 'tensorfs.lanes.catalog', version: 1, topologies: {}, rules: {}, morphisms: {} };
  for (const d of documents)
    index[d.kind === 'tensorfs.lanes.topology' ? 'topologies' : 'rules'][refOf(d)] = documentDigest(d);
  return loadCatalog({ index, documents });
}

/** Deterministic values with a spread of magnitudes per row (one all-zero row in a.weight). */
function values(name: string, n: number): Float32Array {
  const out = new Float32Array(n);
  let x = name.length * 7919;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = Math.fround(((x / 2 ** 32) * 2 - 1) * 2 ** ((i % 7) - 3));
  }
  if (name === 'a.weight') out.fill(0, 2 * K, 3 * K);
  return out;
}
const count = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);
const SRC = new Map(Object.entries(SHAPES).map(([n, s]) => [n, values(n, count(s))]));
const f32 = (b: Uint8Array) => new Float32Array(b.slice().buffer);

let dir = '';
let storeDir = '';
const cat = tinyCatalog();

function countObjects(): number {
  let n = 0;
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) e.isDirectory() ? walk(path.join(d, e.name)) : n++;
  };
  walk(path.join(storeDir, 'objects'));
  return n;
}

const withStore = <R>(fn: (s: LocalStore) => Promise<R>): Promise<R> => withStoreAt(storeDir, fn);

/** Writes SRC as one file (each tensor in `dtype`: F32 values, or F64 widened) under ref `name`. */
async function source(name: string, file: string, dtype: 'F32' | 'F64' | 'F8_E4M3' | 'NaN' = 'F32'): Promise<void> {
  await withStore(async (s) => {
    const w = new TensorWriter(s, file);
    for (const [n, shape] of Object.entries(SHAPES)) {
      const v = SRC.get(n) as Float32Array;
      let bytes: Uint8Array;
      if (dtype === 'F64') bytes = new Uint8Array(Float64Array.from(v, (x) => x + 2 ** -40).buffer);
      else if (dtype === 'F8_E4M3') bytes = Uint8Array.from(v, (_, i) => (i * 37) % 0x7e);
      else if (dtype === 'NaN')
        bytes = new Uint8Array(v.map((x, i) => (n === 'b.weight' && i === 70 ? Number.NaN : x)).buffer);
      else bytes = new Uint8Array(v.slice().buffer);
      await w.add(n, dtype === 'NaN' ? 'F32' : dtype, shape, bytes);
    }
    const entry = await w.finish();
    await commit(s, { put: [entry], ref: name, expected: null });
    await w.close();
  });
}

async function candidate(ref: string) {
  return withStore(async (s) => {
    const set = await openTensors(s, ref);
    return { model: [...set].map((v) => ({ name: v.name, dtype: v.dtype, shape: v.shape.map(Number) })) };
  });
}

async function read(ref: string, name: string, decodeIt = false): Promise<Uint8Array> {
  return withStore(async (s) => (await openTensors(s, ref)).get(name).read(decodeIt ? { decode: true } : {}));
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lanes-t4-'));
  storeDir = path.join(dir, 'store');
  await (await LocalStore.open(storeDir)).close();
  await source('src/st', 'model.safetensors');
  await source('src/gguf', 'model.gguf');
  await source('src/f64', 'model.safetensors', 'F64');
  await source('src/fp8', 'model.safetensors', 'F8_E4M3');
  await source('src/nan', 'model.safetensors', 'NaN');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('applyLane T4', () => {
  it('lossy steps need allowLossy: denied naming the tensors, nothing written', async () => {
    const before = countObjects();
    const err = await withStore((s) => applyLane(s, 'src/st', 'tq+int8-rowwise', cat, { name: 'q/denied' })).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({
      code: 'denied',
      details: { rule: 'lanes.lossy_not_allowed', tensors: ['a.weight', 'b.weight', 'c.weight'] },
    });
    expect((err as Error).message).toContain('a.weight, b.weight, c.weight');
    expect(countObjects()).toBe(before);
    expect(await withStore((s) => s.getRef('q/denied'))).toBeNull();
  });

  it('int8-rowwise: admits, |x − x̂| ≤ scale/2 per row, norm inherited', async () => {
    const r = await withStore((s) =>
      applyLane(s, 'src/st', 'tq+int8-rowwise', cat, { name: 'q/int8', allowLossy: true }),
    );
    expect(r.bind.steps.map((s) => [s.tier, s.op, s.lossy])).toEqual([['T4', 'quantize', true]]);
    expect(bind(await candidate('q/int8'), 'tq+int8-rowwise', cat).verdict).toBe('admit');
    for (const [n, rows] of [
      ['a.weight', N],
      ['b.weight', 4],
    ] as const) {
      const q = await read('q/int8', n);
      const sc = f32(await read('q/int8', `${n}_scale`));
      const enc: Encoded = {
        scheme: 'int8',
        params: { shape: [rows, K], dtype: 'F32', granularity: 'row', scale_kind: 'scale' },
        parts: {
          q: { dtype: 'I8', shape: [rows, K], bytes: q },
          scale: { dtype: 'F32', shape: [rows], bytes: f32ToU8(sc) },
        },
      };
      const y = f32(decode(enc));
      const x = SRC.get(n) as Float32Array;
      for (let r0 = 0; r0 < rows; r0++) {
        let amax = 0;
        for (let c = 0; c < K; c++) amax = Math.max(amax, Math.abs(x[r0 * K + c] as number));
        expect(sc[r0]).toBe(Math.max(Math.fround(amax / 127), Math.fround(1e-30)));
        for (let c = 0; c < K; c++) {
          const i = r0 * K + c;
          expect(Math.abs((x[i] as number) - (y[i] as number))).toBeLessThanOrEqual(
            (sc[r0] as number) * 0.5 * (1 + 1e-6),
          );
        }
      }
    }
    expect(await read('q/int8', 'norm.weight')).toEqual(
      new Uint8Array((SRC.get('norm.weight') as Float32Array).slice().buffer),
    );
  });

  it('streams: one row per batch gives the very same snapshot as the default batch', async () => {
    const a = await withStore((s) =>
      applyLane(s, 'src/st', 'tq+fp8-e4m3-rowwise', cat, { name: 'q/fp8', allowLossy: true }),
    );
    const b = await withStore((s) =>
      applyLane(s, 'src/st', 'tq+fp8-e4m3-rowwise', cat, { name: 'q/fp8-rows', allowLossy: true, batchBytes: 1 }),
    );
    expect(b.snapshot).toBe(a.snapshot);
    const n1 = await withStore((s) =>
      applyLane(s, 'src/st', 'tq+cozy.nvfp4-flat', cat, { name: 'q/nv', allowLossy: true }),
    );
    const n2 = await withStore((s) =>
      applyLane(s, 'src/st', 'tq+cozy.nvfp4-flat', cat, { name: 'q/nv-rows', allowLossy: true, batchBytes: 300 }),
    );
    expect(n2.snapshot).toBe(n1.snapshot);
  });

  it('fp8-e4m3-rowwise: admits, relative error ≤ 2^-4 for normals', async () => {
    expect(bind(await candidate('q/fp8'), 'tq+fp8-e4m3-rowwise', cat).verdict).toBe('admit');
    const q = await read('q/fp8', 'a.weight');
    const sc = f32(await read('q/fp8', 'a.weight_scale'));
    const y = f32(
      decode({
        scheme: 'fp8_e4m3fn',
        params: { shape: [N, K], dtype: 'F32', granularity: 'row' },
        parts: {
          q: { dtype: 'F8_E4M3', shape: [N, K], bytes: q },
          scale: { dtype: 'F32', shape: [N], bytes: f32ToU8(sc) },
        },
      }),
    );
    const x = SRC.get('a.weight') as Float32Array;
    for (let i = 0; i < x.length; i++) {
      const s = sc[Math.floor(i / K)] as number;
      const a = Math.abs(x[i] as number);
      const err = Math.abs((x[i] as number) - (y[i] as number));
      if (a / s >= 2 ** -6) expect(err).toBeLessThanOrEqual(a * 2 ** -4 * (1 + 1e-6));
      else expect(err).toBeLessThanOrEqual(s * 2 ** -10 * (1 + 1e-6));
    }
  });

  it('cozy.nvfp4-flat: admits with its declared conventions, |x − x̂| ≤ block scale × global', async () => {
    expect(bind(await candidate('q/nv'), 'tq+cozy.nvfp4-flat', cat).verdict).toBe('admit');
    const q = await read('q/nv', 'b.weight');
    const bs = await read('q/nv', 'b.weight_scale');
    const g = f32(await read('q/nv', 'b.weight_scale_2'))[0] as number;
    const x = SRC.get('b.weight') as Float32Array;
    let amax = 0;
    for (const v of x) amax = Math.max(amax, Math.abs(v));
    expect(g).toBe(Math.fround(amax / Math.fround(6 * 448))); // the whole tensor's, though streamed
    const y = f32(
      decode({
        scheme: 'nvfp4',
        params: { shape: [4, K], dtype: 'F32', block_size: 16, scale_layout: 'row_major', nibble_order: 'lo_first' },
        parts: {
          q: { dtype: 'U8', shape: [4, K / 2], bytes: q },
          block_scale: { dtype: 'F8_E4M3', shape: [4, K / 16], bytes: bs },
          global_scale: { dtype: 'F32', shape: [], bytes: f32ToU8(new Float32Array([g])) },
        },
      }),
    );
    for (let i = 0; i < x.length; i++) {
      const eff = Math.fround((E4M3FN[bs[Math.floor(i / 16)] as number] as number) * g);
      expect(Math.abs((x[i] as number) - (y[i] as number))).toBeLessThanOrEqual(eff * (1 + 1e-6));
    }
  });

  it('gguf.q8_0 on a GGUF file: Q8_0 blocks that admit and decode within d/2', async () => {
    const r = await withStore((s) =>
      applyLane(s, 'src/gguf', 'tq+gguf.q8_0', cat, { name: 'q/q8', allowLossy: true, batchBytes: K * 4 }),
    );
    expect(r.bind.steps.map((s) => [s.tier, s.op, s.via, s.tensors.length])).toEqual([
      ['T4', 'quantize', 'F32->gguf.q8_0@1', 3],
    ]);
    const cand = await candidate('q/q8');
    expect(cand.model.find((t) => t.name === 'a.weight')?.dtype).toBe('Q8_0');
    expect(bind(cand, 'tq+gguf.q8_0', cat).verdict).toBe('admit');
    const y = f32(await read('q/q8', 'a.weight', true));
    const x = SRC.get('a.weight') as Float32Array;
    for (let b = 0; b < x.length / 32; b++) {
      let amax = 0;
      for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b * 32 + j] as number));
      for (let j = 0; j < 32; j++) {
        const i = b * 32 + j;
        expect(Math.abs((x[i] as number) - (y[i] as number))).toBeLessThanOrEqual(
          (amax / 127) * 0.5 + amax * 2 ** -11 + 1e-7,
        );
      }
    }
    // back to dense: dequantizing Q8_0 to F32 is exact (not lossy), no allowance needed
    const back = await withStore((s) => applyLane(s, 'q/q8', 'tq', cat, { name: 'q/q8-dense' }));
    expect(back.bind.steps.map((s) => [s.op, s.lossy])).toEqual([['dequantize', false]]);
    expect(f32(await read('q/q8-dense', 'a.weight'))).toEqual(y);
  });

  it('NVFP4 conventions: flat <-> pre-swizzled is a byte relayout (T3), and quantizing straight to pre-swizzled agrees', async () => {
    const r = await withStore((s) => applyLane(s, 'q/nv', 'tq+bfl.nvfp4-preswizzled', cat, { name: 'q/bfl' }));
    expect(r.bind.steps.map((s) => [s.tier, s.op, s.lossy, s.tensors.length])).toEqual([['T3', 'relayout', false, 3]]);
    expect(bind(await candidate('q/bfl'), 'tq+bfl.nvfp4-preswizzled', cat).verdict).toBe('admit');
    // the same values: decode both layouts with the format's own decoder
    const flat = {
      scheme: 'nvfp4',
      params: { shape: [2, 256], dtype: 'F32', block_size: 16, scale_layout: 'row_major', nibble_order: 'lo_first' },
      parts: {
        q: { dtype: 'U8', shape: [2, 128], bytes: await read('q/nv', 'c.weight') },
        block_scale: { dtype: 'F8_E4M3', shape: [2, 16], bytes: await read('q/nv', 'c.weight_scale') },
        global_scale: { dtype: 'F32', shape: [], bytes: await read('q/nv', 'c.weight_scale_2') },
      },
    } satisfies Encoded;
    const tiled = {
      scheme: 'nvfp4',
      params: { shape: [2, 256], dtype: 'F32', block_size: 16, scale_layout: 'cublas_128x4', nibble_order: 'hi_first' },
      parts: {
        q: { dtype: 'U8', shape: [2, 128], bytes: await read('q/bfl', 'c.weight') },
        block_scale: { dtype: 'F8_E4M3', shape: [128, 16], bytes: await read('q/bfl', 'c.weight_scale') },
        global_scale: { dtype: 'F32', shape: [], bytes: await read('q/bfl', 'c.weight_scale_2') },
      },
    } satisfies Encoded;
    expect(f32(decode(tiled))).toEqual(f32(decode(flat)));
    expect(await read('q/bfl', 'c.weight')).not.toEqual(await read('q/nv', 'c.weight')); // nibbles swapped
    // back to flat: the very same snapshot
    const back = await withStore((s) => applyLane(s, 'q/bfl', 'tq+cozy.nvfp4-flat', cat, { name: 'q/nv-again' }));
    expect(back.snapshot).toBe((await withStore((s) => openTensors(s, 'q/nv'))).snapshot);
    // quantizing straight to the pre-swizzled rule writes the same bytes, whatever the batch
    const direct = await withStore((s) =>
      applyLane(s, 'src/st', 'tq+bfl.nvfp4-preswizzled', cat, {
        name: 'q/bfl-direct',
        allowLossy: true,
        batchBytes: 1,
      }),
    );
    expect(direct.snapshot).toBe(r.snapshot);
    // and dequantizing it decodes exactly those values
    await withStore((s) => applyLane(s, 'q/bfl', 'tq', cat, { name: 'q/bfl-dense' }));
    expect(f32(await read('q/bfl-dense', 'c.weight'))).toEqual(f32(decode(flat)));
  });

  it('gguf.q4_k: refused as unsupported, naming the missing encoder; nothing written', async () => {
    const before = countObjects();
    await expect(
      withStore((s) => applyLane(s, 'src/gguf', 'tq+gguf.q4_k', cat, { name: 'q/q4k', allowLossy: true })),
    ).rejects.toMatchObject({
      code: 'unsupported',
      message: expect.stringContaining('no encoder for GGML Q4_K encoding'),
      details: { rule: 'lanes.apply_unsupported', encoder: 'GGML Q4_K encoding', tensors: ['c.weight'] },
    });
    // and Q8_0 blocks cannot live in a safetensors file
    await expect(
      withStore((s) => applyLane(s, 'src/st', 'tq+gguf.q8_0', cat, { name: 'q/q8st', allowLossy: true })),
    ).rejects.toMatchObject({ code: 'unsupported', details: { rule: 'lanes.apply_unsupported' } });
    expect(countObjects()).toBe(before);
  });

  it('a NaN cannot be quantized: invalid_argument naming the tensor, no ref', async () => {
    await expect(
      withStore((s) => applyLane(s, 'src/nan', 'tq+int8-rowwise', cat, { name: 'q/nan', allowLossy: true })),
    ).rejects.toMatchObject({
      code: 'invalid_argument',
      details: { rule: 'lanes.apply_not_finite', tensor: 'b.weight' },
    });
    await expect(
      withStore((s) => applyLane(s, 'src/nan', 'tq+cozy.nvfp4-flat', cat, { name: 'q/nan', allowLossy: true })),
    ).rejects.toMatchObject({
      code: 'invalid_argument',
      details: { rule: 'lanes.apply_not_finite', tensor: 'b.weight' },
    });
    expect(await withStore((s) => s.getRef('q/nan'))).toBeNull();
  });

  it('int8 dequantized back to F32 is exact: q · s', async () => {
    const r = await withStore((s) => applyLane(s, 'q/int8', 'tq', cat, { name: 'q/int8-dense' }));
    expect(r.bind.steps.map((s) => [s.op, s.via, s.lossy])).toEqual([['dequantize', 'int8-rowwise@1->F32', false]]);
    const q = new Int8Array((await read('q/int8', 'a.weight')).slice().buffer);
    const sc = f32(await read('q/int8', 'a.weight_scale'));
    const y = f32(await read('q/int8-dense', 'a.weight'));
    for (let i = 0; i < q.length; i++)
      expect(y[i]).toBe(Math.fround((q[i] as number) * (sc[Math.floor(i / K)] as number)));
    expect(bind(await candidate('q/int8-dense'), 'tq', cat).verdict).toBe('admit');
  });

  it('casts: F64 -> F32 narrows (gated, rounds once); F8_E4M3 -> BF16 widens (no allowance)', async () => {
    await expect(withStore((s) => applyLane(s, 'src/f64', 'tq', cat, { name: 'c/f32' }))).rejects.toMatchObject({
      code: 'denied',
      details: { tensors: ['a.weight', 'b.weight', 'c.weight', 'norm.weight'] },
    });
    const r = await withStore((s) => applyLane(s, 'src/f64', 'tq', cat, { name: 'c/f32', allowLossy: true }));
    expect(r.bind.steps.map((s) => [s.op, s.via, s.lossy])).toEqual([['cast', 'F64->F32', true]]);
    expect(bind(await candidate('c/f32'), 'tq', cat).verdict).toBe('admit');
    const x = SRC.get('a.weight') as Float32Array;
    expect(f32(await read('c/f32', 'a.weight'))).toEqual(Float32Array.from(x, (v) => Math.fround(v + 2 ** -40)));
    const w = await withStore((s) => applyLane(s, 'src/fp8', 'tq', cat, { name: 'c/bf16', batchBytes: 8 }));
    expect(w.bind.steps.map((s) => [s.op, s.via, s.lossy])).toEqual([['cast', 'F8_E4M3->BF16', false]]);
    const codes = await read('src/fp8', 'b.weight');
    const bf = new Uint16Array((await read('c/bf16', 'b.weight')).slice().buffer);
    for (let i = 0; i < codes.length; i++) {
      const back = new Float32Array(new Uint32Array([(bf[i] as number) << 16]).buffer)[0];
      expect(back).toBe(E4M3FN[codes[i] as number]);
    }
  });
});

function f32ToU8(a: Float32Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}
