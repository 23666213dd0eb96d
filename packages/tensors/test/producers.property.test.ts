/**
 * Producer import on arbitrary tensor sets: any names, dtypes, shapes and metadata bytes either
 * import (every encoded tensor's params carry a finite logical shape and a decodable dtype, and
 * every producer tensor is kept or consumed exactly once) or throw a TensorFSError, never anything else.
 */
import { isTensorFSError } from '@tensorfs/format';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { importProducerTensors } from '../src/producers.js';
import type { TensorView } from '../src/view.js';

const LAYER = fc.constantFrom('a', 'b.c', 'lora_unet_x');
const SUFFIX = fc.constantFrom(
  '.weight',
  '.SCB',
  '.weight_format',
  '.scale_weight',
  '.scale_input',
  '.weight_scale',
  '.weight_scale_2',
  '.weight_scale_inv',
  '.input_scale',
  '.comfy_quant',
  '.qweight',
  '.qzeros',
  '.scales',
  '.g_idx',
  '.lora_down.weight',
  '.lora_up.weight',
  '.alpha',
  '.weight.absmax',
  '.weight.quant_map',
  '.weight.nested_absmax',
  '.weight.nested_quant_map',
  '.weight.quant_state.bitsandbytes__nf4',
  '.weight.quant_state.bitsandbytes__fp4',
  '.bias',
);
const DTYPE = fc.constantFrom('U8', 'I8', 'I32', 'F16', 'BF16', 'F32', 'F64', 'I64', 'F8_E4M3', 'F8_E5M2');
const JSONISH = fc.oneof(
  fc.uint8Array({ maxLength: 40 }),
  fc
    .record({
      quant_type: fc.constantFrom('nf4', 'fp4', 'x'),
      blocksize: fc.oneof(fc.integer({ min: -2, max: 128 }), fc.constant(1.5)),
      dtype: fc.constantFrom('bfloat16', 'float16', 'int8'),
      shape: fc.oneof(fc.array(fc.integer({ min: -1, max: 8 }), { maxLength: 3 }), fc.constant('x')),
      format: fc.constantFrom('float8_e4m3fn', 'nvfp4', 'mxfp8', 'int8_tensorwise', 'other'),
    })
    .map((o) => new TextEncoder().encode(JSON.stringify(o))),
);

/** Complete producer layouts (every tensor a convention needs), with arbitrary dtypes, shapes and bytes. */
const TEMPLATES: readonly (readonly string[])[] = [
  ['.weight', '.SCB', '.weight_format'],
  ['.weight', '.scale_weight', '.scale_input'],
  ['.weight', '.weight_scale', '.weight_scale_2', '.input_scale'],
  ['.weight', '.weight_scale_inv'],
  ['.weight', '.weight_scale', '.comfy_quant'],
  ['.qweight', '.qzeros', '.scales', '.g_idx'],
  ['.lora_down.weight', '.lora_up.weight', '.alpha'],
  ['.weight', '.weight.absmax', '.weight.quant_map', '.weight.quant_state.bitsandbytes__nf4'],
];
const layoutArb = fc.tuple(LAYER, fc.constantFrom(...TEMPLATES)).chain(([layer, suffixes]) =>
  fc.tuple(
    ...suffixes.map((suffix) =>
      fc.record({
        name: fc.constant(layer + suffix),
        dtype: DTYPE,
        shape: fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 3 }),
        bytes: JSONISH,
      }),
    ),
  ),
);

const tensorArb = fc.record({
  name: fc.tuple(LAYER, SUFFIX).map(([l, s]) => l + s),
  dtype: DTYPE,
  shape: fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 3 }),
  bytes: JSONISH,
});

function view(t: { name: string; dtype: string; shape: number[]; bytes: Uint8Array }): TensorView {
  return {
    name: t.name,
    file: 'model.safetensors',
    format: 'safetensors',
    storage: 'plain',
    component: 'model',
    encoding: null,
    parts: {},
    part: () => {
      throw new Error('no parts');
    },
    dtype: t.dtype,
    shape: t.shape.map(BigInt),
    blockSize: 1,
    typeSize: 1,
    byteOffset: 0,
    byteLength: t.bytes.length,
    aligned: true,
    records: [],
    digests: [],
    pieces: () => (async function* () {})(),
    read: async () => t.bytes,
    readInto: async (b) => b,
    readSlice: async () => t.bytes,
  };
}

describe('importProducerTensors on arbitrary tensor sets', () => {
  it('imports or throws a TensorFSError', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .tuple(fc.uniqueArray(tensorArb, { selector: (t) => t.name, maxLength: 6 }), layoutArb)
          .map(([some, layout]) => {
            const names = new Set(layout.map((t) => t.name));
            return [...layout, ...some.filter((t) => !names.has(t.name))];
          }),
        fc.constantFrom<Record<string, string | number> | undefined>(
          undefined,
          { quant_method: 'gptq', bits: 4, group_size: 4 },
          { quant_method: 'awq', version: 'gemm', bits: 4, group_size: 4 },
        ),
        fc.constantFrom(undefined, 'gptq', 'modelopt_nvfp4', 'scaled_fp8') as fc.Arbitrary<
          'gptq' | 'modelopt_nvfp4' | 'scaled_fp8' | undefined
        >,
        async (tensors, qc, declared) => {
          const views = tensors.map(view);
          try {
            const r = await importProducerTensors(views, {
              ...(qc ? { quantizationConfig: qc } : {}),
              ...(declared ? { declared } : {}),
              dtype: 'BF16',
              read: (v) => v.read(),
            });
            const seen = new Set<string>();
            for (const t of r.tensors) {
              if (t.kind === 'plain') {
                seen.add(t.view.name);
                continue;
              }
              const p = t.encoding.params as { shape: unknown; dtype: unknown };
              expect(
                Array.isArray(p.shape) &&
                  (p.shape as unknown[]).every((d) => Number.isSafeInteger(d) && (d as number) >= 0),
              ).toBe(true);
              expect(['F32', 'F16', 'BF16']).toContain(p.dtype);
              for (const pv of Object.values(t.parts)) seen.add(pv.name);
            }
            // every producer tensor is a plain tensor, a part, or metadata that became params
            const params = [
              '.weight_format',
              '.comfy_quant',
              '.alpha',
              '.quant_state.bitsandbytes__nf4',
              '.quant_state.bitsandbytes__fp4',
            ];
            for (const v of views) {
              if (!seen.has(v.name))
                expect(
                  params.some((x) => v.name.endsWith(x)),
                  v.name,
                ).toBe(true);
            }
          } catch (error) {
            if (!isTensorFSError(error)) throw error;
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
