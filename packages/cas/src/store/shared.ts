/**
 * One store, several Unix users (docs/store.md "Shared stores"): `tfs init --shared [--group G]`
 * makes every folder of the store group-writable and setgid (new entries inherit the group), the
 * metadata database group-writable (SQLite gives its `-wal` and `-shm` files the database file's
 * mode, whoever creates them), and marks the store shared by the root folder's own mode (setgid
 * and group-writable). A process opening a shared store writes with the group bits its umask
 * would strip put back, so no user's umask can make an object, a folder or a ref unusable by the
 * others; the modes a shared store relies on are also set explicitly where this package creates
 * folders and the database.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { TensorFSError } from '@tensorfs/format';
import { errnoOf, ioError } from './fsutil.js';
import type { Layout } from './layout.js';

/** Mode of every folder of a shared store: rwx for owner and group, setgid, r-x for others. */
export const SHARED_DIR_MODE = 0o2775;
/** Mode of the metadata database (and so of its `-wal` and `-shm` files) in a shared store. */
export const SHARED_DB_MODE = 0o664;

/** True when the store at `root` is shared: its root folder is setgid and group-writable. */
export function isSharedRoot(root: string): boolean {
  try {
    const st = fs.statSync(root);
    return st.isDirectory() && (st.mode & 0o2020) === 0o2020;
  } catch {
    return false;
  }
}

/**
 * For a process writing a shared store: clears the group bits of the process umask (they would
 * strip group write or read from what it creates), keeping the rest. Returns the umask before.
 */
export function sharedUmask(): number {
  const before = process.umask();
  if ((before & 0o070) !== 0) process.umask(before & 0o707);
  return before;
}

/** The numeric id of group `group` (a name or a number); `not_found` `store.no_such_group` if none. */
export function resolveGroup(group: string | number): number {
  if (typeof group === 'number' || /^\d+$/.test(group)) {
    const gid = Number(group);
    if (!Number.isSafeInteger(gid) || gid < 0) throw badGroup(String(group));
    return gid;
  }
  if (!/^[A-Za-z0-9_.][A-Za-z0-9_.-]*\$?$/.test(group)) throw badGroup(group);
  let line: string;
  try {
    line = execFileSync('getent', ['group', group], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    throw new TensorFSError('not_found', `no such group: ${group}`, {
      details: { rule: 'store.no_such_group', group },
    });
  }
  const gid = Number(line.split(':')[2]);
  if (!Number.isSafeInteger(gid)) throw badGroup(group);
  return gid;
}

function badGroup(group: string): TensorFSError {
  return new TensorFSError('invalid_argument', `not a group name or id: ${group}`, {
    details: { rule: 'store.bad_group', group },
  });
}

/**
 * Gives `path` group `gid` (unless undefined) and `mode`; `denied` `store.shared_permission`
 * when this user may not (not the owner, or not a member of the group).
 */
export function shareEntry(path: string, mode: number, gid: number | undefined, rel: string): void {
  try {
    if (gid !== undefined) {
      const st = fs.lstatSync(path);
      if (st.gid !== gid) fs.lchownSync(path, -1, gid);
    }
    fs.chmodSync(path, mode);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'EPERM' || code === 'EACCES') {
      throw new TensorFSError('denied', 'cannot give this store entry to the group (owner or group member only)', {
        details: { rule: 'store.shared_permission', path: rel, errno: code, ...(gid !== undefined ? { gid } : {}) },
      });
    }
    throw ioError(err, 'share', rel);
  }
}

/**
 * Makes an existing store layout shared: every folder {@link SHARED_DIR_MODE}, every file keeps
 * its owner bits with group read (and write for the database files), all in group `gid` when
 * given. Walks the whole tree (objects included), once, at `tfs init --shared`.
 */
export function shareLayout(layout: Layout, gid: number | undefined): void {
  const walk = (dir: string, rel: string): void => {
    shareEntry(dir, SHARED_DIR_MODE, gid, rel || '.');
    let names: fs.Dirent[];
    try {
      names = fs.readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      throw ioError(err, 'readdir', rel || '.');
    }
    for (const d of names) {
      const p = join(dir, d.name);
      const r = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) walk(p, r);
      else if (d.isFile()) {
        const isDb = p === layout.db || p.startsWith(`${layout.db}-`);
        const mode = isDb ? SHARED_DB_MODE : (fs.statSync(p).mode & 0o777) | 0o040;
        shareEntry(p, mode, gid, r);
      }
    }
  };
  walk(layout.root, '');
}
