/**
 * `lora`: a low-rank delta `W = scale · up @ down`, with `up` [out, rank] (or [out, rank, 1, 1])
 * and `down` [rank, in, …]. Without `scale_rule` (Kohya): `scale = alpha / rank`, alpha null or 0
 * meaning alpha = rank (scale 1), as sd-scripts do. With `scale_rule` (PEFT): `alpha_over_rank`
 * (`lora_alpha / r`) or `alpha_over_sqrt_rank` (rsLoRA, `lora_alpha / √r`), alpha a number used as
 * is. `rank` (when given) must be the rows of `down`; `target` names the base tensor the delta is
 * added to (informational for the decoder); `transpose: true` means the delta is `(up @ down)ᵀ`
 * (PEFT `fan_in_fan_out` Conv1D layers and embeddings), logical shape `[in, out]`.
 */
import { Params, describingOnly, expectShape, floats, onlyParts, part, product } from '../params.js';
import type { Encoded, PreparedDecoder } from '../types.js';
import { malformed } from '../types.js';
import { described, prepared } from './common.js';

const FLOATS = ['F32', 'F16', 'BF16'] as const;
const RULES = ['alpha_over_rank', 'alpha_over_sqrt_rank'] as const;

export function prepareLora(enc: Encoded): PreparedDecoder {
  const p = new Params(enc);
  p.only(['alpha', 'rank', 'scale_rule', 'target', 'transpose']);
  const alphaRaw = p.obj.alpha;
  if (alphaRaw !== null && (typeof alphaRaw !== 'number' || !Number.isFinite(alphaRaw))) {
    throw malformed(enc.scheme, 'alpha', 'params.alpha must be a finite number or null', { param: 'alpha' });
  }
  const rule = p.has('scale_rule') ? p.oneOf('scale_rule', RULES) : undefined;
  if (rule !== undefined && alphaRaw === null) {
    throw malformed(enc.scheme, 'alpha', 'with params.scale_rule, params.alpha must be a number', { param: 'alpha' });
  }
  if (p.has('target') && typeof p.obj.target !== 'string') {
    throw malformed(enc.scheme, 'target', 'params.target must be a tensor name', { param: 'target' });
  }
  const transpose = p.has('transpose') ? p.bool('transpose') : false;
  if (p.shape.length < 2)
    throw malformed(enc.scheme, 'shape', 'the logical shape must be [out, in, …]', { param: 'shape' });
  if (transpose && p.shape.length !== 2)
    throw malformed(enc.scheme, 'shape', 'a transposed delta is a matrix [in, out]', { param: 'shape' });
  onlyParts(enc, ['down', 'up']);
  const down = part(enc, 'down', FLOATS);
  const up = part(enc, 'up', FLOATS);
  const rank = down.shape[0] ?? 0;
  const out = (transpose ? p.shape[1] : p.shape[0]) as number;
  const inner = transpose ? [p.shape[0] as number] : p.shape.slice(1);
  expectShape(enc.scheme, down, [[rank, ...inner]]);
  expectShape(
    enc.scheme,
    up,
    transpose
      ? [[out, rank]]
      : [
          [out, rank],
          [out, rank, 1, 1],
        ],
  );
  if (rank < 1) throw malformed(enc.scheme, 'rank', 'the rank (rows of "down") must be at least 1', { part: 'down' });
  if (p.has('rank') && p.int('rank', { min: 1 }) !== rank) {
    throw malformed(enc.scheme, 'rank', 'params.rank is not the rows of "down"', { param: 'rank', actual: rank });
  }
  const alpha = rule === undefined && (alphaRaw === null || alphaRaw === 0) ? rank : (alphaRaw as number);
  const scale = Math.fround(rule === 'alpha_over_sqrt_rank' ? alpha / Math.sqrt(rank) : alpha / rank);
  if (describingOnly()) return described(p);
  const u = floats(up);
  const dn = floats(down);
  const cols = product(inner);
  const base = prepared(p, () => {});
  if (transpose) {
    // W[i, o] = scale · Σ_k up[o, k] · down[k, i]
    return {
      ...base,
      rows: cols,
      cols: out,
      decodeRows(r0, r1, dst) {
        let o = 0;
        for (let r = r0; r < r1; r++) {
          for (let c = 0; c < out; c++) {
            let acc = 0;
            for (let k = 0; k < rank; k++)
              acc = Math.fround(acc + Math.fround((u[c * rank + k] as number) * (dn[k * cols + r] as number)));
            dst[o++] = acc * scale;
          }
        }
      },
    };
  }
  // the decoder's matrix view: rows = out, cols = product(in, …) — same as Params.matrix only for 2-D
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
