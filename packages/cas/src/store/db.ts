/**
 * `metadata.sqlite3`: roots, leases, the cache (cached refs, fetched-on-read objects), quarantined
 * objects and GC state.
 * WAL mode, a busy timeout, and a schema versioned with `PRAGMA user_version` migrations.
 *
 * Existence of an object is never recorded here: it is always an fs stat of the object file, so no
 * stale row can make a writer skip an object that GC has removed (docs/store.md, "Where the rules
 * come from").
 */
import Database from 'better-sqlite3';
import { TensorFSError, isTensorFSError } from '@tensorfs/format';

/** The better-sqlite3 connection type. */
export type Db = Database.Database;

/** How long a connection waits for another process's write transaction before `unavailable`. */
export const BUSY_TIMEOUT_MS = 30_000;

/**
 * Each migration brings the schema from version `i` to `i + 1`. Never edit a shipped one; append.
 * (Exported for tests that make a store of an older version.)
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE roots (
    id TEXT PRIMARY KEY,
    reason TEXT NOT NULL,
    created_ms INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE leases (
    id TEXT PRIMARY KEY,
    purpose TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE lease_objects (
    lease_id TEXT NOT NULL REFERENCES leases(id) ON DELETE CASCADE,
    object_id TEXT NOT NULL,
    PRIMARY KEY (lease_id, object_id)
  ) WITHOUT ROWID;
  CREATE INDEX lease_objects_by_object ON lease_objects(object_id);
  CREATE TABLE cache_entries (
    id TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    origin TEXT NOT NULL,
    last_access_ms INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE corrupt_objects (
    id TEXT PRIMARY KEY,
    found_ms INTEGER NOT NULL,
    reason TEXT NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE gc_state (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) WITHOUT ROWID;
  INSERT INTO gc_state(key, value) VALUES ('epoch', '0');
  `,
  `
  CREATE TABLE ref_log (
    epoch INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    created_ms INTEGER NOT NULL
  );
  `,
  // The cache (docs/store.md "Cache"): a ref without a row here is saved (so every ref of an older
  // store stays saved); a row marks it cached while the ref holds `id` (a ref set to anything
  // else, by any means, reads as saved). Cached objects (fetched on read) are `cache_entries`.
  `
  CREATE TABLE cached_refs (
    name TEXT PRIMARY KEY,
    id TEXT NOT NULL,
    added_ms INTEGER NOT NULL,
    last_use_ms INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX cache_entries_by_use ON cache_entries(last_access_ms);
  `,
  // Lease claims appended in arrival order (docs/store.md "Leases"): a claim is an append to the
  // end of both B-trees, where `lease_objects` put a random key into two (its primary key and its
  // index by object), which at a million claims cost each claim its own dirty leaves (×28 per
  // 10×). AUTOINCREMENT: a sequence is never reused, even after the rows above it are deleted, so
  // a GC that has seen the claims up to `seq` learns every later claim as `seq > it`. The index by
  // lease holds (lease_id, seq): a lease's claims are a range of it (release, the reader lease).
  `
  CREATE TABLE lease_claims (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    lease_id TEXT NOT NULL REFERENCES leases(id) ON DELETE CASCADE,
    object_id TEXT NOT NULL
  );
  CREATE INDEX lease_claims_by_lease ON lease_claims(lease_id);
  INSERT INTO lease_claims(lease_id, object_id) SELECT lease_id, object_id FROM lease_objects;
  DROP TABLE lease_objects;
  `,
];

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** Opens (and in read-write mode creates and migrates) the metadata database. */
export function openDb(file: string, readOnly: boolean): Db {
  let db: Db;
  try {
    db = new Database(file, { readonly: readOnly, fileMustExist: readOnly, timeout: BUSY_TIMEOUT_MS });
  } catch (err) {
    throw sqliteError(err, 'open');
  }
  try {
    if (!readOnly) {
      db.pragma('journal_mode = WAL');
      // NORMAL in WAL mode survives a process crash; operations that must survive power loss
      // (roots) switch to FULL around their commit (see durably()).
      db.pragma('synchronous = NORMAL');
    }
    db.pragma('foreign_keys = ON');
    migrate(db, readOnly);
    // Also makes a read-only open (which is lazy) fail here on an unreadable store.
    checkSchema(db);
  } catch (err) {
    db.close();
    throw sqliteError(err, 'open');
  }
  return db;
}

/** How to recover from damaged metadata; said with every `corrupt` about it. */
const RECOVER =
  'objects and refs are not affected: restore metadata.sqlite3 from a backup, or move it (and its -wal, -shm files) aside and run tfs verify --data --recreate-metadata (Store.open with recreateMetadata) to start an empty one (roots and the quarantine list are lost: re-add roots)';

/** `corrupt`: the named part of metadata.sqlite3 is damaged or missing. */
export function damagedMetadata(part: string, cause?: unknown, lost = false): TensorFSError {
  const what = lost ? 'is lost' : 'is damaged';
  return new TensorFSError('corrupt', `metadata.sqlite3 ${what} (${part}); ${RECOVER}`, {
    details: { rule: 'metadata.damaged', path: 'metadata.sqlite3', part },
    ...(cause !== undefined ? { cause } : {}),
  });
}

