/**
 * Refs: `refs/<name>` files holding one id and a newline, replaced atomically (temp + fsync +
 * rename + directory fsync). Every change runs inside an SQLite `BEGIN IMMEDIATE` transaction, so
 * the compare-and-swap is race-free across processes, and a crashed writer's lock vanishes with it
 * (no stale lock files). Each change that can make objects reachable bumps the GC epoch.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { type ObjectId, TensorFSError, isTensorFSError } from '@tensorfs/format';
import { type Db, bumpEpoch, immediate } from './db.js';
import { errnoOf, fsyncDirSync, ioError, mkdirDurableSync, replaceFileSync } from './fsutil.js';
import { type Layout, isRefName, parseRefContent, validateRefName } from './layout.js';

/** A ref and the id it names. */
export interface RefEntry {
  name: string;
  id: ObjectId;
}

function refFile(layout: Layout, name: string): string {
  return join(layout.refs, ...validateRefName(name).split('/'));
}

/** A ref file is one id and a newline: anything longer is not a ref. */
const MAX_REF_FILE = 256;

/** `corrupt`: something in refs/ is not a regular file the store wrote (symlink, FIFO, socket, device). */
function notRegular(name: string, kind: string): TensorFSError {
  return new TensorFSError(
    'corrupt',
    `refs/${name} is a ${kind}, not a ref file; remove it (tfs ref rm ${name}) or set it again`,
    { details: { rule: 'ref.not_regular', ref: name, actual: kind } },
  );
}

function kindOfStat(st: fs.Stats): string {
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isFIFO()) return 'FIFO';
  if (st.isSocket()) return 'socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'device';
  return 'special file';
}

/**
 * Reads a ref synchronously; null if it does not exist (or is a folder of refs). The file is
 * opened without following a symlink and without blocking on a FIFO; anything but a regular file
 * is `corrupt` naming it: a ref the store did not write is neither followed nor ignored.
 */
export function readRefSync(layout: Layout, name: string): ObjectId | null {
  const file = refFile(layout, name);
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return null;
    if (code === 'ELOOP') throw notRegular(name, 'symlink');
    if (code === 'ENXIO') throw notRegular(name, 'socket');
    throw ioError(err, 'read ref', `refs/${name}`);
  }
  try {
    const st = fs.fstatSync(fd);
    if (st.isDirectory()) return null;
    if (!st.isFile()) throw notRegular(name, kindOfStat(st));
    const buf = Buffer.alloc(MAX_REF_FILE + 1);
    let n = 0;
    for (let got = -1; got !== 0 && n < buf.length; n += got) got = fs.readSync(fd, buf, n, buf.length - n, n);
    if (n > MAX_REF_FILE) {
      throw new TensorFSError('corrupt', 'ref file is not one id and a newline', {
        details: { rule: 'ref.content', ref: name },
      });
    }
    return parseRefContent(name, buf.subarray(0, n).toString('utf8'));
  } catch (err) {
    throw ioError(err, 'read ref', `refs/${name}`);
  } finally {
    fs.closeSync(fd);
  }
}

/** Reads a ref; null if it does not exist. See {@link readRefSync}. */
export async function readRef(layout: Layout, name: string): Promise<ObjectId | null> {
  return readRefSync(layout, name);
}

function checkExpected(name: string, current: ObjectId | null, expected: ObjectId | null | undefined): void {
  if (expected !== undefined && expected !== current) {
    const why =
      expected === null
        ? 'ref already exists (it was expected not to)'
        : current === null
          ? 'ref does not exist (it was expected to hold an id)'
          : 'ref holds another id than expected (compare-and-swap failed)';
    throw new TensorFSError('conflict', why, {
      details: { rule: 'store.ref_cas', ref: name, expected, actual: current },
    });
  }
}

/**
 * Compare-and-swap of a ref. `expected` undefined: unconditional; null: the ref must not exist;
 * an id: the ref must hold it. `check` runs under the lock before the write (closure present,
 * lease alive). Publishes durably and bumps the GC epoch in the same transaction.
 */
export function writeRef(
  db: Db,
  layout: Layout,
  name: string,
  id: ObjectId,
  expected: ObjectId | null | undefined,
  check: () => void,
): void {
  const file = refFile(layout, name);
  immediate(db, () => {
    // An unconditional set replaces a damaged ref (rename replaces a symlink, not its target).
    const current = currentForUpdate(layout, name, expected, () => true);
    checkExpected(name, current, expected);
    check();
    try {
      mkdirDurableSync(dirname(file));
      replaceFileSync(layout.tmp, file, `${id}\n`);
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'ENOTDIR' || code === 'EISDIR' || code === 'EEXIST') {
        throw new TensorFSError('conflict', 'ref name collides with an existing ref namespace', {
          details: { ref: name, rule: 'store.ref_namespace' },
        });
      }
      throw ioError(err, 'write ref', `refs/${name}`);
    }
    bumpEpoch(db, id);
  });
}

