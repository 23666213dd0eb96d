/**
 * The cache of a store (docs/store.md "Cache"): which refs are cached (evictable) rather than
 * saved, which objects were fetched on read (`cache_entries`), and when each was last used.
 *
 * A ref is saved unless a `cached_refs` row names it **with the id it holds**: a ref set by any
 * other means (an import, a plain `setRef`, a file written by hand) reads as saved, so a mistake
 * only ever keeps bytes. Use is recorded in memory ({@link UseTracker}) and written in one
 * transaction at most every `flushMs` and at close: a read costs a `Map.set`, never a write. The
 * first use of a cached ref, and the first read of a cached object, in a process also puts its
 * id in that process's reader lease (one write per ref, or per batch of objects, and process;
 * released at close, idle after `flushMs`, dropped once the process is dead), so a prune
 * elsewhere never evicts what this process is reading.
 */
import { type ObjectId, TensorFSError } from '@tensorfs/format';
import { checkString } from './args.js';
import { type Db, immediate } from './db.js';
import { DbLease } from './leases.js';
import { readRefSync } from './refs.js';
import type { Layout } from './layout.js';

/** One cached ref's row. */
export interface CachedRefRow {
  name: string;
  id: ObjectId;
  addedMs: number;
  lastUseMs: number;
}

/** One cached object's row (an object fetched on read). */
export interface CacheEntryRow {
  id: ObjectId;
  size: number;
  origin: string;
  lastUseMs: number;
}

/** Every `cached_refs` row whose ref still holds the row's id (the others read as saved). */
export function cachedRefRows(db: Db, layout: Layout): CachedRefRow[] {
  const rows = db.prepare('SELECT name, id, added_ms, last_use_ms FROM cached_refs ORDER BY name').all() as {
    name: string;
    id: ObjectId;
    added_ms: number;
    last_use_ms: number;
  }[];
  const out: CachedRefRow[] = [];
  for (const r of rows) {
    let held: ObjectId | null;
    try {
      held = readRefSync(layout, r.name);
    } catch {
      held = null; // a damaged ref file is not evicted by the cache (tfs rm removes it)
    }
    if (held === r.id) out.push({ name: r.name, id: r.id, addedMs: r.added_ms, lastUseMs: r.last_use_ms });
  }
  return out;
}

/** Every cached object row. */
export function cacheEntryRows(db: Db): CacheEntryRow[] {
  return (
    db.prepare('SELECT id, size, origin, last_access_ms FROM cache_entries ORDER BY last_access_ms, id').all() as {
      id: ObjectId;
      size: number;
      origin: string;
      last_access_ms: number;
    }[]
  ).map((r) => ({ id: r.id, size: r.size, origin: r.origin, lastUseMs: r.last_access_ms }));
}

/**
 * Inside a ref write's transaction: records whether `name` (now holding `id`) is cached. Saved
 * (`cached` false) drops the row. Cached marks it only if the ref is new or already cached: a
 * saved ref stays saved (only {@link setCached} via `tfs unpin` makes it evictable), so a
 * pull-through fetch of a model someone saved never puts it at risk.
 */
export function markRefWrite(db: Db, name: string, id: ObjectId, previous: ObjectId | null, cached: boolean): void {
  if (!cached) {
    db.prepare('DELETE FROM cached_refs WHERE name = ?').run(name);
    return;
  }
  const row = db.prepare('SELECT id FROM cached_refs WHERE name = ?').pluck().get(name) as ObjectId | undefined;
  const wasCached = previous === null || (row !== undefined && row === previous);
  if (!wasCached) return;
  const now = Date.now();
  db.prepare(
    'INSERT INTO cached_refs(name, id, added_ms, last_use_ms) VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET id = excluded.id, last_use_ms = excluded.last_use_ms',
  ).run(name, id, now, now);
}

/**
 * `tfs pin` (cached false) / `tfs unpin` (cached true): moves ref `name` between saved and cached
 * under the write lock. `not_found` if there is no such ref. Returns whether it was cached before.
 */
