/**
 * The store under a hostile user (issue 11): sources that change, vanish or are swapped while an
 * import reads them; refs and manifests that are not what the store wrote; cancellation of every
 * long operation. These run on the real filesystem; the races that need a separate process and
 * big files are in hostile-slow.test.ts (TENSORFS_SLOW=1).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { LocalStore, type Progress } from '@tensorfs/cas';
import Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import { bytesOf, expectCode, tempDir } from '@tensorfs/testkit';

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
function afterBig(swap: () => void): (p: Progress) => void {
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
    const s = await LocalStore.open(tempDir());
    const e = await expectCode(
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
    const s = await LocalStore.open(tempDir());
    await expectCode(
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
      const s = await LocalStore.open(tempDir());
      const e = await expectCode(
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
    const s = await LocalStore.open(tempDir());
    let done = false;
    await expectCode(
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
    const s = await LocalStore.open(tempDir());
    let done = false;
    const e = await expectCode(
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
    const s = await LocalStore.open(tempDir());
    const r = await s.importPath(src, { name: 'local/t' });
    expect(r.files).toBe(3);
    await s.close();
  });
});

async function storeWithSnapshot() {
  const root = tempDir();
  const src = join(tempDir(), 'm');
  mkdirSync(src);
  writeFileSync(join(src, 'a.bin'), bytesOf(2_500_000, 1));
  writeFileSync(join(src, 'b.bin'), bytesOf(1000, 2));
  const s = await LocalStore.open(root);
  const r = await s.importPath(src, { name: 'local/m' });
  return { root, src, s, snapshot: r.snapshot };
}

describe('gc: roots it cannot read', () => {
  it('refuses (dry run too) while a ref names a manifest that is missing; nothing is removed', async () => {
    const { root, s, snapshot } = await storeWithSnapshot();
    const m = await s.getManifest(snapshot);
    const parked = join(tempDir(), 'manifest');
    renameSync(objectFile(root, snapshot), parked); // moved away, as by a partial restore
    for (const dryRun of [true, false]) {
      const e = await expectCode(s.gc({ graceMs: 0, dryRun }), 'corrupt');
      expect(e.details).toMatchObject({ rule: 'gc.missing_root', missing: [snapshot] });
    }
    renameSync(parked, objectFile(root, snapshot));
    for (const entry of m.entries) {
      if (entry.kind === 'file') for (const r of entry.records) expect(await s.has(r.digest)).toBe(true);
    }
    expect((await s.verify({ data: true })).missing).toEqual([]);
    await s.close();
  });

  it('refuses while refs/ holds a symlink (or FIFO), naming it; reading it is refused too', async () => {
    const { root, s, snapshot } = await storeWithSnapshot();
    // A second snapshot reachable only through the symlinked ref.
    const other = join(tempDir(), 'o');
    mkdirSync(other);
    writeFileSync(join(other, 'c.bin'), bytesOf(10_000, 7));
    const r2 = await s.importPath(other, { name: 'local/o' });
    const elsewhere = join(tempDir(), 'ref');
    writeFileSync(elsewhere, `${r2.snapshot}\n`);
    rmSync(join(root, 'refs', 'local', 'o'));
    symlinkSync(elsewhere, join(root, 'refs', 'local', 'o'));
    const e = await expectCode(s.gc({ graceMs: 0 }), 'corrupt');
    expect(e.details).toMatchObject({ rule: 'ref.not_regular', ref: 'local/o', refs: ['local/o'] });
    await expectCode(s.gc({ graceMs: 0, dryRun: true }), 'corrupt');
    await expectCode(s.listRefs(), 'corrupt');
    await expectCode(s.getRef('local/o'), 'corrupt');
    await expectCode(s.resolve('local/o'), 'corrupt');
    expect(await s.has(r2.snapshot)).toBe(true);
    // It can be replaced or removed without following it.
    await s.setRef('local/o', snapshot);
    expect(await s.getRef('local/o')).toBe(snapshot);
    expect((await s.listRefs()).map((r) => r.name)).toEqual(['local/m', 'local/o']);
    expect(spawnSync('mkfifo', [join(root, 'refs', 'fifo')]).status).toBe(0);
    await expectCode(s.getRef('fifo'), 'corrupt');
    expect((await expectCode(s.verify(), 'corrupt')).details.ref).toBe('fifo');
    await s.deleteRef('fifo');
    expect((await s.listRefs()).length).toBe(2);
    await s.close();
  }, 10_000);
});

describe('cancellation: every long operation rejects with cancelled, never a DOMException', () => {
  it('import, export, gc, verify, usage, listRefs-driven walks, object streams', async () => {
    const { s, snapshot, src } = await storeWithSnapshot();
    const aborted = AbortSignal.abort();
    const custom = new AbortController();
    custom.abort(new Error('interrupted')); // a reason that is not an AbortError
    for (const signal of [aborted, custom.signal]) {
      await expectCode(s.importPath(src, { signal }), 'cancelled');
      await expectCode(s.exportSnapshot(snapshot, tempDir(), { signal }), 'cancelled');
      await expectCode(s.gc({ signal }), 'cancelled');
      await expectCode(s.gc({ signal, dryRun: true }), 'cancelled');
      await expectCode(s.verify({ signal }), 'cancelled');
      await expectCode(s.verify({ signal, data: true, all: true }), 'cancelled');
      await expectCode(s.usage({ signal }), 'cancelled');
      const m = await s.getManifest(snapshot);
      const f = m.entries.find((e) => e.kind === 'file' && e.size > 1_000_000)!;
      if (f.kind !== 'file') throw new Error('unreachable');
      await expectCode(s.exportFile(snapshot, f.path, join(tempDir(), 'x'), { signal }), 'cancelled');
      const stream = s.objectStream(f.records[0]!.digest, { signal });
      await expectCode(
        (async () => {
          for await (const _ of stream);
        })(),
        'cancelled',
      );
      await expectCode(
        s.putStream(
          (async function* () {
            yield new Uint8Array(10);
          })(),
          { signal },
        ),
        'cancelled',
      );
    }
    await s.close();
  });

  it('aborting verify mid-walk rejects cancelled', async () => {
    const { s } = await storeWithSnapshot();
    const c = new AbortController();
    await expectCode(
      s.verify({
        data: true,
        all: true,
        signal: c.signal,
        onProgress: () => c.abort(new Error('interrupted')),
      }),
      'cancelled',
    );
    await s.close();
  });
});

describe('damaged metadata', () => {
  it('a missing gc_state row, a dropped table or a file that is not a database is corrupt naming the part', async () => {
    const cases: [string, (db: Database.Database | null, file: string) => void, RegExp][] = [
      ['row', (db) => db!.exec("DELETE FROM gc_state WHERE key = 'epoch'"), /gc_state epoch row/],
      ['table', (db) => db!.exec('DROP TABLE leases'), /missing table leases/],
      ['garbage', (_db, file) => writeFileSync(file, bytesOf(8192, 5)), /not a database|malformed/],
    ];
    for (const [what, damage, part] of cases) {
      const { root, s } = await storeWithSnapshot();
      await s.close();
      const file = join(root, 'metadata.sqlite3');
      if (what === 'garbage') {
        for (const f of ['-wal', '-shm']) rmSync(file + f, { force: true });
        damage(null, file);
      } else {
        const db = new Database(file);
        damage(db, file);
        db.close();
      }
      for (const readOnly of [false, true]) {
        const e = await expectCode(LocalStore.open(root, { readOnly }), 'corrupt');
        expect(e.details, what).toMatchObject({ rule: 'metadata.damaged', path: 'metadata.sqlite3' });
        expect(String(e.details.part), what).toMatch(part);
        expect((e as unknown as Error).message).toMatch(/restore metadata\.sqlite3 from a backup/);
      }
    }
  });
});

describe('hostile names and paths', () => {
  it('a file name that is not UTF-8 is refused by name (invalid_argument), not a wrong errno', async () => {
    const src = join(tempDir(), 'tree');
    mkdirSync(src);
    writeFileSync(join(src, 'ok.txt'), 'ok');
    writeFileSync(Buffer.concat([Buffer.from(`${src}/`), Buffer.from([0x62, 0xff, 0x2e, 0x74])]), 'bad');
    const s = await LocalStore.open(tempDir());
    const e = await expectCode(s.importPath(src, { name: 'local/t' }), 'invalid_argument');
    expect(e.details).toMatchObject({ rule: 'import.name_not_utf8', path: 'b\uFFFD.t', bytes: '62ff2e74' });
    expect(await s.getRef('local/t')).toBeNull();
    await s.close();
  });

  it('a store under /proc/self fails at once (io) instead of spinning in mkdir', async () => {
    await expectCode(LocalStore.open('/proc/self/x/store'), 'io');
    await expectCode(LocalStore.open('/proc/self/x'), 'io');
  }, 5_000);
});

describe('objects that are not files', () => {
  it('an object replaced by a folder is missing to verify, not passed', async () => {
    const { root, s, snapshot } = await storeWithSnapshot();
    const m = await s.getManifest(snapshot);
    const f = m.entries.find((e) => e.kind === 'file')!;
    if (f.kind !== 'file') throw new Error('unreachable');
    const id = f.records[0]!.digest;
    rmSync(objectFile(root, id));
    mkdirSync(objectFile(root, id));
    for (const data of [false, true]) expect((await s.verify({ data })).missing).toEqual([id]);
    await s.close();
  });
});

describe('import and export rough edges', () => {
  it('follows a symlink given as the argument itself (file and folder), named by the link', async () => {
    const base = tempDir();
    mkdirSync(join(base, 'blobs'));
    writeFileSync(join(base, 'blobs', 'abc123'), bytesOf(1000, 4));
    symlinkSync(join(base, 'blobs', 'abc123'), join(base, 'model.bin'));
    mkdirSync(join(base, 'real'));
    writeFileSync(join(base, 'real', 'c.json'), '{}');
    symlinkSync(join(base, 'real'), join(base, 'snap'));
    const s = await LocalStore.open(tempDir());
    const f = await s.importPath(join(base, 'model.bin'));
    expect((await s.getManifest(f.snapshot)).entries.map((e) => e.path)).toEqual(['model.bin']);
    const d = await s.importPath(join(base, 'snap'));
    expect((await s.getManifest(d.snapshot)).entries.map((e) => e.path)).toEqual(['c.json']);
    await s.close();
  });

  it('an absolute symlink says so; an unreadable file is denied (as in inspect)', async () => {
    const b = join(tempDir(), 'b');
    mkdirSync(b);
    symlinkSync('/etc/passwd', join(b, 'abs'));
    const s = await LocalStore.open(tempDir());
    const e = await expectCode(s.importPath(b), 'invalid_argument');
    expect(e.details).toMatchObject({ rule: 'import.symlink_absolute', path: 'abs' });
    expect((e as unknown as Error).message).toMatch(/absolute/);
    const c = join(tempDir(), 'c');
    mkdirSync(c);
    writeFileSync(join(c, 'secret'), 'x');
    // Tests may run as root, where permissions do not deny: make open fail as EACCES would.
    const real = fsp.open;
    const spy = vi
      .spyOn(fsp, 'open')
      .mockImplementation(((p: string, ...rest: unknown[]) =>
        String(p).endsWith('/secret')
          ? Promise.reject(Object.assign(new Error('denied'), { code: 'EACCES' }))
          : (real as (...a: unknown[]) => unknown)(p, ...rest)) as typeof fsp.open);
    syncBuiltinESMExports();
    try {
      const d = await expectCode(s.importPath(c), 'denied');
      expect(d.details).toMatchObject({ path: 'secret', errno: 'EACCES' });
    } finally {
      spy.mockRestore();
      syncBuiltinESMExports();
    }
    await s.close();
  });

  it('export refuses a destination inside the store, and an existing file as the folder (conflict)', async () => {
    const { root, s, snapshot } = await storeWithSnapshot();
    const e = await expectCode(s.exportSnapshot(snapshot, join(root, 'refs')), 'invalid_argument');
    expect(e.details.rule).toBe('export.inside_store');
    await expectCode(s.exportSnapshot(snapshot, join(root, 'new', 'x')), 'invalid_argument');
    const m = await s.getManifest(snapshot);
    await expectCode(s.exportFile(snapshot, m.entries[0]!.path, join(root, 'tmp', 'x')), 'invalid_argument');
    const file = join(tempDir(), 'f');
    writeFileSync(file, 'x');
    await expectCode(s.exportSnapshot(snapshot, file), 'conflict');
    await s.close();
  });
});

describe('verify --data with unreadable objects', () => {
  it('lists every unreadable object and goes on, instead of stopping at the first', async () => {
    const { root, s, snapshot } = await storeWithSnapshot();
    const m = await s.getManifest(snapshot);
    const leaves = m.entries.flatMap((e) => (e.kind === 'file' ? e.records.map((r) => r.digest) : [])).sort();
    expect(leaves.length).toBe(2);
    const bad = new Set(leaves.map((id) => objectFile(root, id)));
    const real = fsp.open;
    const spy = vi
      .spyOn(fsp, 'open')
      .mockImplementation(((p: string, ...rest: unknown[]) =>
        bad.has(String(p))
          ? Promise.reject(Object.assign(new Error('I/O error'), { code: 'EIO' }))
          : (real as (...a: unknown[]) => unknown)(p, ...rest)) as typeof fsp.open);
    // The small leaf is read in one synchronous call: it fails there the same way.
    const realRead = fs.readFileSync;
    const spySync = vi.spyOn(fs, 'readFileSync').mockImplementation(((p: string, ...rest: unknown[]) => {
      if (bad.has(String(p))) throw Object.assign(new Error('I/O error'), { code: 'EIO' });
      return (realRead as (...a: unknown[]) => unknown)(p, ...rest);
    }) as typeof fs.readFileSync);
    syncBuiltinESMExports();
    try {
      const v = await s.verify({ data: true });
      expect(v).toMatchObject({ unreadable: leaves, missing: [], corrupt: [] });
      expect(v.rehashed).toBe(3);
    } finally {
      spy.mockRestore();
      spySync.mockRestore();
      syncBuiltinESMExports();
    }
    expect((await s.verify({ data: true })).unreadable).toEqual([]);
    await s.close();
  });
});

describe('lost metadata', () => {
  it('a deleted or emptied metadata.sqlite3 is corrupt, not silently recreated; recreateMetadata starts an empty one', async () => {
    for (const how of ['delete', 'empty'] as const) {
      const { root, s, snapshot } = await storeWithSnapshot();
      const keep = (await s.put(bytesOf(10, 8))).id;
      await s.addRoot(keep, 'keep me');
      await s.close();
      for (const f of ['', '-wal', '-shm']) rmSync(join(root, `metadata.sqlite3${f}`), { force: true });
      if (how === 'empty') writeFileSync(join(root, 'metadata.sqlite3'), '');
      for (const readOnly of [false, true]) {
        const e = await expectCode(LocalStore.open(root, { readOnly }), 'corrupt');
        expect(e.details, how).toMatchObject({ rule: 'metadata.damaged', path: 'metadata.sqlite3' });
        expect((e as unknown as Error).message).toMatch(/recreate-metadata/);
      }
      const r = await LocalStore.open(root, { recreateMetadata: true });
      expect(await r.listRoots()).toEqual([]);
      expect(await r.getRef('local/m')).toBe(snapshot);
      expect((await r.verify({ data: true })).corrupt).toEqual([]);
      await r.close();
    }
    // A fresh, empty folder is still a new store.
    const fresh = await LocalStore.open(join(tempDir(), 'new'));
    await fresh.close();
  });
});

describe('temps of killed exports', () => {
  it('the next export of the same file removes temps whose writer is dead, keeps live ones', async () => {
    const { s, snapshot } = await storeWithSnapshot();
    const out = tempDir();
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    // The store's temp scheme: `.<name>.<host>-<pid>-<16 hex>.tmp`.
    const host =
      hostname()
        .replace(/[^A-Za-z0-9.-]/g, '_')
        .slice(0, 64) || 'host';
    const stale = join(out, `.a.bin.${host}-${dead}-0123456789abcdef.tmp`);
    const live = join(out, `.a.bin.${host}-${process.pid}-0123456789abcdee.tmp`);
    const other = join(out, `.b.bin.${host}-${dead}-0123456789abcdef.tmp`);
    for (const f of [stale, live, other]) writeFileSync(f, 'half');
    await s.exportFile(snapshot, 'a.bin', join(out, 'a.bin'));
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(live)).toBe(true);
    expect(existsSync(other)).toBe(true);
    await s.close();
  });
});
