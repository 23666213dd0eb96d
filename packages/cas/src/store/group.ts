/**
 * Group commit of many small objects (docs/store.md "Admission", "Many small objects"): the
 * dedup decision for the whole group in one write transaction, every absent object written to its
 * own temp and CLOSED at once (a command never holds more than a few descriptors, whatever the
 * number of objects), then the group made durable together, then published by link(), then the new
 * names made durable together.
 *
 * Durability of a group, in order of preference:
 * - **`syncfs`** of the store's filesystem, once for the data and once for the names, where the
 *   filesystem is a local one known to implement it (ext4, XFS, btrfs, F2FS, ZFS, tmpfs) and the
 *   kernel (Linux ≥ 5.8) reports writeback errors through it. Node has no `syncfs`, so it is the
 *   `sync -f <tmp/>` of coreutils (one process per group, not per object).
 * - otherwise each temp is fdatasynced through the descriptor that wrote it, before it is closed
 *   ({@link FILE_SYNCS} temps open at a time), and each object folder touched is fsynced once.
 *   A temp is never closed and re-opened to be synced: Linux keeps a writeback error with the
 *   in-memory inode, and an inode with no open descriptor whose pages were written back (failed
 *   or not) may be evicted, taking the error with it, so a later open and fdatasync can succeed
 *   over bytes that never reached the disk. (syncfs does not have this hole: the filesystem's
 *   superblock keeps the error while it is mounted.)
 * Either way no object name exists before its bytes are durable, and the caller's ref is written
 * only after this resolves.
 *
 * Objects found present count as durable only once their names are: the bytes are durable by the
 * protocol (every writer syncs before link()), but another process may have linked one and not
 * fsynced its folder yet. So the folders of present objects are fsynced too (each once per
 * group; covered by the names' syncfs when the group wrote anything on that path).
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { release } from 'node:os';
import { join } from 'node:path';
import { type ObjectId, TensorFSError, throwIfAborted } from '@tensorfs/format';
import { errnoOf, ioError, tempName } from './fsutil.js';
import { type Objects, type PutResult, syncDir, syncSeam } from './objects.js';

/** One object of a group: bytes whose digest the caller computed over exactly these buffers. */
export interface GroupItem {
  id: ObjectId;
  chunks: readonly Uint8Array[];
  length: number;
}

/** Descriptors (and thread-pool jobs) a group uses at once where it syncs file by file. */
const FILE_SYNCS = 4;

/** Temps (or folders) at most this many are synced one by one whatever the strategy (cheaper than a process). */
const FEW_FILES = 16;

/** Filesystems (statfs `f_type`) whose `syncfs` writes and waits on every dirty inode and commits its journal. */
const SYNCFS_TYPES = new Set<number>([
  0xef53, // ext2/3/4
  0x58465342, // xfs
  0x9123683e, // btrfs
  0xf2f52010, // f2fs
  0x2fc12fc1, // zfs
  0x01021994, // tmpfs (nothing to flush: memory)
]);

/** How a group is made durable on this store's filesystem: decided once per process and folder. */
const strategies = new Map<string, Promise<'syncfs' | 'files'>>();

/**
 * `syncfs` where it is sound (Linux ≥ 5.8 on a filesystem of {@link SYNCFS_TYPES}, `sync -f` runs),
 * else file by file. `TENSORFS_GROUP_SYNC=files` forces the file-by-file way.
 */
export function groupStrategy(tmp: string): Promise<'syncfs' | 'files'> {
  const forced = process.env.TENSORFS_GROUP_SYNC;
  if (forced === 'files') return Promise.resolve('files');
  let s = strategies.get(tmp);
  if (s === undefined) {
    s = (async () => {
      if (process.platform !== 'linux' || !kernelAtLeast(5, 8)) return 'files';
      try {
        const st = await fsp.statfs(tmp);
        if (!SYNCFS_TYPES.has(Number(st.type))) return 'files';
      } catch {
        return 'files';
      }
      return (await runSyncfs(tmp)) === 'unsupported' ? 'files' : 'syncfs';
    })();
    strategies.set(tmp, s);
    // A probe that failed (a writeback error, a `sync` that could not run) fails its caller only:
    // the next batch probes again instead of failing every batch of a long-lived process.
    s.catch(() => strategies.delete(tmp));
  }
  return s;
}

function kernelAtLeast(major: number, minor: number): boolean {
  const m = /^(\d+)\.(\d+)/.exec(release());
  if (!m) return false;
  const [a, b] = [Number(m[1]), Number(m[2])];
  return a > major || (a === major && b >= minor);
}

