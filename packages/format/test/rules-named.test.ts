/**
 * Throws that named no rule before issue 23 item 8 now do (scripts/error-rules.mjs fails on any
 * that does not): a sample of them, with their exact code and rule.
 */
import {
  fromHex,
  parseGgufHeader,
  parseSafetensorsHeader,
  requireCallOptions,
  throwIfAborted,
  toTensorFSError,
  writeSafetensors,
} from '@tensorfs/format';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

describe('rules of throws that named none', () => {
  it('errors: a foreign throw wrapped, an abort', () => {
    expect(toTensorFSError(new Error('boom')).details).toEqual({ rule: 'errors.foreign' });
    expect(toTensorFSError(Object.assign(new Error('x'), { name: 'AbortError' })).details).toEqual({
      rule: 'errors.cancelled',
    });
    const c = new AbortController();
    c.abort();
    expect(expectCodeSync(() => throwIfAborted(c.signal), 'cancelled').details.rule).toBe('errors.cancelled');
  });

  it('safetensors: bytes that stop before the header ends, a fileSize below them, a tensors list that is not one', () => {
    const bytes = new Uint8Array([16, 0, 0, 0, 0, 0, 0, 0, 0x7b]);
    const short = expectCodeSync(() => parseSafetensorsHeader(bytes, { fileSize: 100 }), 'invalid_argument');
    expect(short.details).toEqual({ rule: 'safetensors.need_more_bytes', expected: 24, actual: 9 });
    const small = expectCodeSync(() => parseSafetensorsHeader(bytes, { fileSize: 8 }), 'invalid_argument');
    expect(small.details.rule).toBe('safetensors.file_size');
    const notArray = expectCodeSync(() => writeSafetensors(null as never), 'invalid_argument');
    expect(notArray.details).toEqual({ rule: 'safetensors.argument', argument: 'tensors' });
  });

  it('gguf and ids: a fileSize below the bytes, hex that is not lowercase', () => {
    const g = expectCodeSync(() => parseGgufHeader(new Uint8Array(32), { fileSize: 8 }), 'invalid_argument');
    expect(g.details.rule).toBe('gguf.file_size');
    expect(expectCodeSync(() => fromHex('AB'), 'malformed').details.rule).toBe('ids.hex');
  });

  it('call options: one check of signal, onProgress and lease for every area', () => {
    expect(requireCallOptions(undefined, 'options', 'tensors')).toBeUndefined();
    const lease = expectCodeSync(() => requireCallOptions({ lease: 7 }, 'options', 'store'), 'invalid_argument');
    expect(lease.details).toEqual({ rule: 'store.argument', argument: 'options.lease', actual: 7 });
    const signal = expectCodeSync(() => requireCallOptions({ signal: {} }, 'o', 'tensors'), 'invalid_argument');
    expect(signal.details).toEqual({ rule: 'tensors.argument', argument: 'o.signal', actual: 'object' });
  });
});
