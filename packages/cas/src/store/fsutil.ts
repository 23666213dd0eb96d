/**
 * Filesystem primitives with the durability steps of docs/store.md: unique exclusive temps,
 * fsync of files and directories, atomic replacement. Every OS error becomes a TensorFSError.
 */
import { checkString } from './args.js';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { TensorFSError, isTensorFSError } from '@tensorfs/format';

/** Directory fsync errors that mean "this filesystem cannot do that" (restic tolerates the same; docs/store.md). */
const DIR_SYNC_UNSUPPORTED = new Set(['EISDIR', 'EPERM', 'EINVAL', 'ENOTSUP', 'EBADF', 'EACCES']);

/** Short host name used in temp names so a GC on this host can tell dead writers by pid. */
export const HOST =
  hostname()
    .replace(/[^A-Za-z0-9.-]/g, '_')
    .slice(0, 64) || 'host';

/**
 * Turns a thrown OS error into `io` (or passes a TensorFSError through). `op` and `path` go into
 * details; `path` must be store-relative, never absolute.
 */
export function ioError(err: unknown, op: string, path?: string): TensorFSError {
  if (isTensorFSError(err)) return err;
  const errno = (err as NodeJS.ErrnoException | undefined)?.code;
  return new TensorFSError('io', `${op} failed${errno ? ` (${errno})` : ''}`, {
    details: { rule: 'store.io', op, ...(errno ? { errno } : {}), ...(path ? { path } : {}) },
    cause: err,
  });
}

/** The errno code of an error, if any. */
export function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** A unique temp file name: `<host>-<pid>-<random>.tmp` (the pid lets GC recognise dead writers). */
export function tempName(): string {
  return `${HOST}-${process.pid}-${randomBytes(8).toString('hex')}.tmp`;
}

/**
 * A unique temp beside `dest` (export, symlink replacement): `.<dest name>.<tempName()>`, hidden,
 * in `dest`'s folder so the final rename stays on one filesystem; the same scheme as the store's.
 */
export function siblingTemp(dest: string): string {
  checkString(dest, 'dest');
  return join(dirname(dest), `.${basename(dest).slice(0, 100)}.${tempName()}`);
}

/** Parses a temp name back into its host and pid, or null if it is not one of ours. */
export function parseTempName(name: string): { host: string; pid: number } | null {
  const m = /^(.+)-(\d+)-[0-9a-f]{16}\.tmp$/.exec(name);
  return m ? { host: m[1]!, pid: Number(m[2]) } : null;
}

/** True if process `pid` is alive on this host. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoOf(err) === 'EPERM';
  }
}

/** fsyncs a directory so a new, renamed or removed entry survives power loss; tolerates filesystems that refuse. */
export function fsyncDirSync(dir: string): void {
  let fd: number;
  try {
    fd = fs.openSync(dir, 'r');
  } catch (err) {
    if (DIR_SYNC_UNSUPPORTED.has(errnoOf(err) ?? '')) return;
    throw err;
  }
  try {
    fs.fsyncSync(fd);
  } catch (err) {
    if (!DIR_SYNC_UNSUPPORTED.has(errnoOf(err) ?? '')) throw err;
  } finally {
    fs.closeSync(fd);
  }
}

/** Async {@link fsyncDirSync}. */
export async function fsyncDir(dir: string): Promise<void> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(dir, 'r');
  } catch (err) {
    if (DIR_SYNC_UNSUPPORTED.has(errnoOf(err) ?? '')) return;
    throw err;
  }
  try {
    await fh.sync();
  } catch (err) {
    if (!DIR_SYNC_UNSUPPORTED.has(errnoOf(err) ?? '')) throw err;
  } finally {
    await fh.close();
  }
}

/**
 * Creates `dir` and any missing parents, fsyncing the parent of each directory it created so the
 * new entries are durable. `stop` bounds the walk (an existing ancestor, e.g. the store root).
 */
export async function mkdirDurable(dir: string): Promise<void> {
  const created = mkdirsSync(dir);
  if (created === undefined) return;
  for (const p of parentsToSync(dir, created)) await fsyncDir(p);
}

/** Sync twin of {@link mkdirDurable}. */
export function mkdirDurableSync(dir: string): void {
  const created = mkdirsSync(dir);
  if (created === undefined) return;
  for (const p of parentsToSync(dir, created)) fsyncDirSync(p);
}