/**
 * `sync -f dir`: syncfs of the filesystem holding `dir`. `unsupported` when there is no such
 * program or it has no `-f`; an `io` error (EIO) when the kernel reported a writeback error.
 */
function runSyncfs(dir: string): Promise<'ok' | 'unsupported'> {
  try {
    syncSeam.before?.('syncfs', dir);
  } catch (err) {
    return Promise.reject(ioError(err, 'syncfs', 'tmp/'));
  }
  return new Promise((resolve, reject) => {
    execFile('sync', ['-f', dir], { timeout: 600_000 }, (err, _stdout, stderr) => {
      if (!err) return resolve('ok');
      const e = err as NodeJS.ErrnoException & { code?: unknown };
      if (e.code === 'ENOENT' || /invalid option|unrecognized option|usage/i.test(String(stderr))) {
        return resolve('unsupported');
      }
      reject(
        new TensorFSError('io', 'sync failed (EIO)', {
          details: { rule: 'store.sync_io', op: 'syncfs', errno: 'EIO', path: 'tmp/' },
          cause: new Error(String(stderr).trim() || String(err)),
        }),
      );
    });
  });
}

/** Writes `chunks` to a new exclusive temp (mode 0444); returns its path and its still open descriptor. */
function writeTemp(tmpDir: string, chunks: readonly Uint8Array[]): { path: string; fd: number } {
  const path = join(tmpDir, tempName());
  const fd = fs.openSync(path, 'wx', 0o444);
  try {
    let i = 0;
    let off = 0;
    while (i < chunks.length) {
      if (off === chunks[i]!.length) {
        i++;
        off = 0;
        continue;
      }
      const parts = chunks.slice(i, i + 1024).map((c, k) => (k === 0 ? c.subarray(off) : c));
      let n = fs.writevSync(fd, parts);
      if (n === 0) throw Object.assign(new Error('no progress'), { code: 'EIO' });
      while (n > 0) {
        const left = chunks[i]!.length - off;
        if (n >= left) {
          n -= left;
          i++;
          off = 0;
        } else {
          off += n;
          n = 0;
        }
      }
    }
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(path, { force: true });
    throw err;
  }
  return { path, fd };
}

/** Writes `chunks` to a new exclusive temp and closes it at once (the syncfs way: one descriptor, briefly). */
function writeClosedTemp(tmpDir: string, chunks: readonly Uint8Array[]): string {
  const { path, fd } = writeTemp(tmpDir, chunks);
  fs.closeSync(fd);
  return path;
}

/** Writes `chunks` to a new exclusive temp, fdatasyncs it through that descriptor, then closes it. */
async function writeSyncedTemp(tmpDir: string, chunks: readonly Uint8Array[]): Promise<string> {
  const { path, fd } = writeTemp(tmpDir, chunks);
  try {
    syncSeam.before?.('fdatasync', path);
    await new Promise<void>((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve())));
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(path, { force: true });
    throw ioError(err, 'sync temp', 'tmp/');
  }
  fs.closeSync(fd);
  return path;
}

/**
 * Admits a group of objects whose ids were computed over exactly these bytes: present ones are
 * claimed (lease) and freshened, absent ones written, made durable together and published. The
 * objects and the names are durable when this resolves. Results in the order of `items`.
 */
