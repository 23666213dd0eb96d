/**
 * A local store's lifecycle: where it lives by default, opening its layout and metadata (read-write,
 * read-only, from read-only media), and `tfs init` (with `--shared`). {@link LocalStore} wires
 * what these return.
 */
import * as fsp from 'node:fs/promises';
import * as fs from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Capability } from '@tensorfs/format/store';
import { TensorFSError, isTensorFSError } from '@tensorfs/format';
import { type Db, damagedMetadata, openDb } from './db.js';
import { errnoOf, ioError, mkdirDurable } from './fsutil.js';
import { isSharedRoot, resolveGroup, SHARED_DIR_MODE, shareEntry, shareLayout, sharedUmask } from './shared.js';
import { type Layout, layoutOf } from './layout.js';
import { checkOptions, checkString } from './args.js';

/** Options of {@link LocalStore.init}. */
export interface InitOptions {
  /** A store the users of a group can all read and write at once (docs/store.md "Shared stores"). */
  shared?: boolean;
  /** The group (a name or a gid) that shares it (default: the root folder's group). Needs `shared`. */
  group?: string | number;
}

/** What {@link LocalStore.init} did. */
export interface InitResult {
  /** The store's root folder (absolute). */
  root: string;
  /** False when a store was there already (then adopted: made shared if asked). */
  created: boolean;
  /** True when the store is shared. */
  shared: boolean;
  /** The root folder's group. */
  gid: number;
}

/** Options of {@link openStore} and {@link LocalStore.open}. */
export interface StoreOptions {
  /** Open without writing anything (no layout creation, no migrations); every mutation is `denied`. */
  readOnly?: boolean;
  /** GC grace period: unreachable objects younger than this are kept (default 1 hour). */
  graceMs?: number;
  /**
   * Start an empty `metadata.sqlite3` when it is missing or empty although the store holds refs or
   * objects (default: refuse with `corrupt`, since roots and the quarantine list would be lost
   * silently). Objects and refs are kept; re-add roots and run a verify with data afterwards.
   */
  recreateMetadata?: boolean;
  /**
   * Writes of large new objects with `O_DIRECT` where the OS and filesystem allow it (Linux; a
   * filesystem that refuses, such as tmpfs before Linux 6.6, gets buffered writes): the device
   * reads the writer's buffer, saving the CPU of copying every byte into the page cache. Default
   * (undefined): an import's records of 256 KiB or more are written direct, parts (`openPart`) as
   * their caller asks, buffered when it does not say (fetch on read, whose read follows at once).
   * `true`: parts direct too. `false`: everything through the page cache. The price: directly
   * written objects are not in the page cache, so their first read comes from the disk
   * (docs/store.md "Direct I/O"). `TENSORFS_DIRECT_IO=1` / `=0` in the environment sets `true` /
   * `false`.
   */
  directIO?: boolean;
  /**
   * Record when refs and objects are used (resolved, read), for the cache's least-recently-used
   * order and the reader lease that keeps a cached ref this process reads from eviction (docs/store.md
   * "Cache"). Recorded in memory and written at most every `useFlushMs` and at close. Default: on
   * for a read-write store; a read-only one records through a side connection when this is true,
   * and silently not at all where the metadata cannot be written (read-only media).
   */
  recordUse?: boolean;
  /** Longest delay before recorded use is written (default 30 s; 0 writes every use at once). */
  useFlushMs?: number;
}

/** Default GC grace period. */
export const DEFAULT_GRACE_MS = 3600_000;

/** `TENSORFS_HOME`, else `~/.cache/tensorfs`. */
export function defaultRoot(): string {
  const env = process.env.TENSORFS_HOME;
  return env && env.length > 0 ? resolve(env) : join(homedir(), '.cache', 'tensorfs');
}

/**
 * Every capability of the contract; read-only, none that writes (`put`, `setRef`… are then
 * refused, `invalid_argument` rule `store.read_only`).
 */
export function capabilitiesOf(readOnly: boolean): ReadonlySet<Capability> {
  return new Set<Capability>(
    readOnly
      ? ['refs.list', 'objects.stream']
      : [
          'objects.write',
          'refs.write',
          'refs.delete',
          'refs.list',
          'refs.closure',
          'leases',
          'objects.batch',
          'objects.part',
          'objects.stream',
        ],
  );
}

/**
 * Opens the store at `root` and hands its layout and metadata connection to `make` (with the
 * private copy of the metadata when the store is on read-only media, removed again when `make`
 * throws). Read-write: creates the layout durably and `metadata.sqlite3` (WAL), then runs pending
 * migrations. Read-only: the store must exist; nothing is written.
 */
