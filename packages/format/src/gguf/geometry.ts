/**
 * Tensor geometry: element count, byte length and alignment padding of a ggml tensor.
 */
import { describe, requireArray, requireBigint, requireNumber, requireOptions } from '../args.js';
import { type ErrorDetails, TensorFSError } from '../errors.js';
import { ggufError } from './_cursor.js';
import { type GgmlTypeInfo, ggmlType } from './ggml-types.js';

/** Alignment of the data section and of every tensor when `general.alignment` is absent. */
export const GGUF_DEFAULT_ALIGNMENT = 32;
/** Most dimensions a tensor may have (`GGML_MAX_DIMS`). */
export const GGML_MAX_DIMS = 4;
/** `GGML_MAX_NAME`: a tensor name takes at most this many bytes including the C NUL, so 63 in the file. */
export const GGML_MAX_NAME = 64;

const INT64_MAX = (1n << 63n) - 1n;

/** The geometry of one tensor. */
export interface GgmlTensorGeometry {
  /** The type's table entry. */
  typeInfo: GgmlTypeInfo;
  /** Product of the dims (1 for zero dims). */
  elementCount: bigint;
  /** Exact data bytes: `elementCount / blockSize * typeSize`. */
  byteLength: bigint;
}

/** `x` rounded up to a multiple of `alignment` (a power of two), as ggml's `GGML_PAD`. */
export function ggmlPad(x: bigint, alignment: number): bigint {
  if (typeof x !== 'bigint' || !Number.isSafeInteger(alignment) || alignment < 1) {
    throw new TensorFSError('invalid_argument', 'ggmlPad takes a bigint and an alignment (an integer ≥ 1)', {
      details: { rule: 'gguf.argument', actual: describe(typeof x !== 'bigint' ? x : alignment) },
    });
  }
  const a = BigInt(alignment);
  return ((x + a - 1n) / a) * a;
}

/**
 * Validates a tensor's type and dims (ggml order) and computes its geometry. Rules, in order: at most 4
 * dims; every dim in `[0, 2^63 − 1]`; the element count at most `2^63 − 1`; a known type id that ggml
 * has not removed; the first dim a multiple of the block size.
 *
 * @param details merged into any error's details (e.g. `{ tensor, offset }`)
 * @throws {TensorFSError} `malformed` for dims, counts and block misalignment; `unsupported` for
 *   unknown or removed type ids
 */
export function ggmlTensorGeometry(
  type: number,
  dims: readonly bigint[],
  details: ErrorDetails = {},
): GgmlTensorGeometry {
  requireNumber(type, 'type', 'gguf');
  requireArray(dims, 'dims', 'gguf');
  requireOptions(details, 'details', 'gguf');
  if (dims.length > GGML_MAX_DIMS) {
    throw ggufError('malformed', 'tensor_dims_count', `a tensor has more than ${GGML_MAX_DIMS} dimensions`, {
      ...details,
      limit: GGML_MAX_DIMS,
      actual: dims.length,
    });
  }
  let elementCount = 1n;
  for (let i = 0; i < dims.length; i++) {
    const d = dims[i]!;
    requireBigint(d, 'dims[]', 'gguf');
    if (d < 0n || d > INT64_MAX) {
      throw ggufError('malformed', 'tensor_dim_range', 'a tensor dimension is outside [0, 2^63-1]', {
        ...details,
        dim: i,
        actual: d,
      });
    }
    elementCount *= d;
  }
  if (elementCount > INT64_MAX) {
    throw ggufError('malformed', 'tensor_element_count', 'the element count of a tensor overflows int64', {
      ...details,
      actual: elementCount,
    });
  }
  const typeInfo = ggmlType(type);
  if (typeInfo === undefined || typeInfo.removed) {
    throw ggufError(
      'unsupported',
      typeInfo ? 'tensor_type_removed' : 'tensor_type_unknown',
      typeInfo ? `tensor type ${typeInfo.name} (${type}) was removed from ggml` : `unknown ggml tensor type ${type}`,
      { ...details, type },
    );
  }
  const ne0 = dims[0] ?? 1n;
  const block = BigInt(typeInfo.blockSize);
  if (ne0 % block !== 0n) {
    throw ggufError('malformed', 'tensor_block_alignment', `dims[0] is not a multiple of the ${typeInfo.name} block`, {
      ...details,
      blockSize: typeInfo.blockSize,
      actual: ne0,
    });
  }
  return { typeInfo, elementCount, byteLength: (elementCount / block) * BigInt(typeInfo.typeSize) };
}
