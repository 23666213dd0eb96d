import {
  bind,
  bindOrThrow,
  candidateFromGguf,
  candidateFromSafetensors,
  defaultCatalog,
  layoutToJson,
  rotaryRowOrder,
} from '@tensorfs/lanes';
import { parseSafetensorsHeader, writeGgufHeader, writeSafetensorsHeader } from '@tensorfs/format';
import { describe, expect, it } from 'vitest';
import { expectCodeSync } from '@tensorfs/testkit';
import { exactCandidate } from './variants.js';

const cat = defaultCatalog();
const lane = (s: string) => cat.lane(s);

/** What {@link layoutToJson} writes for one emitted tensor, and for a layout. */
interface JsonEntry {
  key: string;
  role: string;
  dtypes: string[];
  shape: number[];
}
interface JsonLayout {
  lane: string;
  components: Record<string, { tensors: Record<string, JsonEntry> }>;
}
const jsonLayout = (s: string) => layoutToJson(cat.layout(lane(s))) as unknown as JsonLayout;
const jsonTensors = (s: string, component = 'model') => jsonLayout(s).components[component]?.tensors ?? {};

describe('layout = quant(topology)', () => {
  it('computes emissions as pure functions of the source dims', () => {
    const l = jsonLayout('llama-3-8b+int8-rowwise');
    const t = jsonTensors('llama-3-8b+int8-rowwise');
    expect(l.lane).toBe('llama-3-8b@1+int8-rowwise@1');
    expect(t['model.layers.0.self_attn.k_proj.weight']).toEqual({
      key: 'model.layers.0.self_attn.k_proj.weight',
      role: 'codes',
      dtypes: ['I8'],
      shape: [1024, 4096],
    });
    expect(t['model.layers.0.self_attn.k_proj.weight_scale']).toEqual({
      key: 'model.layers.0.self_attn.k_proj.weight',
      role: 'scale',
      dtypes: ['F32'],
      shape: [1024],
    });
    expect(t['model.embed_tokens.weight']?.role).toBe('dense'); // excluded by the rule
    expect(t['model.norm.weight']).toEqual({
      key: 'model.norm.weight',
      role: 'dense',
      dtypes: ['BF16', 'F16', 'F32'],
      shape: [4096],
    });
    const bfl = jsonTensors('gpt2+bfl.nvfp4-preswizzled');
    // [768, 3072] (Conv1D: rows = 768): scales padded to 128 rows and 4 columns
    expect(bfl['transformer.h.0.mlp.c_fc.weight_scale']?.shape).toEqual([768, 192]);
    expect(bfl['transformer.h.0.attn.c_attn.weight_scale']?.shape).toEqual([768, 144]);
    const flat = jsonTensors('gpt2+cozy.nvfp4-flat');
    expect(flat['transformer.h.0.attn.c_attn.weight_scale']?.shape).toEqual([768, 144]);
    const q4k = jsonTensors('gpt2+gguf.q4_k');
    expect(q4k['transformer.h.0.attn.c_attn.weight']).toMatchObject({ dtypes: ['Q4_K'], shape: [768, 2304] });
    const clip = jsonTensors('clip-vit-large-patch14-text+gguf.q4_k', 'text_encoder');
    expect(clip['embeddings.position_embedding.weight']?.dtypes).toEqual(['Q4_K']); // [77, 768]: 768 % 256 == 0
  });
});

