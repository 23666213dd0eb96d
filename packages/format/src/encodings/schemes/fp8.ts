/**
 * `fp8_e4m3fn` / `fp8_e5m2`: OCP FP8 codes, optionally times an F32 scale per tensor, row or 2-D block.
 * `W = f8(q) · s`; the scale always multiplies (DeepSeek's `weight_scale_inv` is such a scale).
 */
import { E4M3FN, E5M2 } from '../floats.js';
import { Params, ceilDiv, expectShape, floats, onlyParts, part } from '../params.js';
import type { Encoded, PreparedDecoder } from '../types.js';
import { malformed } from '../types.js';
import { prepared } from './common.js';
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
    s = floats(sp);
  }
  const qb = q.bytes;
  return prepared(p, (r0, r1, out) => {
    let o = 0;
    for (let r = r0; r < r1; r++) {
      const base = r * cols;
      if (gran === 'block') {
        const srow = Math.floor(r / bn) * sCols;
        for (let c = 0; c < cols; c++)
          out[o++] = (lut[qb[base + c] as number] as number) * (s[srow + Math.floor(c / bk)] as number);
      } else if (gran === 'none') {
        for (let c = 0; c < cols; c++) out[o++] = lut[qb[base + c] as number] as number;
      } else {
        const sc = s[gran === 'row' ? r : 0] as number;
        for (let c = 0; c < cols; c++) out[o++] = (lut[qb[base + c] as number] as number) * sc;
      }
    }
  });
}
