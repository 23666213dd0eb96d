/**
 * Adapters from parsed headers (`@tensorfs/format`) to the engine's neutral candidate shape.
 */
import { type GgufHeader, type SafetensorsHeader, TensorFSError } from '@tensorfs/format';
import type { CandidateHeaders, CandidateTensor } from './bind.js';

/**
 * A header's dimensions as numbers. A dimension past 2^53 − 1 is valid in a safetensors or GGUF
 * file (they allow 2^64 − 1) but past what TensorFS addresses: `limit_exceeded`
 * (`lanes.dimension_limit`), whichever way the header arrived (a file, or a ref's manifest), so one
 * file gets one answer.
 */
function dims(name: string, shape: readonly bigint[]): number[] {
  return shape.map((d) => {
    if (d > BigInt(Number.MAX_SAFE_INTEGER))
      throw new TensorFSError(
        'limit_exceeded',
        `${name}: a dimension (${d}) exceeds 2^53 − 1, the largest TensorFS addresses`,
        {
          details: { rule: 'lanes.dimension_limit', tensor: name, actual: String(d) },
        },
      );
    return Number(d);
  });
}

/**
 * A candidate from tensor views (a stored snapshot's or checkpoint's: names, dtypes and exact
 * shapes), as one component. Dimensions are checked as a file's are.
 */
export function candidateFromTensors(
  tensors: Iterable<{ readonly name: string; readonly dtype: string; readonly shape: readonly bigint[] }>,
  component = 'model',
): CandidateHeaders {
  const out: CandidateTensor[] = [];
  for (const t of tensors) out.push({ name: t.name, dtype: t.dtype, shape: dims(t.name, t.shape) });
  return { [component]: out };
}

/**
 * A candidate from safetensors headers: one header, or every shard of a sharded checkpoint
 * (flattened into one component; a name in two shards is `invalid_argument`).
 */
export function candidateFromSafetensors(
  headers: SafetensorsHeader | readonly SafetensorsHeader[],
  component = 'model',
): CandidateHeaders {
  const list = Array.isArray(headers) ? headers : [headers as SafetensorsHeader];
  const tensors: CandidateTensor[] = [];
  for (const h of list)
    for (const t of h.tensors) tensors.push({ name: t.name, dtype: t.dtype, shape: dims(t.name, t.shape) });
  return { [component]: tensors };
}

/** A candidate from a GGUF header: dtypes are GGML type names (`F32`, `Q8_0`), shapes row-major. */
export function candidateFromGguf(header: GgufHeader, component = 'model'): CandidateHeaders {
  return {
    [component]: header.tensors.map((t) => ({ name: t.name, dtype: t.typeName, shape: dims(t.name, t.shape) })),
  };
}
