/**
 * Portable gaps (issue 11): a store on a filesystem without hard links publishes by exclusive
 * rename. The filesystem is simulated by making `link` fail as FAT/exFAT or an SMB mount does.
 */
import fsp from 'node:fs/promises';
import { mkdirSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { Store } from '@tensorfs/cas';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bytesOf, idOf, tempDir } from './helpers.js';

afterEach(() => {
  vi.restoreAllMocks();
  syncBuiltinESMExports();
});

describe('a store on a filesystem without hard links', () => {
  it('admits by exclusive rename, dedups, and imports and verifies as usual', async () => {
    const link = vi.spyOn(fsp, 'link').mockRejectedValue(Object.assign(new Error('no links'), { code: 'EPERM' }));
    syncBuiltinESMExports();
    const s = await Store.open(tempDir());
    const a = bytesOf(100_000, 1);
    const r1 = await s.put(a);
    expect(r1).toMatchObject({ id: idOf(a), written: true });
    expect((await s.put(a)).written).toBe(false);
    const src = join(tempDir(), 't');
    mkdirSync(src);
    writeFileSync(join(src, 'x.bin'), bytesOf(3_000_000, 2));
    const imp = await s.importPath(src, { name: 'local/t' });
    expect(Buffer.from(await s.readObject(r1.id, { verify: true })).equals(Buffer.from(a))).toBe(true);
    const v = await s.verify({ data: true, all: true });
    expect(v).toMatchObject({ missing: [], corrupt: [] });
    expect(await s.getRef('local/t')).toBe(imp.snapshot);
    expect(link).toHaveBeenCalled();
    await s.close();
  });

  it('other link errors still fail the write (io), leaving no temp', async () => {
    vi.spyOn(fsp, 'link').mockRejectedValue(Object.assign(new Error('full'), { code: 'ENOSPC' }));
    syncBuiltinESMExports();
    const root = tempDir();
    const s = await Store.open(root);
    await expect(s.put(bytesOf(10, 3))).rejects.toMatchObject({ code: 'io' });
    expect(await fsp.readdir(join(root, 'tmp'))).toEqual([]);
    await s.close();
  });
});
