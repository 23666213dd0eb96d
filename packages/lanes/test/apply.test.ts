import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { writeSafetensors } from '@tensorfs/format';
import { bind } from '@tensorfs/lanes';
import { applyLane } from '@tensorfs/lanes/apply';
import { openTensors } from '@tensorfs/tensors';
import { expectCodeSync } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countObjects, f32, llamaTensors, type T, tinyCatalog } from './tiny.js';
import { withStoreAt } from './helpers.js';

let dir = '';
let storeDir = '';
const cat = tinyCatalog();
const data = new Map<string, Uint8Array>();
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lanes-apply-'));
  storeDir = path.join(dir, 'store');
  for (const [i, t] of llamaTensors().entries()) data.set(t.name, f32(t.shape, i + 1));
  const write = (sub: string, ts: T[]) => {
    fs.mkdirSync(path.join(dir, sub));
    fs.writeFileSync(
      path.join(dir, sub, 'model.safetensors'),
      writeSafetensors(ts.map((t) => ({ ...t, data: data.get(t.name) as Uint8Array }))),
    );
  };
  write('hf', llamaTensors());
  const fusedData = (l: number, parts: string[]) => {
    const chunks = parts.map((p) => data.get(`model.layers.${l}.${p}.weight`) as Uint8Array);
    const out = new Uint8Array(chunks.reduce((a, c) => a + c.length, 0));
    let at = 0;
    for (const c of chunks) out.set(c, (at += c.length) - c.length);
    return out;
  };
  for (const l of [0, 1]) {
    data.set(
      `model.layers.${l}.self_attn.qkv_proj.weight`,
      fusedData(l, ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj']),
    );
    data.set(`model.layers.${l}.mlp.gate_up_proj.weight`, fusedData(l, ['mlp.gate_proj', 'mlp.up_proj']));
  }
  const phi = cat.topology('tiny-phi@1').components.model!.keys;
  write(
    'phi',
    Object.entries(phi).map(([name, shape]) => ({ name, dtype: 'F32', shape })),
  );
  data.set('other.weight', f32([2], 99));
  write('other', [{ name: 'other.weight', dtype: 'F32', shape: [2] }]);
  const store = await LocalStore.open(storeDir);
  await store.importPath(path.join(dir, 'other'), { name: 'local/other', threads: 1 });
  await store.importPath(path.join(dir, 'hf'), { name: 'local/hf', threads: 1 });
  await store.importPath(path.join(dir, 'phi'), { name: 'local/phi', threads: 1 });
  await store.close();
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const withStore = <R>(fn: (s: LocalStore) => Promise<R>): Promise<R> => withStoreAt(storeDir, fn);

describe('applyLane', () => {
  it('T1 + T3: Hugging Face -> GGUF names writes only the permuted q/k tensors, and the result admits', async () => {
    const before = countObjects(storeDir);
    const r = await withStore((s) => applyLane(s, 'local/hf', 'tiny-llama-gguf', cat, { name: 'local/gguf' }));
    expect(r.bind.steps.map((s) => `${s.tier}:${s.op}`).sort()).toEqual(['T1:rekey', 'T3:permute']);
    // new objects: 4 permuted tensors (q, k of 2 layers), 1 header, 1 manifest
    expect(countObjects(storeDir) - before).toBe(6);
    await withStore(async (s) => {
      const set = await openTensors(s, 'local/gguf');
      const cand = { model: [...set].map((v) => ({ name: v.name, dtype: v.dtype, shape: v.shape.map(Number) })) };
      expect(bind(cand, 'tiny-llama-gguf', cat).verdict).toBe('admit');
      // llama.cpp: rows reshaped (heads, 2, hd/2) and the last two axes swapped
      const q = new Float32Array((await set.get('blk.1.attn_q.weight').read()).slice().buffer);
      const src = new Float32Array((data.get('model.layers.1.self_attn.q_proj.weight') as Uint8Array).slice().buffer);
      const heads = 2;
      const hd = 4;
      for (let h = 0; h < heads; h++)
        for (let i = 0; i < 2; i++)
          for (let j = 0; j < hd / 2; j++)
            for (let c = 0; c < 8; c++)
              expect(q[(h * hd + j * 2 + i) * 8 + c]).toBe(src[(h * hd + i * (hd / 2) + j) * 8 + c]);
      const k = new Float32Array((await set.get('blk.0.attn_k.weight').read()).slice().buffer);
      const ks = new Float32Array((data.get('model.layers.0.self_attn.k_proj.weight') as Uint8Array).slice().buffer);
      expect([...k.subarray(8, 16)]).toEqual([...ks.subarray(16, 24)]); // row 1 <- row 2 (one head of 4 rows)
      expect(await set.get('blk.0.ffn_up.weight').read()).toEqual(data.get('model.layers.0.mlp.up_proj.weight'));
    });
    // back: the inverse permutation restores the original bytes and header: the very same snapshot
    const mid = countObjects(storeDir);
    const back = await withStore((s) => applyLane(s, 'local/gguf', 'tiny-llama', cat, { name: 'local/hf-again' }));
    expect(countObjects(storeDir) - mid).toBe(0);
    expect(back.snapshot).toBe(await withStore(async (s) => (await openTensors(s, 'local/hf')).snapshot));
    await withStore(async (s) => {
      const set = await openTensors(s, 'local/hf-again');
      expect(await set.get('model.layers.1.self_attn.q_proj.weight').read()).toEqual(
        data.get('model.layers.1.self_attn.q_proj.weight'),
      );
    });
  });

  it('T1 only: a composition that costs one header (and the manifest)', async () => {
    const before = countObjects(storeDir);
    const r = await withStore((s) => applyLane(s, 'local/other', 'tiny-renamed', cat, { name: 'local/renamed' }));
    expect(r.bind.steps.map((s) => [s.tier, s.op, s.newBytes])).toEqual([['T1', 'rekey', 0]]);
    expect(countObjects(storeDir) - before).toBe(2);
    await withStore(async (s) => {
      const set = await openTensors(s, 'local/renamed');
      expect(set.names()).toEqual(['renamed.weight']);
      expect(await set.get('renamed.weight').read()).toEqual(data.get('other.weight'));
    });
  });

  it('T2: Phi-3 fused -> split; the result admits and holds the exact row slices', async () => {
    const r = await withStore((s) => applyLane(s, 'local/phi', 'tiny-llama', cat, { name: 'local/phi-split' }));
    expect(r.bind.steps.map((s) => [s.tier, s.op, s.newBytes])).toEqual([['T2', 'split', 0]]);
    await withStore(async (s) => {
      const set = await openTensors(s, 'local/phi-split');
      const cand = { model: [...set].map((v) => ({ name: v.name, dtype: v.dtype, shape: v.shape.map(Number) })) };
      expect(bind(cand, 'tiny-llama', cat).verdict).toBe('admit');
      for (const n of ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'mlp.gate_proj', 'mlp.up_proj'])
        expect(await set.get(`model.layers.1.${n}.weight`).read()).toEqual(data.get(`model.layers.1.${n}.weight`));
    });
  });

  it('T2 then T4: Phi-3 fused F32 -> split int8-rowwise in one apply; the result admits', async () => {
    const r = await withStore((s) =>
      applyLane(s, 'local/phi', 'tiny-llama+int8-rowwise', cat, { name: 'local/phi-int8', allowLossy: true }),
    );
    expect(r.bind.steps.map((s) => [s.tier, s.op])).toEqual([
      ['T2', 'split'],
      ['T4', 'quantize'],
    ]);
    expect(r.entries).toBe(2); // the split file, then the quantized file
    await withStore(async (s) => {
      const set = await openTensors(s, 'local/phi-int8');
      const cand = { model: [...set].map((v) => ({ name: v.name, dtype: v.dtype, shape: v.shape.map(Number) })) };
      expect(bind(cand, 'tiny-llama+int8-rowwise', cat).verdict).toBe('admit');
      const k = new Int8Array((await set.get('model.layers.0.self_attn.k_proj.weight').read()).slice().buffer);
      const ks = new Float32Array(
        (await set.get('model.layers.0.self_attn.k_proj.weight_scale').read()).slice().buffer,
      );
      const src = new Float32Array((data.get('model.layers.0.self_attn.k_proj.weight') as Uint8Array).slice().buffer);
      for (let i = 0; i < src.length; i++)
        expect(Math.abs((k[i] as number) * (ks[Math.floor(i / 8)] as number) - (src[i] as number))).toBeLessThanOrEqual(
          (ks[Math.floor(i / 8)] as number) / 2 + 1e-6,
        );
    });
  });

  it('admit makes the ref; refuse and lossy without allowance are errors, and nothing is written', async () => {
    await withStore((s) => applyLane(s, 'local/hf', 'tiny-llama', cat, { name: 'local/same' }));
    const before = countObjects(storeDir);
    await withStore(async (s) => {
      await expect(applyLane(s, 'local/hf', 'tiny-llama+int8-rowwise', cat, { name: 'local/q' })).rejects.toMatchObject(
        { code: 'denied', details: { rule: 'lanes.lossy_not_allowed' } },
      );

      await expect(applyLane(s, 'local/phi', 'tiny-other', cat, { name: 'local/x' })).rejects.toMatchObject({
        code: 'conflict',
        details: { rule: 'lanes.missing_tensor', tensor: 'other.weight' },
      });
    });
    expect(countObjects(storeDir)).toBe(before);
    expectCodeSync(() => cat.lane('tiny-llama+nope'), 'not_found', 'lanes.unknown_document');
  });
});
