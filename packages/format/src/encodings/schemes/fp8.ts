/**
 * `fp8_e4m3fn` / `fp8_e5m2`: OCP FP8 codes, optionally times an F32 scale per tensor, row or 2-D block.
 * `W = f8(q) · s`; the scale always multiplies (DeepSeek's `weight_scale_inv` is such a scale).
 */
import { E4M3FN, E5M2 } from '../floats.js';
import { Params, ceilDiv, describingOnly, expectShape, floats, onlyParts, part } from '../params.js';
import type { Encoded, PreparedDecoder } from '../types.js';
import { malformed } from '../types.js';
import { described, prepared } from './common.js';
import { SCALE_DTYPES } from './int8.js';

export function prepareFp8(enc: Encoded): PreparedDecoder {
  const e5 = enc.scheme === 'fp8_e5m2';
  const lut = e5 ? E5M2 : E4M3FN;
  const p = new Params(enc);
  const gran = p.oneOf('granularity', ['none', 'tensor', 'row', 'block'] as const);
  p.only(gran === 'block' ? ['granularity', 'block'] : ['granularity']);
  onlyParts(enc, gran === 'none' ? ['q'] : ['q', 'scale']);
  const q = part(enc, 'q', [e5 ? 'F8_E5M2' : 'F8_E4M3', 'U8']);
  expectShape(enc.scheme, q, [p.shape]);
  const { rows, cols } = p.matrix();
  let s: Float32Array = new Float32Array([1]);
  let bn = 1;
  let bk = 1;
  let sCols = 1;
  if (gran !== 'none') {
    const sp = part(enc, 'scale', SCALE_DTYPES);
    if (gran === 'tensor') expectShape(enc.scheme, sp, [[], [1]]);
    else if (gran === 'row') expectShape(enc.scheme, sp, [[rows], [rows, 1]]);
    else {
      const b = p.dims('block');
      if (b.length !== 2 || (b[0] as number) < 1 || (b[1] as number) < 1) {
        throw malformed(enc.scheme, 'block', 'params.block must be [rows, cols] of positive integers', {
          param: 'block',
        });
      }
      bn = b[0] as number;
      bk = b[1] as number;
      sCols = ceilDiv(cols, bk);
      expectShape(enc.scheme, sp, [[ceilDiv(rows, bn), sCols]]);
    }
    if (describingOnly()) return described(p);
    s = floats(sp);
  }
  if (describingOnly()) return described(p);
  const qb = q.bytes;
  const sv = s;
  if (gran === 'block') {
    return prepared(p, (r0, r1, out) => {
      let o = 0;
      for (let r = r0; r < r1; r++) {
        const base = r * cols;
        const srow = Math.floor(r / bn) * sCols;
        for (let c0 = 0, sc = srow; c0 < cols; c0 += bk, sc++) {
          const x = sv[sc] as number;
          const end = Math.min(cols, c0 + bk);
          for (let c = c0; c < end; c++) out[o++] = (lut[qb[base + c] as number] as number) * x;
        }
      }
    });
  }
  const perRow = gran === 'row';
  return prepared(p, (r0, r1, out) => lutRows(qb, lut, sv, perRow, cols, r0, r1, out));
}

/**
 * Rows of `code × scale` through a 256-entry table per scale (the same float32 products, one
 * multiply per code). The per-row loop is its own small function: V8 optimizes a function called
 * once per row far better than one long loop entered once.
 */
function lutRows(
  qb: Uint8Array,
  lut: Float32Array,
  sv: Float32Array,
  perRow: boolean,
  cols: number,
  r0: number,
  r1: number,
  out: Float32Array,
): void {
  const t = new Float32Array(256);
  let tScale = Number.NaN;
  let o = 0;
  for (let r = r0; r < r1; r++) {
    const x = sv[perRow ? r : 0] as number;
    if (!Object.is(x, tScale)) {
      for (let c = 0; c < 256; c++) t[c] = (lut[c] as number) * x;
      tScale = x;
    }
    lutRow(out, t, qb, o, r * cols, cols);
    o += cols;
  }
}

function lutRow(out: Float32Array, t: Float32Array, qb: Uint8Array, o: number, base: number, n: number): void {
  for (let c = 0; c < n; c++) out[o + c] = t[qb[base + c] as number] as number;
}