/** Deletes a ref (compare-and-swap when `expected` is given); `not_found` if absent. */
export function removeRef(db: Db, layout: Layout, name: string, expected: ObjectId | undefined): void {
  const file = refFile(layout, name);
  immediate(db, () => {
    // A damaged ref (bad content, a symlink, a FIFO) can be removed, but not compared.
    const current = currentForUpdate(layout, name, expected, () => lexists(file));
    if (current === null && !(expected === undefined && lexists(file) && !isDir(file)))
      throw new TensorFSError('not_found', 'no such ref', { details: { rule: 'store.no_ref', ref: name } });
    if (current !== null) checkExpected(name, current, expected);
    // A deleted ref is no longer cached: the same name set again later is saved unless marked.
    db.prepare('DELETE FROM cached_refs WHERE name = ?').run(name);
    try {
      fs.unlinkSync(file);
      fsyncDirSync(dirname(file));
      pruneEmptyDirs(layout.refs, dirname(file));
    } catch (err) {
      throw ioError(err, 'delete ref', `refs/${name}`);
    }
  });
}

/**
 * A ref's value before an update. A damaged ref (`corrupt`) reads as null when the update is
 * unconditional (`expected` undefined) and `usable()` says it can act on it; otherwise, and for
 * any other error, the read's error is thrown.
 */
function currentForUpdate(
  layout: Layout,
  name: string,
  expected: ObjectId | null | undefined,
  usable: () => boolean,
): ObjectId | null {
  try {
    return readRefSync(layout, name);
  } catch (err) {
    if (!isTensorFSError(err) || err.code !== 'corrupt' || expected !== undefined || !usable()) throw err;
    return null;
  }
}

function lexists(file: string): boolean {
  try {
    fs.lstatSync(file);
    return true;
  } catch {
    return false;
  }
}

function isDir(file: string): boolean {
  try {
    return fs.lstatSync(file).isDirectory();
  } catch {
    return false;
  }
}

function pruneEmptyDirs(top: string, dir: string): void {
  while (dir !== top && dir.startsWith(top + sep)) {
    try {
      fs.rmdirSync(dir);
    } catch {
      return;
    }
    fsyncDirSync(dirname(dir));
    dir = dirname(dir);
  }
}

/** What is in refs/: the readable refs, and the entries that are not (named store-relative). */
export interface RefScan {
  refs: RefEntry[];
  /**
   * Entries of refs/ that are not readable refs, sorted by name: anything that is not a regular
   * file (`ref.not_regular`), and ref files that cannot be read or do not hold one id and a
   * newline (`ref.content`), each with the error a read of it gives.
   */
  bad: { name: string; error: TensorFSError }[];
}

/**
 * Walks refs/ without following symlinks (a linked folder is not descended into). Regular files
 * with a valid ref name are read; other regular files are strays (editor backups) and ignored;
 * anything else, and a ref file that cannot be read or parsed, is listed in `bad`: one bad ref
 * never hides the others.
 */
export async function scanRefs(layout: Layout): Promise<RefScan> {
  const out: RefScan = { refs: [], bad: [] };
  const walk = async (dir: string): Promise<void> => {
    let entries: fs.Dirent[];
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (errnoOf(err) === 'ENOENT' && dir === layout.refs) return;
      throw ioError(err, 'list refs', 'refs/');
    }
    for (const e of entries) {
      const abs = join(dir, e.name);
      const name = relative(layout.refs, abs).split(sep).join('/');
      if (e.isDirectory()) await walk(abs);
      else if (e.isFile()) {
        if (!isRefName(name)) continue; // a stray file (editor backup, OS metadata) is not a ref
        try {
          const id = readRefSync(layout, name);
          if (id !== null) out.refs.push({ name, id });
        } catch (err) {
          out.bad.push({ name, error: ioError(err, 'read ref', `refs/${name}`) });
        }
      } else {
        const kind = e.isSymbolicLink() ? 'symlink' : e.isFIFO() ? 'FIFO' : e.isSocket() ? 'socket' : 'device';
        out.bad.push({ name, error: notRegular(name, kind) });
      }
    }
  };
  await walk(layout.refs);
  const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  out.refs.sort(byName);
  out.bad.sort(byName);
  return out;
}

/**
 * Every ref, sorted by name. Anything in refs/ that is not a readable ref makes the whole listing
 * fail (the first such entry's error, `details.refs` naming them all): GC and verify start here,
 * and a ref they could not see would have its objects collected. Listings that should show what
 * they can use {@link scanRefs}.
 */
export async function listRefs(layout: Layout): Promise<RefEntry[]> {
  const scan = await scanRefs(layout);
  const first = scan.bad[0];
  if (first !== undefined) {
    throw new TensorFSError(first.error.code, first.error.message, {
      details: { ...first.error.details, refs: scan.bad.map((b) => b.name) },
      cause: first.error.cause,
    });
  }
  return scan.refs;
}
