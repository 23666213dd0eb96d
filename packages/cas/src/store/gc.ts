/**
 * Garbage collection (docs/store.md "GC protocol"): mark from refs, roots and live leases; sweep
 * objects that are unmarked and older than the grace period, in small batches, each under the
 * store's write lock, re-checking mtime, and adding to the mark whatever a ref or root set since
 * the mark reaches (the ref log) and whatever a live lease claimed since (the claims' sequence),
 * before each unlink. Rows that
 * name an object are deleted before its file is unlinked. Killed at any point, GC leaves only
 * extra objects: it never unlinks anything a ref, root or live lease reaches.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { type ObjectId, TensorFSError, throwIfAborted } from '@tensorfs/format';
import { type Db, immediate, pruneRefLog, reachableSince, readEpoch } from './db.js';
import { HOST, errnoOf, ioError, parseTempName, pidAlive } from './fsutil.js';
import { childrenOfSync, reach } from './graph.js';
import type { Layout } from './layout.js';
import { claimSeq, claimedSince, leaseClaims, pruneLeases } from './leases.js';
import type { Objects } from './objects.js';
import { listObjectFolders, statStoredObject } from './walk.js';

/** Options of {@link LocalStore.gc}. */
export interface GcOptions {
  /** Report what would go, remove nothing. */
  dryRun?: boolean;
  /** Keep unreachable objects younger than this (default: the store's graceMs, 1 hour). */
  graceMs?: number;
  signal?: AbortSignal;
}

/** What a GC did (or, with dryRun, would do). */
export interface GcResult {
  /** Objects removed (or that would be). */
  removed: number;
  /** Their bytes. */
  bytes: number;
  /** Objects kept. */
  kept: number;
  /** Abandoned temp files removed (or that would be). */
  temps: number;
  /** Times refs or roots changed mid-sweep and GC added what they newly reach to its mark. */
  remarks: number;
  dryRun: boolean;
}

/** Objects swept per write-lock hold: short holds keep concurrent writers moving. */
const BATCH = 128;
/** Ref-log rows are kept this long: a GC running longer could miss a ref set meanwhile. */
export const REF_LOG_MAX_AGE_MS = 24 * 3600_000;
/** A temp of a live process (or another host) is removed only after this long. */
export const TEMP_MAX_AGE_MS = 24 * 3600_000;

/** Dependencies GC needs from the store. */
export interface GcContext {
  db: Db;
  layout: Layout;
  objects: Objects;
  tops(): Promise<ObjectId[]>;
}

/** Runs one GC. */
export async function collect(ctx: GcContext, graceMs: number, options: GcOptions): Promise<GcResult> {
  const { db, layout } = ctx;
  const { dryRun = false, signal } = options;
  if (!Number.isSafeInteger(graceMs) || graceMs < 0) {
    throw new TensorFSError('invalid_argument', 'graceMs must be a non-negative integer', {
      details: { rule: 'gc.bad_grace', actual: graceMs },
    });
  }
  if (!dryRun) {
    pruneLeases(db);
    immediate(db, () => pruneRefLog(db, REF_LOG_MAX_AGE_MS));
  }
  const result: GcResult = { removed: 0, bytes: 0, kept: 0, temps: 0, remarks: 0, dryRun };
  const state = await markLive(ctx, () => ctx.tops(), signal);
  const cutoff = Date.now() - graceMs;
  const candidates: { id: ObjectId; size: number }[] = [];
  let total = 0;
  // Only what the mark did not reach is stat'ed (its age and size): a store that keeps most of
  // its objects costs a folder listing, not a stat per object.
  for await (const f of listObjectFolders(layout, signal)) {
    for (const id of f.ids) {
      if (state.marked.has(id)) {
        total++;
        continue;
      }
      const o = statStoredObject(layout, id);
      if (o === null) continue;
      total++;
      if (o.mtimeMs < cutoff) candidates.push({ id, size: o.size });
    }
  }
  if (dryRun) {
    result.removed = candidates.length;
    result.bytes = candidates.reduce((n, c) => n + c.size, 0);
  } else {
    const swept = sweep(ctx, state, candidates, graceMs, signal);
    result.removed = swept.removed;
    result.bytes = swept.bytes;
    result.remarks = swept.remarks;
  }
  result.kept = total - result.removed;
  result.temps = await sweepTemps(layout, dryRun);
  if (!dryRun) {
    immediate(db, () => {
      db.prepare("INSERT OR REPLACE INTO gc_state(key, value) VALUES ('last_gc', ?)").run(
        JSON.stringify({ at: Date.now(), removed: result.removed, bytes: result.bytes }),
      );
    });
  }
  return result;
}

