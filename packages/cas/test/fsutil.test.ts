// The one read-fully / write-fully pair and the one temp-name scheme of the store.
import { writeFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileHandleSource } from '@tensorfs/cas';
import { bytesOf, expectCode, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { HOST, parseTempName, readFully, siblingTemp, tempName, writeFully } from '../src/store/fsutil.js';
import { readExactlyInto } from '../src/store/objects.js';

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
