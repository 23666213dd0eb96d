/**
 * Portable gaps (issue 11): a store on a filesystem without hard links publishes by exclusive
 * rename (the filesystem is simulated by making `link` fail as FAT/exFAT or an SMB mount does);
 * a store on read-only media opens read-only for reads.
 */
import fsp from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bytesOf, idOf, tempDir } from '@tensorfs/testkit';

afterEach(() => {
  vi.restoreAllMocks();
  syncBuiltinESMExports();
});

describe('a store on a filesystem without hard links', () => {
  it('admits by exclusive rename, dedups, and imports and verifies as usual', async () => {
    const link = vi.spyOn(fsp, 'link').mockRejectedValue(Object.assign(new Error('no links'), { code: 'EPERM' }));
    syncBuiltinESMExports();
    const s = await LocalStore.open(tempDir());
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
    const s = await LocalStore.open(root);
    await expect(s.put(bytesOf(10, 3))).rejects.toMatchObject({ code: 'io' });
    expect(await fsp.readdir(join(root, 'tmp'))).toEqual([]);
    await s.close();
  });
});

/**
 * Makes `dir` unwritable for this process, really: a read-only bind mount when running as root
 * (root ignores permission bits), else permission bits. Returns the path to use and an undo.
 */
function readOnlyView(dir: string): { path: string; undo: () => void } {
  if (process.getuid?.() === 0) {
    const mnt = tempDir('tfs-ro-mnt-');
    const ok = (args: string[]) => expect(spawnSync('mount', args).status, `mount ${args.join(' ')}`).toBe(0);
    ok(['--bind', dir, mnt]);
    ok(['-o', 'remount,ro,bind', mnt]);
    return { path: mnt, undo: () => void spawnSync('umount', [mnt]) };
  }
  spawnSync('chmod', ['-R', 'a-w', dir]);
  return { path: dir, undo: () => void spawnSync('chmod', ['-R', 'u+w', dir]) };
}

describe('a store on read-only media', () => {
  it('opens read-only and reads, lists and verifies lengths; a read-write open is io', async () => {
    const root = join(tempDir(), 'store');
    const src = join(tempDir(), 't');
    mkdirSync(src);
    const bytes = bytesOf(3_000_000, 5);
    writeFileSync(join(src, 'x.bin'), bytes);
    const w = await LocalStore.open(root);
    const imp = await w.importPath(src, { name: 'local/t' });
    await w.close();
    const ro = readOnlyView(root);
    try {
      const s = await LocalStore.open(ro.path, { readOnly: true });
      expect(await s.listRefs()).toEqual([{ name: 'local/t', id: imp.snapshot }]);
      const m = await s.getManifest(imp.snapshot);
      const f = m.entries[0]!;
      if (f.kind !== 'file') throw new Error('unreachable');
      expect(
        Buffer.from(await s.recordsSource(f.records, { verify: true }).read(0, f.size)).equals(Buffer.from(bytes)),
      ).toBe(true);
      expect(await s.verify({ data: true })).toMatchObject({ missing: [], corrupt: [], unreadable: [] });
      expect((await s.gc({ dryRun: true, graceMs: 0 })).removed).toBe(0);
      await s.close();
      await expect(LocalStore.open(ro.path)).rejects.toMatchObject({ code: 'io' });
    } finally {
      ro.undo();
    }
    expect(readdirSync(tmpdir()).filter((n) => n.startsWith('tensorfs-ro-'))).toEqual([]);
  });
});
