/**
 * Golden vectors (vectors/v1/encodings/vectors.json) computed by an independent numpy script and,
 * for GGML types, by gguf-py's `gguf.quants`.
 */
import {
  type DecodedDtype,
  decode,
  decodeChunks,
  decodeRange,
  encode,
  prepareDecoder,
} from '@tensorfs/format/encodings';
import { describe, expect, it } from 'vitest';
import { encodedOf, f32, firstDifference, hex, vectors } from './encodings.helpers.js';

describe('encodings golden vectors', () => {
  it('covers every nibble order, scale layout and zero format', () => {
    const names = vectors.cases.map((c) => JSON.stringify(c.encoding.params));
    for (const fact of [
      '"lo_first"',
      '"hi_first"',
      '"row_major"',
      '"cublas_128x4"',
      '"v1_minus_one"',
      '"v2"',
      '"g_idx"',
    ]) {
      expect(
        names.some((n) => n.includes(fact)),
        fact,
      ).toBe(true);
    }
    const schemes = new Set(vectors.cases.map((c) => c.encoding.scheme));
    for (const s of [
      'int8',
      'fp8_e4m3fn',
      'fp8_e5m2',
      'mxfp8',
      'mxfp4',
      'nvfp4',
      'bnb_nf4',
      'bnb_fp4',
      'gptq',
      'awq_gemm',
      'rotation',
      'lora',
    ]) {
      expect(schemes.has(s), s).toBe(true);
    }
  });

  for (const c of vectors.cases) {
    for (const [dtype, want] of Object.entries(c.expected) as [DecodedDtype, string][]) {
      it(`${c.name} → ${dtype}`, () => {
        const got = decode(encodedOf(c.encoding), { dtype });
        const exp = hex(want);
        if (c.tolerance) {
          const g = f32(got);
          const e = f32(exp);
          expect(g.length).toBe(e.length);
          for (let i = 0; i < g.length; i++)
            expect(Math.abs((g[i] as number) - (e[i] as number)), `element ${i}`).toBeLessThanOrEqual(c.tolerance.abs);
        } else {
          expect(firstDifference(dtype, got, exp)).toBe(-1);
        }
      });
    }
  }

  it('decodes in chunks and ranges to the same bytes as a whole decode', () => {
    for (const c of vectors.cases) {
      const enc = encodedOf(c.encoding);
      const dec = prepareDecoder(enc);
      const whole = decode(enc, { dtype: 'F16' });
      const pieces: Uint8Array[] = [];
      for (const ch of decodeChunks(enc, { dtype: 'F16', maxChunkBytes: 1 })) pieces.push(ch.bytes);
      const joined = new Uint8Array(whole.length);
      let at = 0;
      for (const p of pieces) {
        joined.set(p, at);
        at += p.length;
      }
      expect(at, c.name).toBe(whole.length);
      expect(joined, c.name).toEqual(whole);
      if (dec.rows > 1) {
        const mid = Math.floor(dec.rows / 2);
        const tail = decodeRange(enc, mid, dec.rows, { dtype: 'F16' });
        expect(tail, c.name).toEqual(whole.subarray(mid * dec.cols * 2));
      }
    }
  });
});

describe('GGML block types agree with gguf.quants.dequantize on random blocks (Q8_1, Q8_K, Q1_0, which gguf-py lacks: with numpy from ggml-common.h layouts)', () => {
  for (const g of vectors.ggml_dequantize) {
    it(g.type, () => {
      const blocks = hex(g.blocks);
      const got = decode({
        scheme: 'ggml',
        params: { shape: g.shape, dtype: 'F32', type: g.type },
        parts: { blocks: { dtype: 'U8', shape: [blocks.length], bytes: blocks } },
      });
      expect(firstDifference('F32', got, hex(g.expected_f32))).toBe(-1);
    });
  }
});

describe('GGML quantization agrees with gguf.quants.quantize', () => {
  for (const q of vectors.ggml_quantize) {
    it(q.type, () => {
      const values = f32(hex(q.values_f32));
      const enc = encode(values, 'ggml', { shape: q.shape, type: q.type as 'Q8_0' | 'Q4_0' });
      expect(enc.parts.blocks?.bytes).toEqual(hex(q.expected));
    });
  }
});