/**
 * `mkdir -p` that cannot spin: finds the nearest existing ancestor (at most one step per path
 * component), then creates each missing level once; any failure is thrown as is. (Node's
 * recursive mkdir loops forever where mkdir answers ENOENT under an existing folder, as in
 * `/proc/self/x`.) Returns the outermost folder it created, or undefined if `dir` existed.
 */
function mkdirsSync(dir: string): string | undefined {
  const missing: string[] = [];
  for (let d = dir; ; ) {
    try {
      if (fs.statSync(d).isDirectory()) break;
      // An existing non-folder: let mkdir report it (EEXIST / ENOTDIR).
      fs.mkdirSync(d);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err;
    }
    missing.push(d);
    const up = dirname(d);
    if (up === d) break;
    d = up;
  }
  for (const d of missing.reverse()) {
    try {
      fs.mkdirSync(d);
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST' || !fs.statSync(d).isDirectory()) throw err;
    }
  }
  return missing[0];
}

/**
 * Replaces `dest` atomically with `data`: an exclusive temp in `tmpDir` (same filesystem), fsync,
 * rename over `dest`, fsync of `dest`'s directory. Synchronous so it can run inside an SQLite
 * transaction without interleaving with other work of this process.
 */
export function replaceFileSync(tmpDir: string, dest: string, data: string | Uint8Array, mode = 0o644): void {
  const tmp = `${tmpDir}/${tempName()}`;
  const fd = fs.openSync(tmp, 'wx', mode);
  try {
    try {
      fs.writeFileSync(fd, data);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, dest);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fsyncDirSync(dirname(dest));
}

/**
 * `created` is the first directory `mkdir -p` made on the way to `dir`: the directories whose
 * entries changed are its parent and every directory down to `dir`'s parent, outermost first.
 */
function parentsToSync(dir: string, created: string): string[] {
  const parents: string[] = [];
  for (let d = dir; d.length >= created.length; d = dirname(d)) {
    parents.push(dirname(d));
    if (d === created) break;
  }
  return parents.reverse();
}

/** `conflict`: a file being read ended at `offset`, before its size when opened. */
export function shrank(message: string, offset: number): TensorFSError {
  return new TensorFSError('conflict', message, { details: { rule: 'store.file_shrank', offset } });
}

/** Bytes per chunk when the store streams or copies a file (reads, exports, imports, hashing). */
export const CHUNK_BYTES = 8 << 20;

/**
 * Most bytes one buffered `write`/`writev` call takes. On the development VM (Linux 6.1, ext4; the
 * session-6 summary in docs/benchmarks.md), in some states of the host 1 GiB into the page cache
 * cost 0.2–0.3 s of system CPU in writes of 64–512 KiB against 0.7–1.1 s in 1 MiB writes and
 * 1.3–2 s in 4 MiB ones; in others every size cost the same. The extra syscalls of small pieces
 * cost a few milliseconds per GiB.
 */
export const WRITE_PIECE = 256 << 10;

/**
 * Fills all of `target` from `fh` at `position`. An OS failure is `io` (with `path`, which must be
 * store-relative or a bare name); the file ending first is the caller's error (`short(at)`, given
 * the absolute offset where bytes ran out): `corrupt` for an object, `conflict` for a file that
 * shrank while being read.
 */
export async function readFully(
  fh: fsp.FileHandle,
  position: number,
  target: Uint8Array,
  short: (at: number) => TensorFSError,
  path?: string,
): Promise<void> {
  let done = 0;
  while (done < target.length) {
    let bytesRead: number;
    try {
      ({ bytesRead } = await fh.read(target, done, target.length - done, position + done));
    } catch (err) {
      throw ioError(err, 'read', path);
    }
    if (bytesRead === 0) throw short(position + done);
    done += bytesRead;
  }
}

/** Writes all of `bytes` at `position` (or at the current position when null) in pieces of {@link WRITE_PIECE}; OS failures are `io`. */
export async function writeFully(
  fh: fsp.FileHandle,
  bytes: Uint8Array,
  position: number | null = null,
  path?: string,
): Promise<void> {
  let done = 0;
  try {
    while (done < bytes.length) {
      const { bytesWritten } = await fh.write(
        bytes,
        done,
        Math.min(WRITE_PIECE, bytes.length - done),
        position === null ? null : position + done,
      );
      done += bytesWritten;
    }
  } catch (err) {
    throw ioError(err, 'write', path);
  }
}
