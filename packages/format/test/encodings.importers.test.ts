/**
 * Producer conventions → encodings: each importer, fed the producer's tensor names and metadata for
 * a golden vector's parts, yields an encoding that decodes to the vector's expected bytes.
 */
import {
  type Encoded,
  type ProducerTensors,
  decode,
  importAwq,
  importBitsandbytes4bit,
  importBlockFp8,
  importComfyQuant,
  importGgufTensor,
  importGptq,
  importKohyaLora,
  importLlmInt8,
  importModelOptNvfp4,
  importScaledFp8,
} from '@tensorfs/format/encodings';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { type VectorCase, encodedOf, hex, vectors } from './encodings.helpers.js';

function vector(prefix: string): { enc: Encoded; c: VectorCase } {
  const c = vectors.cases.find((v) => v.name.startsWith(prefix));
  if (!c) throw new Error(prefix);
  return { enc: encodedOf(c.encoding), c };
}

function expectDecodes(enc: Encoded, c: VectorCase): void {
  const got = decode(enc, { dtype: 'F32' });
  const want = hex(c.expected.F32 ?? '');
  if (c.tolerance) {
    const g = new Float32Array(got.slice().buffer);
    const w = new Float32Array(want.slice().buffer);
    for (let i = 0; i < g.length; i++)
      expect(Math.abs((g[i] as number) - (w[i] as number))).toBeLessThanOrEqual(c.tolerance.abs);
  } else expect(got).toEqual(want);
}

const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const f32 = (x: number) => new Uint8Array(new Float32Array([x]).buffer);

