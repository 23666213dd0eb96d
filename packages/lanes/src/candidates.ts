/**
 * Adapters from parsed headers (`@tensorfs/format`) to the engine's neutral candidate shape.
 */
import { type GgufHeader, type SafetensorsHeader, TensorFSError } from '@tensorfs/format';
import type { CandidateHeaders, CandidateTensor } from './bind.js';

function dims(name: string, shape: readonly bigint[]): number[] {
  return shape.map((d) => {
    if (d > BigInt(Number.MAX_SAFE_INTEGER))
      throw new TensorFSError('limit_exceeded', `${name}: a dimension exceeds 2^53 - 1`, {
        details: { rule: 'lanes.candidate', tensor: name },
      });
    return Number(d);
  });
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
