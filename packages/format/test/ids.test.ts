import { describe, expect, it } from 'vitest';
import { bytesSource, digestFromObjectId, isObjectId, objectIdFromDigest, parseObjectId, toHex } from '../src/index.js';

describe('object ids', () => {
  it('round-trips a digest', () => {
    const d = new Uint8Array(32).map((_, i) => i * 7);
    const id = objectIdFromDigest(d);
    expect(id).toBe(`sha256:${toHex(d)}`);
    expect(digestFromObjectId(id)).toEqual(d);
  });
  it('rejects uppercase, short and foreign ids', () => {
    for (const bad of ['sha256:' + 'A'.repeat(64), 'sha256:' + 'a'.repeat(63), 'md5:' + 'a'.repeat(64), '']) {
      expect(isObjectId(bad)).toBe(false);
      expect(() => parseObjectId(bad)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    }
  });
});

describe('bytesSource', () => {
  it('reads subarrays and refuses out-of-range reads', async () => {
    const s = bytesSource(new Uint8Array([1, 2, 3, 4]));
    expect(await s.read(1, 2)).toEqual(new Uint8Array([2, 3]));
    await expect(s.read(3, 2)).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(s.read(-1, 1)).rejects.toMatchObject({ code: 'invalid_argument' });
  });
});

describe('jsonInteger', () => {
  it('keeps exact numbers and turns larger magnitudes into decimal strings', async () => {
    const { jsonInteger } = await import('../src/index.js');
    expect(jsonInteger(9007199254740991n)).toBe(9007199254740991);
    expect(jsonInteger(9007199254740992n)).toBe('9007199254740992');
    expect(jsonInteger(-9007199254740992n)).toBe('-9007199254740992');
    expect(jsonInteger(18446744073709551615n)).toBe('18446744073709551615');
    expect(jsonInteger(7)).toBe(7);
  });
});

describe('digest conversions', () => {
  it('agree with toHex/fromHex on random digests and reuse no state between calls', async () => {
    const { digestInto, fromHex } = await import('../src/index.js');
    for (let n = 0; n < 200; n++) {
      const d = crypto.getRandomValues(new Uint8Array(32));
      const id = objectIdFromDigest(d);
      expect(id).toBe(`sha256:${toHex(d)}`);
      expect(digestFromObjectId(id)).toEqual(fromHex(id.slice(7)));
      const out = new Uint8Array(40).fill(0xee);
      digestInto(id, out);
      expect(out.subarray(0, 32)).toEqual(d);
      expect(out[32]).toBe(0xee);
    }
    expect(() => objectIdFromDigest(new Uint8Array(31))).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });
});