describe('producer importers', () => {
  it('bitsandbytes NF4 with nested statistics', () => {
    const { enc, c } = vector('bnb_nf4 nested');
    const p = enc.parts;
    const params = enc.params as Record<string, number>;
    const w = 'model.layers.0.mlp.down_proj.weight';
    const tensors: ProducerTensors = {
      [w]: p.codes,
      [`${w}.absmax`]: p.absmax,
      [`${w}.quant_map`]: p.code_table,
      [`${w}.nested_absmax`]: p.nested_absmax,
      [`${w}.nested_quant_map`]: p.nested_table,
      [`${w}.quant_state.bitsandbytes__nf4`]: {
        dtype: 'U8',
        shape: [0],
        bytes: json({
          quant_type: 'nf4',
          blocksize: 4,
          dtype: 'float32',
          shape: [4, 16],
          nested_blocksize: 4,
          nested_dtype: 'float32',
          nested_offset: params.nested_offset,
        }),
      },
    };
    const out = importBitsandbytes4bit(tensors, w);
    expect(out.encoding.scheme).toBe('bnb_nf4');
    expect(out.encoding.params).toMatchObject({
      nibble_order: 'hi_first',
      nested: true,
      blocksize: 4,
      nested_blocksize: 4,
    });
    expect([...out.consumed].sort()).toEqual(Object.keys(tensors).sort());
    expectDecodes(out.encoding, c);
  });

  it('bitsandbytes without a logical shape is refused naming the fact', () => {
    const { enc } = vector('bnb_nf4 reference golden');
    const tensors: ProducerTensors = {
      w: enc.parts.codes,
      'w.absmax': enc.parts.absmax,
      'w.quant_map': enc.parts.code_table,
      'w.quant_state.bitsandbytes__nf4': {
        dtype: 'U8',
        shape: [0],
        bytes: json({ quant_type: 'nf4', blocksize: 4, dtype: 'float32' }),
      },
    };
    expectCodeSync(() => importBitsandbytes4bit(tensors, 'w'), 'unsupported', undefined, { fact: 'shape' });
  });

  it('LLM.int8 SCB', () => {
    const { enc, c } = vector('int8 LLM.int8 SCB');
    const t: ProducerTensors = {
      'l.weight': enc.parts.q,
      'l.SCB': enc.parts.scale,
      'l.weight_format': { dtype: 'U8', shape: [], bytes: new Uint8Array([0]) },
    };
    expectDecodes(importLlmInt8(t, 'l', { dtype: 'F32' }).encoding, c);
    expectCodeSync(() => importLlmInt8(t, 'l'), 'unsupported', undefined, { fact: 'dtype' });
    const legacy = { ...t, 'l.weight_format': { dtype: 'U8', shape: [], bytes: new Uint8Array([2]) } };
    expectCodeSync(() => importLlmInt8(legacy, 'l', { dtype: 'F32' }), 'unsupported', undefined, {
      fact: 'weight_format',
    });
  });

  it('ComfyUI scaled_fp8 (scale_weight) and weight_scale, scheme from the weight dtype', () => {
    const { enc, c } = vector('fp8_e4m3fn tensor scale');
    const out = importScaledFp8(
      { 'b.weight': enc.parts.q, 'b.scale_weight': enc.parts.scale, 'b.scale_input': enc.parts.scale },
      'b',
      { dtype: 'F32' },
    );
    expect(out.encoding.scheme).toBe('fp8_e4m3fn');
    expect(out.consumed).toContain('b.scale_input');
    expectDecodes(out.encoding, c);
    const e5 = vector('fp8_e5m2 row scales');
    const q = { ...(e5.enc.parts.q as object), dtype: 'F8_E5M2' } as Encoded['parts'][string];
    const o5 = importScaledFp8({ 'x.weight': q, 'x.weight_scale': e5.enc.parts.scale }, 'x', { dtype: 'F32' });
    expect(o5.encoding).toMatchObject({ scheme: 'fp8_e5m2', params: { granularity: 'row' } });
    expectDecodes(o5.encoding, e5.c);
    expectCodeSync(() => importScaledFp8({ 'b.weight': enc.parts.q }, 'b', { dtype: 'F32' }), 'malformed');
  });

  it('DeepSeek block FP8 (weight_scale_inv multiplies)', () => {
    const { enc, c } = vector('fp8_e4m3fn block scales');
    const q = { ...(enc.parts.q as object), dtype: 'F8_E4M3' } as Encoded['parts'][string];
    expectDecodes(
      importBlockFp8({ 'l.weight': q, 'l.weight_scale_inv': enc.parts.scale }, 'l', { dtype: 'F32', block: [2, 4] })
        .encoding,
      c,
    );
  });

  it('ModelOpt NVFP4 (lo_first, row-major)', () => {
    const { enc, c } = vector('nvfp4 reference golden, lo_first');
    const out = importModelOptNvfp4(
      {
        'l.weight': enc.parts.q,
        'l.weight_scale': enc.parts.block_scale,
        'l.weight_scale_2': enc.parts.global_scale,
        'l.input_scale': enc.parts.global_scale,
      },
      'l',
      { dtype: 'F32' },
    );
    expect(out.encoding.params).toMatchObject({ nibble_order: 'lo_first', scale_layout: 'row_major', shape: [2, 32] });
    expectDecodes(out.encoding, c);
  });

  it('ComfyUI comfy_quant nvfp4 and mxfp8 (swizzled, padded; logical shape declared)', () => {
    const nv = vector('nvfp4 padded [6,40] in [16,48], hi_first, cublas');
    const t: ProducerTensors = {
      'l.weight': { ...(nv.enc.parts.q as object), dtype: 'U8' } as Encoded['parts'][string],
      'l.weight_scale': { ...(nv.enc.parts.block_scale as object), dtype: 'U8' } as Encoded['parts'][string],
      'l.weight_scale_2': nv.enc.parts.global_scale,
      'l.comfy_quant': { dtype: 'U8', shape: [0], bytes: json({ format: 'nvfp4' }) },
    };
    expectDecodes(importComfyQuant(t, 'l', { dtype: 'F32', shape: [6, 40] }).encoding, nv.c);
    expectCodeSync(() => importComfyQuant(t, 'l', { dtype: 'F32' }), 'unsupported', undefined, {
      fact: 'logical_shape',
    });
    const mx = vector('mxfp8 padded [20,40] in [32,64], cublas');
    const m: ProducerTensors = { 'm.weight': mx.enc.parts.q, 'm.weight_scale': mx.enc.parts.scale };
    expectDecodes(
      importComfyQuant(m, 'm', { dtype: 'F32', shape: [20, 40], conf: { format: 'mxfp8' } }).encoding,
      mx.c,
    );
    expectCodeSync(
      () => importComfyQuant(m, 'm', { dtype: 'F32', conf: { format: 'svdquant' } }),
      'unsupported',
      undefined,
      { fact: 'format' },
    );
  });

  it('ComfyUI int8_tensorwise with ConvRot becomes a rotation around int8', () => {
    const { enc, c } = vector('rotation H16');
    const t: ProducerTensors = {
      'l.weight': enc.parts.q,
      'l.weight_scale': enc.parts.scale,
      'l.comfy_quant': {
        dtype: 'U8',
        shape: [0],
        bytes: json({ format: 'int8_tensorwise', convrot: true, convrot_groupsize: 16 }),
      },
    };
    const out = importComfyQuant(t, 'l', { dtype: 'F32' });
    expect(out.encoding.scheme).toBe('rotation');
    expectDecodes(out.encoding, c);
  });

  it('GPTQ v1 act-order, v2, and a config without checkpoint_format (v1)', () => {
    const a = vector('gptq 4-bit act-order');
    const t = (e: Encoded): ProducerTensors => ({
      'l.qweight': e.parts.qweight,
      'l.qzeros': e.parts.qzeros,
      'l.scales': e.parts.scales,
      'l.g_idx': e.parts.g_idx,
    });
    const outA = importGptq(
      t(a.enc),
      'l',
      { bits: 4, group_size: 16, desc_act: true, sym: false, checkpoint_format: 'gptq' },
      { dtype: 'F32' },
    );
    expect(outA.encoding.params).toMatchObject({ zero_format: 'v1_minus_one', group_index: 'g_idx', shape: [8, 64] });
    expectDecodes(outA.encoding, a.c);
    const v2 = vector('gptq reference golden, v2');
    expectDecodes(
      importGptq(t(v2.enc), 'l', { bits: 4, group_size: 8, checkpoint_format: 'gptq_v2' }, { dtype: 'F32' }).encoding,
      v2.c,
    );
    const v1 = vector('gptq reference golden, v1');
    expectDecodes(importGptq(t(v1.enc), 'l', { bits: 4, group_size: 8 }, { dtype: 'F32' }).encoding, v1.c);
    expectCodeSync(
      () => importGptq(t(v1.enc), 'l', { bits: 4, group_size: 8, checkpoint_format: 'marlin' }),
      'unsupported',
      undefined,
      { fact: 'checkpoint_format' },
    );
  });

  it('AWQ GEMM, refusing GEMV', () => {
    const { enc, c } = vector('awq_gemm');
    const t: ProducerTensors = {
      'l.qweight': enc.parts.qweight,
      'l.qzeros': enc.parts.qzeros,
      'l.scales': enc.parts.scales,
    };
    expectDecodes(importAwq(t, 'l', { version: 'GEMM', bits: 4, group_size: 8 }, { dtype: 'F32' }).encoding, c);
    expectCodeSync(() => importAwq(t, 'l', { version: 'gemv', bits: 4, group_size: 8 }), 'unsupported', undefined, {
      fact: 'version',
    });
  });

  it('a producer fact that is missing is named as missing, never printed as "undefined"', () => {
    const g = vector('gptq reference golden, v1').enc.parts;
    const gptq: ProducerTensors = { 'l.qweight': g.qweight, 'l.qzeros': g.qzeros, 'l.scales': g.scales };
    const a = vector('awq_gemm').enc.parts;
    const awq: ProducerTensors = { 'l.qweight': a.qweight, 'l.qzeros': a.qzeros, 'l.scales': a.scales };
    const fp8 = vector('fp8_e4m3fn').enc.parts;
    const comfy: ProducerTensors = { 'l.weight': fp8.q, 'l.weight_scale': fp8.scale ?? fp8.q };
    const w = 'm.weight';
    const bnb = (state: Record<string, unknown>): ProducerTensors => ({
      [w]: { dtype: 'U8', shape: [1] },
      [`${w}.absmax`]: { dtype: 'F32', shape: [1] },
      [`${w}.quant_map`]: { dtype: 'F32', shape: [16] },
      [`${w}.quant_state.bitsandbytes__nf4`]: { dtype: 'U8', shape: [0], bytes: json(state) },
    });
    const full = { quant_type: 'nf4', shape: [2], dtype: 'float32', blocksize: 64 };
    const cases: [() => unknown, string, string, Record<string, unknown>][] = [
      [
        () => importComfyQuant(comfy, 'l', { dtype: 'F32', conf: {} }),
        'malformed',
        'comfy_quant: the configuration of "l" has no "format"',
        { key: 'format' },
      ],
      [
        () => importComfyQuant(comfy, 'l', { dtype: 'F32', conf: { format: 'svdquant' } }),
        'unsupported',
        'comfy_quant: "format" "svdquant" is not a comfy_quant format this reads',
        { fact: 'format' },
      ],
      [() => importGptq(gptq, 'l', { group_size: 8 }), 'malformed', 'gptq: the quantize config has no "bits"', {}],
      [() => importGptq(gptq, 'l', { bits: 4 }), 'malformed', 'gptq: the quantize config has no "group_size"', {}],
      [
        () => importGptq(gptq, 'l', { bits: 5, group_size: 8 }),
        'unsupported',
        'gptq: "bits" 5 is not 2, 3, 4 or 8',
        {},
      ],
      [
        () => importAwq(awq, 'l', { bits: 4, group_size: 8 }),
        'unsupported',
        'awq: the quantize config has no "version" (only gemm is read)',
        { fact: 'version' },
      ],
      [
        () => importAwq(awq, 'l', { version: 'gemm', bits: 4 }),
        'malformed',
        'awq: the quantize config has no "group_size" (or "q_group_size")',
        { key: 'group_size' },
      ],
      [
        () => importBitsandbytes4bit(bnb({ ...full, dtype: undefined }), w),
        'unsupported',
        'bitsandbytes_4bit: the quant_state has no "dtype"',
        { fact: 'dtype' },
      ],
      [
        () => importBitsandbytes4bit(bnb({ ...full, quant_type: undefined }), w),
        'malformed',
        'bitsandbytes_4bit: the quant_state has no "quant_type"',
        { key: 'quant_type' },
      ],
      [
        () => importBitsandbytes4bit(bnb({ ...full, blocksize: undefined }), w),
        'malformed',
        'bitsandbytes_4bit: the quant_state has no "blocksize"',
        { key: 'blocksize' },
      ],
    ];
    for (const [f, code, message, details] of cases) {
      const err = expectCodeSync(f, code as 'malformed', undefined, details);
      expect(err.message).toBe(message);
      expect(err.details.rule).toMatch(/^encodings\.import\./);
    }
  });

  it('Kohya LoRA alpha', () => {
    const { enc, c } = vector('lora linear');
    const t: ProducerTensors = {
      'lora_unet_x.lora_down.weight': enc.parts.down,
      'lora_unet_x.lora_up.weight': enc.parts.up,
      'lora_unet_x.alpha': { dtype: 'F32', shape: [], bytes: f32(2) },
    };
    const out = importKohyaLora(t, 'lora_unet_x');
    expect(out.encoding.params).toMatchObject({ alpha: 2 });
    expectDecodes(out.encoding, c);
  });

  it('a GGUF tensor (ne fastest-first) becomes ggml with the reversed shape', () => {
    const g = vectors.ggml_dequantize.find((v) => v.type === 'Q4_K');
    if (!g) throw new Error('Q4_K');
    const enc = importGgufTensor(12, [256, 1], hex(g.blocks));
    expect(enc.params).toEqual({ shape: [1, 256], dtype: 'F32', type: 'Q4_K' });
    expect(decode(enc)).toEqual(hex(g.expected_f32));
    expectCodeSync(() => importGgufTensor(4, [32], undefined), 'unsupported');
  });
});
