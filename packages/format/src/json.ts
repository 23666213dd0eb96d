import { describe } from './args.js';
import { TensorFSError } from './errors.js';
/** The largest integer a JSON number carries exactly in every common reader (2^53 − 1). */
const MAX_EXACT = 9007199254740991n;

/**
 * The JSON form of an integer that may exceed 2^53 − 1: a number while it is exact in every
 * JSON reader (|v| ≤ 2^53 − 1), else its decimal string.
 */
export function jsonInteger(value: bigint | number): number | string {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) return value;
    if (Number.isInteger(value)) return BigInt(value).toString();
  }
  if (typeof value !== 'bigint') {
    throw new TensorFSError('invalid_argument', 'jsonInteger takes an integer (a bigint or an integral number)', {
      details: { rule: 'json.argument', actual: describe(value) },
    });
  }
  return value <= MAX_EXACT && value >= -MAX_EXACT ? Number(value) : value.toString();
}