/** What {@link markLive} found live, and the GC epoch read before it looked. */
export interface MarkState {
  /** Everything the tops reach, plus every object a live lease claims. */
  marked: Set<ObjectId>;
  /** The epoch before the mark: a sweep adds what a ref or root set since then reaches. */
  epoch: number;
  /** When the mark started (a sweep stops once the ref log may have lost rows since). */
  started: number;
  /**
   * The claim sequence read before the mark's leased objects: a sweep adds what a live lease
   * claimed after it (`lease_claims.seq` greater), then advances it.
   */
  claims: number;
}

/**
 * The mark of GC: reads the epoch, then lists `tops()` (refs and roots) and walks from them, adding every
 * object claimed by a live lease and every cached object (`cache_entries`: evicted by the cache's
 * budget, not by GC). Refuses (`corrupt`) when a top names, or reaches through, an object
 * that is missing or does not decode: what it keeps alive is unknown.
 */
export async function markLive(
  ctx: GcContext,
  tops: () => Promise<readonly ObjectId[]>,
  signal?: AbortSignal,
): Promise<MarkState> {
  const started = Date.now();
  // The epoch is read before the tops are listed: whatever is set after, the sweep adds.
  const epoch = readEpoch(ctx.db);
  const r = await reach(ctx.objects, await tops(), signal);
  if (r.corrupt.length > 0) {
    throw new TensorFSError('corrupt', 'GC refuses to run: a ref or root names an object that does not decode', {
      details: { rule: 'gc.corrupt_root', corrupt: r.corrupt },
    });
  }
  // A ref or root (or an object one of them reaches through) whose own object is absent: what it
  // keeps alive is unknown (it may come back from a backup or a partial restore), so nothing that
  // might be its may go. Only referencing objects are opened by the walk, so `missing` lists
  // exactly those; absent leaves need no protection.
  if (r.missing.length > 0) {
    throw new TensorFSError('corrupt', 'GC refuses to run: a ref or root names an object that is missing', {
      details: { rule: 'gc.missing_root', missing: r.missing },
    });
  }
  const marked = new Set(r.objects.keys());
  const leased = leaseClaims(ctx.db);
  for (const id of leased.objects) marked.add(id);
  // Cached objects (fetched on read) are the cache's to evict (tfs cache prune), not garbage.
  for (const id of ctx.db.prepare('SELECT id FROM cache_entries').pluck().all() as ObjectId[]) marked.add(id);
  return { marked, epoch, started, claims: leased.seq };
}

/** What one {@link sweep} removed. */
export interface SweepResult {
  /** Objects unlinked. */
  removed: number;
  /** Their bytes. */
  bytes: number;
  /** Times refs or roots changed mid-sweep and the mark was extended. */
  remarks: number;
}

/**
 * The sweep of GC over `candidates` (objects the mark in `state` did not reach): in batches, each
 * under the store's write lock, it first extends the mark with what every ref or root set since
 * the mark reaches (the ref log) and with every object a live lease claimed since (claims after
 * `state.claims`), then unlinks each candidate that is still unmarked and older than `graceMs`,
 * deleting the rows that name it first. `state` is updated (mark, epoch, claims). GC sweeps every unmarked old object; `tfs rm` sweeps the closure of the
 * ref it removed.
 */
