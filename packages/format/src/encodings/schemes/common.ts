import type { Params } from '../params.js';
import type { PreparedDecoder } from '../types.js';

/** Builds a {@link PreparedDecoder} from checked params and a row decoder. */
export function prepared(p: Params, decodeRows: (r0: number, r1: number, out: Float32Array) => void): PreparedDecoder {
  const { rows, cols } = p.matrix();
  return { scheme: p.scheme, shape: p.shape, dtype: p.dtype, rows, cols, decodeRows };
}

/** The float32 constant bitsandbytes multiplies LLM.int8 codes by (`7.874015718698502e-3` = 1/127). */
export const INV127: number = Math.fround(7.874015718698502e-3);
