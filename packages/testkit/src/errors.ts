import { type ErrorCode, isTensorFSError, type TensorFSError } from '@tensorfs/format';
import { expect } from 'vitest';

function check(
  error: unknown,
  code: ErrorCode,
  rule: string | undefined,
  details: Record<string, unknown>,
): TensorFSError {
  if (!isTensorFSError(error)) {
    throw new Error(`expected a TensorFSError '${code}', got ${error instanceof Error ? error.stack : String(error)}`);
  }
  expect(error.code, `TensorFSError code (message: ${error.message})`).toBe(code);
  if (rule !== undefined) expect(error.details.rule, `details.rule of '${code}' (${error.message})`).toBe(rule);
  for (const [key, value] of Object.entries(details)) expect(error.details[key], `details.${key}`).toEqual(value);
  return error;
}

/**
 * Asserts that a function (sync or async) or a promise fails with a TensorFSError of `code`
 * (and, when given, `details.rule === rule` and each entry of `details` deep-equal to the error's);
 * returns the error for further checks. Anything
 * else thrown, or nothing thrown, fails the test.
 */
export async function expectCode(
  fnOrPromise: (() => unknown) | PromiseLike<unknown>,
  code: ErrorCode,
  rule?: string,
  details: Record<string, unknown> = {},
): Promise<TensorFSError> {
  try {
    if (typeof fnOrPromise === 'function') await fnOrPromise();
    else await fnOrPromise;
  } catch (error) {
    return check(error, code, rule, details);
  }
  throw new Error(`expected a TensorFSError '${code}', but nothing was thrown`);
}

/** {@link expectCode} for a synchronous function: no await needed. */
export function expectCodeSync(
  fn: () => unknown,
  code: ErrorCode,
  rule?: string,
  details: Record<string, unknown> = {},
): TensorFSError {
  try {
    fn();
  } catch (error) {
    return check(error, code, rule, details);
  }
  throw new Error(`expected a TensorFSError '${code}', but nothing was thrown`);
}
