import { TensorFSError } from '../../errors.js';
import type { Params } from '../params.js';
import type { PreparedDecoder } from '../types.js';

/** Builds a {@link PreparedDecoder} from checked params and a row decoder. */
export function prepared(p: Params, decodeRows: (r0: number, r1: number, out: Float32Array) => void): PreparedDecoder {
  const { rows, cols } = p.matrix();
  return { scheme: p.scheme, shape: p.shape, dtype: p.dtype, rows, cols, decodeRows };
}

/** The float32 constant bitsandbytes multiplies LLM.int8 codes by (`7.874015718698502e-3` = 1/127). */
export const INV127: number = Math.fround(7.874015718698502e-3);

/**
 * What a scheme's `prepare` returns in the structure-only mode (`withoutBytes`): the checked
 * geometry, and a `decodeRows` that must never run (there are no bytes to decode).
 */
export function described(p: Params): PreparedDecoder {
  return prepared(p, () => {
    throw new TensorFSError('internal', 'a structure-only encoding check has no bytes to decode', {
      details: { rule: 'encodings.described' },
    });
  });
}
