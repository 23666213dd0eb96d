/**
 * `ggml`: GGML block types (`params.type`, the GGUF type name). Rows of the logical tensor are runs of
 * `shape[-1]` (GGUF `ne[0]`) elements; blocks run along a row. Arithmetic follows ggml-quants.c
 * `dequantize_row_*`: float32, unfused, in ggml's operand order.
 */
import { TensorFSError } from '../../errors.js';
import { ggmlTypeByName } from '../../gguf/ggml-types.js';
import { f16Table32, f32FromBits } from '../floats.js';
import { Params, describingOnly, expectCount, onlyParts, part } from '../params.js';
import type { Encoded, PreparedDecoder } from '../types.js';
import { malformed } from '../types.js';
import { described, prepared } from './common.js';
import {
  IQ1_S_GRID,
  IQ2_S_GRID,
  IQ2_XS_GRID,
  IQ2_XXS_GRID,
  IQ3_S_GRID,
  IQ3_XXS_GRID,
  type PackedGrid,
} from './ggml-grids.js';

/** Decodes one block of `src` at byte `s` into `y` at `o`. */
type BlockFn = (src: Uint8Array, s: number, y: Float32Array, o: number) => void;

const F16 = /* @__PURE__ */ f16Table32();
const fr = Math.fround;

function h(src: Uint8Array, s: number): number {
  return F16[(src[s] as number) | ((src[s + 1] as number) << 8)] as number;
}

function u16(src: Uint8Array, s: number): number {
  return (src[s] as number) | ((src[s + 1] as number) << 8);
}

function u32(src: Uint8Array, s: number): number {
  return (
    ((src[s] as number) |
      ((src[s + 1] as number) << 8) |
      ((src[s + 2] as number) << 16) |
      ((src[s + 3] as number) << 24)) >>>
    0
  );
}

function i8(v: number): number {
  return (v << 24) >> 24;
}

const KVALUES_IQ4NL = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];
const KVALUES_FP4X2 = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/** ggml `ksigns_iq2xs`: i with bit 7 set when i has an odd number of set bits. */
const KSIGNS = /* @__PURE__ */ (() => {
  const t = new Uint8Array(128);
  for (let i = 0; i < 128; i++) {
    let c = 0;
    for (let b = i; b; b >>= 1) c += b & 1;
    t[i] = i | ((c & 1) << 7);
  }
  return t;
})();

const grids = new Map<PackedGrid, Int8Array>();
/** The grid expanded to `rows × width` signed byte values. */
function grid(g: PackedGrid): Int8Array {
  let t = grids.get(g);
  if (t) return t;
  const bin = atob(g.packed);
  const bits = Math.ceil(Math.log2(g.map.length));
  const per = Math.floor(8 / bits);
  const step = 8 / per;
  const mask = (1 << bits) - 1;
  t = new Int8Array(g.rows * g.width);
  for (let i = 0; i < bin.length; i++) {
    const byte = bin.charCodeAt(i);
    for (let j = 0; j < per; j++) t[i * per + j] = g.map[(byte >> (j * step)) & mask] as number;
  }
  grids.set(g, t);
  return t;
}

/** ggml `ggml_e8m0_to_fp32_half`: 2^(e−128), with e < 2 as float32 subnormals. */
function e8m0Half(e: number): number {
  return f32FromBits(e < 2 ? 0x00200000 << e : (e - 1) << 23);
}

/** ggml `ggml_ue4m3_to_fp32`: unsigned E4M3 times 0.5; 0x00 and 0x7F → 0. */
function ue4m3(x: number): number {
  if (x === 0 || x === 0x7f) return 0;
  const e = (x >> 3) & 15;
  const m = x & 7;
  const raw = e === 0 ? m * 2 ** -9 : (1 + m / 8) * 2 ** (e - 7);
  return fr(raw) * 0.5;
}

/** `get_scale_min_k4` for sub-block j of the 12 packed scale bytes at `q`. */
function scaleMinK4(j: number, src: Uint8Array, q: number, out: Int32Array): void {
  if (j < 4) {
    out[0] = (src[q + j] as number) & 63;
    out[1] = (src[q + j + 4] as number) & 63;
  } else {
    out[0] = ((src[q + j + 4] as number) & 0xf) | (((src[q + j - 4] as number) >> 6) << 4);
    out[1] = ((src[q + j + 4] as number) >> 4) | (((src[q + j] as number) >> 6) << 4);
  }
}

