/**
 * `rotation`: an inner encoding whose values were stored rotated by a block-diagonal regular
 * Hadamard matrix along the last axis (ConvRot). `W[r, gG:(g+1)G] = inner[r, gG:(g+1)G] · H_Gᵀ` with
 * `H_G = (H4 ⊗ … ⊗ H4) / √G`, `H4 = [[1,1,1,−1],[1,1,−1,1],[1,−1,1,1],[−1,1,1,1]]` (symmetric, orthogonal).
 */
import { Params } from '../params.js';
import type { Encoded, JsonValue, PreparedDecoder } from '../types.js';
import { malformed } from '../types.js';
import { prepared } from './common.js';

/** In-place `x ← H_G x` on `x[o .. o+G)` (G a power of 4), float32 at every step. */
export function hadamardH4(x: Float32Array, o: number, g: number): void {
  for (let stride = 1; stride < g; stride *= 4) {
    for (let base = 0; base < g; base += stride * 4) {
      for (let t = 0; t < stride; t++) {
        const i0 = o + base + t;
        const a = x[i0] as number;
        const b = x[i0 + stride] as number;
        const c = x[i0 + 2 * stride] as number;
        const d = x[i0 + 3 * stride] as number;
        const ab = Math.fround(a + b);
        const cmd = Math.fround(c - d);
        const amb = Math.fround(a - b);
        const cpd = Math.fround(c + d);
        x[i0] = ab + cmd;
        x[i0 + stride] = ab - cmd;
        x[i0 + 2 * stride] = amb + cpd;
        x[i0 + 3 * stride] = cpd - amb;
      }
    }
  }
  const inv = 1 / Math.sqrt(g);
  for (let i = 0; i < g; i++) x[o + i] = (x[o + i] as number) * inv;
}

export function prepareRotation(enc: Encoded, prepareInner: (inner: Encoded) => PreparedDecoder): PreparedDecoder {
  const p = new Params(enc);
  p.only(['kind', 'group_size', 'inner']);
  p.oneOf('kind', ['regular_hadamard_h4'] as const);
  const g = p.int('group_size', { min: 4, max: 1 << 20 });
  let pow = g;
  while (pow % 4 === 0) pow /= 4;
  if (pow !== 1)
    throw malformed(enc.scheme, 'group_size', 'params.group_size must be a power of 4', {
      param: 'group_size',
      actual: g,
    });
  const inner = p.obj.inner as Record<string, JsonValue> | undefined;
  if (!inner || typeof inner !== 'object' || Array.isArray(inner) || typeof inner.scheme !== 'string') {
    throw malformed(enc.scheme, 'inner', 'params.inner must be {scheme, params}', { param: 'inner' });
  }
  if (inner.scheme === 'rotation' || inner.scheme === 'lora') {
    throw malformed(enc.scheme, 'inner', `a rotation cannot wrap ${inner.scheme}`, { param: 'inner' });
  }
  const dec = prepareInner({ scheme: inner.scheme, params: inner.params ?? null, parts: enc.parts });
  if (dec.shape.length !== p.shape.length || dec.shape.some((d, i) => d !== p.shape[i])) {
    throw malformed(enc.scheme, 'inner_shape', 'the inner encoding has another logical shape', { param: 'inner' });
  }
  const { cols } = p.matrix();
  if (cols % g !== 0) {
    throw malformed(enc.scheme, 'block_divides', `the row length ${cols} is not a multiple of the group size ${g}`, {
      param: 'group_size',
    });
  }
  return prepared(p, (r0, r1, out) => {
    dec.decodeRows(r0, r1, out);
    const n = (r1 - r0) * cols;
    for (let o = 0; o < n; o += g) hadamardH4(out, o, g);
  });
}
