/**
 * `gptq` and `awq_gemm`: unsigned b-bit integers packed LSB-first into int32 words, with a per-group
 * zero point and scale. GPTQ packs `qweight` along K (`[K·b/32, N]`) and `qzeros` along N; the group of
 * input channel k is `g_idx[k]` (act-order) or `k // group_size`. AWQ GEMM packs both along N with
 * the nibble interleave `[0, 2, 4, 6, 1, 3, 5, 7]`.
 */
import { Params, ceilDiv, describingOnly, expectShape, floats, onlyParts, part, view } from '../params.js';
import type { Encoded, PreparedDecoder } from '../types.js';
import { malformed } from '../types.js';
import { described, prepared } from './common.js';

const SCALES = ['F16', 'BF16', 'F32'] as const;

/** Value `i` of width `b` in the LSB-first bit stream of words `w[at(0)], w[at(1)], …`. */
function bitsAt(w: Int32Array, at: (word: number) => number, i: number, b: number): number {
  const bit = i * b;
  const word = bit >>> 5;
  const off = bit & 31;
  let v = (w[at(word)] as number) >>> off;
  if (off + b > 32) v |= (w[at(word + 1)] as number) << (32 - off);
  return v & ((1 << b) - 1);
}

function matrixOf(p: Params): { n: number; k: number } {
  if (p.shape.length !== 2) {
    throw malformed(p.scheme, 'shape', 'the logical shape must be [out_features, in_features]', { param: 'shape' });
  }
  return { n: p.shape[0] as number, k: p.shape[1] as number };
}

export function prepareGptq(enc: Encoded): PreparedDecoder {
  const p = new Params(enc);
  p.only(['bits', 'group_size', 'zero_format', 'group_index']);
  const b = p.int('bits', { oneOf: [2, 3, 4, 8] });
  const gsRaw = p.int('group_size', { min: -1 });
  if (gsRaw === 0)
    throw malformed(enc.scheme, 'group_size', 'params.group_size must be positive or -1', {
      param: 'group_size',
      actual: 0,
    });
  const v1 = p.oneOf('zero_format', ['v1_minus_one', 'v2'] as const) === 'v1_minus_one';
  const useGidx = p.oneOf('group_index', ['g_idx', 'sequential'] as const) === 'g_idx';
  const { n, k } = matrixOf(p);
  const gs = gsRaw === -1 ? Math.max(k, 1) : gsRaw;
  const groups = ceilDiv(k, gs);
  if ((k * b) % 32 !== 0) {
    throw malformed(enc.scheme, 'pack_divides', `K·bits must be a multiple of 32 (K=${k}, bits=${b})`, {
      param: 'shape',
    });
  }
  onlyParts(enc, useGidx ? ['qweight', 'qzeros', 'scales', 'g_idx'] : ['qweight', 'qzeros', 'scales']);
  const qw = part(enc, 'qweight', ['I32', 'U32']);
  expectShape(enc.scheme, qw, [[(k * b) / 32, n]]);
  const qz = part(enc, 'qzeros', ['I32', 'U32']);
  expectShape(enc.scheme, qz, [[groups, ceilDiv(n * b, 32)]]);
  const sp = part(enc, 'scales', SCALES);
  expectShape(enc.scheme, sp, [[groups, n]]);
  const gidx = new Int32Array(k);
  if (useGidx) {
    const gp = part(enc, 'g_idx', ['I32']);
    expectShape(enc.scheme, gp, [[k]]);
    // g_idx values are checked whenever its bytes are here (a converter reads them: they are small)
    if (describingOnly() && gp.described) return described(p);
    const g = view(gp, Int32Array);
    for (let i = 0; i < k; i++) {
      const v = g[i] as number;
      if (v < 0 || v >= groups) {
        throw malformed(enc.scheme, 'g_idx_range', `g_idx[${i}] = ${v} is outside [0, ${groups})`, {
          part: 'g_idx',
          index: i,
          actual: v,
        });
      }
      gidx[i] = v;
    }
  } else for (let i = 0; i < k; i++) gidx[i] = Math.floor(i / gs);
  if (describingOnly()) return described(p);
  const w = view(qw, Int32Array);
  const z = view(qz, Int32Array);
  const s = floats(sp);
  const mask = (1 << b) - 1;
  const zw = ceilDiv(n * b, 32);
  const zf = new Float32Array(groups);
  const sf = new Float32Array(groups);
  return prepared(p, (r0, r1, out) => {
    let o = 0;
    for (let r = r0; r < r1; r++) {
      for (let g = 0; g < groups; g++) {
        const zs = bitsAt(z, (word) => g * zw + word, r, b);
        zf[g] = v1 ? (zs + 1) & mask : zs;
        sf[g] = s[g * n + r] as number;
      }
      if (b === 3) {
        for (let c = 0; c < k; c++) {
          const q = bitsAt(w, (word) => word * n + r, c, 3);
          const g = gidx[c] as number;
          out[o++] = (sf[g] as number) * (q - (zf[g] as number));
        }
      } else gptqRow(out, o, w, n, r, k, b, mask, gidx, sf, zf);
      if (b !== 3) o += k;
    }
  });
}