export async function admitGroup(
  objects: Objects,
  items: readonly GroupItem[],
  options: {
    lease?: string;
    signal?: AbortSignal;
    /**
     * Leave the names to the caller: the folders to sync and to mark ready are added here, and the
     * caller makes them durable with {@link syncNames} (with its other names, in one sync) before
     * it relies on them. Without it the names are durable when this resolves.
     */
    names?: { dirs: Set<string>; ready: Set<string> };
  } = {},
): Promise<PutResult[]> {
  const out: PutResult[] = new Array(items.length);
  if (items.length === 0) return out;
  throwIfAborted(options.signal);
  const have = objects.presentMany(items, options.lease);
  const toWrite: { k: number; item: GroupItem; path?: string }[] = [];
  const seen = new Set<ObjectId>();
  for (const [k, item] of items.entries()) {
    if (have[k]! >= 0 || seen.has(item.id)) {
      out[k] = { id: item.id, length: item.length, written: false };
      continue;
    }
    seen.add(item.id);
    toWrite.push({ k, item });
  }
  const removeTemps = () => {
    for (const w of toWrite) if (w.path) fs.rmSync(w.path, { force: true });
  };
  // Present objects count only once their names are durable (another process may have linked
  // one and not fsynced its folder yet).
  const presentIds = new Set<ObjectId>();
  for (const [k, item] of items.entries()) if (have[k]! >= 0) presentIds.add(item.id);
  let strategy: 'syncfs' | 'files';
  try {
    // A few temps are synced one by one even where syncfs is sound: starting a `sync` process
    // costs more than a few fdatasyncs.
    strategy = toWrite.length <= FEW_FILES ? 'files' : await groupStrategy(objects.layout.tmp);
    if (strategy === 'syncfs') {
      for (const w of toWrite) {
        throwIfAborted(options.signal);
        try {
          w.path = writeClosedTemp(objects.layout.tmp, w.item.chunks);
        } catch (err) {
          throw errnoOf(err) === undefined ? err : ioError(err, 'write temp', 'tmp/');
        }
      }
      if (toWrite.length > 0) await runSyncfs(objects.layout.tmp);
    } else {
      // Each temp synced before it is closed, FILE_SYNCS at a time.
      let next = 0;
      const one = async (): Promise<void> => {
        while (next < toWrite.length) {
          const w = toWrite[next++]!;
          throwIfAborted(options.signal);
          try {
            w.path = await writeSyncedTemp(objects.layout.tmp, w.item.chunks);
          } catch (err) {
            throw errnoOf(err) === undefined ? err : ioError(err, 'write temp', 'tmp/');
          }
        }
      };
      const workers = Array.from({ length: Math.min(FILE_SYNCS, toWrite.length) }, one);
      const settled = await Promise.allSettled(workers);
      const bad = settled.find((r) => r.status === 'rejected');
      if (bad) throw (bad as PromiseRejectedResult).reason;
    }
  } catch (err) {
    removeTemps();
    throw err;
  }
  // Every byte is durable: publish. The names become durable below, before this resolves (or
  // with the caller's, given `names`).
  const dirs = options.names?.dirs ?? new Set<string>();
  const ready = options.names?.ready ?? new Set<string>();
  let failure: unknown;
  for (const w of toWrite) {
    if (failure !== undefined) {
      fs.rmSync(w.path!, { force: true });
      continue;
    }
    try {
      const written = objects.publishSync({ path: w.path!, length: w.item.length }, w.item.id, dirs, ready);
      out[w.k] = { id: w.item.id, length: w.item.length, written };
    } catch (err) {
      failure = err;
    }
  }
  if (options.names !== undefined) {
    objects.presentNames(presentIds, dirs, ready);
    if (failure !== undefined) throw ioError(failure, 'publish', 'objects/');
    return out;
  }
  try {
    if (strategy === 'syncfs' && dirs.size > 0) {
      // One syncfs covers every name, the present objects' too.
      await runSyncfs(objects.layout.tmp);
      objects.presentNames(presentIds, new Set(), ready);
    } else {
      objects.presentNames(presentIds, dirs, ready);
      await syncDirs(dirs);
    }
    if (failure === undefined) objects.markReady(ready);
  } catch (err) {
    failure ??= ioError(err, 'fsync', 'objects/');
  }
  if (failure !== undefined) throw ioError(failure, 'publish', 'objects/');
  return out;
}

/**
 * Makes durable the names published into `dirs` by {@link Objects.publishSync} (an import's large
 * records, published one by one as their bytes became durable) or left by {@link admitGroup}'s
 * `names`: one `syncfs` where sound (the group's strategy) and more than a few folders changed,
 * else each folder fsynced once; then marks `ready`. An `io` error if a sync fails (nothing is
 * marked ready then).
 */
export async function syncNames(
  objects: Objects,
  dirs: ReadonlySet<string>,
  ready: ReadonlySet<string>,
): Promise<void> {
  if (dirs.size > 0) {
    try {
      if (dirs.size > FEW_FILES && (await groupStrategy(objects.layout.tmp)) === 'syncfs')
        await runSyncfs(objects.layout.tmp);
      else await syncDirs(dirs);
    } catch (err) {
      throw ioError(err, 'fsync', 'objects/');
    }
  }
  objects.markReady(ready);
}

/** fsyncs each folder once, {@link FILE_SYNCS} at a time (parents of new folders first: `dirs` is in creation order). */
async function syncDirs(dirs: ReadonlySet<string>): Promise<void> {
  const list = [...dirs];
  let next = 0;
  const one = async (): Promise<void> => {
    while (next < list.length) await syncDir(list[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(FILE_SYNCS, list.length) }, one));
}