const sm = new Int32Array(2);
const t16a = new Float32Array(16);
const t16b = new Float32Array(16);
const t16au = new Uint32Array(t16a.buffer);
const t16bu = new Uint32Array(t16b.buffer);
let lastY: Float32Array | undefined;
let lastY32: Uint32Array = new Uint32Array(0);
/** A Uint32Array view of `y` (cached: one output buffer is decoded block after block). */
function y32Of(y: Float32Array): Uint32Array {
  if (y !== lastY) {
    lastY = y;
    lastY32 = new Uint32Array(y.buffer, y.byteOffset, y.length);
  }
  return lastY32;
}

const BLOCKS: Readonly<Record<string, BlockFn>> = {
  Q4_0(src, s, y, o) {
    const d = h(src, s);
    for (let j = 0; j < 16; j++) {
      const q = src[s + 2 + j] as number;
      y[o + j] = ((q & 15) - 8) * d;
      y[o + j + 16] = ((q >> 4) - 8) * d;
    }
  },
  Q4_1(src, s, y, o) {
    const d = h(src, s);
    const m = h(src, s + 2);
    for (let j = 0; j < 16; j++) {
      const q = src[s + 4 + j] as number;
      y[o + j] = fr((q & 15) * d) + m;
      y[o + j + 16] = fr((q >> 4) * d) + m;
    }
  },
  Q5_0(src, s, y, o) {
    const d = h(src, s);
    const qh = u32(src, s + 2);
    for (let j = 0; j < 16; j++) {
      const q = src[s + 6 + j] as number;
      const h0 = ((qh >>> j) << 4) & 0x10;
      const h1 = (qh >>> (j + 12)) & 0x10;
      y[o + j] = (((q & 15) | h0) - 16) * d;
      y[o + j + 16] = (((q >> 4) | h1) - 16) * d;
    }
  },
  Q5_1(src, s, y, o) {
    const d = h(src, s);
    const m = h(src, s + 2);
    const qh = u32(src, s + 4);
    for (let j = 0; j < 16; j++) {
      const q = src[s + 8 + j] as number;
      const h0 = ((qh >>> j) << 4) & 0x10;
      const h1 = (qh >>> (j + 12)) & 0x10;
      y[o + j] = fr(((q & 15) | h0) * d) + m;
      y[o + j + 16] = fr(((q >> 4) | h1) * d) + m;
    }
  },
  Q8_0(src, s, y, o) {
    const d = h(src, s);
    for (let j = 0; j < 32; j++) y[o + j] = i8(src[s + 2 + j] as number) * d;
  },
  Q8_1(src, s, y, o) {
    const d = h(src, s);
    for (let j = 0; j < 32; j++) y[o + j] = i8(src[s + 4 + j] as number) * d;
  },
  Q2_K(src, s, y, o) {
    // {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}
    const d = h(src, s + 80);
    const dmin = h(src, s + 82);
    let is = 0;
    let q = s + 16;
    for (let n = 0; n < 256; n += 128) {
      let shift = 0;
      for (let j = 0; j < 4; j++) {
        let sc = src[s + is++] as number;
        let dl = fr(d * (sc & 0xf));
        let ml = fr(dmin * (sc >> 4));
        for (let l = 0; l < 16; l++) y[o++] = fr(dl * (((src[q + l] as number) >> shift) & 3)) - ml;
        sc = src[s + is++] as number;
        dl = fr(d * (sc & 0xf));
        ml = fr(dmin * (sc >> 4));
        for (let l = 0; l < 16; l++) y[o++] = fr(dl * (((src[q + l + 16] as number) >> shift) & 3)) - ml;
        shift += 2;
      }
      q += 32;
    }
  },
  Q3_K(src, s, y, o) {
    // {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}
    const dAll = h(src, s + 108);
    const a = s + 96;
    const sc = new Int32Array(16);
    for (let i = 0; i < 16; i++) {
      const low = i < 8 ? (src[a + i] as number) & 15 : (src[a + i - 8] as number) >> 4;
      const high = ((src[a + 8 + (i & 3)] as number) >> (2 * (i >> 2))) & 3;
      sc[i] = (low | (high << 4)) - 32;
    }
    let is = 0;
    let m = 1;
    let q = s + 32;
    for (let n = 0; n < 256; n += 128) {
      let shift = 0;
      for (let j = 0; j < 4; j++) {
        let dl = fr(dAll * (sc[is++] as number));
        for (let l = 0; l < 16; l++) {
          const v = (((src[q + l] as number) >> shift) & 3) - ((src[s + l] as number) & m ? 0 : 4);
          y[o++] = dl * v;
        }
        dl = fr(dAll * (sc[is++] as number));
        for (let l = 0; l < 16; l++) {
          const v = (((src[q + l + 16] as number) >> shift) & 3) - ((src[s + l + 16] as number) & m ? 0 : 4);
          y[o++] = dl * v;
        }
        shift += 2;
        m <<= 1;
      }
      q += 32;
    }
  },
  Q4_K(src, s, y, o) {
    // {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}; y = fr(d·sc·q) − dmin·m, by a 16-entry table per sub-block
    const d = h(src, s);
    const min = h(src, s + 2);
    let q = s + 16;
    for (let j = 0; j < 8; j += 2) {
      scaleMinK4(j, src, s + 4, sm);
      const d1 = fr(d * (sm[0] as number));
      const m1 = fr(min * (sm[1] as number));
      scaleMinK4(j + 1, src, s + 4, sm);
      const d2 = fr(d * (sm[0] as number));
      const m2 = fr(min * (sm[1] as number));
      for (let v = 0; v < 16; v++) {
        t16a[v] = fr(d1 * v) - m1;
        t16b[v] = fr(d2 * v) - m2;
      }
      const y32 = y32Of(y);
      for (let l = 0; l < 32; l++) {
        const b = src[q + l] as number;
        y32[o + l] = t16au[b & 15] as number;
        y32[o + 32 + l] = t16bu[b >> 4] as number;
      }
      q += 32;
      o += 64;
    }
  },
  Q5_K(src, s, y, o) {
    // {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}
    const d = h(src, s);
    const min = h(src, s + 2);
    const qh = s + 16;
    let ql = s + 48;
    let u1 = 1;
    let u2 = 2;
    for (let j = 0; j < 8; j += 2) {
      scaleMinK4(j, src, s + 4, sm);
      const d1 = fr(d * (sm[0] as number));
      const m1 = fr(min * (sm[1] as number));
      scaleMinK4(j + 1, src, s + 4, sm);
      const d2 = fr(d * (sm[0] as number));
      const m2 = fr(min * (sm[1] as number));
      for (let l = 0; l < 32; l++) {
        const v = ((src[ql + l] as number) & 15) + ((src[qh + l] as number) & u1 ? 16 : 0);
        y[o + l] = fr(d1 * v) - m1;
      }
      for (let l = 0; l < 32; l++) {
        const v = ((src[ql + l] as number) >> 4) + ((src[qh + l] as number) & u2 ? 16 : 0);
        y[o + 32 + l] = fr(d2 * v) - m2;
      }
      ql += 32;
      o += 64;
      u1 <<= 2;
      u2 <<= 2;
    }
  },
  Q6_K(src, s, y, o) {
    // {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}
    const d = h(src, s + 208);
    let ql = s;
    let qh = s + 128;
    let sc = s + 192;
    for (let n = 0; n < 256; n += 128) {
      for (let half = 0; half < 2; half++) {
        const d0 = fr(d * i8(src[sc + half] as number));
        const d2 = fr(d * i8(src[sc + half + 2] as number));
        const d4 = fr(d * i8(src[sc + half + 4] as number));
        const d6 = fr(d * i8(src[sc + half + 6] as number));
        for (let l = half * 16; l < half * 16 + 16; l++) {
          const a = src[ql + l] as number;
          const b = src[ql + l + 32] as number;
          const hh = src[qh + l] as number;
          y[o + l] = d0 * (((a & 15) | ((hh & 3) << 4)) - 32);
          y[o + l + 32] = d2 * (((b & 15) | ((hh << 2) & 0x30)) - 32);
          y[o + l + 64] = d4 * (((a >> 4) | (hh & 0x30)) - 32);
          y[o + l + 96] = d6 * (((b >> 4) | ((hh >> 2) & 0x30)) - 32);
        }
      }
      o += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  },
  Q8_K(src, s, y, o) {
    const d = f32FromBits(u32(src, s));
    for (let j = 0; j < 256; j++) y[o + j] = d * i8(src[s + 4 + j] as number);
  },
  TQ1_0(src, s, y, o) {
    // {u8 qs[48]; u8 qh[4]; f16 d}
    const d = h(src, s + 52);
    const pow3 = [1, 3, 9, 27, 81];
    for (let n = 0; n < 5; n++)
      for (let m = 0; m < 32; m++) {
        const q = ((src[s + m] as number) * (pow3[n] as number)) & 255;
        y[o++] = (((q * 3) >> 8) - 1) * d;
      }
    for (let n = 0; n < 5; n++)
      for (let m = 0; m < 16; m++) {
        const q = ((src[s + 32 + m] as number) * (pow3[n] as number)) & 255;
        y[o++] = (((q * 3) >> 8) - 1) * d;
      }
    for (let n = 0; n < 4; n++)
      for (let j = 0; j < 4; j++) {
        const q = ((src[s + 48 + j] as number) * (pow3[n] as number)) & 255;
        y[o++] = (((q * 3) >> 8) - 1) * d;
      }
  },
  TQ2_0(src, s, y, o) {
    // {u8 qs[64]; f16 d}
    const d = h(src, s + 64);
    for (let j = 0; j < 64; j += 32)
      for (let l = 0; l < 4; l++)
        for (let m = 0; m < 32; m++) y[o++] = ((((src[s + j + m] as number) >> (l * 2)) & 3) - 1) * d;
  },
  IQ2_XXS(src, s, y, o) {
    // {f16 d; u16 qs[32]}
    const d = h(src, s);
    const g = grid(IQ2_XXS_GRID);
    for (let ib = 0; ib < 8; ib++) {
      const q = s + 2 + ib * 8;
      const aux1 = u32(src, q + 4);
      const db = fr(fr(d * (0.5 + (aux1 >>> 28))) * 0.25);
      for (let l = 0; l < 4; l++) {
        const gi = (src[q + l] as number) * 8;
        const signs = KSIGNS[(aux1 >>> (7 * l)) & 127] as number;
        for (let j = 0; j < 8; j++) {
          const v = fr(db * (g[gi + j] as number));
          y[o++] = signs & (1 << j) ? -v : v;
        }
      }
    }
  },
  IQ2_XS(src, s, y, o) {
    // {f16 d; u16 qs[32]; u8 scales[8]}
    const d = h(src, s);
    const g = grid(IQ2_XS_GRID);
    for (let ib = 0; ib < 8; ib++) {
      const sc = src[s + 66 + ib] as number;
      const db0 = fr(fr(d * (0.5 + (sc & 15))) * 0.25);
      const db1 = fr(fr(d * (0.5 + (sc >> 4))) * 0.25);
      for (let l = 0; l < 4; l++) {
        const w = u16(src, s + 2 + (ib * 4 + l) * 2);
        const gi = (w & 511) * 8;
        const signs = KSIGNS[w >> 9] as number;
        const db = l < 2 ? db0 : db1;
        for (let j = 0; j < 8; j++) {
          const v = fr(db * (g[gi + j] as number));
          y[o++] = signs & (1 << j) ? -v : v;
        }
      }
    }
  },
  IQ2_S(src, s, y, o) {
    // {f16 d; u8 qs[64] (32 grid bytes, then 32 sign bytes); u8 qh[8]; u8 scales[8]}
    const d = h(src, s);
    const g = grid(IQ2_S_GRID);
    for (let ib = 0; ib < 8; ib++) {
      const sc = src[s + 74 + ib] as number;
      const db0 = fr(fr(d * (0.5 + (sc & 15))) * 0.25);
      const db1 = fr(fr(d * (0.5 + (sc >> 4))) * 0.25);
      const qh = src[s + 66 + ib] as number;
      for (let l = 0; l < 4; l++) {
        const gi = ((src[s + 2 + ib * 4 + l] as number) | ((qh << (8 - 2 * l)) & 0x300)) * 8;
        const signs = src[s + 34 + ib * 4 + l] as number;
        const db = l < 2 ? db0 : db1;
        for (let j = 0; j < 8; j++) {
          const v = fr(db * (g[gi + j] as number));
          y[o++] = signs & (1 << j) ? -v : v;
        }
      }
    }
  },
  IQ3_XXS(src, s, y, o) {
    // {f16 d; u8 qs[64]; u32 scales_and_signs[8]}
    const d = h(src, s);
    const g = grid(IQ3_XXS_GRID);
    for (let ib = 0; ib < 8; ib++) {
      const aux = u32(src, s + 66 + ib * 4);
      const db = fr(fr(d * (0.5 + (aux >>> 28))) * 0.5);
      const q = s + 2 + ib * 8;
      for (let l = 0; l < 4; l++) {
        const signs = KSIGNS[(aux >>> (7 * l)) & 127] as number;
        const g1 = (src[q + 2 * l] as number) * 4;
        const g2 = (src[q + 2 * l + 1] as number) * 4;
        for (let j = 0; j < 4; j++) {
          const v1 = fr(db * (g[g1 + j] as number));
          const v2 = fr(db * (g[g2 + j] as number));
          y[o + j] = signs & (1 << j) ? -v1 : v1;
          y[o + j + 4] = signs & (1 << (j + 4)) ? -v2 : v2;
        }
        o += 8;
      }
    }
  },
  IQ3_S(src, s, y, o) {
    // {f16 d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4]}
    const d = h(src, s);
    const g = grid(IQ3_S_GRID);
    for (let ib = 0; ib < 8; ib++) {
      const sc = src[s + 106 + (ib >> 1)] as number;
      const db = fr(d * (1 + 2 * (ib & 1 ? sc >> 4 : sc & 15)));
      const qh = src[s + 66 + ib] as number;
      for (let l = 0; l < 4; l++) {
        const g1 = ((src[s + 2 + ib * 8 + 2 * l] as number) | (((qh >> (2 * l)) & 1) << 8)) * 4;
        const g2 = ((src[s + 2 + ib * 8 + 2 * l + 1] as number) | (((qh >> (2 * l + 1)) & 1) << 8)) * 4;
        const signs = src[s + 74 + ib * 4 + l] as number;
        for (let j = 0; j < 4; j++) {
          const v1 = fr(db * (g[g1 + j] as number));
          const v2 = fr(db * (g[g2 + j] as number));
          y[o + j] = signs & (1 << j) ? -v1 : v1;
          y[o + j + 4] = signs & (1 << (j + 4)) ? -v2 : v2;
        }
        o += 8;
      }
    }
  },
  IQ1_S(src, s, y, o) {
    // {f16 d; u8 qs[32]; u16 qh[8]}
    const d = h(src, s);
    const g = grid(IQ1_S_GRID);
    for (let ib = 0; ib < 8; ib++) {
      const qh = u16(src, s + 34 + ib * 2);
      const dl = fr(d * (2 * ((qh >> 12) & 7) + 1));
      const delta = qh & 0x8000 ? -0.125 : 0.125;
      for (let l = 0; l < 4; l++) {
        const gi = ((src[s + 2 + ib * 4 + l] as number) | (((qh >> (3 * l)) & 7) << 8)) * 8;
        for (let j = 0; j < 8; j++) y[o++] = dl * ((g[gi + j] as number) + delta);
      }
    }
  },
  IQ1_M(src, s, y, o) {
    // {u8 qs[32]; u8 qh[16]; u8 scales[8]}
    const g = grid(IQ1_S_GRID);
    const sc0 = u16(src, s + 48);
    const sc1 = u16(src, s + 50);
    const sc2 = u16(src, s + 52);
    const sc3 = u16(src, s + 54);
    const dbits = (sc0 >> 12) | ((sc1 >> 8) & 0x00f0) | ((sc2 >> 4) & 0x0f00) | (sc3 & 0xf000);
    const d = F16[dbits] as number;
    for (let ib = 0; ib < 8; ib++) {
      const sc = u16(src, s + 48 + (ib >> 1) * 2);
      const dl1 = fr(d * (2 * ((sc >> (6 * (ib & 1))) & 7) + 1));
      const dl2 = fr(d * (2 * ((sc >> (6 * (ib & 1) + 3)) & 7) + 1));
      for (let l = 0; l < 4; l++) {
        const qh = src[s + 32 + ib * 2 + (l >> 1)] as number;
        const nib = l & 1 ? qh >> 4 : qh & 15;
        const gi = ((src[s + ib * 4 + l] as number) | ((nib & 7) << 8)) * 8;
        const delta = nib & 8 ? -0.125 : 0.125;
        const dl = l < 2 ? dl1 : dl2;
        for (let j = 0; j < 8; j++) y[o++] = dl * ((g[gi + j] as number) + delta);
      }
    }
  },
  IQ4_NL(src, s, y, o) {
    const d = h(src, s);
    for (let j = 0; j < 16; j++) {
      const q = src[s + 2 + j] as number;
      y[o + j] = d * (KVALUES_IQ4NL[q & 15] as number);
      y[o + j + 16] = d * (KVALUES_IQ4NL[q >> 4] as number);
    }
  },
  IQ4_XS(src, s, y, o) {
    // {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}
    const d = h(src, s);
    const sh = u16(src, s + 2);
    for (let ib = 0; ib < 8; ib++) {
      const ls = (((src[s + 4 + (ib >> 1)] as number) >> (4 * (ib & 1))) & 15) | (((sh >> (2 * ib)) & 3) << 4);
      const dl = fr(d * (ls - 32));
      const q = s + 8 + ib * 16;
      for (let j = 0; j < 16; j++) {
        const b = src[q + j] as number;
        y[o + j] = dl * (KVALUES_IQ4NL[b & 15] as number);
        y[o + j + 16] = dl * (KVALUES_IQ4NL[b >> 4] as number);
      }
      o += 32;
    }
  },
  MXFP4(src, s, y, o) {
    const d = e8m0Half(src[s] as number);
    for (let j = 0; j < 16; j++) {
      const q = src[s + 1 + j] as number;
      y[o + j] = (KVALUES_FP4X2[q & 15] as number) * d;
      y[o + j + 16] = (KVALUES_FP4X2[q >> 4] as number) * d;
    }
  },
  NVFP4(src, s, y, o) {
    for (let b = 0; b < 4; b++) {
      const d = ue4m3(src[s + b] as number);
      for (let j = 0; j < 8; j++) {
        const q = src[s + 4 + b * 8 + j] as number;
        y[o + b * 16 + j] = (KVALUES_FP4X2[q & 15] as number) * d;
        y[o + b * 16 + j + 8] = (KVALUES_FP4X2[q >> 4] as number) * d;
      }
    }
  },
  Q1_0(src, s, y, o) {
    const d = h(src, s);
    for (let j = 0; j < 128; j++) y[o + j] = ((src[s + 2 + (j >> 3)] as number) >> (j & 7)) & 1 ? d : -d;
  },
};

/** The GGML block types this package decodes. */
export const GGML_DECODABLE: readonly string[] = Object.freeze(Object.keys(BLOCKS));

export function prepareGgml(enc: Encoded): PreparedDecoder {
  const p = new Params(enc);
  p.only(['type']);
  const name = typeof p.obj.type === 'string' ? p.obj.type : '';
  const info = ggmlTypeByName(name);
  if (!info || info.blockSize <= 1) {
    throw malformed(enc.scheme, 'type', 'params.type must be a GGML block type name', { param: 'type', actual: name });
  }
  const fn = BLOCKS[info.name];
  if (!fn) {
    throw new TensorFSError('unsupported', `decoding GGML ${info.name} is not supported`, {
      details: { rule: 'encodings.ggml.type_unsupported', scheme: 'ggml', type: info.name },
    });
  }
  const { rows, cols } = p.matrix();
  if (cols % info.blockSize !== 0) {
    throw malformed(
      enc.scheme,
      'block_divides',
      `the row length ${cols} is not a multiple of the ${info.name} block (${info.blockSize})`,
      {
        param: 'shape',
        actual: cols,
      },
    );
  }
  onlyParts(enc, ['blocks']);
  const bp = part(enc, 'blocks', ['U8']);
  const perRow = cols / info.blockSize;
  const rowBytes = perRow * info.typeSize;
  expectCount(enc.scheme, bp, rows * rowBytes);
  if (describingOnly()) return described(p);
  const src = bp.bytes;
  const bsz = info.blockSize;
  const tsz = info.typeSize;
  return prepared(p, (r0, r1, out) => {
    let o = 0;
    let sOff = r0 * rowBytes;
    const nb = (r1 - r0) * perRow;
    for (let b = 0; b < nb; b++) {
      fn(src, sOff, out, o);
      sOff += tsz;
      o += bsz;
    }
  });
}
