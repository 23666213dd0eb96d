/**
 * Removing a ref and, at once, the objects only it reached (`tfs rm`, docs/store.md "Removing a
 * ref"). No second collector: the candidates are the removed ref's closure, and GC's own mark
 * ({@link markLive}: every other ref, every root, every live lease) and sweep ({@link sweep}:
 * batches under the write lock, the ref log and the claims since the mark read, the grace period
 * re-checked before each unlink) decide what goes. Killed at any point, it leaves only extra objects.
 */
import * as fs from 'node:fs';
import { type ObjectId, TensorFSError, isTensorFSError } from '@tensorfs/format';
import { immediate, pruneRefLog } from './db.js';
import { errnoOf, ioError } from './fsutil.js';
import { type GcContext, type MarkState, REF_LOG_MAX_AGE_MS, markLive, sweep } from './gc.js';
import { reach } from './graph.js';
import { pruneLeases } from './leases.js';
import { type RefEntry, readRef, removeRef } from './refs.js';

/** Options of {@link LocalStore.remove}. */
export interface RemoveOptions {
  /** Remove only if the ref holds this id (compare-and-swap); `conflict` otherwise. */
  expected?: ObjectId;
  /** Delete just the ref and leave its objects to GC (nothing is walked or swept). */
  keepObjects?: boolean;
  /** Keep objects younger than this (default: the store's graceMs, 1 hour), as GC does. */
  graceMs?: number;
  signal?: AbortSignal;
}

/** What {@link LocalStore.remove} did. */
export interface RemoveResult {
  /** The ref removed. */
  name: string;
  /** The id it named; null when the ref file was damaged (then no object is freed). */
  id: ObjectId | null;
  /** Objects of its closure unlinked. */
  removed: number;
  /** Their bytes: the disk freed. */
  bytes: number;
  /** Objects of its closure that stay because another ref, a root or a live lease reaches them. */
  shared: number;
  /** Their bytes. */
  sharedBytes: number;
  /**
   * Objects only it reached that stay for now: younger than the grace period (or claimed or
   * replaced while the sweep ran). The next GC past the grace period takes them.
   */
  left: number;
  /** Their bytes. */
  leftBytes: number;
  /** True when `keepObjects` left every object to GC. */
  keptObjects: boolean;
}

/** What removal needs from the store besides GC's context. */
export interface RemoveContext extends GcContext {
  /** Ids named by roots. */
  roots(): ObjectId[];
  /** Every ref (`corrupt` if one cannot be read: the mark could not see it). */
  refs(): Promise<RefEntry[]>;
}

/** Removes ref `name`, then sweeps what only it reached (unless `keepObjects`). */
export async function removeAndFree(
  ctx: RemoveContext,
  name: string,
  graceMs: number,
  options: RemoveOptions,
): Promise<RemoveResult> {
  const { db, layout, objects } = ctx;
  const { signal, keepObjects = false } = options;
  if (!Number.isSafeInteger(graceMs) || graceMs < 0) {
    throw new TensorFSError('invalid_argument', 'graceMs must be a non-negative integer', {
      details: { rule: 'gc.bad_grace', actual: graceMs },
    });
  }
  const result: RemoveResult = {
    name,
    id: null,
    removed: 0,
    bytes: 0,
    shared: 0,
    sharedBytes: 0,
    left: 0,
    leftBytes: 0,
    keptObjects: keepObjects,
  };
  let id: ObjectId | null;
  try {
    id = await readRef(layout, name);
  } catch (err) {
    // A damaged ref (a symlink, bad content) names nothing known: remove the file, free nothing.
    if (!isTensorFSError(err) || err.code !== 'corrupt' || options.expected !== undefined) throw err;
    removeRef(db, layout, name, undefined);
    return { ...result, keptObjects: true };
  }
  if (id === null)
    throw new TensorFSError('not_found', 'no such ref', { details: { rule: 'store.no_ref', ref: name } });
  result.id = id;
  if (options.expected !== undefined && options.expected !== id) {
    throw new TensorFSError('conflict', 'ref holds another id than expected (compare-and-swap failed)', {
      details: { rule: 'store.ref_cas', ref: name, expected: options.expected, actual: id },
    });
  }
  if (keepObjects) {
    removeRef(db, layout, name, id);
    return result;
  }
  // The closure: what this ref reaches now (absent objects have nothing to free).
  const closure = [...(await reach(objects, [id], signal)).objects.keys()];
  pruneLeases(db);
  immediate(db, () => pruneRefLog(db, REF_LOG_MAX_AGE_MS));
  // Mark from everything else before the ref goes: the epoch is read first, so a ref or root set
  // after the mark (this ref set again included) is added by the sweep before it unlinks anything.
  let state: MarkState;
  try {
    state = await markLive(
      ctx,
      async () => {
        const tops = new Set<ObjectId>(ctx.roots());
        for (const r of await ctx.refs()) if (r.name !== name) tops.add(r.id);
        return [...tops];
      },
      signal,
    );
  } catch (err) {
    if (isTensorFSError(err) && err.code === 'corrupt') {
      throw new TensorFSError(
        'corrupt',
        `nothing removed: ${err.message.replace(/^GC refuses to run: /, '')}, so what it keeps alive is unknown; --keep-objects removes just the ref`,
        { details: { ...err.details, rule: err.details.rule ?? 'gc.corrupt_root', ref: name }, cause: err },
      );
    }
    throw err;
  }
  // Compare-and-swap on the id walked: the closure is the one of what was deleted.
  removeRef(db, layout, name, id);
  const sizes = new Map<ObjectId, number>();
  for (const o of closure) {
    const size = statSize(objects.path(o));
    if (size !== null) sizes.set(o, size);
  }
  const candidates = [...sizes.keys()].filter((o) => !state.marked.has(o)).map((o) => ({ id: o }));
  const swept = sweep(ctx, state, candidates, graceMs, signal);
  result.removed = swept.removed;
  result.bytes = swept.bytes;
  for (const [o, size] of sizes) {
    if (state.marked.has(o)) {
      result.shared++;
      result.sharedBytes += size;
    }
  }
  const candidateBytes = candidates.reduce((n, c) => n + (sizes.get(c.id) ?? 0), 0);
  result.left = Math.max(0, candidates.length - swept.removed);
  result.leftBytes = Math.max(0, candidateBytes - swept.bytes);
  // A candidate the sweep found newly marked (a ref set meanwhile reaches it) is shared, not left.
  for (const c of candidates) {
    if (state.marked.has(c.id)) {
      result.left--;
      result.leftBytes -= sizes.get(c.id) ?? 0;
    }
  }
  return result;
}

/** Size of a file, or null if it is gone. */
function statSize(file: string): number | null {
  try {
    return fs.statSync(file).size;
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw ioError(err, 'stat', 'objects/');
  }
}
