/**
 * Garbage collection (docs/store.md "GC protocol"): mark from refs, roots and live leases; sweep
 * objects that are unmarked and older than the grace period, in small batches, each under the
 * store's write lock, re-checking leases and mtime and the GC epoch before each unlink. Rows that
 * name an object are deleted before its file is unlinked. Killed at any point, GC leaves only
 * extra objects: it never unlinks anything a ref, root or live lease reaches.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { type ObjectId, TensorFSError } from '@tensorfs/format';
import { type Db, immediate, readEpoch } from './db.js';
import { HOST, errnoOf, ioError, parseTempName, pidAlive } from './fsutil.js';
import { reach } from './graph.js';
import type { Layout } from './layout.js';
import { leasedObjects, pruneLeases } from './leases.js';
import type { Objects } from './objects.js';
import { listObjects } from './walk.js';

/** Options of {@link Store.gc}. */
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
  /** Mark rounds (a ref or root changing mid-sweep forces a new mark). */
  rounds: number;
  dryRun: boolean;
}

/** Objects swept per write-lock hold: short holds keep concurrent writers moving. */
const BATCH = 128;
/** A temp of a live process (or another host) is removed only after this long. */
export const TEMP_MAX_AGE_MS = 24 * 3600_000;
const MAX_ROUNDS = 5;

/** Dependencies GC needs from the store. */
export interface GcContext {
  db: Db;
  layout: Layout;
  objects: Objects;
  tops(): Promise<ObjectId[]>;
}

/** Runs one GC. */
export async function collect(ctx: GcContext, graceMs: number, options: GcOptions): Promise<GcResult> {
  const { db, objects, layout } = ctx;
  const { dryRun = false, signal } = options;
  if (!Number.isSafeInteger(graceMs) || graceMs < 0) {
    throw new TensorFSError('invalid_argument', 'graceMs must be a non-negative integer', {
      details: { actual: graceMs },
    });
  }
  if (!dryRun) pruneLeases(db);
  const result: GcResult = { removed: 0, bytes: 0, kept: 0, temps: 0, rounds: 0, dryRun };
  const liveLease = db
    .prepare(
      'SELECT 1 FROM lease_objects lo JOIN leases l ON l.id = lo.lease_id WHERE lo.object_id = ? AND l.expires_ms > ? LIMIT 1',
    )
    .pluck();
  const dropRows = [
    db.prepare('DELETE FROM cache_entries WHERE id = ?'),
    db.prepare('DELETE FROM corrupt_objects WHERE id = ?'),
  ];
  for (;;) {
    result.rounds++;
    if (result.rounds > MAX_ROUNDS) {
      throw new TensorFSError('unavailable', 'refs kept changing during GC; try again', {
        details: { limit: MAX_ROUNDS, removed: result.removed },
      });
    }
    const epoch = readEpoch(db);
    const marked = await mark(ctx, signal);
    const cutoff = Date.now() - graceMs;
    const candidates: { id: ObjectId; size: number }[] = [];
    let total = 0;
    for await (const o of listObjects(layout, signal)) {
      total++;
      if (!marked.has(o.id) && o.mtimeMs < cutoff) candidates.push({ id: o.id, size: o.size });
    }
    if (dryRun) {
      result.removed = candidates.length;
      result.bytes = candidates.reduce((n, c) => n + c.size, 0);
      result.kept = total - candidates.length;
      break;
    }
    let restart = false;
    let removedThisRound = 0;
    for (let i = 0; i < candidates.length && !restart; i += BATCH) {
      signal?.throwIfAborted();
      const batch = candidates.slice(i, i + BATCH);
      restart = immediate(db, () => {
        if (readEpoch(db) !== epoch) return true;
        const now = Date.now();
        for (const c of batch) {
          if (liveLease.get(c.id, now) !== undefined) continue;
          const file = objects.path(c.id);
          let st: fs.Stats;
          try {
            st = fs.statSync(file);
          } catch (err) {
            if (errnoOf(err) === 'ENOENT') continue;
            throw ioError(err, 'stat', 'objects/');
          }
          if (st.mtimeMs >= now - graceMs) continue;
          for (const s of dropRows) s.run(c.id);
          try {
            fs.unlinkSync(file);
          } catch (err) {
            if (errnoOf(err) !== 'ENOENT') throw ioError(err, 'unlink', 'objects/');
          }
          result.removed++;
          removedThisRound++;
          result.bytes += st.size;
        }
        return false;
      });
    }
    if (!restart) {
      result.kept = total - removedThisRound;
      break;
    }
  }
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

/** Everything reachable from refs and roots, plus every object claimed by a live lease. */
async function mark(ctx: GcContext, signal?: AbortSignal): Promise<Set<ObjectId>> {
  const r = await reach(ctx.objects, await ctx.tops(), signal);
  if (r.corrupt.length > 0) {
    throw new TensorFSError('corrupt', 'GC refuses to run: a ref or root names an object that does not decode', {
      details: { corrupt: r.corrupt },
    });
  }
  const marked = new Set(r.objects.keys());
  for (const id of leasedObjects(ctx.db)) marked.add(id);
  return marked;
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