describe('bind', () => {
  it('admits the layout itself', () => {
    for (const l of [
      'llama-3-8b',
      'gemma-2-9b+gguf.q8_0',
      't5-base-encoder+fp8-e4m3-rowwise',
      'qwen2-7b+int8-rowwise',
    ]) {
      const r = bind(exactCandidate(cat, lane(l)), l, cat);
      expect(r).toEqual({
        verdict: 'admit',
        lane: `${lane(l).topology}+${lane(l).rule}`,
        source: null,
        steps: [],
        refuse: null,
        lossy: false,
        newBytes: 0,
      });
    }
  });

  it('prices Hugging Face -> GGUF as T1 renames plus one T3 permutation of q and k', () => {
    const r = bind(exactCandidate(cat, lane('llama-3-8b')), 'llama-3-8b-gguf', cat);
    expect(r.verdict).toBe('derivable');
    expect(r.source).toBe('llama-3-8b@1+none@1');
    const byOp = Object.fromEntries(r.steps.map((s) => [`${s.tier}:${s.op}`, s]));
    expect(Object.keys(byOp).sort()).toEqual(['T1:rekey', 'T3:permute']);
    const perm = byOp['T3:permute']!;
    expect(perm.tensors.length).toBe(64); // q and k of 32 layers
    expect(perm.tensors[0]).toEqual({
      from: ['model.layers.0.self_attn.k_proj.weight'],
      to: ['blk.0.attn_k.weight'],
      permute: { kind: 'rotary_halves_to_pairs', heads: 8 },
    });
    expect(perm.tensors[1]?.permute).toEqual({ kind: 'rotary_halves_to_pairs', heads: 32 });
    // q: 4096x4096, k: 1024x4096, BF16
    expect(perm.bytes).toBe(32 * (4096 * 4096 + 1024 * 4096) * 2);
    expect(perm.newBytes).toBe(perm.bytes);
    expect(byOp['T1:rekey']!.newBytes).toBe(0);
    expect(byOp['T1:rekey']!.tensors.length).toBe(291 - 64);
    expect(r.newBytes).toBe(perm.bytes);
    // and back
    const back = bind(exactCandidate(cat, lane('mistral-7b-gguf')), 'mistral-7b', cat);
    expect(back.steps.map((s) => `${s.tier}:${s.op}:${s.via}`).sort()).toEqual([
      'T1:rekey:llama-hf-to-gguf@1 (inverse)',
      'T3:permute:llama-hf-to-gguf@1 (inverse)',
    ]);
  });

  it('prices Phi-3 fused <-> split as T2 seams with zero new bytes', () => {
    const split = bind(exactCandidate(cat, lane('phi-3-mini')), 'phi-3-mini-split', cat);
    expect(split.verdict).toBe('derivable');
    expect(split.steps.map((s) => [s.tier, s.op, s.tensors.length, s.newBytes])).toEqual([['T2', 'split', 64, 0]]);
    expect(split.steps[0]!.tensors[0]).toEqual({
      from: ['model.layers.0.mlp.gate_up_proj.weight'],
      to: ['model.layers.0.mlp.gate_proj.weight', 'model.layers.0.mlp.up_proj.weight'],
      seam: { axis: 0, sizes: [8192, 8192] },
    });
    const fuse = bind(exactCandidate(cat, lane('phi-3-mini-split+int8-rowwise')), 'phi-3-mini+int8-rowwise', cat);
    expect(fuse.steps.map((s) => [s.tier, s.op, s.newBytes])).toEqual([['T2', 'fuse', 0]]);
    // a quantized tensor is fused with its row scales
    expect(fuse.steps[0]!.tensors.find((t) => t.to[0] === 'model.layers.0.self_attn.qkv_proj.weight')?.from).toEqual([
      'model.layers.0.self_attn.q_proj.weight',
      'model.layers.0.self_attn.q_proj.weight_scale',
      'model.layers.0.self_attn.k_proj.weight',
      'model.layers.0.self_attn.k_proj.weight_scale',
      'model.layers.0.self_attn.v_proj.weight',
      'model.layers.0.self_attn.v_proj.weight_scale',
    ]);
    // pre-swizzled scales are tiled: a row seam through them is materialized (T3)
    const tiled = bind(
      exactCandidate(cat, lane('phi-3-mini+bfl.nvfp4-preswizzled')),
      'phi-3-mini-split+bfl.nvfp4-preswizzled',
      cat,
      {
        conventions: { scale_layout: 'cublas_128x4' },
      },
    );
    expect(tiled.steps.map((s) => s.tier)).toEqual(['T3']);
  });

  it('a cast is never a refuse: F64 narrows (lossy), F16 scales widen (exact)', () => {
    const c = exactCandidate(cat, lane('gpt2'));
    const r = bind({ model: c.model!.map((t) => ({ ...t, dtype: 'F64' })) }, 'gpt2', cat);
    expect(r.verdict).toBe('derivable');
    expect(r.steps.map((s) => [s.tier, s.op, s.via, s.lossy])).toEqual([['T4', 'cast', 'F64->F32', true]]);
    expect(r.lossy).toBe(true);
    const q = exactCandidate(cat, lane('gpt2+int8-rowwise'));
    const r2 = bind(
      { model: q.model!.map((t) => (t.name.endsWith('_scale') ? { ...t, dtype: 'F16' } : t)) },
      'gpt2+int8-rowwise',
      cat,
    );
    expect(r2.steps.map((s) => [s.tier, s.op, s.via, s.lossy])).toEqual([['T4', 'cast', 'F16->F32', false]]);
    const half = bind({ model: c.model!.map((t) => ({ ...t, dtype: 'F8_E4M3' })) }, 'gpt2', cat);
    expect(half.steps.map((s) => [s.op, s.via, s.lossy])).toEqual([['cast', 'F8_E4M3->BF16', false]]);
  });

  it('quantize, dequantize, requantize and a lossless relayout between NVFP4 conventions', () => {
    const dense = exactCandidate(cat, lane('qwen2-7b'));
    const q = bind(dense, 'qwen2-7b+fp8-e4m3-rowwise', cat);
    expect(q.steps.map((s) => [s.tier, s.op, s.lossy])).toEqual([['T4', 'quantize', true]]);
    expect(q.steps[0]!.tensors.length).toBe(28 * 7);
    const d = bind(exactCandidate(cat, lane('qwen2-7b+int8-rowwise')), 'qwen2-7b', cat);
    expect(d.steps.map((s) => [s.op, s.via, s.lossy])).toEqual([['dequantize', 'int8-rowwise@1->F32', false]]);
    const rq = bind(exactCandidate(cat, lane('qwen2-7b+int8-rowwise')), 'qwen2-7b+fp8-e4m3-rowwise', cat);
    expect(rq.steps.map((s) => [s.tier, s.op, s.lossy])).toEqual([['T4', 'requantize', true]]);
    // gpt2's [768, 3072]: padded scale shapes differ, so headers tell the conventions apart
    const relayout = bind(
      exactCandidate(cat, lane('llama-3-8b+cozy.nvfp4-flat')),
      'llama-3-8b+bfl.nvfp4-preswizzled',
      cat,
      {
        conventions: { scale_layout: 'row_major', nibble_order: 'lo_first' },
      },
    );
    expect(relayout.steps.map((s) => [s.tier, s.op, s.lossy])).toEqual([['T3', 'relayout', false]]);
  });

  it('fails closed when two NVFP4 conventions fit the same header and none is declared', () => {
    // llama's dims: N % 128 == 0 and (K/16) % 4 == 0, so flat and swizzled scales have identical shapes
    const cand = exactCandidate(cat, lane('llama-3-8b+cozy.nvfp4-flat'));
    const r = bind(cand, 'llama-3-8b+cozy.nvfp4-flat', cat);
    expect(r.verdict).toBe('refuse');
    expect(r.refuse).toMatchObject({
      rule: 'lanes.convention_undeclared',
      tensor: 'model.layers.0.mlp.down_proj.weight',
      against: 'llama-3-8b@1+cozy.nvfp4-flat@1 | llama-3-8b@1+bfl.nvfp4-preswizzled@1',
    });
    expect(bind(cand, 'llama-3-8b+cozy.nvfp4-flat', cat, { conventions: { scale_layout: 'row_major' } }).verdict).toBe(
      'admit',
    );
    const swz = bind(cand, 'llama-3-8b+cozy.nvfp4-flat', cat, {
      conventions: { scale_layout: 'cublas_128x4', nibble_order: 'hi_first' },
    });
    expect(swz.verdict).toBe('derivable');
    expect(swz.steps.map((s) => s.op)).toEqual(['relayout']);
    expect(
      bind(cand, 'llama-3-8b+cozy.nvfp4-flat', cat, { conventions: { scale_layout: 'blocked_8x4' } }).refuse?.rule,
    ).toBe('lanes.convention_mismatch');
  });

  it('refuses naming the first disagreeing tensor with both shapes and dtypes', () => {
    const c = exactCandidate(cat, lane('llama-3-8b'));
    const swapped = c.model!.map((t) =>
      t.name === 'model.layers.0.mlp.down_proj.weight' ? { ...t, shape: [14336, 4096] } : t,
    );
    const r = bind({ model: swapped }, 'llama-3-8b', cat);
    expect(r.verdict).toBe('refuse');
    expect(r.refuse).toEqual({
      rule: 'lanes.same_count_wrong_dims',
      component: 'model',
      tensor: 'model.layers.0.mlp.down_proj.weight',
      expected: { shape: [4096, 14336], dtypes: ['BF16', 'F16', 'F32'] },
      actual: { shape: [14336, 4096], dtype: 'BF16' },
      against: 'llama-3-8b@1+none@1',
      message: expect.stringContaining('a reshape is not a derivation'),
    });
    const e = expectCodeSync(
      () => bindOrThrow({ model: swapped }, 'llama-3-8b', cat),
      'conflict',
      'lanes.same_count_wrong_dims',
    );
    expect(e.details.expected).toEqual({ shape: [4096, 14336], dtypes: ['BF16', 'F16', 'F32'] });
    const missing = bind({ model: c.model!.filter((t) => t.name !== 'lm_head.weight') }, 'llama-3-8b', cat);
    expect(missing.refuse).toMatchObject({
      rule: 'lanes.missing_tensor',
      tensor: 'lm_head.weight',
      actual: null,
      expected: { shape: [128256, 4096] },
    });
    const extra = bind(
      { model: [...c.model!, { name: 'rotary.inv_freq', dtype: 'F32', shape: [64] }] },
      'llama-3-8b',
      cat,
    );
    expect(extra.refuse).toMatchObject({
      rule: 'lanes.extra_tensor',
      tensor: 'rotary.inv_freq',
      expected: null,
      actual: { shape: [64], dtype: 'F32' },
    });
    const wider = c.model!.map((t) => (t.name === 'model.norm.weight' ? { ...t, shape: [4097] } : t));
    expect(bind({ model: wider }, 'llama-3-8b', cat).refuse).toMatchObject({
      rule: 'lanes.shape_mismatch',
      tensor: 'model.norm.weight',
    });
    // a renamed candidate with one wrong shape is refused against its closest source
    const g = exactCandidate(cat, lane('llama-3-8b-gguf')).model!.map((t) =>
      t.name === 'blk.3.ffn_up.weight' ? { ...t, shape: [4096, 14336] } : t,
    );
    expect(bind({ model: g }, 'llama-3-8b', cat).refuse).toMatchObject({
      rule: 'lanes.same_count_wrong_dims',
      tensor: 'blk.3.ffn_up.weight',
      against: 'llama-3-8b-gguf@1+none@1',
    });
  });

  it('binds real parsed headers: safetensors (sharded) and GGUF', () => {
    const c = exactCandidate(cat, lane('gpt2')).model!;
    const shard = (ts: typeof c) => {
      const w = writeSafetensorsHeader(ts.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape })));
      const end = w.tensors.reduce((a, t) => Math.max(a, Number(t.dataOffsets[1])), 0);
      return parseSafetensorsHeader(w.bytes, { fileSize: w.bytes.length + end });
    };
    const headers = [shard(c.slice(0, 70)), shard(c.slice(70))];
    expect(bind(candidateFromSafetensors(headers), 'gpt2', cat).verdict).toBe('admit');
    const g = exactCandidate(cat, lane('llama-3-8b-gguf+gguf.q8_0')).model!;
    const gg = writeGgufHeader({
      metadata: [],
      tensors: g.map((t) => ({ name: t.name, type: t.dtype, dims: [...t.shape].reverse() })),
    });
    const cand = candidateFromGguf(gg.header);
    expect(bind(cand, 'llama-3-8b-gguf+gguf.q8_0', cat).verdict).toBe('admit');
    const toHf = bind(cand, 'llama-3-8b+gguf.q8_0', cat);
    expect(toHf.steps.map((s) => `${s.tier}:${s.op}`).sort()).toEqual(['T1:rekey', 'T3:permute']);
    expect(toHf.steps.find((s) => s.op === 'permute')!.bytes).toBe(32 * ((4096 * 4096 + 1024 * 4096) / 32) * 34);
  });

  it('checks its input', () => {
    expectCodeSync(
      () =>
        bind(
          {
            model: [
              { name: 'a', dtype: 'F32', shape: [1] },
              { name: 'a', dtype: 'F32', shape: [1] },
            ],
          },
          'gpt2',
          cat,
        ),
      'invalid_argument',
      'lanes.candidate',
    );
    expectCodeSync(
      () => bind({ model: [{ name: 'a', dtype: 'F31', shape: [1] }] }, 'gpt2', cat),
      'unsupported',
      'lanes.candidate_dtype',
    );
    expectCodeSync(() => bind({ model: [] }, 'gpt2+nope', cat), 'not_found', 'lanes.unknown_document');
    expectCodeSync(() => bind({ model: [] }, 'GPT2 + x', cat), 'invalid_argument', 'lanes.lane_syntax');
    expect(bind({ model: [], vae: [] }, 'gpt2', cat).refuse?.rule).toBe('lanes.extra_component');
  });
});

describe('rotary row order', () => {
  it('matches llama.cpp permute: reshape(h, 2, hd/2) then swap the last two', () => {
    expect([...rotaryRowOrder(8, 2, 'rotary_halves_to_pairs')]).toEqual([0, 2, 1, 3, 4, 6, 5, 7]);
    expect([...rotaryRowOrder(12, 1, 'rotary_halves_to_pairs')]).toEqual([0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11]);
    const f = rotaryRowOrder(128, 4, 'rotary_halves_to_pairs');
    const b = rotaryRowOrder(128, 4, 'rotary_pairs_to_halves');
    for (let i = 0; i < 128; i++) expect(f[b[i]!]).toBe(i);
    expectCodeSync(() => rotaryRowOrder(10, 2, 'rotary_halves_to_pairs'), 'invalid_argument', 'lanes.morphism_permute');
  });
});
