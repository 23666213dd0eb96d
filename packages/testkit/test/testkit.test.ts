import { existsSync } from 'node:fs';
import { TensorFSError } from '@tensorfs/format';
import { describe, expect, it } from 'vitest';
import { acceptedCounter, expectCode, expectCodeSync, idOf, noise, sha256Hex, tempDir } from '../src/index.js';

const fail = (code: 'corrupt' | 'io', rule?: string) => {
  throw new TensorFSError(code, 'x', { details: rule ? { rule } : {} });
};

describe('testkit', () => {
  it('expectCode passes only on the named code and rule, from a function or a promise', async () => {
    expect((await expectCode(() => fail('corrupt', 'a.b'), 'corrupt', 'a.b')).details.rule).toBe('a.b');
    await expectCode(Promise.reject(new TensorFSError('io', 'x')), 'io');
    expect(expectCodeSync(() => fail('io'), 'io').code).toBe('io');
    await expect(expectCode(() => fail('io'), 'corrupt')).rejects.toThrow();
    await expect(expectCode(() => fail('corrupt', 'a.b'), 'corrupt', 'a.c')).rejects.toThrow();
    await expect(expectCode(async () => 1, 'corrupt')).rejects.toThrow(/nothing was thrown/);
    await expect(expectCode(Promise.reject(new Error('plain')), 'corrupt')).rejects.toThrow(/TensorFSError/);
    expect(() => expectCodeSync(() => 1, 'io')).toThrow(/nothing was thrown/);
  });

  it('expectCode checks each given detail by deep equality, and only those', async () => {
    const detailed = () => {
      throw new TensorFSError('corrupt', 'x', { details: { rule: 'a.b', offset: 3, shape: [2n, 4n], extra: 1 } });
    };
    expect(expectCodeSync(detailed, 'corrupt', 'a.b', { offset: 3, shape: [2n, 4n] }).details.extra).toBe(1);
    await expectCode(detailed, 'corrupt', undefined, { offset: 3 });
    expect(() => expectCodeSync(detailed, 'corrupt', 'a.b', { offset: 4 })).toThrow(/details.offset/);
    expect(() => expectCodeSync(detailed, 'corrupt', 'a.b', { missing: 0 })).toThrow(/details.missing/);
    await expect(expectCode(detailed, 'corrupt', 'a.b', { shape: [2n, 5n] })).rejects.toThrow(/details.shape/);
  });

  it('digests and deterministic bytes', () => {
    expect(idOf(new TextEncoder().encode('abc'))).toBe(
      'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
    expect(sha256Hex(new Uint8Array([0x61]), new Uint8Array([0x62, 0x63]))).toBe(
      idOf(new Uint8Array([97, 98, 99])).slice(7),
    );
    expect(noise(33, 7)).toEqual(noise(33, 7));
    expect(noise(33, 7)).not.toEqual(noise(33, 8));
  });

  let kept = '';
  it('tempDir makes a folder ...', () => {
    kept = tempDir();
    expect(existsSync(kept)).toBe(true);
  });
  it('... removed after the test', () => {
    expect(existsSync(kept)).toBe(false);
  });

  it('acceptedCounter enforces its floor', () => {
    const c = acceptedCounter();
    c.accept();
    c.accept();
    c.assertFloor(2);
    expect(() => c.assertFloor(3)).toThrow();
  });
});
