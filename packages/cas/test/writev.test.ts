import type * as fsp from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { writeAllv } from '../src/store/objects.js';

/** A file handle that records what reaches it; `short` caps what each writev takes. */
function recorder(short: (call: number, want: number) => number) {
  const out: number[] = [];
  let calls = 0;
  const fh = {
    async writev(buffers: Uint8Array[]) {
      const want = buffers.reduce((n, b) => n + b.length, 0);
      const take = Math.min(want, short(calls++, want));
      let left = take;
      for (const b of buffers) {
        const n = Math.min(left, b.length);
        out.push(...b.subarray(0, n));
        left -= n;
      }
      return { bytesWritten: take, buffers };
    },
    async write(b: Uint8Array, off: number, len: number) {
      const n = Math.min(len, 3); // short writes here too
      out.push(...b.subarray(off, off + n));
      return { bytesWritten: n, buffer: b };
    },
  };
  return { fh: fh as unknown as fsp.FileHandle, out, calls: () => calls };
}

const chunks = (n: number, size: number) =>
  Array.from({ length: n }, (_, i) => Uint8Array.from({ length: size }, (_, k) => (i * 7 + k) & 255));
const flat = (cs: Uint8Array[]) => cs.flatMap((c) => [...c]);

describe('writeAllv', () => {
  it('writes everything in order with one writev per 1,024 buffers', async () => {
    const cs = chunks(2500, 4);
    const r = recorder((_, want) => want);
    await writeAllv(r.fh, cs);
    expect(r.out).toEqual(flat(cs));
    expect(r.calls()).toBe(3);
  });

  it('resumes after short writes, mid-buffer and on a buffer boundary', async () => {
    for (const cut of [1, 5, 8, 9, 39]) {
      const cs = chunks(10, 4);
      const r = recorder((call, want) => (call === 0 ? cut : want));
      await writeAllv(r.fh, cs);
      expect(r.out).toEqual(flat(cs));
    }
  });

  it('nothing to write, and empty buffers', async () => {
    const r = recorder((_, want) => want);
    await writeAllv(r.fh, []);
    await writeAllv(r.fh, [new Uint8Array(0), Uint8Array.of(1, 2), new Uint8Array(0)]);
    expect(r.out).toEqual([1, 2]);
  });
});
