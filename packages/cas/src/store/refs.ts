/**
 * Refs: `refs/<name>` files holding one id and a newline, replaced atomically (temp + fsync +
 * rename + directory fsync). Every change runs inside an SQLite `BEGIN IMMEDIATE` transaction, so
 * the compare-and-swap is race-free across processes, and a crashed writer's lock vanishes with it
 * (no stale lock files). Each change that can make objects reachable bumps the GC epoch.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { type ObjectId, TensorFSError } from '@tensorfs/format';
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

/** Reads a ref synchronously; null if it does not exist. */
export function readRefSync(layout: Layout, name: string): ObjectId | null {
  let text: string;
  try {
    text = fs.readFileSync(refFile(layout, name), 'utf8');
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return null;
    throw ioError(err, 'read ref', `refs/${name}`);
  }
  return parseRefContent(name, text);
}

/** Reads a ref; null if it does not exist. */
export async function readRef(layout: Layout, name: string): Promise<ObjectId | null> {
  let text: string;
  try {
    text = await fsp.readFile(refFile(layout, name), 'utf8');
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return null;
    throw ioError(err, 'read ref', `refs/${name}`);
  }
  return parseRefContent(name, text);
}

function checkExpected(name: string, current: ObjectId | null, expected: ObjectId | null | undefined): void {
  if (expected !== undefined && expected !== current) {
    throw new TensorFSError('conflict', 'ref changed meanwhile (compare-and-swap failed)', {
      details: { ref: name, expected, actual: current },
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
    checkExpected(name, readRefSync(layout, name), expected);
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
    const current = readRefSync(layout, name);
    if (current === null) throw new TensorFSError('not_found', 'no such ref', { details: { ref: name } });
    checkExpected(name, current, expected);
    try {
      fs.unlinkSync(file);
      fsyncDirSync(dirname(file));
      pruneEmptyDirs(layout.refs, dirname(file));
    } catch (err) {
      throw ioError(err, 'delete ref', `refs/${name}`);
    }
  });
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

/** Every ref, sorted by name. */
export async function listRefs(layout: Layout): Promise<RefEntry[]> {
  let entries: fs.Dirent[];
  try {
    entries = await fsp.readdir(layout.refs, { withFileTypes: true, recursive: true });
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return [];
    throw ioError(err, 'list refs', 'refs/');
  }
  const out: RefEntry[] = [];
  for (const e of entries) {
    if (!e.isFile()) continue;
    const name = relative(layout.refs, join(e.parentPath, e.name)).split(sep).join('/');
    if (!isRefName(name)) continue; // a stray file (editor backup, OS metadata) is not a ref
    const id = await readRef(layout, name);
    if (id !== null) out.push({ name, id });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
