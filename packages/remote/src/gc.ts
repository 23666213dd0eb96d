/**
 * Retention on remotes (docs/remote.md "Retention"): `gcOrigin` marks from every ref of an origin
 * (branches, tags, drafts: every ref its `scanRefs` lists) through the reference walker, and
 * sweeps the objects no ref reaches that are older than a grace window: by file mtime in a
 * folder origin, by `LastModified` in S3, by the hub's own store behind a hub (the hub runs the
 * sweep itself, for a token with the `admin` scope).
 *
 * Why a push racing a GC never loses an object: a push uploads every object its ref will reach
 * before it moves the ref. An object it uploads is younger than the window, so it is no
 * candidate whatever the mark saw; and the objects are listed (with their ages) before the mark
 * starts, so a ref moved before the mark is marked, and one moved after it names only objects
 * the origin already held (marked through another ref, or young) or uploaded (young). What a push
 * skips because the origin holds it (perhaps unreachable and old) it freshens (`Origin.freshen`),
 * and the sweep re-checks each object's age right before its delete against the listing's cutoff
 * (the sweeper does: a folder renames aside first, S3 lists the batch's key range again), so a
 * freshened object stays; docs/remote.md "Retention" says what window S3 leaves.
 */
import { LocalStore } from '@tensorfs/cas';
import {
  type ObjectId,
  type Progress,
  progressEvent,
  REFERENCE_MAGIC_LENGTH,
  TensorFSError,
  isTensorFSError,
  parseObjectId,
  referenceKindOf,
  throwIfAborted,
} from '@tensorfs/format';
import type { Store } from '@tensorfs/format/store';
import { sweeperOfFolder } from './gc-folder.js';
import type { SweepableObject, Sweeper } from './gc-sweeper.js';

export type { SweepableObject, Sweeper } from './gc-sweeper.js';
import { FolderOrigin } from './folder.js';
import { HubOrigin } from './http-origin.js';
import type { Origin } from './origin.js';
import { referencesOf } from './references.js';
import { S3Origin } from './s3.js';
import { StoreOrigin } from './store-origin.js';

/** Default grace window: unreachable objects younger than this are kept (1 hour, as the local GC). */
export const DEFAULT_REMOTE_GRACE_MS = 3600_000;

/** Options of {@link gcOrigin}. */
export interface RemoteGcOptions {
  /** Keep unreachable objects younger than this (ms; default {@link DEFAULT_REMOTE_GRACE_MS}). */
  graceMs?: number;
  /** Report what would go (count and bytes), remove nothing. */
  dryRun?: boolean;
  signal?: AbortSignal;
  /**
   * Called as the listing, the mark and the sweep advance, unit `objects`: phase `list` (every
   * 1000 objects listed), `mark` (referencing objects read) and `sweep` (objects of `objectsTotal`
   * put through a delete).
   */
  onProgress?: (p: Progress) => void;
}

/** What {@link gcOrigin} did (or, with `dryRun`, would do). */
export interface RemoteGcResult {
  /** The origin, as safe to print. */
  origin: string;
  dryRun: boolean;
  /** Refs marked from. */
  refs: number;
  /** Objects some ref reaches (null where the backing store's own GC ran: a hub over a local store). */
  reachable: number | null;
  /** Objects removed (or that would be), and their bytes. */
  removed: number;
  bytes: number;
  /** Objects kept: reachable, or younger than the window. */
  kept: number;
  /** Of the kept, unreachable but younger than the window (null as for `reachable`). */
  young: number | null;
  /** Up to 1,000 of the ids removed (or that would be), sorted. */
  ids: ObjectId[];
}

/** Objects deleted per request (S3's DeleteObjects takes at most 1,000 keys). */
const DELETE_BATCH = 1000;

function checkGrace(graceMs: number | undefined): number {
  const g = graceMs ?? DEFAULT_REMOTE_GRACE_MS;
  if (!Number.isSafeInteger(g) || g < 0) {
    throw new TensorFSError('invalid_argument', 'graceMs must be a non-negative integer', {
      details: { rule: 'gc.bad_grace', actual: graceMs },
    });
  }
  return g;
}