export async function openLocal<S>(
  root: string,
  options: StoreOptions,
  make: (layout: Layout, db: Db, scratch?: string) => S,
): Promise<S> {
  checkString(root, 'root');
  checkOptions(options);
  if (options.graceMs !== undefined && (!Number.isSafeInteger(options.graceMs) || options.graceMs < 0)) {
    throw new TensorFSError('invalid_argument', 'graceMs must be a non-negative integer', {
      details: { rule: 'gc.bad_grace', actual: options.graceMs },
    });
  }
  const layout = layoutOf(resolve(root));
  // A shared store (docs/store.md "Shared stores"): what this process creates keeps its group bits.
  if (!options.readOnly && isSharedRoot(layout.root)) sharedUmask();
  if (options.readOnly) {
    await refuseLostMetadata(layout);
    try {
      await fsp.access(layout.db);
    } catch {
      throw new TensorFSError('not_found', 'no store at this path', { details: { rule: 'store.no_metadata' } });
    }
  } else {
    if (!options.recreateMetadata) await refuseLostMetadata(layout);
    try {
      for (const d of [layout.objects, layout.tmp, layout.refs]) await mkdirDurable(d);
    } catch (err) {
      throw ioError(err, 'create store layout');
    }
  }
  if (!options.readOnly) return make(layout, openDb(layout.db, false));
  try {
    return make(layout, openDb(layout.db, true));
  } catch (err) {
    // Read-only media (a CD, a read-only mount, a folder we may not write): SQLite cannot
    // create the WAL index (-shm) it needs even to read. Read a private copy of the metadata
    // instead; nothing on such media can change under it.
    if (!isTensorFSError(err) || err.details.errno !== 'SQLITE_CANTOPEN' || canWrite(layout.root)) throw err;
    const copy = await copyMetadata(layout);
    try {
      return make(layout, openDb(join(copy, 'metadata.sqlite3'), true), copy);
    } catch (e) {
      await fsp.rm(copy, { recursive: true, force: true });
      throw e;
    }
  }
}

/**
 * Creates a store at `root` (or adopts the one there) through `open` (opened and closed again)
 * and, with `shared`, makes it one that the users of a group can all read and write at once.
 * See {@link LocalStore.init}.
 */
export async function initStore(
  root: string,
  options: InitOptions,
  open: (root: string) => Promise<{ close(): Promise<void> }>,
): Promise<InitResult> {
  checkString(root, 'root');
  checkOptions(options);
  const layout = layoutOf(resolve(root));
  const gid = options.group === undefined ? undefined : resolveGroup(options.group);
  if (gid !== undefined && !options.shared) {
    throw new TensorFSError('invalid_argument', '--group needs --shared', {
      details: { rule: 'store.group_needs_shared' },
    });
  }
  const existed = fs.existsSync(layout.db);
  if (options.shared) {
    sharedUmask();
    try {
      fs.mkdirSync(layout.root, { recursive: true });
    } catch (err) {
      throw ioError(err, 'create store layout');
    }
    // The root first: the layout created below inherits its group and setgid.
    shareEntry(layout.root, SHARED_DIR_MODE, gid, '.');
  }
  const store = await open(layout.root);
  await store.close();
  if (options.shared) shareLayout(layout, gid);
  const st = fs.statSync(layout.root);
  return { root: layout.root, created: !existed, shared: isSharedRoot(layout.root), gid: st.gid };
}

/**
 * `corrupt` when metadata.sqlite3 is missing or empty but the store holds refs or objects: opening
 * would silently start a new database, losing roots and the quarantine list.
 */
async function refuseLostMetadata(layout: Layout): Promise<void> {
  let size: number | null = null;
  try {
    size = (await fsp.stat(layout.db)).size;
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') return; // let the open report it
  }
  if (size !== null && size > 0) return;
  const entries = async (d: string) => (await fsp.readdir(d).catch(() => [] as string[])).length;
  if ((await entries(layout.refs)) + (await entries(layout.objects)) === 0) return;
  throw damagedMetadata(size === null ? 'the file is missing' : 'the file is empty', undefined, true);
}

/** True if this process may create files in `dir`. */
function canWrite(dir: string): boolean {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Copies metadata.sqlite3 (and its -wal, if any) into a new private temp folder. */
async function copyMetadata(layout: Layout): Promise<string> {
  const dir = await fsp.mkdtemp(join(tmpdir(), 'tensorfs-ro-'));
  try {
    await fsp.copyFile(layout.db, join(dir, 'metadata.sqlite3'));
    await fsp.copyFile(`${layout.db}-wal`, join(dir, 'metadata.sqlite3-wal')).catch((err) => {
      if (errnoOf(err) !== 'ENOENT') throw err;
    });
    return dir;
  } catch (err) {
    await fsp.rm(dir, { recursive: true, force: true });
    throw ioError(err, 'copy metadata from read-only media', 'metadata.sqlite3');
  }
}