export function sweep(
  ctx: GcContext,
  state: MarkState,
  candidates: readonly { id: ObjectId }[],
  graceMs: number,
  signal?: AbortSignal,
): SweepResult {
  const { db, objects } = ctx;
  const { marked } = state;
  const out: SweepResult = { removed: 0, bytes: 0, remarks: 0 };
  const dropRows = [
    db.prepare('DELETE FROM cache_entries WHERE id = ?'),
    db.prepare('DELETE FROM corrupt_objects WHERE id = ?'),
  ];
  for (let i = 0; i < candidates.length; i += BATCH) {
    throwIfAborted(signal);
    const batch = candidates.slice(i, i + BATCH);
    immediate(db, () => {
      if (Date.now() - state.started > REF_LOG_MAX_AGE_MS) {
        throw new TensorFSError('unavailable', 'GC ran longer than the ref log is kept; run it again', {
          details: { rule: 'gc.ref_log_expired', limit: REF_LOG_MAX_AGE_MS, removed: out.removed },
        });
      }
      // Refs or roots set since the mark: add what they reach before unlinking anything.
      const now = readEpoch(db);
      if (now !== state.epoch) {
        for (const top of reachableSince(db, state.epoch) as ObjectId[]) markSync(objects, top, marked);
        state.epoch = now;
        out.remarks++;
      }
      // Claims since the mark (or the last batch), by a lease live now: marked, so kept even if
      // that lease ends before the sweep does (keeping more is safe). A claim is made under this
      // same lock before its writer looks for or writes the object, so every claim a sweep could
      // race is either seen here or made after this batch's unlinks.
      catchUpClaims(db, state);
      const at = Date.now();
      for (const c of batch) {
        if (marked.has(c.id)) continue;
        const file = objects.path(c.id);
        let st: fs.Stats;
        try {
          st = fs.statSync(file);
        } catch (err) {
          if (errnoOf(err) === 'ENOENT') continue;
          throw ioError(err, 'stat', 'objects/');
        }
        if (st.mtimeMs >= at - graceMs) continue;
        for (const s of dropRows) s.run(c.id);
        try {
          fs.unlinkSync(file);
        } catch (err) {
          if (errnoOf(err) !== 'ENOENT') throw ioError(err, 'unlink', 'objects/');
        }
        out.removed++;
        out.bytes += st.size;
      }
    });
  }
  return out;
}

/**
 * The ids of `ids` the store does not hold; every one it holds gets a new mtime, each checked
 * and touched under the write lock, so GC's sweep (stat and unlink under the same lock) sees it
 * young and keeps it for the grace period: what a hub's push skips because the store has it.
 */
export function freshenObjects(db: Db, objects: Objects, ids: readonly ObjectId[]): ObjectId[] {
  const lacking: ObjectId[] = [];
  immediate(db, () => {
    const now = new Date();
    for (const id of ids) {
      const file = objects.path(id);
      if (objects.quarantined(id)) {
        lacking.push(id); // damaged: the sender's good copy is wanted
        continue;
      }
      try {
        fs.utimesSync(file, now, now);
      } catch (err) {
        const code = errnoOf(err);
        if (code === 'ENOENT' || code === 'ENOTDIR') lacking.push(id);
        else if (code === 'EPERM' || code === 'EACCES' || code === 'EROFS') {
          // Another user's object in a shared store: present, not freshened.
          if (!fs.existsSync(file)) lacking.push(id);
        } else throw ioError(err, 'utimes', 'objects/');
      }
    }
  });
  return lacking;
}

/**
 * Under the write lock: adds to `state.marked` every object a live lease claimed after
 * `state.claims`, advances it, and returns those objects.
 */
export function catchUpClaims(db: Db, state: MarkState): ObjectId[] {
  const seq = claimSeq(db);
  if (seq === state.claims) return [];
  const claimed = claimedSince(db, state.claims);
  for (const id of claimed) state.marked.add(id);
  state.claims = seq;
  return claimed;
}

/**
 * Under the lock: adds `top` and what it reaches to `marked`, following `follow` children (a
 * checkpoint's source snapshot) as the mark's walk does.
 */
function markSync(objects: Objects, top: ObjectId, marked: Set<ObjectId>): void {
  const queue = [top];
  const followed = new Set<ObjectId>(queue);
  marked.add(top);
  while (queue.length > 0) {
    for (const c of childrenOfSync(objects, queue.pop()!)) {
      marked.add(c.id);
      if (c.follow && !followed.has(c.id)) {
        followed.add(c.id);
        queue.push(c.id);
      }
    }
  }
}

/** Removes temps of dead writers on this host, and any temp older than a day. */
async function sweepTemps(layout: Layout, dryRun: boolean): Promise<number> {
  let names: string[];
  try {
    names = await fsp.readdir(layout.tmp);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return 0;
    throw ioError(err, 'readdir', 'tmp/');
  }
  let n = 0;
  const old = Date.now() - TEMP_MAX_AGE_MS;
  for (const name of names) {
    const file = join(layout.tmp, name);
    const owner = parseTempName(name);
    let stale = owner !== null && owner.host === HOST && owner.pid !== process.pid && !pidAlive(owner.pid);
    if (!stale) {
      try {
        stale = (await fsp.stat(file)).mtimeMs < old;
      } catch {
        continue;
      }
    }
    if (!stale) continue;
    n++;
    if (!dryRun) await fsp.rm(file, { force: true });
  }
  return n;
}