/**
 * Everything the refs of `store` reach: every ref's target, and what each referencing object
 * (manifest, checkpoint header, revision document) references, walked. A ref listing with
 * unreadable entries, or a reachable referencing object that is missing or does not decode,
 * makes GC refuse (`corrupt`, rule `gc.unknown_reach`): it cannot know what that keeps alive.
 * `onProgress` is called after each referencing object read (phase `mark`, unit `objects`).
 */
export async function markReachable(
  store: Store,
  options: { signal?: AbortSignal; onProgress?: (p: Progress) => void } = {},
): Promise<{ refs: number; reachable: Set<ObjectId> }> {
  const { signal } = options;
  const listing = await store.scanRefs({ signal });
  if (listing.problems.length > 0) {
    throw new TensorFSError('corrupt', 'some refs cannot be read; GC cannot know what they keep', {
      details: { rule: 'gc.unknown_reach', refs: listing.problems.slice(0, 20).map((p) => p.name) },
    });
  }
  const reachable = new Set<ObjectId>();
  const queue: ObjectId[] = [];
  // Ref targets are probed (they may be a leaf); followed children are known to reference.
  const probe = new Set<ObjectId>();
  for (const r of listing.refs) {
    if (!reachable.has(r.id)) {
      reachable.add(r.id);
      queue.push(r.id);
      probe.add(r.id);
    }
  }
  let done = 0;
  while (queue.length > 0) {
    throwIfAborted(signal);
    const id = queue.pop()!;
    let bytes: Uint8Array;
    try {
      if (probe.has(id)) {
        const size = await store.objectSize(id, { signal });
        const head = await store.readObjectRange(id, 0, Math.min(size, REFERENCE_MAGIC_LENGTH), { signal });
        if (referenceKindOf(head) === undefined) continue;
      }
      bytes = await store.readObject(id, { verify: true, signal });
    } catch (err) {
      if (isTensorFSError(err) && err.code === 'cancelled') throw err;
      throw new TensorFSError('corrupt', 'an object a ref reaches cannot be read; GC cannot know what it keeps', {
        details: { rule: 'gc.unknown_reach', digest: id },
        cause: err,
      });
    }
    let refs: ReturnType<typeof referencesOf>;
    try {
      refs = referencesOf(bytes);
    } catch (err) {
      throw new TensorFSError('corrupt', 'an object a ref reaches does not decode; GC cannot know what it keeps', {
        details: { rule: 'gc.unknown_reach', digest: id },
        cause: err,
      });
    }
    for (const c of refs) {
      if (reachable.has(c.id)) continue;
      reachable.add(c.id);
      if (c.follow) queue.push(c.id);
    }
    options.onProgress?.(progressEvent('mark', 'objects', { objects: ++done }));
  }
  return { refs: listing.refs.length, reachable };
}

/**
 * Mark and sweep over a store whose objects a {@link Sweeper} lists and deletes. The objects are
 * listed (with their ages, against one clock reading taken first) before the mark starts.
 */
