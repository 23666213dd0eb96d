/** The largest integer a JSON number carries exactly in every common reader (2^53 − 1). */
const MAX_EXACT = 9007199254740991n;

/**
 * The JSON form of an integer that may exceed 2^53 − 1: a number while it is exact in every
 * JSON reader (|v| ≤ 2^53 − 1), else its decimal string.
 */
export function jsonInteger(value: bigint | number): number | string {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : BigInt(value).toString();
  return value <= MAX_EXACT && value >= -MAX_EXACT ? Number(value) : value.toString();
}