/** Every table the current schema has. */
const TABLES = [
  'roots',
  'leases',
  'lease_claims',
  'cache_entries',
  'corrupt_objects',
  'gc_state',
  'ref_log',
  'cached_refs',
];

/** A store at the current schema version must have every table and the GC epoch row. */
function checkSchema(db: Db): void {
  const have = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]);
  const missing = TABLES.filter((t) => !have.has(t));
  if (missing.length > 0) throw damagedMetadata(`missing table ${missing.join(', ')}`);
  if (db.prepare("SELECT 1 FROM gc_state WHERE key = 'epoch'").get() === undefined) {
    throw damagedMetadata('missing the gc_state epoch row');
  }
}

/**
 * An SQLite failure as a TensorFSError: `unavailable` when another process holds the lock past
 * the busy timeout; `corrupt` (naming the damage and how to recover) when the file is not a
 * database, is damaged or lacks a table; else `io` (e.g. a read-only or full filesystem: SQLite
 * cannot create its `-wal`/`-shm` files). TensorFSErrors pass through.
 */
export function sqliteError(err: unknown, op: string): TensorFSError {
  if (isTensorFSError(err)) return err;
  const code = (err as { code?: string }).code;
  if (code === 'SQLITE_NOTADB') return damagedMetadata('not a database', err);
  if (code?.startsWith('SQLITE_CORRUPT')) return damagedMetadata('database disk image is malformed', err);
  const text = err instanceof Error ? err.message : '';
  const schema = /^no such (table|column): (\S+)/.exec(text);
  if (code === 'SQLITE_ERROR' && schema) return damagedMetadata(`missing ${schema[1]} ${schema[2]}`, err);
  if (code === 'SQLITE_BUSY') {
    return new TensorFSError('unavailable', 'the store is busy (another process holds its write lock)', {
      details: { rule: 'store.busy', limit: BUSY_TIMEOUT_MS },
      cause: err,
    });
  }
  return new TensorFSError('io', `metadata.sqlite3: ${op} failed${code ? ` (${code})` : ''}`, {
    details: { rule: 'metadata.io', op, path: 'metadata.sqlite3', ...(code ? { errno: code } : {}) },
    cause: err,
  });
}

function migrate(db: Db, readOnly: boolean): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > SCHEMA_VERSION) {
    throw new TensorFSError('unsupported', 'metadata.sqlite3 was written by a newer TensorFS', {
      details: { rule: 'metadata.newer_schema', actual: version, limit: SCHEMA_VERSION },
    });
  }
  if (version === SCHEMA_VERSION) return;
  if (readOnly) {
    throw new TensorFSError('unsupported', 'metadata.sqlite3 needs a migration; open the store read-write once', {
      details: { rule: 'metadata.needs_migration', actual: version, expected: SCHEMA_VERSION },
    });
  }
  immediate(db, () => {
    // Re-read under the write lock: another process may have migrated meanwhile.
    const v = db.pragma('user_version', { simple: true }) as number;
    for (let i = v; i < SCHEMA_VERSION; i++) db.exec(MIGRATIONS[i]!);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  });
}

/**
 * Runs `fn` in a `BEGIN IMMEDIATE` transaction: it holds the store's write lock across processes
 * for its whole duration. `fn` must be synchronous so nothing else of this process interleaves.
 */
export function immediate<T>(db: Db, fn: () => T): T {
  try {
    return db.transaction(fn).immediate();
  } catch (err) {
    throw sqliteError(err, 'transaction');
  }
}

/** Like {@link immediate} but with `synchronous = FULL`, so the commit survives power loss. */
export function durably<T>(db: Db, fn: () => T): T {
  db.pragma('synchronous = FULL');
  try {
    return immediate(db, fn);
  } finally {
    db.pragma('synchronous = NORMAL');
  }
}

/** The GC epoch: bumped by every operation that can make an object reachable (setRef, addRoot). */
export function readEpoch(db: Db): number {
  const row = db.prepare("SELECT value FROM gc_state WHERE key = 'epoch'").get() as { value: string } | undefined;
  const epoch = Number(row?.value);
  if (row === undefined || !Number.isSafeInteger(epoch)) throw damagedMetadata('the gc_state epoch row');
  return epoch;
}

/**
 * Bumps the GC epoch and logs `id` as newly reachable at the new epoch; call inside the write
 * transaction that makes `id` reachable. A running GC adds what the log names since its mark to
 * its mark set before each sweep batch, instead of marking everything again.
 */
export function bumpEpoch(db: Db, id: string): void {
  db.prepare("UPDATE gc_state SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'epoch'").run();
  db.prepare('INSERT INTO ref_log(epoch, id, created_ms) VALUES (?, ?, ?)').run(readEpoch(db), id, Date.now());
}

/** Ids made reachable after epoch `since` (from the ref log). */
export function reachableSince(db: Db, since: number): string[] {
  return db.prepare('SELECT id FROM ref_log WHERE epoch > ?').pluck().all(since) as string[];
}

/** Drops ref-log rows older than `maxAgeMs` (no GC runs that long). */
export function pruneRefLog(db: Db, maxAgeMs: number): void {
  db.prepare('DELETE FROM ref_log WHERE created_ms < ?').run(Date.now() - maxAgeMs);
}
