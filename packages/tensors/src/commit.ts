import { checkObject, checkObjects, checkOptions, checkStore, checkString } from './args.js';
import type { Lease, Store } from '@tensorfs/format/store';
import {
  type Manifest,
  type ManifestEntry,
  type ObjectId,
  resolveSpec,
  sortManifestEntries,
  TensorFSError,
  throwIfAborted,
} from '@tensorfs/format';

/** Options of {@link commit}. */
export interface CommitOptions {
  /** The snapshot to start from (a ref name or a snapshot id). @default an empty snapshot */
  base?: string;
  /** File or symlink entries to add, or to replace the entry at the same path. */
  put?: readonly ManifestEntry[];
  /** Paths to remove from the base (each must exist). */
  remove?: readonly string[];
  /** A ref to move to the new snapshot, by compare-and-swap. */
  ref?: string;
  /**
   * The id the ref must hold for the move to happen (`null`: the ref must not exist yet).
   * @default the base's id when `base` names the same ref, else the ref's value when the commit starts
   */
  expected?: ObjectId | null;
  /**
   * A lease to hold the manifest until something roots it. Without one, the commit's own lease is
   * released once `ref` points at the snapshot, and left to expire (ten minutes) when there is no `ref`.
   */
  lease?: Lease;
  /** Cancels the commit before the manifest is written (`cancelled`). */
  signal?: AbortSignal;
}

/** What {@link commit} made. */
export interface CommitResult {
  /** The new snapshot's id. */
  readonly snapshot: ObjectId;
  /** The new snapshot's manifest. */
  readonly manifest: Manifest;
  /** The base snapshot's id, if there was a base. */
  readonly base: ObjectId | null;
}

/**
 * Builds a snapshot from an existing one plus new, replaced or removed entries, writes its manifest
 * and, with `ref`, moves the ref to it by compare-and-swap. Every object the new entries name must
 * already be in the store: a snapshot is never published before the objects it references.
 *
 * @throws {TensorFSError} `not_found` (base, a removed path, or an object of a new entry missing),
 *   `invalid_argument` (a path both put and removed, or twice; an entry the manifest rules refuse),
 *   `conflict` (the ref moved: nothing but the unreferenced manifest object was written).
 */
export async function commit(store: Store, options: CommitOptions): Promise<CommitResult> {
  checkStore(store);
  checkObject(options, 'options');
  checkOptions(options);
  const put = options.put ?? [];
  const remove = options.remove ?? [];
  checkObjects(put, 'options.put');
  if (!Array.isArray(remove)) checkObjects(remove, 'options.remove');
  for (const path of remove) checkString(path, 'options.remove[]');
  if (options.base !== undefined) checkString(options.base, 'options.base');
  if (options.ref !== undefined) checkString(options.ref, 'options.ref');
  const base = options.base === undefined ? null : (await resolveSpec(store, options.base)).target;
  const entries = new Map<string, ManifestEntry>();
  if (base !== null) for (const entry of (await store.getManifest(base)).entries) entries.set(entry.path, entry);

  const touched = new Set<string>();
  for (const path of remove) {
    claim(touched, path);
    if (!entries.delete(path)) {
      throw new TensorFSError('not_found', 'a path to remove is not in the base snapshot', {
        details: { rule: 'tensors.commit_remove_missing', path, ...(base !== null ? { snapshot: base } : {}) },
      });
    }
  }
  for (const entry of put) {
    claim(touched, entry.path);
    entries.set(entry.path, entry);
  }
  await requireObjects(store, put, options.signal);

  const expected = await expectedRefValue(store, options.ref, options.expected, options.base, base);
  throwIfAborted(options.signal);
  const manifest: Manifest = { entries: sortManifestEntries([...entries.values()]) };
  // Not kept alive: when no ref takes the snapshot, the lease is left to expire (ten minutes).
  const lease = options.lease ?? (await store.lease({ purpose: 'commit', keepAlive: false }));
  let keepLease = options.lease !== undefined;
  try {
    const snapshot = await store.putManifest(manifest, { lease });
    if (options.ref !== undefined) await store.setRef(options.ref, snapshot, { expected: expected ?? null, lease });
    // Without a ref nothing roots the snapshot yet: leave the lease to expire rather than release it.
    else keepLease = true;
    return { snapshot, manifest, base };
  } finally {
    if (!keepLease) await lease.release();
  }
}

function claim(touched: Set<string>, path: string): void {
  if (touched.has(path)) {
    throw new TensorFSError('invalid_argument', 'a path is put or removed twice in one commit', {
      details: { rule: 'tensors.commit_duplicate_path', path },
    });
  }
  touched.add(path);
}

/** `not_found` unless every object of the entries is in the store. */
async function requireObjects(store: Store, entries: readonly ManifestEntry[], signal?: AbortSignal): Promise<void> {
  const seen = new Set<ObjectId>();
  for (const entry of entries) {
    if (entry.kind !== 'file') continue;
    for (const record of entry.records) {
      if (seen.has(record.digest)) continue;
      seen.add(record.digest);
      throwIfAborted(signal);
      if (!(await store.has(record.digest))) {
        throw new TensorFSError('not_found', 'an object of a new entry is not in the store', {
          details: { rule: 'tensors.missing_object', path: entry.path, digest: record.digest },
        });
      }
    }
  }
}

/**
 * Internal (not exported from the package): what a ref must still hold for a commit to move it
 * by compare-and-swap. None without a ref; the caller's `expected` when given; the base's id when
 * the commit started from that same ref; else the ref's value now. Shared by {@link commit} and
 * the checkpoint writer.
 */
export async function expectedRefValue(
  store: Store,
  ref: string | undefined,
  expected: ObjectId | null | undefined,
  baseName: string | undefined,
  base: ObjectId | null,
): Promise<ObjectId | null | undefined> {
  if (ref === undefined) return undefined;
  if (expected !== undefined) return expected;
  return baseName === ref ? base : await store.getRef(ref);
}
