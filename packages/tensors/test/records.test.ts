import { isTensorFSError, type ObjectId, type RecordRef } from '@tensorfs/format';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RecordLayout } from '../src/records.js';
import { joinPath } from '../src/snapshot.js';

const id = (n: number): ObjectId => `sha256:${n.toString(16).padStart(64, '0')}`;
const records = (lengths: number[]): RecordRef[] => lengths.map((length, i) => ({ digest: id(i), length }));

describe('RecordLayout', () => {
  const layout = new RecordLayout(records([10, 4, 64, 2]));

  it('knows where each record starts and the file size', () => {
    expect([0, 1, 2, 3, 4].map((i) => layout.start(i))).toEqual([0, 10, 14, 78, 80]);
    expect(layout.size).toBe(80);
  });

  it('finds the records that cover a range exactly', () => {
    expect(layout.span(0, 10)).toEqual({ first: 0, end: 1 });
    expect(layout.span(10, 68)).toEqual({ first: 1, end: 3 });
    expect(layout.span(14, 66)).toEqual({ first: 2, end: 4 });
    expect(layout.span(0, 80)).toEqual({ first: 0, end: 4 });
  });

  it('refuses ranges that do not start or end on a boundary, or run past the end', () => {
    expect(layout.span(1, 9)).toBeNull();
    expect(layout.span(10, 5)).toBeNull();
    expect(layout.span(78, 4)).toBeNull();
    expect(layout.span(80, 1)).toBeNull();
  });

  it('gives an empty span for an empty range anywhere', () => {
    expect(layout.span(5, 0)).toEqual({ first: 0, end: 0 });
  });

  it('agrees with a linear scan for any layout and range (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 30 }),
        fc.nat(1600),
        fc.integer({ min: 1, max: 400 }),
        (lengths, offset, length) => {
          const l = new RecordLayout(records(lengths));
          const starts = [0];
          for (const n of lengths) starts.push(starts.at(-1)! + n);
          const first = starts.indexOf(offset);
          const end = starts.indexOf(offset + length);
          const expected = first >= 0 && end > first && first < lengths.length ? { first, end } : null;
          expect(l.span(offset, length)).toEqual(expected);
        },
      ),
    );
  });

  it('sums record lengths and refuses a bad one as corrupt', () => {
    expect(new RecordLayout(records([1, 2, 3])).size).toBe(6);
    expect(new RecordLayout([]).size).toBe(0);
    for (const bad of [-1, 1.5, Number.NaN]) {
      try {
        new RecordLayout(records([1, bad]));
        expect.unreachable();
      } catch (error) {
        expect(isTensorFSError(error) && error.code).toBe('corrupt');
      }
    }
  });
});

describe('joinPath', () => {
  it('resolves relative paths lexically inside the snapshot', () => {
    expect(joinPath('a/b', 'c.safetensors')).toBe('a/b/c.safetensors');
    expect(joinPath('', 'c')).toBe('c');
    expect(joinPath('a/b', '../c')).toBe('a/c');
    expect(joinPath('a/b', './x/./y')).toBe('a/b/x/y');
  });

  it('refuses absolute paths, backslashes and climbing above the root', () => {
    for (const [dir, rel] of [
      ['a', '/etc/passwd'],
      ['a', '..\\x'],
      ['a', '../../x'],
      ['', '..'],
    ] as const) {
      try {
        joinPath(dir, rel);
        expect.unreachable();
      } catch (error) {
        expect(isTensorFSError(error) && error.code).toBe('invalid_argument');
      }
    }
  });
});
