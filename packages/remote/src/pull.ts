/**
 * Pull: the closure of what was asked, minus what the store holds, fetched with bounded
 * concurrency, resumed with `Range`, verified (length and SHA-256) before the store admits it;
 * the local ref moves last, once everything it reaches is present. The selection of what to
 * keep is in select.ts, the transfer engine in transfer.ts, the sinks in sinks.ts.
 */
import {
  globMatcher,
  type ObjectId,
  TensorFSError,
  decodeCheckpoint,
  decodeManifest,
  encodeCheckpoint,
  isCheckpointHeader,
  isObjectId,
  objectReferences,
  cancelledError,
} from '@tensorfs/format';
import type { Lease, Store } from '@tensorfs/format/store';
import { selectCheckpoint } from '@tensorfs/tensors';
import { carryFileSha256 } from './file-sha256.js';
import type { Origin } from './origin.js';
import { referencesOf } from './references.js';
import { selectComponents, selectTensors } from './select.js';
import { type FetchOptions, Transfer } from './transfer.js';

export { BATCH_OBJECT_BYTES, type FetchOptions, fetchObjects } from './transfer.js';
export { selectComponents } from './select.js';

/** Options of {@link pull}. */
export interface PullOptions extends FetchOptions {
  /** Local ref to set (default: the remote ref's name; required when pulling by id). */
  name?: string;
  /**
   * Keep only these snapshot paths or folders, or these components of a checkpoint (a new snapshot
   * or checkpoint header of just them is named locally).
   */
  components?: readonly string[];
  /**
   * Keep only tensors matching these globs (picomatch syntax) in the snapshot's safetensors and
   * GGUF files: headers are read first (fetched on read), each file is trimmed to its matching
   * tensors, files without any are left out, other files are kept whole. Of a checkpoint: its
   * matching tensors (see `selectCheckpoint` of `@tensorfs/tensors`).
   */
  tensors?: readonly string[];
  /** Compare-and-swap on the local ref: an id it must hold, or null (must not exist). */
  expected?: ObjectId | null;
  /** Set the local ref as cached (evictable under the store's budget), not saved (`tfs pull --cache`). */
  cached?: boolean;
}

/** What a pull did. */
export interface PullResult {
  /** The remote ref (or id) asked for. */
  ref: string;
  /** The local ref set. */
  name: string;
  /** The id the remote ref named. */
  remoteId: ObjectId;
  /** The id the local ref now names (differs from `remoteId` when components were selected). */
  id: ObjectId;
  objects: { total: number; present: number; fetched: number };
  bytes: { total: number; present: number; fetched: number; resumed: number };
}

/**
 * Pulls `ref` (a ref name or an object id) from `origin` into `store`. On any failure nothing
 * is named: objects already admitted stay unreferenced (collectable), partial downloads stay in
 * `partsDir` for the next run.
 */
export async function pull(store: Store, origin: Origin, ref: string, options: PullOptions = {}): Promise<PullResult> {
  const signal = options.signal;
  if (signal?.aborted) throw cancelledError();
  const name = options.name ?? (isObjectId(ref) ? undefined : ref);
  if (name === undefined) {
    throw new TensorFSError('invalid_argument', 'pulling an object id needs a local ref name', {
      details: { rule: 'pull.name_required' },
    });
  }
  const remoteId = isObjectId(ref) ? ref : await origin.getRef(ref, { signal });
  if (remoteId === null) {
    throw new TensorFSError('not_found', 'the origin has no such ref', { details: { rule: 'remote.no_ref', ref } });
  }
  const r = await fetchSelection(store, origin, remoteId, options, `pull ${name}`, (id, lease) =>
    store.setRef(name, id, { expected: options.expected, lease, ...(options.cached ? { cached: true } : {}) }),
  );
  return { ref, name, remoteId, ...r };
}

/** What {@link fetchSelection} did: the local id and the transfer's counts. */
export interface SelectionResult {
  /** The id now held locally (differs from the remote one when something was selected). */
  id: ObjectId;
  objects: PullResult['objects'];
  bytes: PullResult['bytes'];
}

/**
 * The transfer of a pull without its naming: fetches `remoteId`'s closure (or the selection of
 * `options.components` / `options.tensors` of it) into `store` under a lease, then calls `finish`
 * with the local id while the lease still holds everything, so the caller names it (a ref, a
 * branch move). Nothing is named when any step fails.
 */
export async function fetchSelection(
  store: Store,
  origin: Origin,
  remoteId: ObjectId,
  options: Omit<PullOptions, 'name' | 'expected'>,
  purpose: string,
  finish: (id: ObjectId, lease: Lease) => Promise<unknown>,
): Promise<SelectionResult> {
  const signal = options.signal;
  if (signal?.aborted) throw cancelledError();
  const lease = await store.lease({ purpose });
  const t = new Transfer(store, origin, lease, { ...options, directIO: options.directIO ?? true });
  try {
    // The referencing objects (manifests) first: they say what else is needed.
    let topBytes = await t.referencing(remoteId);
    let localId = remoteId;
    const leaves = new Map<ObjectId, number | undefined>();
    if (isCheckpointHeader(topBytes) && (options.components?.length || options.tensors?.length)) {
      // A checkpoint's selection is a new header over a subset of its objects (see selectCheckpoint).
      const selected = encodeCheckpoint(
        selectCheckpoint(decodeCheckpoint(topBytes), {
          ...(options.components?.length ? { components: options.components } : {}),
          ...(options.tensors?.length ? { tensors: globMatcher(options.tensors) } : {}),
        }),
      );
      localId = (await store.put([selected], { lease })).id;
      topBytes = selected;
    } else if (options.components && options.components.length > 0) {
      if (objectReferences(topBytes)?.kind !== 'manifest') {
        throw new TensorFSError('invalid_argument', 'components can only be selected from a snapshot', {
          details: { rule: 'pull.not_a_snapshot' },
        });
      }
      const m = selectComponents(decodeManifest(topBytes), options.components);
      localId = await store.putManifest(m, { lease });
      topBytes = await store.readObject(localId);
    }
    // What the selection fetched to read headers counts as fetched (not as already present), and
    // the headers it wrote here (trimmed files) as neither: they came from no origin.
    const selectionFetched = new Set<ObjectId>();
    let made: Set<ObjectId> | undefined;
    if (options.tensors && options.tensors.length > 0 && !isCheckpointHeader(topBytes)) {
      const before = new Set(referencesOf(topBytes).map((r) => r.id));
      localId = await selectTensors(store, origin, lease, localId, options.tensors, options, selectionFetched);
      topBytes = await store.readObject(localId);
      made = new Set(
        referencesOf(topBytes)
          .filter((r) => !before.has(r.id))
          .map((r) => r.id),
      );
    }
    await t.walk(topBytes, leaves);
    for (const id of t.referencingIds) leaves.delete(id);
    await t.fetchAll(leaves, { fetchedEarlier: selectionFetched, ...(made ? { made } : {}) });
    for (const id of selectionFetched) if (!leaves.has(id)) await t.countFetched(id);
    await carryFileSha256(origin, store, store, remoteId, { as: localId, lease, ...(signal ? { signal } : {}) });
    await finish(localId, lease);
    return {
      id: localId,
      objects: { total: t.objectsTotal, present: t.objectsPresent, fetched: t.objectsFetched },
      bytes: { total: t.bytesTotal, present: t.bytesPresent, fetched: t.bytesFetched, resumed: t.bytesResumed },
    };
  } finally {
    await lease.release().catch(() => {});
  }
}
