import {
  compareBytes,
  comparePaths,
  decodeManifest,
  encodeManifest,
  type ManifestEntry,
  sortManifestEntries,
} from '@tensorfs/format';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const utf8 = new TextEncoder();
const byteOrder = (a: string, b: string): number => compareBytes(utf8.encode(a), utf8.encode(b));
const sign = (n: number): number => Math.sign(n);

/** Characters from the places where UTF-16 and UTF-8 orders part: astral, private use, combining, specials. */
const tricky = fc.oneof(
  fc.constantFrom(
    'a',
    'z',
    '.',
    '-',
    '_',
    'é',
    'e\u0301',
    '\u00e9',
    '\uE000',
    '\uF8FF',
    '\uFFFD',
    '\uFF21',
    '😀',
    '𝄞',
    '\u{10FFFF}',
    '\u0301',
    '\u2028',
    'ß',
    '한',
    '\u1100\u1161',
  ),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 2 }),
  fc
    .integer({ min: 0x20, max: 0x10ffff })
    .filter((c) => c !== 0x7f && c !== 0x5c && c !== 0x2f && (c < 0xd800 || c > 0xdfff))
    .map((c) => String.fromCodePoint(c)),
);
/** A valid path segment (no `/`, no controls, no backslash, not `.`/`..`). */
const segment = fc
  .array(tricky, { minLength: 1, maxLength: 6 })
  .map((parts) => parts.join('').replace(/[\u0000-\u001f\u007f\\/]/g, 'x'))
  .filter((s) => s !== '.' && s !== '..' && utf8.encode(s).length <= 255 && !/\p{Cs}/u.test(s));
const path = fc.array(segment, { minLength: 1, maxLength: 3 }).map((s) => s.join('/'));

describe('comparePaths is UTF-8 byte order', () => {
  it('agrees with comparing the UTF-8 bytes, for any pair of Unicode strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        expect(sign(comparePaths(a, b))).toBe(sign(byteOrder(a, b)));
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(path, path, (a, b) => {
        expect(sign(comparePaths(a, b))).toBe(sign(byteOrder(a, b)));
      }),
      { numRuns: 2000 },
    );
  });

  it('orders the cases code units get wrong, and keeps NFC and NFD distinct', () => {
    expect(comparePaths('\uE000', '😀')).toBeLessThan(0);
    expect('\uE000' < '😀').toBe(false); // what a plain sort does
    expect(comparePaths('\uFFFD', '𝄞')).toBeLessThan(0);
    expect(comparePaths('a', 'ab')).toBeLessThan(0);
    expect(comparePaths('\u00e9', 'e\u0301')).toBeGreaterThan(0); // C3 A9 > 65 CC 81
    expect(comparePaths('x', 'x')).toBe(0);
  });

  it('sorts any set of names into an order encodeManifest accepts, and manifests round-trip', () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.uniqueArray(path, { minLength: 1, maxLength: 12 }), (paths) => {
        // A path below another entry is refused by TFM1: keep only leaves.
        const leaves = paths.filter((p) => !paths.some((q) => q !== p && q.startsWith(`${p}/`)));
        const entries: ManifestEntry[] = leaves.map((p) => ({
          path: p,
          kind: 'file',
          mode: 0o644,
          size: 0,
          profile: 'blob-v1',
          records: [],
        }));
        const sorted = sortManifestEntries(entries);
        const bytes = [...sorted].map((e) => utf8.encode(e.path));
        for (let i = 1; i < bytes.length; i++) expect(compareBytes(bytes[i - 1]!, bytes[i]!)).toBeLessThan(0);
        const encoded = encodeManifest({ entries: sorted });
        expect(decodeManifest(encoded).entries.map((e) => e.path)).toEqual(sorted.map((e) => e.path));
        accepted++;
      }),
      { numRuns: 300 },
    );
    expect(accepted).toBe(300);
  });
});
