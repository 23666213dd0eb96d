import { readFileSync } from 'node:fs';
import type { DecodedDtype, Encoded } from '@tensorfs/format/encodings';

export interface VectorPart {
  dtype: string;
  shape: number[];
  hex: string;
}
export interface VectorCase {
  name: string;
  encoding: { scheme: string; params: Record<string, unknown>; parts: Record<string, VectorPart> };
  expected: Partial<Record<DecodedDtype, string>>;
  tolerance?: { abs: number };
}
export interface Vectors {
  cases: VectorCase[];
  ggml_dequantize: { type: string; shape: number[]; blocks: string; expected_f32: string }[];
  ggml_quantize: { type: string; shape: number[]; values_f32: string; expected: string }[];
}

const root = new URL('../../../', import.meta.url);
export const vectors: Vectors = JSON.parse(readFileSync(new URL('vectors/v1/encodings/vectors.json', root), 'utf8'));

export function hex(s: string): Uint8Array {
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function encodedOf(c: VectorCase['encoding']): Encoded {
  const parts: Record<string, { dtype: string; shape: number[]; bytes: Uint8Array }> = {};
  for (const [k, v] of Object.entries(c.parts)) parts[k] = { dtype: v.dtype, shape: v.shape, bytes: hex(v.hex) };
  return { scheme: c.scheme, params: c.params as Encoded['params'], parts };
}

export function f32(b: Uint8Array): Float32Array {
  return new Float32Array(b.slice().buffer);
}

function isNanBits(dtype: DecodedDtype, bits: number): boolean {
  if (dtype === 'F32') return (bits & 0x7fffffff) > 0x7f800000;
  if (dtype === 'F16') return (bits & 0x7fff) > 0x7c00;
  return (bits & 0x7fff) > 0x7f80;
}

/** Index of the first element that differs (NaN equals any NaN), or -1. */
export function firstDifference(dtype: DecodedDtype, got: Uint8Array, want: Uint8Array): number {
  if (got.length !== want.length) return -2;
  const w = dtype === 'F32' ? 4 : 2;
  const dv = new DataView(got.buffer, got.byteOffset, got.length);
  const ev = new DataView(want.buffer, want.byteOffset, want.length);
  for (let i = 0; i < got.length / w; i++) {
    const a = w === 4 ? dv.getUint32(i * 4, true) : dv.getUint16(i * 2, true);
    const b = w === 4 ? ev.getUint32(i * 4, true) : ev.getUint16(i * 2, true);
    if (a === b) continue;
    if (isNanBits(dtype, a) && isNanBits(dtype, b)) continue;
    return i;
  }
  return -1;
}
