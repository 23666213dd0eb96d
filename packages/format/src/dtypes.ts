/**
 * The safetensors dtype table: the 22 wire names of huggingface/safetensors 0.8 (`enum Dtype`),
 * their bit widths and their ordinals. The ordinal is the declaration order of the reference enum
 * ("increasing alignment order"); the reference serializer sorts tensors by it, descending.
 *
 * This is the one table every TensorFS layer uses for safetensors dtypes.
 */
import { requireArray } from './args.js';
import { TensorFSError } from './errors.js';

/** A safetensors dtype wire name (matched case-sensitively). */
export type SafetensorsDtype =
  | 'BOOL'
  | 'F4'
  | 'F6_E2M3'
  | 'F6_E3M2'
  | 'U8'
  | 'I8'
  | 'F8_E5M2'
  | 'F8_E4M3'
  | 'F8_E8M0'
  | 'F8_E4M3FNUZ'
  | 'F8_E5M2FNUZ'
  | 'I16'
  | 'U16'
  | 'F16'
  | 'BF16'
  | 'I32'
  | 'U32'
  | 'F32'
  | 'C64'
  | 'F64'
  | 'I64'
  | 'U64';

/** One row of the dtype table. */
export interface DtypeInfo {
  /** The wire name. */
  readonly name: SafetensorsDtype;
  /** Bits per element (4 for F4, 6 for the F6 types, 64 for C64). */
  readonly bits: number;
  /** Position in the reference enum (0 = BOOL … 21 = U64). */
  readonly ordinal: number;
}

const ROWS: ReadonlyArray<readonly [SafetensorsDtype, number]> = [
  ['BOOL', 8],
  ['F4', 4],
  ['F6_E2M3', 6],
  ['F6_E3M2', 6],
  ['U8', 8],
  ['I8', 8],
  ['F8_E5M2', 8],
  ['F8_E4M3', 8],
  ['F8_E8M0', 8],
  ['F8_E4M3FNUZ', 8],
  ['F8_E5M2FNUZ', 8],
  ['I16', 16],
  ['U16', 16],
  ['F16', 16],
  ['BF16', 16],
  ['I32', 32],
  ['U32', 32],
  ['F32', 32],
  ['C64', 64],
  ['F64', 64],
  ['I64', 64],
  ['U64', 64],
];

/** All 22 safetensors dtypes, in ordinal order. */
export const SAFETENSORS_DTYPES: readonly DtypeInfo[] = /* @__PURE__ */ Object.freeze(
  ROWS.map(([name, bits], ordinal) => Object.freeze({ name, bits, ordinal })),
);

const BY_NAME: ReadonlyMap<string, DtypeInfo> = /* @__PURE__ */ new Map(SAFETENSORS_DTYPES.map((d) => [d.name, d]));

/**
 * The table row for a wire name, or `undefined` for anything else (names are case-sensitive:
 * `"f32"`, `"FLOAT32"` and `"C128"` are not dtypes).
 */
export function safetensorsDtype(name: string): DtypeInfo | undefined {
  return BY_NAME.get(name);
}

/**
 * An unsigned integer as parsed from a header: a `number` when it is at most 2^53 − 1, else a
 * `bigint`. Every producer keeps that invariant, so two values are equal exactly when `===`.
 * @internal
 */
export type Int = number | bigint;

/** 2^64 − 1: the largest value of a Rust `usize` on the 64-bit platforms the reference runs on. */
export const U64_MAX = 0xffff_ffff_ffff_ffffn;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** `value` in the {@link Int} representation. @internal */
export function toInt(value: bigint): Int {
  return value <= MAX_SAFE ? Number(value) : value;
}

/** Exact product in the {@link Int} representation. @internal */
export function mulInt(a: Int, b: Int): Int {
  if (typeof a === 'number' && typeof b === 'number') {
    const r = a * b;
    // A true product above 2^53 − 1 rounds to at least 2^53, so this test is exact.
    if (r <= Number.MAX_SAFE_INTEGER) return r;
  }
  return toInt(BigInt(a) * BigInt(b));
}

/** Exact sum in the {@link Int} representation. @internal */
export function addInt(a: Int, b: Int): Int {
  if (typeof a === 'number' && typeof b === 'number') {
    const r = a + b;
    if (r <= Number.MAX_SAFE_INTEGER) return r;
  }
  return toInt(BigInt(a) + BigInt(b));
}