/** One output row of a 2/4/8-bit GPTQ weight: a small function V8 optimizes per call. */
function gptqRow(
  out: Float32Array,
  o: number,
  w: Int32Array,
  n: number,
  r: number,
  k: number,
  b: number,
  mask: number,
  gidx: Int32Array,
  sf: Float32Array,
  zf: Float32Array,
): void {
  const per = 32 / b;
  for (let c0 = 0, wi = r; c0 < k; c0 += per, wi += n) {
    const word = w[wi] as number;
    for (let j = 0; j < per; j++) {
      const g = gidx[c0 + j] as number;
      out[o++] = (sf[g] as number) * (((word >>> (j * b)) & mask) - (zf[g] as number));
    }
  }
}

/** AWQ's nibble slot holding column j of an 8-column word (`AWQ_REVERSE_ORDER`). */
const AWQ_SLOT = [0, 4, 1, 5, 2, 6, 3, 7] as const;

export function prepareAwqGemm(enc: Encoded): PreparedDecoder {
  const p = new Params(enc);
  p.only(['bits', 'group_size']);
  p.int('bits', { oneOf: [4] });
  const gsRaw = p.int('group_size', { min: -1 });
  if (gsRaw === 0)
    throw malformed(enc.scheme, 'group_size', 'params.group_size must be positive or -1', {
      param: 'group_size',
      actual: 0,
    });
  const { n, k } = matrixOf(p);
  const gs = gsRaw === -1 ? Math.max(k, 1) : gsRaw;
  const groups = ceilDiv(k, gs);
  if (n % 8 !== 0) {
    throw malformed(enc.scheme, 'pack_divides', `out_features ${n} is not a multiple of 8`, { param: 'shape' });
  }
  onlyParts(enc, ['qweight', 'qzeros', 'scales']);
  const qw = part(enc, 'qweight', ['I32', 'U32']);
  expectShape(enc.scheme, qw, [[k, n / 8]]);
  const qz = part(enc, 'qzeros', ['I32', 'U32']);
  expectShape(enc.scheme, qz, [[groups, n / 8]]);
  const sp = part(enc, 'scales', SCALES);
  expectShape(enc.scheme, sp, [[groups, n]]);
  if (describingOnly()) return described(p);
  const w = view(qw, Int32Array);
  const z = view(qz, Int32Array);
  const s = floats(sp);
  const wpr = n / 8;
  return prepared(p, (r0, r1, out) => {
    let o = 0;
    for (let r = r0; r < r1; r++) {
      const col = r >> 3;
      const shift = (AWQ_SLOT[r & 7] as number) * 4;
      for (let c = 0; c < k; c++) {
        const g = Math.floor(c / gs);
        const q = ((w[c * wpr + col] as number) >>> shift) & 15;
        const zz = ((z[g * wpr + col] as number) >>> shift) & 15;
        out[o++] = (q - zz) * (s[g * n + r] as number);
      }
    }
  });
}
