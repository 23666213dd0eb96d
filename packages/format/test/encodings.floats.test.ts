/**
 * The element tables and casts the decoders and encoders rest on, checked exhaustively or at the
 * edges (rounding ties, subnormals, overflow, NaN).
 */
import {
  E2M1,
  E4M3FN,
  E5M2,
  E8M0,
  bf16BitsOf,
  decodeChunks,
  e4m3fnCodeOf,
  encode,
  f16BitsOf,
  f16Table32,
} from '@tensorfs/format/encodings';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const f32 = (bits: number) => new Float32Array(new Uint32Array([bits]).buffer)[0] as number;

describe('float tables', () => {
  it('E4M3FN, E5M2, E8M0 and E2M1 match their bit layouts at the landmarks', () => {
    expect([E4M3FN[0x7e], E4M3FN[0x08], E4M3FN[0x01], E4M3FN[0x38], Object.is(E4M3FN[0x80], -0)]).toEqual([
      448,
      2 ** -6,
      2 ** -9,
      1,
      true,
    ]);
    expect(Number.isNaN(E4M3FN[0x7f]) && Number.isNaN(E4M3FN[0xff])).toBe(true);
    expect([E5M2[0x7b], E5M2[0x04], E5M2[0x01], E5M2[0x3c], E5M2[0x7c], E5M2[0xfc]]).toEqual([
      57344,
      2 ** -14,
      2 ** -16,
      1,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
    ]);
    expect(Number.isNaN(E5M2[0x7d])).toBe(true);
    expect([E8M0[0], E8M0[0x7f], E8M0[0xfe]]).toEqual([f32(0x00400000), 1, 2 ** 127]);
    expect(Number.isNaN(E8M0[0xff])).toBe(true);
    expect(Array.from(E2M1)).toEqual([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6]);
  });

  it('F16 widening and round-to-nearest-even narrowing are inverse on every half', () => {
    const t = f16Table32();
    const bad: number[] = [];
    for (let h = 0; h < 65536; h++) {
      const v = t[h] as number;
      const back = f16BitsOf(v);
      const ok = Number.isNaN(v) ? (back & 0x7c00) === 0x7c00 && (back & 0x3ff) !== 0 : back === h;
      if (!ok) bad.push(h);
    }
    expect(bad).toEqual([]);
  });

  it('F16 narrowing: ties to even, overflow to inf, subnormals and underflow', () => {
    expect(f16BitsOf(1 + 2 ** -11)).toBe(0x3c00); // tie → even (1.0)
    expect(f16BitsOf(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie → even (1 + 2^-9)
    expect(f16BitsOf(65520)).toBe(0x7c00); // rounds up past 65504
    expect(f16BitsOf(65519)).toBe(0x7bff);
    expect(f16BitsOf(2 ** -25)).toBe(0); // half of the smallest subnormal: tie → 0
    expect(f16BitsOf(Math.fround(2 ** -25 * 1.0001))).toBe(1);
    expect(f16BitsOf(-(2 ** -24))).toBe(0x8001);
    expect(f16BitsOf(2 ** -14 - 2 ** -25)).toBe(0x0400); // largest subnormal + half ulp → min normal (tie to even)
  });

  it('BF16 narrowing: ties to even, NaN stays quiet NaN with its sign', () => {
    expect(bf16BitsOf(f32(0x3f808000))).toBe(0x3f80);
    expect(bf16BitsOf(f32(0x3f818000))).toBe(0x3f82);
    expect(bf16BitsOf(f32(0x7f7fffff))).toBe(0x7f80);
    expect(bf16BitsOf(f32(0xffc00001))).toBe(0xffc0);
  });

  it('e4m3fnCodeOf inverts every finite code and rounds midpoints to the even code', () => {
    for (let c = 0; c < 256; c++) {
      const v = E4M3FN[c] as number;
      if (Number.isNaN(v)) continue;
      expect(e4m3fnCodeOf(v), `code ${c}`).toBe(c);
    }
    for (let c = 0; c < 0x7e; c++) {
      const mid = ((E4M3FN[c] as number) + (E4M3FN[c + 1] as number)) / 2;
      expect(e4m3fnCodeOf(mid)).toBe(c % 2 === 0 ? c : c + 1);
    }
    expect(e4m3fnCodeOf(1e9)).toBe(0x7e);
    expect(e4m3fnCodeOf(-1e9)).toBe(0xfe);
  });

  it('e4m3fnCodeOf is the nearest code for any float', () => {
    fc.assert(
      fc.property(fc.float({ min: -500, max: 500, noNaN: true }), (x) => {
        const target = Math.min(448, Math.max(-448, x));
        const got = Math.abs((E4M3FN[e4m3fnCodeOf(x)] as number) - target);
        let best = Number.POSITIVE_INFINITY;
        for (let c = 0; c < 256; c++) {
          const v = E4M3FN[c] as number;
          if (!Number.isNaN(v)) best = Math.min(best, Math.abs(v - target));
        }
        expect(got).toBe(best);
      }),
      { numRuns: 300 },
    );
  });

  it('decodeChunks keeps every chunk within maxChunkBytes (at least one row)', () => {
    const x = new Float32Array(64 * 128).map((_, i) => Math.sin(i));
    const enc = encode(x, 'ggml', { shape: [64, 128], type: 'Q8_0' });
    const sizes = [...decodeChunks(enc, { maxChunkBytes: 2000 })].map((c) => [c.rowEnd - c.rowStart, c.bytes.length]);
    expect(sizes.every(([, b]) => (b as number) <= 2000)).toBe(true);
    expect(sizes.reduce((a, [r]) => a + (r as number), 0)).toBe(64);
    expect([...decodeChunks(enc, { maxChunkBytes: 1 })].every((c) => c.rowEnd - c.rowStart === 1)).toBe(true);
  });
});
