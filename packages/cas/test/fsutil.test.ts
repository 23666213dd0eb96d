// The one read-fully / write-fully pair and the one temp-name scheme of the store.
import { writeFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileHandleSource } from '@tensorfs/cas';
import { bytesOf, expectCode, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { HOST, WRITE_PIECE, parseTempName, readFully, siblingTemp, tempName, writeFully } from '../src/store/fsutil.js';
import { readExactlyInto, writeAllv } from '../src/store/objects.js';

describe('read-fully and write-fully', () => {
  it('an OS failure is io in every reader; running out is the caller family', async () => {
    const file = join(tempDir(), 'f');
    writeFileSync(file, bytesOf(100));
    const fh = await fsp.open(file, 'r');
    const src = fileHandleSource(fh, 200);
    await expectCode(src.read(90, 20), 'conflict');
    const id = `sha256:${'0'.repeat(64)}` as const;
    const e = await expectCode(readExactlyInto(fh, 90, new Uint8Array(20), id), 'corrupt', 'store.length');
    expect(e.details).toMatchObject({ expected: 110, actual: 100 });
    await fh.close();
    expect((await expectCode(src.read(0, 10), 'io')).details.errno).toBe('EBADF');
    await expectCode(readExactlyInto(fh, 0, new Uint8Array(1), id), 'io');
  });

  it('writes everything at a position or at the current one; an OS failure is io', async () => {
    const file = join(tempDir(), 'w');
    const fh = await fsp.open(file, 'w+');
    await writeFully(fh, bytesOf(10, 1));
    await writeFully(fh, bytesOf(5, 2), 20);
    const back = new Uint8Array(25);
    await readFully(fh, 0, back, () => new Error('short') as never);
    expect(back.subarray(0, 10)).toEqual(bytesOf(10, 1));
    expect(back.subarray(20)).toEqual(bytesOf(5, 2));
    await fh.close();
    expect((await expectCode(writeFully(fh, bytesOf(1)), 'io')).details.op).toBe('write');
  });
});

describe('write sizes', () => {
  it('writeFully and writeAllv never pass more than WRITE_PIECE bytes to one call, and write every byte in order', async () => {
    const sizes: number[] = [];
    const out: number[] = [];
    const fh = {
      async write(b: Uint8Array, off: number, len: number) {
        sizes.push(len);
        const n = Math.min(len, 100_000); // short writes too
        for (const x of b.subarray(off, off + n)) out.push(x);
        return { bytesWritten: n, buffer: b };
      },
      async writev(bs: Uint8Array[]) {
        const want = bs.reduce((n, b) => n + b.length, 0);
        sizes.push(want);
        // Every other call writes only part of what it was given (mid-buffer).
        let take = sizes.length % 2 === 0 ? Math.max(1, Math.floor(want / 3)) : want;
        const n = take;
        for (const b of bs) {
          const k = Math.min(take, b.length);
          for (const x of b.subarray(0, k)) out.push(x);
          take -= k;
        }
        return { bytesWritten: n, buffers: bs };
      },
    } as unknown as fsp.FileHandle;
    const one = bytesOf(WRITE_PIECE * 2 + 5, 1);
    await writeFully(fh, one, 0);
    const many = [bytesOf(WRITE_PIECE + 1, 2), bytesOf(10, 3), bytesOf(3 * WRITE_PIECE, 4)];
    await writeAllv(fh, many);
    expect(Math.max(...sizes)).toBe(WRITE_PIECE);
    expect(Buffer.from(out).equals(Buffer.concat([one, ...many]))).toBe(true);
  });

  it('a writev that makes no progress is io', async () => {
    const fh = { writev: async () => ({ bytesWritten: 0 }) } as unknown as fsp.FileHandle;
    await expectCode(writeAllv(fh, [bytesOf(10)]), 'io');
  });
});

describe('temp names', () => {
  it('one scheme: <host>-<pid>-<16 hex>.tmp, also for temps beside a destination', () => {
    expect(parseTempName(tempName())).toEqual({ host: HOST, pid: process.pid });
    const dest = join(tempDir(), 'model.safetensors');
    const tmp = siblingTemp(dest);
    expect(dirname(tmp)).toBe(dirname(dest));
    expect(basename(tmp).startsWith('.model.safetensors.')).toBe(true);
    expect(parseTempName(basename(tmp).slice('.model.safetensors.'.length))).toEqual({
      host: HOST,
      pid: process.pid,
    });
  });
});
