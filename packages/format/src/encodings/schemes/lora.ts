/**
 * `lora`: a low-rank delta `W = (alpha / rank) · up @ down`, with `up` [out, rank] (or [out, rank, 1, 1])
 * and `down` [rank, in, …]. `alpha` null or 0 means alpha = rank (scale 1), as Kohya's sd-scripts do.
 */
import { Params, describingOnly, expectShape, floats, onlyParts, part, product } from '../params.js';
import type { Encoded, PreparedDecoder } from '../types.js';
import { malformed } from '../types.js';
import { described, prepared } from './common.js';

const FLOATS = ['F32', 'F16', 'BF16'] as const;

export function prepareLora(enc: Encoded): PreparedDecoder {
  const p = new Params(enc);
  p.only(['alpha']);
  const alphaRaw = p.obj.alpha;
  if (alphaRaw !== null && (typeof alphaRaw !== 'number' || !Number.isFinite(alphaRaw))) {
    throw malformed(enc.scheme, 'alpha', 'params.alpha must be a finite number or null', { param: 'alpha' });
  }
  if (p.shape.length < 2)
    throw malformed(enc.scheme, 'shape', 'the logical shape must be [out, in, …]', { param: 'shape' });
  onlyParts(enc, ['down', 'up']);
  const down = part(enc, 'down', FLOATS);
  const up = part(enc, 'up', FLOATS);
  const rank = down.shape[0] ?? 0;
  const out = p.shape[0] as number;
  const inner = p.shape.slice(1);
  expectShape(enc.scheme, down, [[rank, ...inner]]);
  expectShape(enc.scheme, up, [
    [out, rank],
    [out, rank, 1, 1],
  ]);
  if (rank < 1) throw malformed(enc.scheme, 'rank', 'the rank (rows of "down") must be at least 1', { part: 'down' });
  const alpha = alphaRaw === null || alphaRaw === 0 ? rank : alphaRaw;
  const scale = Math.fround(alpha / rank);
  if (describingOnly()) return described(p);
  const u = floats(up);
  const dn = floats(down);
  const cols = product(inner);
  // the decoder's matrix view: rows = out, cols = product(in, …) — same as Params.matrix only for 2-D
  const base = prepared(p, () => {});
  const rows = out;
  return {
    ...base,
    rows,
    cols,
    decodeRows(r0, r1, dst) {
      let o = 0;
      for (let r = r0; r < r1; r++) {
        for (let c = 0; c < cols; c++) {
          let acc = 0;
          for (let k = 0; k < rank; k++)
            acc = Math.fround(acc + Math.fround((u[r * rank + k] as number) * (dn[k * cols + c] as number)));
          dst[o++] = acc * scale;
        }
      }
    },
  };
}