export async function sweepStore(
  store: Store,
  sweeper: Sweeper,
  display: string,
  options: RemoteGcOptions = {},
): Promise<RemoteGcResult> {
  const graceMs = checkGrace(options.graceMs);
  const { signal } = options;
  const now = Date.now();
  const listed: SweepableObject[] = [];
  for await (const o of sweeper.list(signal)) {
    throwIfAborted(signal);
    listed.push(o);
    if (listed.length % 1000 === 0) options.onProgress?.(progressEvent('list', 'objects', { objects: listed.length }));
  }
  const { refs, reachable } = await markReachable(store, {
    signal,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  const doomed: SweepableObject[] = [];
  let young = 0;
  for (const o of listed) {
    if (reachable.has(o.id)) continue;
    if (now - o.modifiedMs < graceMs) young++;
    else doomed.push(o);
  }
  doomed.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  let gone = doomed;
  if (!options.dryRun) {
    // Each object's age is re-checked right before its delete (the sweeper does it), against
    // the same cutoff as the listing: one a push freshened (skipped because the origin held
    // it) at any time since that listing stays, however long this GC has run.
    const removed = new Set<ObjectId>();
    for (let i = 0; i < doomed.length; i += DELETE_BATCH) {
      throwIfAborted(signal);
      const batch = doomed.slice(i, i + DELETE_BATCH).map((o) => o.id);
      for (const id of await sweeper.remove(batch, now - graceMs, signal)) removed.add(id);
      options.onProgress?.(
        progressEvent('sweep', 'objects', {
          objects: Math.min(i + DELETE_BATCH, doomed.length),
          objectsTotal: doomed.length,
        }),
      );
    }
    young += doomed.length - removed.size;
    gone = doomed.filter((o) => removed.has(o.id));
  }
  let bytes = 0;
  for (const o of gone) bytes += o.size;
  return {
    origin: display,
    dryRun: options.dryRun ?? false,
    refs,
    reachable: reachable.size,
    removed: gone.length,
    bytes,
    kept: listed.length - gone.length,
    young,
    ids: gone.slice(0, 1000).map((o) => o.id),
  };
}

/** The sweeper of an origin that has one (folder, S3), else null. */
export function sweeperOf(origin: Origin): Sweeper | null {
  if (origin instanceof FolderOrigin) return sweeperOfFolder(origin.root);
  if (origin instanceof S3Origin) {
    return {
      list: (signal) => origin.listChunks(signal),
      remove: (ids, cutoffMs, signal) => origin.deleteChunks(ids, cutoffMs, signal),
    };
  }
  return null;
}

/**
 * GC of a hub's backing store, as the hub runs it for an admin: the local store's own GC (its
 * leases, write lock and ref log make it safe against the hub's concurrent writes) when the hub
 * serves a local store, else {@link sweepStore} over the backing origin's sweeper.
 */
export async function gcBacking(store: Store, options: RemoteGcOptions = {}): Promise<RemoteGcResult> {
  const inner = store instanceof StoreOrigin ? store.inner : store;
  if (inner instanceof LocalStore) {
    const graceMs = checkGrace(options.graceMs);
    const r = await inner.gc({
      graceMs,
      dryRun: options.dryRun ?? false,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const refs = await inner.scanRefs(options.signal ? { signal: options.signal } : {});
    return {
      origin: 'hub store',
      dryRun: r.dryRun,
      refs: refs.refs.length,
      reachable: null,
      removed: r.removed,
      bytes: r.bytes,
      kept: r.kept,
      young: null,
      ids: [],
    };
  }
  const origin = inner as Origin;
  const sweeper = typeof (origin as Partial<Origin>).read === 'function' ? sweeperOf(origin) : null;
  if (sweeper === null) {
    throw new TensorFSError('unsupported', 'this hub cannot sweep its backing store', {
      details: { rule: 'gc.unsupported_backend' },
    });
  }
  return sweepStore(store, sweeper, 'hub store', options);
}

/**
 * `tfs gc <origin>`: retention on a remote. A folder origin and S3 are marked and swept from
 * here; a hub sweeps its own store (`POST /v1/admin/gc`, a token with the `admin` scope). Other
 * origins (static HTTP, Hugging Face) are `unsupported` (`gc.unsupported_origin`).
 */
export async function gcOrigin(origin: Origin, options: RemoteGcOptions = {}): Promise<RemoteGcResult> {
  checkGrace(options.graceMs);
  throwIfAborted(options.signal);
  if (origin instanceof HubOrigin) {
    const r = (await origin.adminGc(
      { graceMs: options.graceMs ?? DEFAULT_REMOTE_GRACE_MS, dryRun: options.dryRun ?? false },
      options.signal,
    )) as RemoteGcResult;
    return { ...r, origin: origin.display, ids: (r.ids ?? []).map((id) => parseObjectId(id)) };
  }
  const sweeper = sweeperOf(origin);
  if (sweeper === null) {
    throw new TensorFSError('unsupported', `cannot collect garbage on ${origin.display}`, {
      details: { rule: 'gc.unsupported_origin', kind: origin.kind },
    });
  }
  return sweepStore(origin, sweeper, origin.display, options);
}
