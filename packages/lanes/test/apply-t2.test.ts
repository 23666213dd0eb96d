/**
 * T2 through planner seams: a Phi-3-shaped checkpoint imported with `laneSeams` splits into q/k/v
 * and gate/up (and fuses back) for one header object and the manifest: zero new tensor bytes.
 * Imported without seams, only the boundary pieces are written, and counted.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { parseSafetensorsHeader, type Progress, writeSafetensors } from '@tensorfs/format';
import { bind, candidateFromSafetensors, laneSeams } from '@tensorfs/lanes';
import { applyLane } from '@tensorfs/lanes/apply';
import { openTensors } from '@tensorfs/tensors';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { countObjects, f32, llamaTensors, tinyCatalog } from './tiny.js';

const cat = tinyCatalog();
const PARTS = {
  qkv: ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj'],
  gate_up: ['mlp.gate_proj', 'mlp.up_proj'],
};
const data = new Map<string, Uint8Array>();
let phiDir = '';
const dirs: string[] = [];
const temp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'lanes-t2-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) if (d !== phiDir) fs.rmSync(d, { recursive: true, force: true });
});

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((a, c) => a + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

beforeAll(() => {
  for (const [i, t] of llamaTensors().entries()) data.set(t.name, f32(t.shape, i + 101));
  for (const l of [0, 1]) {
    const p = `model.layers.${l}`;
    data.set(
      `${p}.self_attn.qkv_proj.weight`,
      concat(PARTS.qkv.map((n) => data.get(`${p}.${n}.weight`) as Uint8Array)),
    );
    data.set(
      `${p}.mlp.gate_up_proj.weight`,
      concat(PARTS.gate_up.map((n) => data.get(`${p}.${n}.weight`) as Uint8Array)),
    );
  }
  phiDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lanes-t2-phi-'));
  const keys = cat.topology('tiny-phi@1').components.model?.keys ?? {};
  fs.writeFileSync(
    path.join(phiDir, 'model.safetensors'),
    writeSafetensors(
      Object.entries(keys).map(([name, shape]) => ({ name, dtype: 'F32', shape, data: data.get(name) as Uint8Array })),
    ),
  );
  return () => fs.rmSync(phiDir, { recursive: true, force: true });
});

async function seamsOfFile(file: string): Promise<Record<string, number[]>> {
  const header = parseSafetensorsHeader(new Uint8Array(fs.readFileSync(file)));
  return laneSeams(candidateFromSafetensors(header), 'tiny-llama', cat);
}

async function candidate(store: LocalStore, ref: string) {
  const set = await openTensors(store, ref);
  return { model: [...set].map((v) => ({ name: v.name, dtype: v.dtype, shape: v.shape.map(Number) })) };
}

describe('T2 through planner seams', () => {
  it('laneSeams: byte offsets where the parts begin (q | k | v, gate | up)', async () => {
    const seams = await seamsOfFile(path.join(phiDir, 'model.safetensors'));
    // qkv [16, 8] F32 = q 8 rows, k 4, v 4; gate_up [24, 8] = 12 + 12; 32 bytes a row
    expect(seams).toEqual({
      'model.layers.0.self_attn.qkv_proj.weight': [256, 384],
      'model.layers.1.self_attn.qkv_proj.weight': [256, 384],
      'model.layers.0.mlp.gate_up_proj.weight': [384],
      'model.layers.1.mlp.gate_up_proj.weight': [384],
    });
    // nothing to cut when the candidate is already split
    expect(laneSeams({ model: llamaTensors() }, 'tiny-llama', cat)).toEqual({});
  });

  it('imported with seams: split costs the header and the manifest, zero tensor bytes; fuse back is free too', async () => {
    const storeDir = path.join(temp(), 'store');
    const store = await LocalStore.open(storeDir);
    try {
      const seams = await seamsOfFile(path.join(phiDir, 'model.safetensors'));
      await store.importPath(phiDir, { name: 'phi/fused', threads: 1, seams: { 'model.safetensors': seams } });
      const fused = await openTensors(store, 'phi/fused');
      const qkv = fused.get('model.layers.1.self_attn.qkv_proj.weight');
      expect(qkv.records.map((r) => r.length)).toEqual([256, 128, 128]);

      const before = countObjects(storeDir);
      const r = await applyLane(store, 'phi/fused', 'tiny-llama', cat, { name: 'phi/split' });
      expect(r.bind.steps.map((s) => [s.tier, s.op, s.newBytes])).toEqual([['T2', 'split', 0]]);
      expect(r.seams).toEqual({ tensors: 0, objects: 0, bytes: 0 });
      expect(countObjects(storeDir) - before).toBe(2); // the new header object and the manifest
      expect(bind(await candidate(store, 'phi/split'), 'tiny-llama', cat).verdict).toBe('admit');
      const split = await openTensors(store, 'phi/split');
      // the parts ARE the fused tensor's objects
      expect(PARTS.qkv.map((n) => split.get(`model.layers.1.${n}.weight`).digests[0])).toEqual(qkv.digests);
      for (const n of [...PARTS.qkv, ...PARTS.gate_up])
        expect(await split.get(`model.layers.0.${n}.weight`).read()).toEqual(data.get(`model.layers.0.${n}.weight`));

      // and back: fusing the split parts references the same objects again: the very same snapshot
      const mid = countObjects(storeDir);
      const back = await applyLane(store, 'phi/split', 'tiny-phi', cat, { name: 'phi/fused-again' });
      expect(back.bind.steps.map((s) => [s.tier, s.op])).toEqual([['T2', 'fuse']]);
      expect(countObjects(storeDir) - mid).toBe(0);
      expect(back.snapshot).toBe(fused.snapshot);
    } finally {
      await store.close();
    }
  });

  it('imported without seams: only the boundary pieces are written, and counted', async () => {
    const storeDir = path.join(temp(), 'store');
    const store = await LocalStore.open(storeDir);
    try {
      await store.importPath(phiDir, { name: 'phi/plain', threads: 1 });
      const before = countObjects(storeDir);
      const r = await applyLane(store, 'phi/plain', 'tiny-llama', cat, { name: 'phi/split' });
      // each fused tensor is one object here: every part starts or ends inside it
      const fusedBytes = [0, 1].reduce(
        (a, l) =>
          a +
          (data.get(`model.layers.${l}.self_attn.qkv_proj.weight`) as Uint8Array).length +
          (data.get(`model.layers.${l}.mlp.gate_up_proj.weight`) as Uint8Array).length,
        0,
      );
      expect(r.seams).toEqual({ tensors: 10, objects: 10, bytes: fusedBytes });
      expect(countObjects(storeDir) - before).toBe(10 + 2);
      expect(bind(await candidate(store, 'phi/split'), 'tiny-llama', cat).verdict).toBe('admit');
      const split = await openTensors(store, 'phi/split');
      expect(await split.get('model.layers.1.self_attn.v_proj.weight').read()).toEqual(
        data.get('model.layers.1.self_attn.v_proj.weight'),
      );
    } finally {
      await store.close();
    }
  });

  it('objects off the seams: whole objects inside a part are shared, only the boundary pieces are written', async () => {
    const storeDir = path.join(temp(), 'store');
    const store = await LocalStore.open(storeDir);
    try {
      // qkv rows are q [0,256) k [256,384) v [384,512) bytes; cut it at 128, 256 and 448 instead
      const qkv = 'model.layers.0.self_attn.qkv_proj.weight';
      await store.importPath(phiDir, {
        name: 'phi/odd',
        threads: 1,
        seams: { 'model.safetensors': { [qkv]: [128, 256, 448] } },
      });
      const fused = await openTensors(store, 'phi/odd');
      const objs = fused.get(qkv).digests;
      expect(fused.get(qkv).records.map((r) => r.length)).toEqual([128, 128, 192, 64]);
      const before = countObjects(storeDir);
      const r = await applyLane(store, 'phi/odd', 'tiny-llama', cat, { name: 'phi/split' });
      // layer 0 qkv: q = two whole objects (shared), k = a piece of [256,448), v = a piece + a whole
      // object; gate_up of layer 0 and both fused tensors of layer 1 (one object each): all pieces
      const whole = 512 + 768;
      expect(r.seams).toEqual({ tensors: 2 + 2 + 5, objects: 2 + 2 + 5, bytes: 128 + 64 + 768 + whole });
      expect(countObjects(storeDir) - before).toBe(9 + 2);
      const split = await openTensors(store, 'phi/split');
      expect(split.get('model.layers.0.self_attn.q_proj.weight').digests).toEqual([objs[0], objs[1]]);
      expect(split.get('model.layers.0.self_attn.v_proj.weight').digests[1]).toBe(objs[3]);
      for (const n of [...PARTS.qkv, ...PARTS.gate_up])
        expect(await split.get(`model.layers.0.${n}.weight`).read()).toEqual(data.get(`model.layers.0.${n}.weight`));
      expect(bind(await candidate(store, 'phi/split'), 'tiny-llama', cat).verdict).toBe('admit');
    } finally {
      await store.close();
    }
  });

  it('progress per tensor; an abort stops the apply (cancelled) and makes no ref', async () => {
    const store = await LocalStore.open(path.join(temp(), 'store'));
    try {
      await store.importPath(phiDir, { name: 'phi/p', threads: 1 });
      const seen: string[] = [];
      const events: Progress[] = [];
      await applyLane(store, 'phi/p', 'tiny-llama', cat, {
        name: 'phi/p-split',
        onProgress: (p) => {
          seen.push(`${p.phase}:${p.done}/${p.total}`);
          events.push(p);
        },
      });
      expect(seen.length).toBe(15); // every tensor of the file, fused ones included
      expect(seen.at(-1)).toBe('structural:15/15');
      // The one progress shape: unit tensors, the tensor just written and its file.
      const files = (await store.getManifest((await store.getRef('phi/p'))!)).entries.filter((e) =>
        e.path.endsWith('.safetensors'),
      );
      expect(events.at(-1)).toEqual({
        phase: 'structural',
        unit: 'tensors',
        done: 15,
        total: 15,
        tensors: 15,
        tensorsTotal: 15,
        tensor: events.at(-1)!.tensor,
        path: files[0]!.path,
      });
      expect(typeof events.at(-1)!.tensor).toBe('string');
      const ac = new AbortController();
      await expect(
        applyLane(store, 'phi/p', 'tiny-llama', cat, {
          name: 'phi/p-cancel',
          signal: ac.signal,
          onProgress: (p) => (p.done === 3 ? ac.abort() : undefined),
        }),
      ).rejects.toMatchObject({ code: 'cancelled' });
      expect(await store.getRef('phi/p-cancel')).toBeNull();
    } finally {
      await store.close();
    }
  });

  it('a seam naming no tensor of the file is refused at import (planner.seam_tensor)', async () => {
    const store = await LocalStore.open(path.join(temp(), 'store'));
    try {
      await expect(
        store.importPath(phiDir, { threads: 1, seams: { 'model.safetensors': { 'no.such.weight': [4] } } }),
      ).rejects.toMatchObject({ code: 'invalid_argument', details: { rule: 'planner.seam_tensor' } });
    } finally {
      await store.close();
    }
  });
});
