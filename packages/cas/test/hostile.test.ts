/**
 * The store under a hostile user (issue 11): sources that change, vanish or are swapped while an
 * import reads them; refs and manifests that are not what the store wrote; cancellation of every
 * long operation. These run on the real filesystem; the races that need a separate process and
 * big files are in hostile-slow.test.ts (TENSORFS_SLOW=1).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Store } from '@tensorfs/cas';
import { describe, expect, it } from 'vitest';
import { bytesOf, rejectsCode, tempDir } from './helpers.js';

function objectFile(root: string, id: string): string {
  const hex = id.slice(7);
  return join(root, 'objects', 'sha256', hex.slice(0, 2), hex.slice(2, 4), hex);
}

/** A folder with `big.bin` (several records) and `z.txt`, and a file outside it. */
function swapTree(): { src: string; outside: string } {
  const base = tempDir();
  const src = join(base, 'tree');
  mkdirSync(src);
  writeFileSync(join(src, 'big.bin'), bytesOf(3_000_000, 1));
  writeFileSync(join(src, 'z.txt'), 'inside\n');
  const outside = join(base, 'secret.txt');
  writeFileSync(outside, 'outside secret\n');
  return { src, outside };
}

/** Runs `swap` once, when the import has finished `big.bin` and has not yet opened `z.txt`. */
function afterBig(swap: () => void): (p: { files: number; path: string }) => void {
  let done = false;
  return (p) => {
    if (!done && p.path === 'big.bin' && p.files === 1) {
      done = true;
      swap();
    }
  };
}

describe('import: sources changed or swapped while being read', () => {
  it('a file replaced by a symlink to outside the folder mid-import is conflict; no ref, never the outside bytes', async () => {
    const { src, outside } = swapTree();
    const s = await Store.open(tempDir());
    const e = await rejectsCode(
      s.importPath(src, {
        name: 'local/t',
        onProgress: afterBig(() => {
          rmSync(join(src, 'z.txt'));
          symlinkSync(outside, join(src, 'z.txt'));
        }),
      }),
      'conflict',
    );
    expect(e.details).toMatchObject({ rule: 'import.source_changed', path: 'z.txt' });
    expect(await s.getRef('local/t')).toBeNull();
    await s.close();
  });

  it('a file replaced by a FIFO mid-import is conflict at once, not a hang', async () => {
    const { src } = swapTree();
    const s = await Store.open(tempDir());
    await rejectsCode(
      s.importPath(src, {
        name: 'local/t',
        onProgress: afterBig(() => {
          rmSync(join(src, 'z.txt'));
          expect(spawnSync('mkfifo', [join(src, 'z.txt')]).status).toBe(0);
        }),
      }),
      'conflict',
    );
    expect(await s.getRef('local/t')).toBeNull();
    await s.close();
  }, 10_000);

  it('a file replaced by another file (new inode) or removed mid-import is conflict', async () => {
    for (const swap of ['replace', 'remove'] as const) {
      const { src } = swapTree();
      const s = await Store.open(tempDir());
      const e = await rejectsCode(
        s.importPath(src, {
          name: 'local/t',
          onProgress: afterBig(() => {
            if (swap === 'remove') rmSync(join(src, 'z.txt'));
            else {
              writeFileSync(join(src, 'z.new'), 'inside\n');
              renameSync(join(src, 'z.new'), join(src, 'z.txt'));
            }
          }),
        }),
        'conflict',
      );
      expect(e.details.path).toBe('z.txt');
      expect(await s.getRef('local/t')).toBeNull();
      await s.close();
    }
  });

  it('a folder swapped for a symlink to outside mid-import is conflict', async () => {
    const base = tempDir();
    const src = join(base, 'tree');
    mkdirSync(join(src, 'sub'), { recursive: true });
    mkdirSync(join(base, 'evil'));
    writeFileSync(join(src, 'a.bin'), bytesOf(3_000_000, 2));
    writeFileSync(join(src, 'sub', 'w.txt'), 'inside\n');
    writeFileSync(join(base, 'evil', 'w.txt'), 'outside\n');
    const s = await Store.open(tempDir());
    let done = false;
    await rejectsCode(
      s.importPath(src, {
        name: 'local/t',
        onProgress: (p) => {
          if (!done && p.path === 'a.bin' && p.files === 1) {
            done = true;
            renameSync(join(src, 'sub'), join(base, 'sub.old'));
            symlinkSync(join(base, 'evil'), join(src, 'sub'));
          }
        },
      }),
      'conflict',
    );
    expect(await s.getRef('local/t')).toBeNull();
    await s.close();
  });

  it('a file rewritten in place while it is being read is conflict, nothing referenced', async () => {
    const base = tempDir();
    const file = join(base, 'm.bin');
    // Rewritten after its bytes were hashed, before the snapshot is made (the slow suite rewrites
    // a 150 MB file from another process while it is being hashed).
    writeFileSync(file, bytesOf(5_000_000, 3));
    const s = await Store.open(tempDir());
    let done = false;
    const e = await rejectsCode(
      s.importPath(file, {
        name: 'local/m',
        onProgress: () => {
          if (done) return;
          done = true;
          writeFileSync(file, bytesOf(5_000_000, 4));
        },
      }),
      'conflict',
    );
    expect(e.details).toMatchObject({ rule: 'import.source_changed', path: 'm.bin' });
    expect(await s.getRef('local/m')).toBeNull();
    await s.close();
  });

  it('an unchanged tree still imports (the checks do not misfire)', async () => {
    const { src } = swapTree();
    symlinkSync('big.bin', join(src, 'link'));
    const s = await Store.open(tempDir());
    const r = await s.importPath(src, { name: 'local/t' });
    expect(r.files).toBe(3);
    await s.close();
  });
});