export function setCached(db: Db, layout: Layout, name: string, cached: boolean): boolean {
  return immediate(db, () => {
    const id = readRefSync(layout, name);
    if (id === null)
      throw new TensorFSError('not_found', 'no such ref', { details: { rule: 'store.no_ref', ref: name } });
    const row = db.prepare('SELECT id FROM cached_refs WHERE name = ?').pluck().get(name) as ObjectId | undefined;
    const was = row === id;
    if (cached) {
      const now = Date.now();
      db.prepare(
        'INSERT INTO cached_refs(name, id, added_ms, last_use_ms) VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET id = excluded.id',
      ).run(name, id, now, now);
    } else {
      db.prepare('DELETE FROM cached_refs WHERE name = ?').run(name);
    }
    return was;
  });
}

/** Records fetched-on-read objects as cached (or refreshes their last use). */
export function addCacheEntries(db: Db, items: readonly { id: ObjectId; size: number }[], origin: string): void {
  if (items.length === 0) return;
  const now = Date.now();
  immediate(db, () => {
    const ins = db.prepare(
      'INSERT INTO cache_entries(id, size, origin, last_access_ms) VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET last_access_ms = excluded.last_access_ms',
    );
    for (const it of items) ins.run(it.id, it.size, origin.slice(0, 200), now);
  });
}

/** Default longest delay before recorded use reaches the metadata. */
export const DEFAULT_USE_FLUSH_MS = 30_000;

/**
 * Use of refs and objects, kept in memory and written in one transaction at most every
 * `flushMs` (and at {@link close}). `db` is a function so a read-only store can hand a writable
 * side connection opened on first flush (or null: recording is then off).
 */
export class UseTracker {
  private refs = new Map<string, number>();
  private objects = new Map<ObjectId, number>();
  private timer: NodeJS.Timeout | undefined;
  private lease: DbLease | undefined;
  /** Ids held in the reader lease, with when this process last used each. */
  private leased = new Map<ObjectId, number>();
  private closed = false;
  /** Writes done (flushes and reader-lease additions): what a benchmark counts. */
  writes = 0;

  constructor(
    private readonly db: () => Db | null,
    private readonly flushMs: number,
  ) {}

  /**
   * A ref was resolved or read. If it is cached, the first use holds its id in the reader lease:
   * the row is checked and the id leased in one write-lock hold, the same lock a prune deletes a
   * cached ref under (only when no live lease holds its id), so from here on the ref and all it
   * reaches stay while this process uses it. One write per cached ref and process.
   */
  ref(name: string, id: ObjectId | null): void {
    if (this.closed || id === null) return;
    const now = Date.now();
    this.refs.set(name, now);
    if (this.leased.has(id)) {
      this.leased.set(id, now);
      this.schedule();
      return;
    }
    this.schedule();
    const db = this.db();
    if (db === null) return;
    try {
      const cachedAs = () =>
        db.prepare('SELECT id FROM cached_refs WHERE name = ?').pluck().get(name) as ObjectId | undefined;
      // Most refs are not cached: a plain read says so without taking the write lock (which an
      // import in another process may hold), as the check under the lock would have.
      if (cachedAs() !== id) return;
      const held = immediate(db, () => {
        if (cachedAs() !== id) return false;
        this.holdSync(db, [id]);
        return true;
      });
      if (held) this.leased.set(id, now);
    } catch {
      // Recording use is best effort: a busy or read-only store still reads.
    }
  }

  /**
   * Objects are about to be read. Each cached object among them (a `cache_entries` row: fetched
   * on read) is held in the reader lease before its first read in this process (one write per
   * batch of newly seen cached objects, none for the others: they are looked up once, a read),
   * so a prune elsewhere skips it while this process reads it.
   */
  objectsRead(ids: Iterable<ObjectId>): void {
    if (this.closed) return;
    const now = Date.now();
    let fresh: ObjectId[] | undefined;
    for (const id of ids) {
      this.objects.set(id, now);
      if (this.leased.has(id)) this.leased.set(id, now);
      else if (!this.looked.has(id)) (fresh ??= []).push(id);
    }
    this.schedule();
    if (fresh !== undefined) this.holdCachedObjects(fresh, now);
  }

  /** Ids looked up in `cache_entries` and found not cached (bounded: cleared when large). */
  private looked = new Set<ObjectId>();

  private holdCachedObjects(ids: ObjectId[], now: number): void {
    const db = this.db();
    if (db === null) return;
    try {
      // One query for the whole batch (a file's records: dozens to thousands of ids).
      const found = new Set(
        db
          .prepare('SELECT id FROM cache_entries WHERE id IN (SELECT value FROM json_each(?))')
          .pluck()
          .all(JSON.stringify(ids)) as ObjectId[],
      );
      const cached: ObjectId[] = [];
      for (const id of ids) {
        if (found.has(id)) cached.push(id);
        else {
          if (this.looked.size >= 100_000) this.looked.clear();
          this.looked.add(id);
        }
      }
      if (cached.length === 0) return;
      immediate(db, () => this.holdSync(db, cached));
      for (const id of cached) this.leased.set(id, now);
    } catch {
      // Best effort, as above.
    }
  }

