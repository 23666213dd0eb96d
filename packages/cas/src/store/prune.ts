/**
 * Cache eviction (`tfs cache prune`, `TENSORFS_CACHE_MAX`; docs/store.md "Cache"). Units are the
 * cached refs and the cached objects no ref reaches, least recently used first. What a unit
 * frees is what only cached units reach: never what a saved ref, a root or a live lease (a
 * writer's, or a reader's: every process reading a cached ref holds its id in a lease) reaches,
 * walked. Eviction is GC's own steps: the epoch and the claim sequence are read before the mark,
 * each evicted ref is deleted with compare-and-swap on the id walked (and only while still cached
 * and claimed by no lease since), then GC's sweep (write-lock batches, the ref log, the claims
 * since the mark, the grace re-check, rows before files) takes the candidates. Killed at any
 * point it leaves only extra objects.
 */
import * as fs from 'node:fs';
import { type ObjectId, TensorFSError, isTensorFSError, throwIfAborted } from '@tensorfs/format';
import { type CacheEntryRow, type CachedRefRow, cacheEntryRows, cachedRefRows } from './cache.js';
import { immediate, pruneRefLog, readEpoch } from './db.js';
import { errnoOf, ioError } from './fsutil.js';
import { type GcContext, type MarkState, REF_LOG_MAX_AGE_MS, catchUpClaims, sweep } from './gc.js';
import { reach } from './graph.js';
import { leaseClaims, pruneLeases } from './leases.js';
import { type RefEntry, readRefSync, removeRef } from './refs.js';
import { listObjects } from './walk.js';

/** Options of {@link LocalStore.prune}. */
export interface PruneOptions {
  /** Evict until the store's stored bytes (every object file) are at most this. */
  maxBytes?: number;
  /** Evict every cached ref and object not used for this long. */
  olderThanMs?: number;
  /** Report what would go, change nothing. */
  dryRun?: boolean;
  /**
   * Keep candidate objects younger than this (default 0: a cached object is evictable at once;
   * writers hold leases, and a writer without one that finds an evicted object present fails its
   * ref update with `not_found`, never leaves a ref to a missing object).
   */
  graceMs?: number;
  signal?: AbortSignal;
}

/** One evicted (or, dry run, evictable) unit. */
export interface PrunedUnit {
  kind: 'ref' | 'object';
  /** The ref's name, or the object's id. */
  name: string;
  id: ObjectId;
  lastUseMs: number;
  /** Bytes evicting it frees (its objects no saved ref, root, lease or kept cached unit reaches). */
  bytes: number;
}

/** What a prune did (or would do). */
export interface PruneResult {
  dryRun: boolean;
  /** Stored bytes before (the sum of the object files). */
  storedBefore: number;
  /** Stored bytes after (before minus what was freed). */
  storedAfter: number;
  /** The budget applied (null: only `olderThanMs`). */
  maxBytes: number | null;
  /** True when the store is within the budget after the prune (always true without one). */
  withinBudget: boolean;
  /** Units evicted, in eviction order. */
  evicted: PrunedUnit[];
  /** Objects unlinked. */
  removed: number;
  /** Their bytes. */
  bytes: number;
  /**
   * Objects of evicted units left in place: younger than the grace period, or claimed or reached
   * again (a ref set, a lease taken) while the prune ran.
   */
  left: number;
}

/** What prune needs from the store besides GC's context. */
export interface PruneContext extends GcContext {
  refs(): Promise<RefEntry[]>;
  roots(): ObjectId[];
  /** Writes recorded use first, so the order is current. */
  flushUse(): void;
}

