/**
 * decode(encode(x)) stays within each scheme's quantization error bound, and the encoders write
 * exactly the params and parts the decoders require.
 */
import { E4M3FN, decode, encode, prepareDecoder } from '@tensorfs/format/encodings';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

function rand(n: number, seed: number, scale = 1): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    // xorshift + Box-Muller-ish spread with some outliers
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    const u = ((s >>> 0) + 0.5) / 2 ** 32;
    out[i] = (u - 0.5) * 2 * scale * (i % 97 === 0 ? 20 : 1);
  }
  return out;
}

function f32(b: Uint8Array): Float32Array {
  return new Float32Array(b.slice().buffer);
}

function scalesOf(enc: ReturnType<typeof encode>, role: string): Float32Array {
  return f32(enc.parts[role]?.bytes ?? new Uint8Array());
}

const ROWS = 8;
const COLS = 64;
const x = rand(ROWS * COLS, 12345, 3);
x.fill(0, 2 * COLS, 3 * COLS); // an all-zero row

describe('encoders', () => {
  it('int8 row-wise: |x − x̂| ≤ scale/2 per row', () => {
    const enc = encode(x, 'int8', { shape: [ROWS, COLS], granularity: 'row' });
    expect(enc.params).toEqual({ shape: [ROWS, COLS], dtype: 'F32', granularity: 'row', scale_kind: 'scale' });
    const s = scalesOf(enc, 'scale');
    const y = f32(decode(enc));
    for (let i = 0; i < x.length; i++) {
      const r = Math.floor(i / COLS);
      expect(Math.abs((x[i] as number) - (y[i] as number))).toBeLessThanOrEqual((s[r] as number) * 0.5 * (1 + 1e-6));
    }
    expect(Array.from(y.subarray(2 * COLS, 3 * COLS)).every((v) => v === 0)).toBe(true);
  });

  it('int8 tensor-wise: |x − x̂| ≤ scale/2', () => {
    const enc = encode(x, 'int8', { shape: [ROWS, COLS], granularity: 'tensor', dtype: 'BF16' });
    const s = scalesOf(enc, 'scale')[0] as number;
    const y = f32(decode(enc, { dtype: 'F32' }));
    for (let i = 0; i < x.length; i++)
      expect(Math.abs((x[i] as number) - (y[i] as number))).toBeLessThanOrEqual(s * 0.5 * (1 + 1e-6));
  });

  for (const granularity of ['tensor', 'row'] as const) {
    it(`fp8_e4m3fn ${granularity}: relative error ≤ 2^-4 for normals, ≤ 2^-10·s below`, () => {
      const enc = encode(x, 'fp8_e4m3fn', { shape: [ROWS, COLS], granularity });
      const s = scalesOf(enc, 'scale');
      const y = f32(decode(enc));
      for (let i = 0; i < x.length; i++) {
        const sc = (granularity === 'row' ? s[Math.floor(i / COLS)] : s[0]) as number;
        const a = Math.abs(x[i] as number);
        const err = Math.abs((x[i] as number) - (y[i] as number));
        if (a / sc >= 2 ** -6) expect(err).toBeLessThanOrEqual(a * 2 ** -4 * (1 + 1e-6));
        else expect(err).toBeLessThanOrEqual(sc * 2 ** -10 * (1 + 1e-6));
      }
      // the largest magnitude maps to 448·s (code 0x7E)
      const q = enc.parts.q?.bytes ?? new Uint8Array();
      expect(Array.from(q).some((c) => (c & 0x7f) === 0x7e)).toBe(true);
    });
  }

  for (const nibble_order of ['lo_first', 'hi_first'] as const) {
    it(`nvfp4 row-major ${nibble_order}: |x − x̂| ≤ block scale × global`, () => {
      const enc = encode(x, 'nvfp4', { shape: [ROWS, COLS], nibble_order });
      expect(enc.params).toMatchObject({ block_size: 16, scale_layout: 'row_major', nibble_order });
      const g = scalesOf(enc, 'global_scale')[0] as number;
      const bs = enc.parts.block_scale?.bytes ?? new Uint8Array();
      const y = f32(decode(enc));
      for (let i = 0; i < x.length; i++) {
        const eff = Math.fround((E4M3FN[bs[Math.floor(i / 16)] as number] as number) * g);
        expect(Math.abs((x[i] as number) - (y[i] as number))).toBeLessThanOrEqual(eff * (1 + 1e-6));
      }
    });
  }

  it("nvfp4 global_scale: row chunks encoded with the whole tensor's scale are the whole encoding", () => {
    const whole = encode(x, 'nvfp4', { shape: [ROWS, COLS], nibble_order: 'lo_first' });
    const g = scalesOf(whole, 'global_scale')[0] as number;
    const half = (ROWS / 2) * COLS;
    const a = encode(x.subarray(0, half), 'nvfp4', {
      shape: [ROWS / 2, COLS],
      nibble_order: 'lo_first',
      global_scale: g,
    });
    const b = encode(x.subarray(half), 'nvfp4', { shape: [ROWS / 2, COLS], nibble_order: 'lo_first', global_scale: g });
    for (const role of ['q', 'block_scale'] as const)
      expect([...(a.parts[role]?.bytes ?? []), ...(b.parts[role]?.bytes ?? [])]).toEqual([
        ...(whole.parts[role]?.bytes ?? []),
      ]);
    expect(scalesOf(a, 'global_scale')[0]).toBe(g);
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => encode(x, 'nvfp4', { shape: [ROWS, COLS], nibble_order: 'lo_first', global_scale: bad })).toThrow(
        expect.objectContaining({ code: 'invalid_argument' }),
      );
  });

  it('nvfp4 nibble orders differ only by a nibble swap', () => {
    const lo = encode(x, 'nvfp4', { shape: [ROWS, COLS], nibble_order: 'lo_first' }).parts.q?.bytes ?? new Uint8Array();
    const hi = encode(x, 'nvfp4', { shape: [ROWS, COLS], nibble_order: 'hi_first' }).parts.q?.bytes ?? new Uint8Array();
    expect(Array.from(hi)).toEqual(Array.from(lo, (b) => ((b << 4) | (b >> 4)) & 0xff));
  });

  it('GGML Q8_0: |x − x̂| ≤ d/2 (+ the f16 rounding of d)', () => {
    const enc = encode(x, 'ggml', { shape: [ROWS, COLS], type: 'Q8_0' });
    const y = f32(decode(enc));
    for (let b = 0; b < x.length / 32; b++) {
      let amax = 0;
      for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b * 32 + j] as number));
      const d = amax / 127;
      for (let j = 0; j < 32; j++) {
        const i = b * 32 + j;
        expect(Math.abs((x[i] as number) - (y[i] as number))).toBeLessThanOrEqual(d * 0.5 + amax * 2 ** -11 + 1e-7);
      }
    }
  });

  it('GGML Q4_0: |x − x̂| ≤ d (+ the f16 rounding of d)', () => {
    const enc = encode(x, 'ggml', { shape: [ROWS, COLS], type: 'Q4_0' });
    const y = f32(decode(enc));
    expect(prepareDecoder(enc).rows).toBe(ROWS);
    for (let b = 0; b < x.length / 32; b++) {
      let amax = 0;
      for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b * 32 + j] as number));
      const d = amax / 8;
      for (let j = 0; j < 32; j++) {
        const i = b * 32 + j;
        expect(Math.abs((x[i] as number) - (y[i] as number))).toBeLessThanOrEqual(d + amax * 2 ** -10 + 1e-7);
      }
    }
  });

  it('refuses non-finite values and mismatched shapes with invalid_argument', () => {
    const bad = new Float32Array([1, Number.NaN, 2, 3]);
    for (const fn of [
      () => encode(bad, 'int8', { shape: [4] }),
      () => encode(new Float32Array(3), 'int8', { shape: [4] }),
      () => encode(new Float32Array(24), 'nvfp4', { shape: [24], nibble_order: 'lo_first' }),
      () => encode(new Float32Array(16), 'nvfp4', { shape: [16] }),
      () => encode(new Float32Array(48), 'ggml', { shape: [48], type: 'Q8_0' }),
    ]) {
      expectCodeSync(fn, 'invalid_argument');
    }
  });
});
