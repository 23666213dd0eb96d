/**
 * Convention detection from names, dtypes and metadata: each producer layout is recognised, and
 * ambiguity (two conventions, unstated producer, packed weights without a config) is refused.
 */
import { PRODUCER_CONVENTIONS, detectConventions } from '@tensorfs/format/encodings';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const t = (pairs: Record<string, string>) =>
  Object.fromEntries(Object.entries(pairs).map(([k, dtype]) => [k, { dtype }]));

describe('detectConventions', () => {
  it('recognises each producer layout', () => {
    const tensors = t({
      'a.weight': 'U8',
      'a.weight.absmax': 'F32',
      'a.weight.quant_map': 'F32',
      'a.weight.quant_state.bitsandbytes__nf4': 'U8',
      'b.weight': 'I8',
      'b.SCB': 'F32',
      'c.weight': 'F8_E4M3',
      'c.scale_weight': 'F32',
      scaled_fp8: 'F8_E4M3',
      'd.weight': 'F8_E5M2',
      'd.weight_scale': 'F32',
      'e.weight': 'F8_E4M3',
      'e.weight_scale_inv': 'F32',
      'f.weight': 'U8',
      'f.weight_scale': 'F8_E4M3',
      'f.weight_scale_2': 'F32',
      'f.comfy_quant': 'U8',
      'lora_unet_x.lora_down.weight': 'F16',
      'lora_unet_x.lora_up.weight': 'F16',
      'lora_unet_x.alpha': 'F32',
      plain: 'BF16',
    });
    expect(detectConventions({ tensors })).toEqual([
      { name: 'a.weight', convention: 'bitsandbytes_4bit' },
      { name: 'b', convention: 'llm_int8' },
      { name: 'c', convention: 'scaled_fp8' },
      { name: 'd', convention: 'scaled_fp8' },
      { name: 'e', convention: 'block_fp8' },
      { name: 'f', convention: 'comfy_quant' },
      { name: 'lora_unet_x', convention: 'kohya_lora' },
    ]);
  });

  it('uses the quantization config for packed weights and ModelOpt NVFP4', () => {
    const packed = t({ 'l.qweight': 'I32', 'l.qzeros': 'I32', 'l.scales': 'F16' });
    expect(detectConventions({ tensors: packed, quantizationConfig: { quant_method: 'gptq', bits: 4 } })).toEqual([
      { name: 'l', convention: 'gptq' },
    ]);
    expect(detectConventions({ tensors: packed, quantizationConfig: { quant_method: 'awq' } })).toEqual([
      { name: 'l', convention: 'awq' },
    ]);
    expectCodeSync(() => detectConventions({ tensors: packed }), 'unsupported', undefined, { fact: 'quant_method' });
    const nv = t({ 'l.weight': 'U8', 'l.weight_scale': 'F8_E4M3', 'l.weight_scale_2': 'F32', 'l.input_scale': 'F32' });
    expect(
      detectConventions({ tensors: nv, quantizationConfig: { quantization: { quant_algo: 'NVFP4', group_size: 16 } } }),
    ).toEqual([{ name: 'l', convention: 'modelopt_nvfp4' }]);
    // the same tensors with nobody declaring the producer: the nibble order is unknown
    expectCodeSync(() => detectConventions({ tensors: nv }), 'unsupported', undefined, { fact: 'producer' });
    // declared by ComfyUI's header metadata instead
    expect(
      detectConventions({
        tensors: nv,
        metadata: {
          _quantization_metadata: JSON.stringify({ format_version: '1.0', layers: { l: { format: 'nvfp4' } } }),
        },
      }),
    ).toEqual([{ name: 'l', convention: 'comfy_quant' }]);
  });

  it('refuses a layer two conventions claim', () => {
    expectCodeSync(
      () => detectConventions({ tensors: t({ 'l.weight': 'I8', 'l.SCB': 'F32', 'l.comfy_quant': 'U8' }) }),
      'unsupported',
      undefined,
      { fact: 'convention' },
    );
    expectCodeSync(
      () => detectConventions({ tensors: t({ 'l.weight': 'BF16', 'l.weight_scale': 'F32' }) }),
      'unsupported',
      undefined,
      { fact: 'convention' },
    );
  });

  it('a declared producer settles what the file does not state, never a stated fact', () => {
    const packed = t({ 'l.qweight': 'I32', 'l.qzeros': 'I32', 'l.scales': 'F16' });
    expect(detectConventions({ tensors: packed, declared: 'gptq' })).toEqual([{ name: 'l', convention: 'gptq' }]);
    expect(detectConventions({ tensors: packed, declared: 'awq' })).toEqual([{ name: 'l', convention: 'awq' }]);
    // a config that names another method is a stated fact: the declaration does not override it
    expectCodeSync(
      () => detectConventions({ tensors: packed, quantizationConfig: { quant_method: 'hqq' }, declared: 'gptq' }),
      'unsupported',
      undefined,
      { fact: 'quant_method' },
    );
    // a declaration of an unrelated producer settles nothing
    expectCodeSync(() => detectConventions({ tensors: packed, declared: 'kohya_lora' }), 'unsupported', undefined, {
      fact: 'quant_method',
    });
    const nv = t({ 'l.weight': 'U8', 'l.weight_scale': 'F8_E4M3', 'l.weight_scale_2': 'F32' });
    expect(detectConventions({ tensors: nv, declared: 'modelopt_nvfp4' })).toEqual([
      { name: 'l', convention: 'modelopt_nvfp4' },
    ]);
    const two = t({ 'l.weight': 'I8', 'l.SCB': 'F32', 'l.comfy_quant': 'U8' });
    expect(detectConventions({ tensors: two, declared: 'llm_int8' })).toEqual([{ name: 'l', convention: 'llm_int8' }]);
    expect(detectConventions({ tensors: two, declared: 'comfy_quant' })).toEqual([
      { name: 'l', convention: 'comfy_quant' },
    ]);
    expectCodeSync(() => detectConventions({ tensors: two, declared: 'gptq' }), 'unsupported', undefined, {
      fact: 'convention',
    });
    expect(PRODUCER_CONVENTIONS).toHaveLength(9);
  });
});
