/**
 * Failing writes: a full filesystem (a 2 MiB tmpfs, mounted when this process may mount) and a
 * read-only one give `io` and leave no half object, no temp and no dangling ref. Where mounting is
 * not permitted, the same guarantees are checked with an injected failure (tmp/ made unusable).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { describe, expect, it } from 'vitest';
import { bytesOf, expectCode, idOf, objectFile, tempDir } from '@tensorfs/testkit';

function tryMount(dir: string, size: string): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('failing writes', () => {
  it('a full or read-only filesystem gives io, with no half object and no dangling ref', async () => {
    const root = tempDir();
    const mounted = tryMount(root, '2m');
    try {
      const s = await LocalStore.open(root);
      const small = bytesOf(1000, 1);
      await s.setRef('small', (await s.put(small)).id);
      const big = bytesOf(3 << 20, 2);
      if (!mounted) {
        // Injected failure: temps cannot be created.
        rmSync(join(root, 'tmp'), { recursive: true });
        writeFileSync(join(root, 'tmp'), '');
      }
      const e = await expectCode(s.put(big), 'io');
      expect(e.details.errno).toBe(mounted ? 'ENOSPC' : 'ENOTDIR');
      const src = tempDir();
      mkdirSync(join(src, 'm'));
      writeFileSync(join(src, 'm', 'w.bin'), big);
      await expectCode(s.importPath(join(src, 'm'), { name: 'big' }), 'io');
      expect(await s.getRef('big')).toBeNull();
      expect(existsSync(objectFile(root, idOf(big)))).toBe(false);
      if (mounted) expect(readdirSync(join(root, 'tmp'))).toEqual([]);
      expect((await s.verify({ data: true })).corrupt).toEqual([]);
      await s.close();
      if (mounted) {
        execFileSync('mount', ['-o', 'remount,ro', root]);
        await expectCode(LocalStore.open(root), 'io');
        // Read-only media still open for reads (issue 11): a private copy of the metadata.
        const ro = await LocalStore.open(root, { readOnly: true });
        expect(await ro.getRef('small')).toBe(idOf(small));
        await ro.close();
      }
    } finally {
      if (mounted) execFileSync('umount', [root]);
    }
  });

  it.each([false, true])(
    'a part that fills the filesystem fails with io ENOSPC from the writing thread and is removed (directIO %s)',
    async (directIO) => {
      const root = tempDir();
      if (!tryMount(root, '2m')) {
        // Without a small filesystem: the part cannot even be opened (tmp/ made unusable).
        const s = await LocalStore.open(root, { directIO });
        rmSync(join(root, 'tmp'), { recursive: true });
        writeFileSync(join(root, 'tmp'), '');
        const e = await expectCode(s.openPart('pull-full', { expectedLength: 6 << 20 }), 'io');
        expect(e.details.errno).toBe('ENOTDIR');
        return await s.close();
      }
      try {
        const s = await LocalStore.open(root, { directIO });
        const bytes = bytesOf(6 << 20, 3);
        const part = await s.openPart('pull-full', { expectedLength: bytes.length });
        let failed: unknown;
        try {
          for (let at = 0; at < bytes.length; at += 65_536)
            await part.write(bytes.slice(at, at + 65_536), { handOver: true });
          await part.commit({ expected: idOf(bytes) });
        } catch (err) {
          failed = err;
        }
        expect(failed).toMatchObject({ code: 'io', details: { errno: 'ENOSPC' } });
        await part.discard();
        expect(readdirSync(join(root, 'tmp'))).toEqual([]);
        expect(existsSync(objectFile(root, idOf(bytes)))).toBe(false);
        await s.close();
      } finally {
        execFileSync('umount', [root]);
      }
    },
  );
});
