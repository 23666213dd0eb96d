/**
 * The store port: the small, fully asynchronous interface the layers above the store (`tensors`,
 * later `lanes` and `remote`) use. {@link LocalStore} (SQLite metadata, files on disk) is one
 * implementation; a store that falls back to an origin on a miss will be another. Maintenance
 * (GC, verify, import, export, usage, roots) belongs to the implementation, not to the port.
 * See docs/architecture.md "The store port".
 */
import type { Manifest, ObjectId, RecordRef } from '@tensorfs/format';
import type { FileSource } from './file-source.js';
import type { Lease, LeaseOptions } from './leases.js';
import type { Chunks, PutResult } from './objects.js';
import type { ReadOptions } from './read.js';
import type { BatchItem, BatchOutcome, ObjectPart } from './staging.js';

/**
 * What upper layers need from a content-addressed store. Every failure is a `TensorFSError`:
 * a malformed id is `invalid_argument`, an absent object or ref `not_found`, bytes that do not
 * hash to their id `corrupt`, a failed compare-and-swap or a dead lease `conflict`.
 */
export interface Store {
  // Objects
  /** True if the object is stored (and readable). */
  has(id: ObjectId): Promise<boolean>;
  /**
   * Admits bytes held in memory (hashed; `corrupt` if `expected` differs). With a lease the
   * object is claimed first, so a collector cannot take it before a ref or root names it.
   */
  put(bytes: Chunks, options?: { expected?: ObjectId; lease?: Lease }): Promise<PutResult>;
  /** Admits a stream; `expected`/`expectedLength` are checked before anything is published. */
  putStream(
    chunks: AsyncIterable<Uint8Array>,
    options?: { expected?: ObjectId; expectedLength?: number; lease?: Lease; signal?: AbortSignal },
  ): Promise<PutResult>;
  /**
   * Optional: a resumable part file the store hashes while it is written and adopts as the object
   * once verified and durable (see `LocalStore.openPart`). Callers fall back to `putStream`.
   */
  openPart?(
    key: string,
    options: { expectedLength: number; signal?: AbortSignal; direct?: boolean },
  ): Promise<ObjectPart>;
  /** Optional: many in-memory objects with batched durability (see `LocalStore.putBatch`). */
  putBatch?(items: readonly BatchItem[], options?: { lease?: Lease; signal?: AbortSignal }): Promise<BatchOutcome[]>;
  /** A whole object; `verify` rehashes it (`corrupt` on a mismatch). */
  readObject(id: ObjectId, options?: { verify?: boolean }): Promise<Uint8Array>;
  /** `length` bytes at `offset` of an object (`invalid_argument` outside it). */
  readObjectRange(id: ObjectId, offset: number, length: number): Promise<Uint8Array>;
  /**
   * Random access over a record list (a stored file): every piece is length-checked against its
   * record (`corrupt`), `verify` rehashes each object before its bytes are returned.
   */
  recordsSource(records: readonly RecordRef[], options?: ReadOptions): FileSource;

  // Snapshots
  /** Stores a TFM1 manifest as an object; its id is the snapshot id. */
  putManifest(m: Manifest, options?: { lease?: Lease }): Promise<ObjectId>;
  /** Reads, verifies and decodes a manifest (`malformed` if the object is not one). */
  getManifest(id: ObjectId): Promise<Manifest>;

  // Refs
  /** A stored object id passes through; otherwise a ref name is read. `not_found` if neither. */
  resolve(refOrId: string): Promise<ObjectId>;
  /** The id a ref names, or null. */
  getRef(name: string): Promise<ObjectId | null>;
  /**
   * Sets a ref with compare-and-swap (`expected`: an id → the ref holds it, `null` → it does not
   * exist, omitted → unconditional; `conflict` otherwise). The target and everything it
   * references must be stored (`not_found`) and `lease`, if given, live (`conflict`).
   */
  setRef(name: string, id: ObjectId, options?: { expected?: ObjectId | null; lease?: Lease }): Promise<void>;

  // Leases
  /** Starts a lease: objects admitted with it are kept until it ends. */
  lease(options?: LeaseOptions): Promise<Lease>;
}
