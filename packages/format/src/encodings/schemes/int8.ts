/**
 * `int8`: symmetric 8-bit integers times a float scale per tensor, row or column.
 * `W = q · s` (`scale_kind: "scale"`) or `W = (q · s) · (1/127)` (`"absmax_over_127"`, LLM.int8 SCB).
 */
import { Params, describingOnly, expectShape, floats, onlyParts, part } from '../params.js';
import type { Encoded, PreparedDecoder } from '../types.js';
import { INV127, described, prepared } from './common.js';

export const SCALE_DTYPES = ['F32', 'F16', 'BF16'] as const;

export function prepareInt8(enc: Encoded): PreparedDecoder {
  const p = new Params(enc);
  p.only(['granularity', 'scale_kind']);
  const gran = p.oneOf('granularity', ['tensor', 'row', 'column'] as const);
  const kind = p.oneOf('scale_kind', ['scale', 'absmax_over_127'] as const);
  onlyParts(enc, ['q', 'scale']);
  const q = part(enc, 'q', ['I8']);
  expectShape(enc.scheme, q, [p.shape]);
  const sp = part(enc, 'scale', SCALE_DTYPES);
  const { rows, cols } = p.matrix();
  if (gran === 'tensor') expectShape(enc.scheme, sp, [[], [1]]);
  else if (gran === 'row') expectShape(enc.scheme, sp, [[rows], [rows, 1]]);
  else expectShape(enc.scheme, sp, [[cols], [1, cols]]);
  if (describingOnly()) return described(p);
  const s = floats(sp);
  const qv = new Int8Array(q.bytes.buffer, q.bytes.byteOffset, q.bytes.length);
  const absmax = kind === 'absmax_over_127';
  return prepared(p, (r0, r1, out) => {
    let o = 0;
    for (let r = r0; r < r1; r++) {
      const base = r * cols;
      if (gran === 'column') {
        for (let c = 0; c < cols; c++) {
          const v = Math.fround((qv[base + c] as number) * (s[c] as number));
          out[o++] = absmax ? v * INV127 : v;
        }
      } else {
        const sc = s[gran === 'row' ? r : 0] as number;
        if (absmax) for (let c = 0; c < cols; c++) out[o++] = Math.fround((qv[base + c] as number) * sc) * INV127;
        else for (let c = 0; c < cols; c++) out[o++] = (qv[base + c] as number) * sc;
      }
    }
  });
}