/** Exact difference `a − b` (callers ensure `a >= b`) in the {@link Int} representation. @internal */
export function subInt(a: Int, b: Int): Int {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return toInt(BigInt(a) - BigInt(b));
}

/**
 * The safetensors rule a shape/dtype pair breaks when its byte length is computed:
 * R13 element count above 2^64 − 1, R14 bit count above 2^64 − 1, R15 not a whole number of bytes.
 * @internal
 */
export type ByteLengthRule = 'R13' | 'R14' | 'R15';

/**
 * Element count of a shape, or R13 when it exceeds 2^64 − 1. Any zero dimension makes the count
 * 0 before any product is formed (so `[2^64−1, 2, 0]` has 0 elements; the reference's left fold
 * would overflow on it). An empty shape is a scalar (1 element). Only the first `length`
 * dimensions are read.
 * @internal
 */
export function elementCount(shape: readonly Int[], length = shape.length): Int | 'R13' {
  for (let i = 0; i < length; i++) if (shape[i] === 0) return 0;
  let count: Int = 1;
  for (let i = 0; i < length; i++) {
    count = mulInt(count, shape[i]!);
    if (typeof count === 'bigint' && count > U64_MAX) return 'R13';
  }
  return count;
}

/**
 * Byte length of `count` elements of `bits` each, or the rule it breaks (R13 passed through,
 * R14 bit count above 2^64 − 1, R15 not a whole number of bytes).
 * @internal
 */
export function byteLengthOfCount(count: Int | 'R13', bits: number): Int | ByteLengthRule {
  if (count === 'R13') return count;
  const nbits = mulInt(count, bits);
  if (typeof nbits === 'bigint') {
    if (nbits > U64_MAX) return 'R14';
    return nbits % 8n === 0n ? toInt(nbits / 8n) : 'R15';
  }
  return nbits % 8 === 0 ? nbits / 8 : 'R15';
}

/** Byte length of a tensor of `shape` with `bits`-bit elements, or the rule it breaks. @internal */
export function payloadByteLength(shape: readonly Int[], bits: number): Int | ByteLengthRule {
  return byteLengthOfCount(elementCount(shape), bits);
}

/**
 * Exact byte length of a safetensors tensor of `dtype` and `shape` (`end − begin` in its header).
 * @throws {TensorFSError} `invalid_argument` for an unknown dtype, a dimension that is not an
 *   integer in 0…2^64−1, an element or bit count above 2^64−1 (`rule` R13/R14), or a sub-byte
 *   tensor that does not fill whole bytes (R15).
 */
export function safetensorsByteLength(dtype: string, shape: readonly (bigint | number)[]): bigint {
  requireArray(shape, 'shape', 'safetensors');
  const info = safetensorsDtype(dtype);
  if (info === undefined) {
    throw new TensorFSError('invalid_argument', 'unknown safetensors dtype', {
      details: { rule: 'safetensors.R7', dtype },
    });
  }
  const result = payloadByteLength(shape.map(dimensionToInt), info.bits);
  if (typeof result === 'string') {
    throw new TensorFSError('invalid_argument', BYTE_LENGTH_MESSAGES[result], {
      details: { rule: `safetensors.${result}`, dtype },
    });
  }
  return BigInt(result);
}

/** Messages for the byte-length rules. @internal */
export const BYTE_LENGTH_MESSAGES: Readonly<Record<ByteLengthRule, string>> = {
  R13: 'element count overflows 64 bits',
  R14: 'bit count overflows 64 bits',
  R15: 'sub-byte tensor does not fill a whole number of bytes',
};

/**
 * A caller-supplied dimension or offset as an {@link Int}.
 * @throws {TensorFSError} `invalid_argument` unless it is an integer in 0…2^64−1.
 * @internal
 */
export function dimensionToInt(value: bigint | number): Int {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && value >= 0) return value;
  } else if (typeof value === 'bigint' && value >= 0n && value <= U64_MAX) {
    return toInt(value);
  }
  throw new TensorFSError('invalid_argument', 'a dimension must be an integer in 0…2^64−1', {
    details: {
      rule: 'safetensors.R8',
      actual: typeof value === 'number' || typeof value === 'bigint' ? value : typeof value,
    },
  });
}
