/**
 * spec/v1/encodings.schema.json: compiles strictly, accepts every golden vector's encoding and the
 * encoders' output, and refuses encodings that leave a declared fact or part out.
 */
import { readFileSync } from 'node:fs';
import { ENCODING_SCHEMES, encode } from '@tensorfs/format/encodings';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { vectors } from './encodings.helpers.js';

const root = new URL('../../../', import.meta.url);
const schema = JSON.parse(readFileSync(new URL('spec/v1/encodings.schema.json', root), 'utf8'));
const validate = new Ajv2020({ strict: true, allErrors: true, strictTypes: false, strictRequired: false }).compile(
  schema,
);

function jsonOf(enc: {
  scheme: string;
  params: unknown;
  parts: Record<string, { dtype: string; shape: readonly number[] }>;
}) {
  return {
    scheme: enc.scheme,
    params: enc.params,
    parts: Object.fromEntries(Object.entries(enc.parts).map(([k, v]) => [k, { dtype: v.dtype, shape: [...v.shape] }])),
  };
}

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v));
}

describe('encodings JSON Schema', () => {
  it('names a definition for every decodable scheme', () => {
    const text = JSON.stringify(schema.$defs);
    for (const s of ENCODING_SCHEMES) expect(text.includes(`"${s}"`), s).toBe(true);
  });

  it.each(vectors.cases.map((c) => [c.name, c] as const))('accepts %s', (_n, c) => {
    expect(validate(jsonOf(c.encoding)), JSON.stringify(validate.errors)).toBe(true);
  });

  it('accepts GGML encodings and the encoders output', () => {
    const x = new Float32Array(64).map((_, i) => Math.sin(i));
    for (const enc of [
      encode(x, 'int8', { shape: [2, 32] }),
      encode(x, 'fp8_e4m3fn', { shape: [2, 32], granularity: 'tensor' }),
      encode(x, 'nvfp4', { shape: [2, 32], nibble_order: 'hi_first' }),
      encode(x, 'ggml', { shape: [2, 32], type: 'Q4_0' }),
    ]) {
      expect(validate(jsonOf(enc)), JSON.stringify(validate.errors)).toBe(true);
    }
  });

  it('accepts an unknown scheme (readable and transferable, only decoding is unsupported)', () => {
    expect(
      validate({ scheme: 'hqq_4bit', params: { anything: [1, 2] }, parts: { w: { dtype: 'U8', shape: [4] } } }),
    ).toBe(true);
  });

  it('refuses encodings missing a declared fact or part', () => {
    const byName = (p: string) => {
      const c = vectors.cases.find((v) => v.name.startsWith(p));
      if (!c) throw new Error(p);
      return jsonOf(c.encoding) as { scheme: string; params: Record<string, unknown>; parts: Record<string, unknown> };
    };
    const bad: [string, (e: ReturnType<typeof byName>) => void, string][] = [
      ['nvfp4 without nibble_order', (e) => delete e.params.nibble_order, 'nvfp4 reference golden, lo_first'],
      ['nvfp4 without scale_layout', (e) => delete e.params.scale_layout, 'nvfp4 reference golden, lo_first'],
      ['nvfp4 without global_scale', (e) => delete e.parts.global_scale, 'nvfp4 reference golden, lo_first'],
      ['mxfp4 block 0', (e) => (e.params.block_size = 0), 'mxfp4 reference golden'],
      ['bnb without nested', (e) => delete e.params.nested, 'bnb_nf4 reference golden'],
      ['bnb nested without nested_table', (e) => delete e.parts.nested_table, 'bnb_nf4 nested'],
      ['bnb blocksize 0', (e) => (e.params.blocksize = 0), 'bnb_nf4 reference golden'],
      ['gptq g_idx declared but absent', (e) => delete e.parts.g_idx, 'gptq 4-bit act-order'],
      ['gptq without zero_format', (e) => delete e.params.zero_format, 'gptq reference golden, v2'],
      ['gptq group_size 0', (e) => (e.params.group_size = 0), 'gptq reference golden, v2'],
      ['fp8 scale without granularity', (e) => delete e.params.granularity, 'fp8_e4m3fn row scales'],
      ['fp8 block without block', (e) => (e.params.granularity = 'block'), 'fp8_e4m3fn row scales'],
      ['fp8 declared scaled, scale absent', (e) => delete e.parts.scale, 'fp8_e4m3fn row scales'],
      ['int8 unknown param', (e) => (e.params.axis = 0), 'int8 tensor scale'],
      ['int8 without shape', (e) => delete e.params.shape, 'int8 tensor scale'],
      ['rotation group 8', (e) => (e.params.group_size = 8), 'rotation H16'],
      ['lora without alpha', (e) => delete e.params.alpha, 'lora linear'],
    ];
    for (const [what, mutate, base] of bad) {
      const e = clone(byName(base));
      mutate(e);
      expect(validate(e), what).toBe(false);
    }
  });
});
