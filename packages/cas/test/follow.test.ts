import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, readdirSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, join } from 'node:path';
import { bytesOf, idOf, objectFile, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { followFile } from '../src/hash/follow.js';
import { LocalStore } from '@tensorfs/cas';
import { objectIdFromDigest } from '@tensorfs/format';

const hex = (d: Uint8Array) => objectIdFromDigest(d);

for (const thread of [true, false]) {
  describe(`followFile (${thread ? 'hashing thread' : 'calling thread'})`, () => {
    it('hashes a file as it grows, in whatever steps it is advanced', async () => {
      const path = join(tempDir(), 'grow.part');
      const bytes = bytesOf(9_000_123, 7);
      writeFileSync(path, '');
      const f = followFile(path, { thread });
      let written = 0;
      for (const end of [1, 4_194_304, 4_194_305, 8_388_608, bytes.length]) {
        appendFileSync(path, bytes.subarray(written, end));
        written = end;
        f.advance(end);
        f.advance(end - 1); // going back is ignored
      }
      expect(hex(await f.digest(bytes.length))).toBe(idOf(bytes));
      // Finished: a second digest is refused.
      await expect(f.digest(bytes.length)).rejects.toThrow();
    });

    it('starts again after reset, and digests up to the larger of advanced and asked', async () => {
      const path = join(tempDir(), 'reset.part');
      writeFileSync(path, bytesOf(5_000_000, 1));
      const f = followFile(path, { thread });
      f.advance(5_000_000);
      truncateSync(path, 0);
      const again = bytesOf(1_234_567, 2);
      writeFileSync(path, again);
      f.reset();
      f.advance(1000);
      expect(hex(await f.digest(again.length))).toBe(idOf(again));
    });

    it('reports a file shorter than advanced to as EOF, and a missing file by its errno', async () => {
      const path = join(tempDir(), 'short.part');
      writeFileSync(path, bytesOf(100, 1));
      const f = followFile(path, { thread });
      f.advance(100);
      await expect(f.digest(101)).rejects.toMatchObject({ code: 'EOF' });
      const gone = followFile(join(tempDir(), 'absent.part'), { thread });
      await expect(gone.digest(1)).rejects.toMatchObject({ code: 'ENOENT' });
    });

    it('appends shared memory without moving it: written and hashed in order after a read-back prefix', async () => {
      const path = join(tempDir(), 'shared.part');
      const bytes = bytesOf(7_000_000, 3);
      writeFileSync(path, bytes.subarray(0, 1_500_000));
      const f = followFile(path, { thread, write: true });
      f.advance(1_500_000);
      const shared = new Uint8Array(new SharedArrayBuffer(4_000_000));
      shared.set(bytes.subarray(1_500_000, 5_500_000));
      await f.append([shared, bytes.slice(5_500_000)], 1_500_000);
      // Shared memory stays the caller's (nothing moved, nothing detached).
      expect(shared.byteLength).toBe(4_000_000);
      expect(hex(await f.digest(bytes.length))).toBe(idOf(bytes));
      expect(idOf(readFileSync(path))).toBe(idOf(bytes));
    });

    it('appends: writes each batch at its offset after a read-back prefix, hashes it, moves what it is given', async () => {
      const path = join(tempDir(), 'append.part');
      const bytes = bytesOf(6_000_000, 5);
      writeFileSync(path, bytes.subarray(0, 1_000_000));
      const f = followFile(path, { thread, write: true });
      f.advance(1_000_000);
      // Two batches: the second made of chunks that each fill their own buffer, handed over.
      await f.append([bytes.slice(1_000_000, 1_500_000), bytes.subarray(1_500_000, 3_000_000)], 1_000_000);
      const own = [bytes.slice(3_000_000, 4_000_000), bytes.slice(4_000_000, 6_000_000)];
      await f.append(own, 3_000_000, [own[0]!.buffer, own[1]!.buffer]);
      expect(hex(await f.digest(bytes.length))).toBe(idOf(bytes));
      expect(Buffer.from(readFileSync(path)).equals(Buffer.from(bytes))).toBe(true);
      // Moved to the hashing thread (detached here); the calling thread has nothing to move.
      expect(own.map((c) => c.byteLength)).toEqual(thread ? [0, 0] : [1_000_000, 2_000_000]);
    });

    it('an append anywhere but where the bytes end, or into a file it cannot write, fails with its errno', async () => {
      const path = join(tempDir(), 'gap.part');
      writeFileSync(path, '');
      const f = followFile(path, { thread, write: true });
      await f.append([bytesOf(10, 1)], 0);
      await expect(f.append([bytesOf(10, 2)], 11)).rejects.toMatchObject({ code: 'EINVAL' });
      f.close();
      const dir = followFile(tempDir(), { thread, write: true });
      await expect(dir.append([bytesOf(10, 1)], 0)).rejects.toMatchObject({ code: 'EISDIR' });
      dir.close();
    });

    it('the empty file', async () => {
      const path = join(tempDir(), 'empty.part');
      writeFileSync(path, '');
      expect(hex(await followFile(path, { thread }).digest(0))).toBe(idOf(new Uint8Array(0)));
    });
  });
}

describe('ObjectPart files', () => {
  const host =
    hostname()
      .replace(/[^A-Za-z0-9.-]/g, '_')
      .slice(0, 64) || 'host';
  const partOf = (root: string, key: string) => join(root, 'tmp', `${key}.${host}-${process.pid}.part`);
  // A pid that ran and exited, so no process has it now.
  const deadPid = () => spawnSync(process.execPath, ['-e', '0']).pid!;

  it.each([false, true])(
    'stages odd-sized writes across buffers, resets mid-way, names the file after its writer (directIO %s)',
    async (directIO) => {
      const root = join(tempDir(), 'store');
      const store = await LocalStore.open(root, { directIO });
      const bytes = bytesOf(9_500_000 + 4099, 4);
      const part = await store.openPart('pull-o', { expectedLength: bytes.length });
      await part.write(bytesOf(5_000_000, 1));
      expect(existsSync(partOf(root, 'pull-o'))).toBe(true);
      await part.reset();
      expect(part.length).toBe(0);
      for (let at = 0; at < bytes.length; at += 1_000_003) await part.write(bytes.subarray(at, at + 1_000_003));
      expect(await part.commit({ expected: idOf(bytes) })).toEqual({
        id: idOf(bytes),
        length: bytes.length,
        written: true,
      });
      expect(Buffer.from(await store.readObject(idOf(bytes), { verify: true })).equals(Buffer.from(bytes))).toBe(true);
      expect(readdirSync(join(root, 'tmp')).filter((n) => n.endsWith('.part'))).toEqual([]);
      await store.close();
    },
  );

  it('copies the chunks its caller keeps and moves the ones handed over (buffered parts)', async () => {
    const root = join(tempDir(), 'store');
    const store = await LocalStore.open(root);
    const bytes = bytesOf(9_000_000, 9);
    const part = await store.openPart('pull-h', { expectedLength: bytes.length });
    const kept: Uint8Array[] = [];
    const given: Uint8Array[] = [];
    for (let at = 0, i = 0; at < bytes.length; at += 65_536, i++) {
      const chunk = bytes.slice(at, at + 65_536);
      (i % 2 === 0 ? kept : given).push(chunk);
      await part.write(chunk, { handOver: i % 2 === 1 });
    }
    // The caller reuses what it kept: the part's bytes do not change.
    for (const c of kept) c.fill(0xee);
    expect(await part.commit({ expected: idOf(bytes) })).toEqual({
      id: idOf(bytes),
      length: bytes.length,
      written: true,
    });
    expect(Buffer.from(await store.readObject(idOf(bytes), { verify: true })).equals(Buffer.from(bytes))).toBe(true);
    // Handed-over chunks moved to the writing thread; the kept ones are still the caller's.
    expect(given.every((c) => c.byteLength === 0)).toBe(true);
    expect(kept.every((c) => c.byteLength > 0)).toBe(true);
    await store.close();
  });

  it.runIf(process.platform === 'linux')(
    'a direct part reaches the disk without page-cache pages; a buffered one through them',
    async () => {
      const resident = (file: string) =>
        Number(
          execFileSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', file], { encoding: 'utf8' }).trim(),
        );
      const pages: Record<string, number> = {};
      for (const directIO of [true, false]) {
        const root = join(tempDir(), 'store');
        const store = await LocalStore.open(root, { directIO });
        const bytes = bytesOf(10_000_000 + 123, directIO ? 11 : 12);
        const part = await store.openPart('pull-d', { expectedLength: bytes.length });
        for (let at = 0; at < bytes.length; at += 65_536)
          await part.write(bytes.slice(at, at + 65_536), { handOver: true });
        expect((await part.commit({ expected: idOf(bytes) })).written).toBe(true);
        pages[String(directIO)] = resident(objectFile(root, idOf(bytes)));
        expect(Buffer.from(await store.readObject(idOf(bytes), { verify: true })).equals(Buffer.from(bytes))).toBe(
          true,
        );
        await store.close();
      }
      // A part may ask for the other way than its store's.
      for (const direct of [true, false]) {
        const root = join(tempDir(), 'store');
        const store = await LocalStore.open(root, { directIO: !direct });
        const bytes = bytesOf(5_000_000, direct ? 13 : 14);
        const part = await store.openPart('pull-o', { expectedLength: bytes.length, direct });
        await part.write(bytes);
        await part.commit({ expected: idOf(bytes) });
        pages[`part ${direct}`] = resident(objectFile(root, idOf(bytes)));
        await store.close();
      }
      // (/tmp on tmpfs would refuse O_DIRECT: then both are buffered, and this says so.)
      expect(pages).toEqual({ true: 0, false: 10_002_432, 'part true': 0, 'part false': 5_001_216 });
    },
  );

  it('takes over the part of a writer that is gone (and of earlier versions), never a live one', async () => {
    const root = join(tempDir(), 'store');
    const store = await LocalStore.open(root);
    const bytes = bytesOf(12_000_000, 6);
    const tmp = join(root, 'tmp');
    // A live writer (this test's parent process) keeps its file.
    const live = join(tmp, `pull-a.${host}-${process.ppid}.part`);
    writeFileSync(live, bytes.subarray(0, 8192));
    const fresh = await store.openPart('pull-a', { expectedLength: bytes.length });
    expect(fresh.length).toBe(0);
    await fresh.discard();
    expect(statSync(live).size).toBe(8192);
    // A dead writer's part is resumed (a direct-I/O part keeps only its 4 KiB-aligned prefix).
    const dead = join(tmp, `pull-b.${host}-${deadPid()}.part`);
    writeFileSync(dead, bytes.subarray(0, 5_000_001));
    const resumed = await store.openPart('pull-b', { expectedLength: bytes.length });
    expect([5_000_001, 5_000_001 - (5_000_001 % 4096)]).toContain(resumed.length);
    expect(existsSync(dead)).toBe(false);
    await resumed.write(bytes.subarray(resumed.length));
    expect((await resumed.commit({ expected: idOf(bytes) })).written).toBe(true);
    // The unowned name of earlier versions too.
    const other = bytesOf(300_000, 8);
    writeFileSync(join(tmp, 'pull-c.part'), other.subarray(0, 1000));
    const legacy = await store.openPart('pull-c', { expectedLength: other.length });
    expect([1000, 0]).toContain(legacy.length);
    await legacy.write(other.subarray(legacy.length));
    expect((await legacy.commit({ expected: idOf(other) })).written).toBe(true);
    expect(readdirSync(tmp).filter((n) => n.endsWith('.part'))).toEqual([basename(live)]);
    await store.close();
  });
});
