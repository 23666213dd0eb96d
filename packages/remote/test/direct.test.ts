/**
 * Where pulled bytes go: a pull writes its large objects past the page cache (O_DIRECT) unless
 * told otherwise; fetching for a read (fetchObjects) goes through it, since the read follows.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { bytesOf, objectFile, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { FolderOrigin, fetchObjects, pull, push } from '../src/index.js';
import { newStore, storeWith } from './helpers.js';

/** Bytes of `file` in the page cache. */
const resident = (file: string) =>
  Number(execFileSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', file], { encoding: 'utf8' }).trim());

describe.runIf(process.platform === 'linux')('pulled objects and the page cache', () => {
  it('pull: O_DIRECT by default, buffered with directIO: false; fetchObjects buffered', async () => {
    const big = bytesOf(9_000_000, 21);
    const { store, id } = await storeWith('team/big', { 'big.bin': big });
    const folder = join(tempDir(), 'origin');
    const origin = new FolderOrigin(folder);
    await push(store, origin, 'team/big');
    const m = await store.getManifest(id);
    const e = m.entries[0]!;
    const obj = e.kind === 'file' ? e.records[0]!.digest : undefined;
    if (obj === undefined) throw new Error('no record');
    const pages: Record<string, number> = {};
    for (const directIO of [undefined, false]) {
      const local = await newStore();
      const r = await pull(local, origin, 'team/big', { directIO });
      expect(r.id).toBe(id);
      pages[String(directIO)] = resident(objectFile(local.root, obj));
      expect((await local.verify({ data: true })).corrupt).toEqual([]);
    }
    const local = await newStore();
    const lease = await local.lease();
    await fetchObjects(local, origin, new Map([[obj, big.length]]), lease);
    await lease.release();
    pages.fetch = resident(objectFile(local.root, obj));
    // (A /tmp on tmpfs refuses O_DIRECT: everything would be buffered, and this would say so.)
    expect(pages).toEqual({ undefined: 0, false: 9_003_008, fetch: 9_003_008 });
  });
});
