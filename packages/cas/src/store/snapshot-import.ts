/**
 * Imports into a local store as snapshots: a file or folder on disk ({@link importTree}), or entries
 * scanned elsewhere ({@link importFound}), each followed by its manifest (and, for a path, the ref).
 */
import { basename, resolve } from 'node:path';
import type { Manifest, ObjectId } from '@tensorfs/format';
import { type Found, type ImportOptions, type ImportResult, importFound, importTree } from './import.js';
import type { Lease, LeaseOptions } from './leases.js';
import { recordFileSha256 } from './file-sha256.js';
import type { Chunks, Objects, PutResult } from './objects.js';
import type { LocalSetRefOptions } from './ref-write.js';

/** What an import writes through: the store's own lease, manifest and ref methods. */
export interface SnapshotWriter {
  lease(options?: LeaseOptions): Promise<Lease>;
  putManifest(m: Manifest, options?: { lease?: Lease }): Promise<ObjectId>;
  setRef(name: string, id: ObjectId, options?: LocalSetRefOptions): Promise<void>;
  put(bytes: Chunks, options?: { lease?: Lease }): Promise<PutResult>;
}

/**
 * Imports a file or a folder as a snapshot under a lease of its own, then sets `options.name`
 * (see {@link LocalStore.importPath}).
 */
export async function importPathAsSnapshot(
  store: SnapshotWriter,
  objects: Objects,
  path: string,
  options: ImportOptions,
): Promise<ImportResult> {
  const lease = await store.lease({ purpose: `import ${basename(path)}` });
  try {
    const result = await importTree(objects, lease, resolve(path), options);
    const snapshot = await store.putManifest({ entries: result.entries }, { lease });
    if (options.name !== undefined) await store.setRef(options.name, snapshot, { lease, expected: options.expected });
    // Named or not (`tfs convert <folder>` imports with no name; its checkpoint takes the list).
    await recordFileSha256(store, snapshot, result.entries, result.fileSha256, { lease });
    return resultOf(snapshot, result);
  } finally {
    await lease.release();
  }
}

/** Imports entries scanned elsewhere as one snapshot under the caller's `lease` (see {@link LocalStore.importEntries}). */
export async function importEntriesAsSnapshot(
  store: SnapshotWriter,
  objects: Objects,
  found: readonly Found[],
  lease: Lease,
  options: ImportOptions,
): Promise<ImportResult> {
  const result = await importFound(objects, lease, found, options);
  const snapshot = await store.putManifest({ entries: result.entries }, { lease });
  return resultOf(snapshot, result);
}

/** What an import reports: the snapshot and the counts of the import that built it. */
function resultOf(snapshot: ObjectId, result: Omit<ImportResult, 'snapshot'>): ImportResult {
  return {
    snapshot,
    files: result.files,
    bytes: result.bytes,
    bytesWritten: result.bytesWritten,
    objectsWritten: result.objectsWritten,
    fileSha256: result.fileSha256,
  };
}