/** Evicts cached units, least recently used first, per `options`. */
export async function prune(ctx: PruneContext, options: PruneOptions): Promise<PruneResult> {
  const { db, layout, objects } = ctx;
  const { signal, dryRun = false } = options;
  const maxBytes = options.maxBytes ?? null;
  const graceMs = options.graceMs ?? 0;
  for (const [v, what] of [
    [maxBytes, 'maxBytes'],
    [options.olderThanMs ?? null, 'olderThanMs'],
    [graceMs, 'graceMs'],
  ] as const) {
    if (v !== null && (!Number.isSafeInteger(v) || v < 0)) {
      throw new TensorFSError('invalid_argument', `${what} must be a non-negative integer`, {
        details: { rule: 'cache.bad_limit', actual: v },
      });
    }
  }
  if (maxBytes === null && options.olderThanMs === undefined) {
    throw new TensorFSError('invalid_argument', 'prune needs a budget (maxBytes) or an age (olderThanMs)', {
      details: { rule: 'cache.no_limit' },
    });
  }
  ctx.flushUse();
  if (!dryRun) {
    pruneLeases(db);
    immediate(db, () => pruneRefLog(db, REF_LOG_MAX_AGE_MS));
  }
  const started = Date.now();
  // The epoch first: a ref or root set after it is added to the mark by the sweep.
  const epoch = readEpoch(db);
  const cachedRows = cachedRefRows(db, layout);
  const cachedByName = new Map(cachedRows.map((r) => [r.name, r]));
  const entries = cacheEntryRows(db);
  const claims = leaseClaims(db);
  const leased = claims.objects;
  const allRefs = await ctx.refs();
  // What is kept whatever happens: saved refs, roots, and every leased id with what it reaches.
  const keepTops = new Set<ObjectId>(ctx.roots());
  for (const r of allRefs) if (cachedByName.get(r.name)?.id !== r.id) keepTops.add(r.id);
  for (const id of leased) keepTops.add(id);
  const kept = await reach(objects, keepTops, signal);
  const broken = [...kept.corrupt, ...kept.missing.filter((m) => !leased.has(m))];
  if (broken.length > 0) {
    throw new TensorFSError(
      'corrupt',
      'nothing evicted: a saved ref or root names or reaches an object that is missing or does not decode, so what it keeps alive is unknown',
      { details: { rule: 'gc.missing_root', objects: broken.slice(0, 20) } },
    );
  }
  const saved = new Set<ObjectId>(kept.objects.keys());
  for (const id of leased) saved.add(id);
  // Sizes of every object file, and the stored total (exactly what `tfs du` counts).
  const sizes = new Map<ObjectId, number>();
  let stored = 0;
  for await (const o of listObjects(layout, signal)) {
    sizes.set(o.id, o.size);
    stored += o.size;
  }
  // Units: each cached ref with its closure (what it reaches beyond the saved set), then each
  // cached object that no ref reaches.
  interface Unit {
    kind: 'ref' | 'object';
    name: string;
    id: ObjectId;
    lastUseMs: number;
    own: ObjectId[];
  }
  const units: Unit[] = [];
  const count = new Map<ObjectId, number>();
  const reachedByRef = new Set<ObjectId>();
  for (const row of cachedRows) {
    throwIfAborted(signal);
    const r = await reach(objects, [row.id], signal);
    const own: ObjectId[] = [];
    for (const o of r.objects.keys()) {
      reachedByRef.add(o);
      if (saved.has(o) || !sizes.has(o)) continue;
      own.push(o);
      count.set(o, (count.get(o) ?? 0) + 1);
    }
    // A cached ref whose every object something kept reaches frees nothing, ever: evicting it
    // would only lose its name.
    if (own.length > 0) units.push({ kind: 'ref', name: row.name, id: row.id, lastUseMs: row.lastUseMs, own });
  }
  for (const e of entries) {
    if (saved.has(e.id) || reachedByRef.has(e.id) || !sizes.has(e.id)) continue;
    count.set(e.id, 1);
    units.push({ kind: 'object', name: e.id, id: e.id, lastUseMs: e.lastUseMs, own: [e.id] });
  }
  units.sort((a, b) => a.lastUseMs - b.lastUseMs || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // Choose, least recently used first.
  const cutoff = options.olderThanMs !== undefined ? started - options.olderThanMs : null;
  const evicted: { unit: Unit; bytes: number; freed: ObjectId[] }[] = [];
  let after = stored;
  for (const u of units) {
    const overBudget = maxBytes !== null && after > maxBytes;
    const tooOld = cutoff !== null && u.lastUseMs < cutoff;
    // Units are in last-use order: once neither holds, none later does (a later unit is newer,
    // and the stored total only shrinks).
    if (!overBudget && !tooOld) break;
    const freed: ObjectId[] = [];
    let bytes = 0;
    for (const o of u.own) {
      const n = (count.get(o) ?? 1) - 1;
      count.set(o, n);
      if (n === 0) {
        freed.push(o);
        bytes += sizes.get(o) ?? 0;
      }
    }
    after -= bytes;
    evicted.push({ unit: u, bytes, freed });
  }
  const result: PruneResult = {
    dryRun,
    storedBefore: stored,
    storedAfter: after,
    maxBytes,
    withinBudget: maxBytes === null || after <= maxBytes,
    evicted: evicted.map((e) => ({
      kind: e.unit.kind,
      name: e.unit.name,
      id: e.unit.id,
      lastUseMs: e.unit.lastUseMs,
      bytes: e.bytes,
    })),
    removed: 0,
    bytes: 0,
    left: 0,
  };
  if (dryRun || evicted.length === 0) return result;
  // The mark: everything kept, plus every object of a cached unit that stays.
  const marked = new Set(saved);
  for (const [o, n] of count) if (n > 0) marked.add(o);
  const state: MarkState = { marked, epoch, started, claims: claims.seq };
  // Ids a live lease claimed since the mark (learnt by sequence under the write lock).
  const leasedSince = new Set<ObjectId>();
  // Evicted refs go first (compare-and-swap on the id walked, and only while still cached): their
  // objects are then unreachable, and a kill from here on leaves only extra objects.
  const candidates: { id: ObjectId }[] = [];
  const done: typeof evicted = [];
  for (const e of evicted) {
    throwIfAborted(signal);
    if (e.unit.kind === 'ref' && !deleteIfStillCached(ctx, state, leasedSince, e.unit.name, e.unit.id)) {
      // Pinned, moved or read meanwhile: it stays, with everything it reaches.
      for (const o of e.unit.own) marked.add(o);
      continue;
    }
    done.push(e);
    for (const o of e.freed) candidates.push({ id: o });
  }
  const swept = sweep(ctx, state, candidates, graceMs, signal);
  result.removed = swept.removed;
  result.bytes = swept.bytes;
  result.left = candidates.length - swept.removed;
  result.storedAfter = stored - swept.bytes;
  result.withinBudget = maxBytes === null || result.storedAfter <= maxBytes;
  const doneSet = new Set(done.map((d) => d.unit));
  result.evicted = result.evicted.filter((_, i) => doneSet.has(evicted[i]!.unit));
  // Cached object rows of what was evicted but stays (younger than the grace period) are kept:
  // the next prune sees them again. Rows of unlinked objects went with them (the sweep).
  return result;
}

/**
 * Deletes cached ref `name` if it still holds `id` and is still cached, checked under the write
 * lock with the removal (pin, a new pull, a reader lease taken since the listing keep it). There
 * the claims a live lease made since the mark are added to `state`'s mark and to `leasedSince`
 * (a lease that held `id` at the mark made it saved: no unit), so a reader lease taken since on
 * `id` keeps the ref.
 */
function deleteIfStillCached(
  ctx: PruneContext,
  state: MarkState,
  leasedSince: Set<ObjectId>,
  name: string,
  id: ObjectId,
): boolean {
  const { db, layout } = ctx;
  try {
    return immediate(db, () => {
      const row = db.prepare('SELECT id FROM cached_refs WHERE name = ?').pluck().get(name);
      if (row !== id || readRefSync(layout, name) !== id) return false;
      for (const o of catchUpClaims(db, state)) leasedSince.add(o);
      if (leasedSince.has(id)) return false;
      // Nested in this transaction (better-sqlite3 makes it a savepoint): one lock hold.
      removeRef(db, layout, name, id);
      return true;
    });
  } catch (err) {
    if (isTensorFSError(err) && (err.code === 'not_found' || err.code === 'conflict')) return false;
    throw err;
  }
}

/** Size of a file, or null if it is gone. */
export function fileSize(file: string): number | null {
  try {
    return fs.statSync(file).size;
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw ioError(err, 'stat', 'objects/');
  }
}

/** Rows of the cache, for listings. */
export type { CacheEntryRow, CachedRefRow };
