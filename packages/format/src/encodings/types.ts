/**
 * The encoding object: how a quantized tensor's stored parts become numbers.
 */
import { TensorFSError } from '../errors.js';

/** A JSON value (what `params` holds; the checkpoint container carries it losslessly). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** The plain dtypes a decoder produces. */
export type DecodedDtype = 'F32' | 'F16' | 'BF16';

/** One stored part of an encoding. */
export interface EncodedPart {
  /** The part's storage dtype (a safetensors wire name such as `U8`, `I32`, `F8_E4M3`). */
  readonly dtype: string;
  /** The part's storage shape, row-major. */
  readonly shape: readonly number[];
  /** The part's bytes, little-endian. Required to decode; an encoding may be described without them. */
  readonly bytes?: Uint8Array;
}

/**
 * An encoded tensor: `{scheme, params, parts}`. `params.shape` is the logical (unpadded) shape,
 * row-major; `params.dtype` the logical dtype that `decode` produces by default.
 */
export interface Encoded {
  readonly scheme: string;
  readonly params: JsonValue;
  readonly parts: Readonly<Record<string, EncodedPart>>;
}

/** A validated encoding ready to decode rows of its logical tensor. */
export interface PreparedDecoder {
  /** The scheme. */
  readonly scheme: string;
  /** The logical shape, row-major. */
  readonly shape: readonly number[];
  /** The logical dtype. */
  readonly dtype: DecodedDtype;
  /** Rows = product of all dims but the last (1 for a scalar). */
  readonly rows: number;
  /** Row length = the last dim (1 for a scalar). */
  readonly cols: number;
  /** Writes rows `[r0, r1)` as float32 into `out` (length ≥ (r1 − r0) · cols). */
  decodeRows(r0: number, r1: number, out: Float32Array): void;
}

/** `malformed` with the rule, and the part and index where known. */
export function malformed(
  scheme: string,
  rule: string,
  message: string,
  facts: Record<string, unknown> = {},
): TensorFSError {
  return new TensorFSError('malformed', `${scheme}: ${message}`, {
    details: { rule: `encodings.${scheme}.${rule}`, scheme, ...facts },
  });
}
