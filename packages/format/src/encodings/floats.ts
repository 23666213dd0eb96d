/**
 * Small float formats as lookup tables (decode) and the round-to-nearest-even casts from float32
 * (encode). Every table maps a code to the float32 value its reference defines; the bit layouts are
 * in `spec/v1/encodings.md` §2.
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The float32 whose bit pattern is `bits`. */
export function f32FromBits(bits: number): number {
  u32[0] = bits >>> 0;
  return f32[0] as number;
}

/** The bit pattern of `Math.fround(value)`. */
export function bitsOfF32(value: number): number {
  f32[0] = value;
  return u32[0] as number;
}

let f16Table: Float32Array | undefined;

/** IEEE binary16 → float32 for all 65536 codes (NaN payloads kept, subnormals exact). */
export function f16Table32(): Float32Array {
  if (f16Table) return f16Table;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const s = (h & 0x8000) << 16;
    const e = (h >> 10) & 0x1f;
    const m = h & 0x3ff;
    let bits: number;
    if (e === 0) {
      if (m === 0) bits = s;
      else {
        // subnormal: m · 2^-24, exact in float32
        t[h] = (s ? -1 : 1) * m * 2 ** -24;
        continue;
      }
    } else if (e === 31) bits = s | 0x7f800000 | (m << 13);
    else bits = s | ((e - 15 + 127) << 23) | (m << 13);
    t[h] = f32FromBits(bits);
  }
  f16Table = t;
  return t;
}

/** float32 → IEEE binary16 bits, round to nearest even, overflow → ±inf, NaN → quiet NaN. */
export function f16BitsOf(value: number): number {
  const x = bitsOfF32(value);
  const sign = (x >>> 16) & 0x8000;
  const e = (x >>> 23) & 0xff;
  const m = x & 0x7fffff;
  if (e === 0xff) return sign | (m ? 0x7e00 | (m >>> 13) : 0x7c00);
  const ne = e - 127 + 15;
  if (ne >= 31) return sign | 0x7c00;
  if (ne <= 0) {
    if (ne < -10) return sign;
    const mm = m | 0x800000;
    const shift = 14 - ne;
    let h = mm >>> shift;
    const rem = mm & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && h & 1)) h++;
    return sign | h;
  }
  let h = (ne << 10) | (m >>> 13);
  const rem = m & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++;
  return sign | h;
}

/** float32 → bfloat16 bits, round to nearest even, NaN → quiet NaN with the sign kept. */
export function bf16BitsOf(value: number): number {
  const x = bitsOfF32(value);
  if ((x & 0x7fffffff) > 0x7f800000) return ((x >>> 16) & 0x8000) | 0x7fc0;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

function table256(fn: (code: number) => number): Float32Array {
  const t = new Float32Array(256);
  for (let c = 0; c < 256; c++) t[c] = fn(c);
  return t;
}

/** OCP FP8 E4M3FN (torch `float8_e4m3fn`): bias 7, no infinities, NaN only at 0x7F/0xFF. */
export const E4M3FN: Float32Array = /* @__PURE__ */ table256((c) => {
  const s = c & 0x80 ? -1 : 1;
  const e = (c >> 3) & 0xf;
  const m = c & 7;
  if (e === 15 && m === 7) return Number.NaN;
  if (e === 0) return s * m * 2 ** -9;
  return s * (1 + m / 8) * 2 ** (e - 7);
});

/** OCP FP8 E5M2 (torch `float8_e5m2`): bias 15, IEEE-like infinities and NaNs. */
export const E5M2: Float32Array = /* @__PURE__ */ table256((c) => {
  const s = c & 0x80 ? -1 : 1;
  const e = (c >> 2) & 0x1f;
  const m = c & 3;
  if (e === 31) return m === 0 ? s * Number.POSITIVE_INFINITY : Number.NaN;
  if (e === 0) return s * m * 2 ** -16;
  return s * (1 + m / 4) * 2 ** (e - 15);
});

/** OCP E8M0 scale: 2^(e−127); 0x00 = 2^−127 (a float32 subnormal); 0xFF = NaN (OCP MX v1.0). */
export const E8M0: Float32Array = /* @__PURE__ */ table256((c) => (c === 255 ? Number.NaN : 2 ** (c - 127)));

/** OCP FP4 E2M1: codes 0–7 = 0, 0.5, 1, 1.5, 2, 3, 4, 6; codes 8–15 their negatives (8 = −0). */
export const E2M1: Float32Array = /* @__PURE__ */ Float32Array.from([
  0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6,
]);

/** The positive finite E4M3FN values in code order (codes 0..0x7E), ascending. */
const E4M3_POS: Float32Array = /* @__PURE__ */ E4M3FN.slice(0, 0x7f);

/**
 * float32 → E4M3FN code, round to nearest even, saturating at ±448 (as `clamp` then torch's cast);
 * NaN → 0x7F.
 */
export function e4m3fnCodeOf(value: number): number {
  if (Number.isNaN(value)) return 0x7f;
  const sign = value < 0 || Object.is(value, -0) ? 0x80 : 0;
  const a = Math.abs(value);
  if (a >= 448) return sign | 0x7e;
  // binary search the last code whose value <= a
  let lo = 0;
  let hi = 0x7e;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((E4M3_POS[mid] as number) <= a) lo = mid;
    else hi = mid - 1;
  }
  if (lo === 0x7e) return sign | lo;
  const below = E4M3_POS[lo] as number;
  const above = E4M3_POS[lo + 1] as number;
  const dLo = a - below;
  const dHi = above - a;
  const code = dLo < dHi || (dLo === dHi && (lo & 1) === 0) ? lo : lo + 1;
  return sign | code;
}

/** float → E2M1 code (nearest, ties to the even code), saturating at ±6. */
export function e2m1CodeOf(value: number): number {
  const sign = value < 0 || Object.is(value, -0) ? 8 : 0;
  const a = Math.abs(value);
  if (!(a < 6)) return sign | 7;
  let best = 0;
  for (let c = 1; c < 8; c++) {
    const d = Math.abs((E2M1[c] as number) - a);
    const db = Math.abs((E2M1[best] as number) - a);
    if (d < db || (d === db && (c & 1) === 0)) best = c;
  }
  return sign | best;
}

/** True on little-endian hosts (typed-array views are then the wire byte order). */
export const LITTLE_ENDIAN_HOST: boolean = /* @__PURE__ */ new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
