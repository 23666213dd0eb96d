import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, HTTP_STATUS, TensorFSError, isTensorFSError, toTensorFSError } from '../src/index.js';

describe('TensorFSError', () => {
  it('has exactly the twelve families', () => {
    expect(ERROR_CODES).toEqual([
      'invalid_argument',
      'malformed',
      'corrupt',
      'unsupported',
      'not_found',
      'conflict',
      'denied',
      'unavailable',
      'limit_exceeded',
      'io',
      'cancelled',
      'internal',
    ]);
  });
  it('gives every family one HTTP status (the table of spec/v1/remote.md)', () => {
    expect(Object.keys(HTTP_STATUS).sort()).toEqual([...ERROR_CODES].sort());
    expect(ERROR_CODES.map((c) => HTTP_STATUS[c])).toEqual([
      400, 400, 422, 501, 404, 409, 403, 503, 413, 500, 503, 500,
    ]);
    expect(Object.isFrozen(HTTP_STATUS)).toBe(true);
  });
  it('carries code, details and cause and serialises bigints', () => {
    const cause = new Error('inner');
    const e = new TensorFSError('malformed', 'bad header', { details: { offset: 2n ** 64n - 1n, rule: 'R3' }, cause });
    expect(e.code).toBe('malformed');
    expect(e.cause).toBe(cause);
    expect(e.toJSON()).toEqual({
      code: 'malformed',
      message: 'bad header',
      details: { offset: '18446744073709551615', rule: 'R3' },
    });
    expect(Object.isFrozen(e.details)).toBe(true);
  });
  it('rejects an unknown code with invalid_argument, not a TypeError', () => {
    expectCodeSync(() => new TensorFSError('nope' as never, 'x'), 'invalid_argument', 'errors.code', {
      actual: 'nope',
    });
    expectCodeSync(() => new TensorFSError(null as never, 'x'), 'invalid_argument', 'errors.code', {
      actual: 'object',
    });
    expectCodeSync(() => toTensorFSError(new Error('x'), 'bogus' as never), 'invalid_argument', 'errors.code');
  });
  it('is recognised by marker, not instanceof (a second copy agrees)', () => {
    const foreign = Object.assign(new Error('x'), { code: 'io' });
    Object.defineProperty(foreign, Symbol.for('@tensorfs/error'), { value: true });
    expect(isTensorFSError(foreign)).toBe(true);
    expect(isTensorFSError(Object.assign(new Error('x'), { code: 'io' }))).toBe(false);
    expect(isTensorFSError(null)).toBe(false);
    expect(isTensorFSError(new TensorFSError('io', 'x'))).toBe(true);
  });
  it('wraps foreign errors and aborts', () => {
    expect(toTensorFSError(new Error('boom')).code).toBe('internal');
    const abort = Object.assign(new Error('aborted'), { name: 'AbortError' });
    expect(toTensorFSError(abort).code).toBe('cancelled');
    const e = new TensorFSError('conflict', 'c');
    expect(toTensorFSError(e)).toBe(e);
  });
});
