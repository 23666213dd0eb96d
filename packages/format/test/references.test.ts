import fc from 'fast-check';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import {
  encodeManifest,
  isTensorFSError,
  type ObjectId,
  objectReferences,
  REFERENCE_KINDS,
  REFERENCE_MAGIC_LENGTH,
  referenceKindOf,
  TFM1_MAGIC,
} from '../src/index.js';

const id = (c: string): ObjectId => `sha256:${c.repeat(64)}`;

describe('objectReferences', () => {
  it('lists the records a TFM1 manifest names, with their lengths', () => {
    const bytes = encodeManifest({
      entries: [
        {
          kind: 'file',
          path: 'a',
          mode: 0o644,
          size: 2,
          profile: 'blob-v1',
          records: [{ digest: id('1'), length: 2 }],
        },
        {
          kind: 'file',
          path: 'b',
          mode: 0o644,
          size: 3,
          profile: 'blob-v1',
          records: [{ digest: id('2'), length: 3 }],
        },
        { kind: 'symlink', path: 'l', target: 'a' },
      ],
    });
    expect(objectReferences(bytes)).toEqual({
      kind: 'manifest',
      children: [
        { id: id('1'), length: 2 },
        { id: id('2'), length: 3 },
      ],
    });
    expect(referenceKindOf(bytes.subarray(0, REFERENCE_MAGIC_LENGTH))?.name).toBe('manifest');
  });

  it('treats anything without a known magic as a leaf', () => {
    expect(objectReferences(new Uint8Array())).toBeNull();
    expect(objectReferences(new TextEncoder().encode('TFM'))).toBeNull();
    expect(objectReferences(new TextEncoder().encode('{"a":1}'))).toBeNull();
  });

  it('refuses bytes that open with a known magic but do not decode (malformed, never a leaf)', () => {
    expectCodeSync(() => objectReferences(Uint8Array.from([...TFM1_MAGIC, 0xff])), 'malformed');
  });

  it('has a table of non-empty magics, none a prefix of another', () => {
    for (const a of REFERENCE_KINDS) {
      expect(a.magic.length).toBeGreaterThan(0);
      for (const b of REFERENCE_KINDS) {
        if (a !== b) expect(referenceKindOf(b.magic)).toBe(b);
      }
    }
  });

  it('any bytes give null, a list, or a TensorFSError (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.boolean(), (tail, magic) => {
        const bytes = magic ? Uint8Array.from([...TFM1_MAGIC, ...tail]) : tail;
        try {
          const r = objectReferences(bytes);
          expect(r === null || Array.isArray(r.children)).toBe(true);
        } catch (error) {
          expect(isTensorFSError(error)).toBe(true);
        }
      }),
    );
  });
});