  /** Inside a transaction: adds `ids` to this process's reader lease (made on first need). */
  private holdSync(db: Db, ids: readonly ObjectId[]): void {
    this.lease ??= new DbLease(db, 10 * 60_000, 'reading cached refs and objects', true);
    this.lease.add(ids);
    this.writes++;
  }

  private schedule(): void {
    if (this.flushMs <= 0) {
      // Every use written at once (tests, benchmarks' baseline of the cost).
      if (this.refs.size > 0 || this.objects.size > 0) this.flush();
      return;
    }
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, this.flushMs);
    this.timer.unref();
  }

  /**
   * Writes what was recorded since the last flush (one transaction), and lets go of the reader
   * lease's ids this process has not used for `flushMs`: a long-lived server holds a cached ref
   * while it serves it, not for ever.
   */
  flush(): void {
    const now = Date.now();
    const idle = [...this.leased].filter(([, at]) => now - at >= this.flushMs).map(([id]) => id);
    if (this.refs.size === 0 && this.objects.size === 0 && idle.length === 0) {
      if (this.leased.size > 0) this.schedule();
      return;
    }
    const refs = this.refs;
    const objects = this.objects;
    this.refs = new Map();
    this.objects = new Map();
    const db = this.db();
    if (db === null) return;
    try {
      immediate(db, () => {
        const r = db.prepare('UPDATE cached_refs SET last_use_ms = MAX(last_use_ms, ?) WHERE name = ?');
        for (const [name, at] of refs) r.run(at, name);
        const o = db.prepare('UPDATE cache_entries SET last_access_ms = MAX(last_access_ms, ?) WHERE id = ?');
        for (const [id, at] of objects) o.run(at, id);
        if (this.lease !== undefined && idle.length > 0) {
          // One pass over this lease's claims (a range of the index by lease), whatever the count.
          db.prepare(
            'DELETE FROM lease_claims WHERE lease_id = ? AND object_id IN (SELECT value FROM json_each(?))',
          ).run(this.lease.id, JSON.stringify(idle));
        }
      });
      for (const id of idle) this.leased.delete(id);
      this.writes++;
    } catch {
      // Best effort, as above.
    }
    // Held ids still need letting go of once idle, even if nothing is read any more.
    if (this.leased.size > 0) this.schedule();
  }

  /** Flushes, releases the reader lease and stops recording. */
  async close(): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.flush();
    this.closed = true;
    await this.lease?.release().catch(() => {});
  }
}

/** Parses a size: `50G`, `800M`, `1.5GiB`, `4096` (bytes); K, M, G, T are powers of 1024. */
export function parseSize(text: string, what = 'size'): number {
  checkString(text, 'text');
  const m = /^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B?)\s*$/i.exec(text);
  if (m === null || (m[2] === '' && m[3] !== '' && m[3]!.toUpperCase() !== 'B')) {
    throw new TensorFSError('invalid_argument', `${String(what)} is not a size (e.g. 50G, 800M, 4096)`, {
      details: { rule: 'cache.bad_size', actual: text },
    });
  }
  const unit = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 }[m[2]!.toUpperCase() as ''];
  const n = Math.floor(Number(m[1]) * unit);
  if (!Number.isSafeInteger(n)) {
    throw new TensorFSError('invalid_argument', `${String(what)} is too large`, {
      details: { rule: 'cache.bad_size', actual: text },
    });
  }
  return n;
}

/** Parses a duration: `30s`, `15m`, `12h`, `7d`, `2w` (a bare number is seconds). */
export function parseDuration(text: string, what = 'duration'): number {
  checkString(text, 'text');
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$/.exec(text);
  if (m === null) {
    throw new TensorFSError('invalid_argument', `${String(what)} is not a duration (e.g. 30s, 15m, 12h, 7d, 2w)`, {
      details: { rule: 'cache.bad_duration', actual: text },
    });
  }
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[m[2] ?? 's']!;
  return Math.round(Number(m[1]) * unit);
}
