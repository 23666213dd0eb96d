/**
 * The storage contract: what every TensorFS store and origin is, whatever holds the bytes (the
 * local store on disk, memory, a folder, a static web server, the hub, an S3 bucket, a store that
 * fetches on a miss). Types only, plus the capability check; no I/O. See docs/architecture.md
 * "The storage contract".
 */
import type { ErrorCode, TensorFSError } from '../errors.js';
import type { ObjectId } from '../ids.js';
import type { Manifest } from '../manifest/index.js';
import type { RecordRef } from '../manifest/index.js';
import type { ByteSource } from '../source.js';

/** Bytes in one buffer or several (concatenated). */
export type Chunks = Uint8Array | readonly Uint8Array[];

/** Result of an admission. `written` is true when this call published the object. */
export interface PutResult {
  id: ObjectId;
  length: number;
  written: boolean;
}

/** Options every call takes: aborting the signal ends the call `cancelled`. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Options of {@link LeaseCapability.lease}. */
export interface LeaseOptions {
  /** Lifetime without renewal (default 10 minutes). */
  ttlMs?: number;
  /** Free text shown by tooling (e.g. `import model/`). */
  purpose?: string;
  /** Renew automatically every ttl/3 while the process lives (default true). */
  keepAlive?: boolean;
}

/** A writer's claim on objects it has admitted but not yet rooted. */
export interface Lease {
  /** Random id (32 hex digits). */
  readonly id: string;
  /** Protects more objects; `conflict` if the lease has expired or was released. */
  add(ids: readonly ObjectId[]): void;
  /** Extends the lease by its TTL from now; `conflict` if it has already expired. */
  renew(): Promise<void>;
  /** Drops the lease and its claims (idempotent). */
  release(): Promise<void>;
}

/** Default lease lifetime without renewal. */
export const DEFAULT_LEASE_TTL_MS = 10 * 60_000;

/** Options of {@link ObjectCapability.put}. */
export interface PutOptions extends CallOptions {
  /** The id the bytes must hash to: `corrupt` otherwise, and nothing becomes visible. */
  expected?: ObjectId;
  /** Claims the object for this lease first (see {@link Lease}). */
  lease?: Lease;
}

/** Options of {@link ObjectCapability.putStream}. */
export interface PutStreamOptions extends PutOptions {
  /** The length the stream must have: `corrupt` otherwise. */
  expectedLength?: number;
}

/** Options of whole-object reads. */
export interface ObjectReadOptions extends CallOptions {
  /** Rehash the object before returning it (`corrupt` on a mismatch). */
  verify?: boolean;
}

/** Options for reads over records. */
export interface ReadOptions {
  /** Rehash each object (once per source) before returning any of its bytes. */
  verify?: boolean;
}

/** A {@link ByteSource} that can also read straight into a caller's buffer. */
export interface FileSource extends ByteSource {
  /** Fills `target` with the bytes at `offset` (the planner reads into its own buffers this way). */
  readInto(offset: number, target: Uint8Array, signal?: AbortSignal): Promise<void>;
}

/** A ref as listed. */
export interface RefEntry {
  name: string;
  id: ObjectId;
}

/** A ref that could not be read: its name, and why (the family and `details.rule` of the failure). */
export interface RefProblem {
  name: string;
  code: ErrorCode;
  rule: string;
  /** What went wrong, without local paths (absent when the listing came over the wire without it). */
  message?: string;
}

/** The one ref listing: every readable ref and every bad entry by name, both sorted by name. */
export interface RefListing<R extends RefEntry = RefEntry> {
  refs: R[];
  problems: RefProblem[];
}

/** Options of {@link RefCapability.setRef}. */
export interface SetRefOptions extends CallOptions {
  /** Compare-and-swap: an id → the ref must hold it; `null` → it must not exist; omitted → unconditional. */
  expected?: ObjectId | null;
  /** A lease that must still be live (`conflict` otherwise). */
  lease?: Lease;
  /**
   * Mark the ref cached (evictable under the store's budget) rather than saved: `tfs pull
   * --cache`, a pull-through hub's fetch from upstream. The local store honours it (a saved ref
   * stays saved); stores without a cache (origins) keep every ref and ignore it.
   */
  cached?: boolean;
}

/** Options of {@link RefCapability.deleteRef}. */
export interface DeleteRefOptions extends CallOptions {
  /** Compare-and-swap: the ref must hold this id (`conflict` otherwise). */
  expected?: ObjectId;
}

/** One object of {@link BatchCapability.putBatch}. */
export interface BatchItem {
  bytes: Chunks;
  /** The id the bytes must hash to (`corrupt` for that item otherwise). */
  expected?: ObjectId;
}

/** The outcome of one item: its result, or the error that refused it. */
export type BatchOutcome = { ok: true; result: PutResult } | { ok: false; error: TensorFSError };

/**
 * A partial object the store hashes while it is written and adopts as the object once verified
 * and durable, kept across runs so a transfer can resume. Not for concurrent use by two writers.
 */
export interface ObjectPart {
  /** Bytes held so far (written or buffered). */
  readonly length: number;
  /**
   * Appends bytes; `corrupt` past `expectedLength`. With `handOver` the caller gives the chunk's
   * memory up, so the part may move it instead of copying it; `done` is called once the part no
   * longer reads the chunk.
   */
  write(chunk: Uint8Array, options?: { handOver?: boolean; done?: () => void }): Promise<void>;
  /** Empties the part (the origin restarted from byte 0, or sent wrong bytes). */
  reset(): Promise<void>;
  /** Writes what is buffered and closes the file, keeping it for a later resume. */
  close(): Promise<void>;
  /**
   * Verifies the part (`expectedLength` bytes hashing to `expected`: `corrupt` otherwise, and the
   * part is removed) and publishes it as the object; an existing good copy wins.
   */
  commit(options: { expected: ObjectId; lease?: Lease; signal?: AbortSignal }): Promise<PutResult>;
  /** Closes and removes the part. */
  discard(): Promise<void>;
}

/** Options of {@link StreamCapability.objectStream}. */
export interface ObjectStreamOptions extends CallOptions {
  /** Where to start (default 0). */
  offset?: number;
  /** Bytes per chunk (default the implementation's). */
  chunkSize?: number;
  /** Buffers the consumer gave back, which the stream may read into again. */
  spare?: Uint8Array[];
  /**
   * Hash the object on the way and withhold the last chunk until the digest matched (`corrupt`
   * otherwise; a store that keeps a quarantine puts the object in it).
   */
  verify?: boolean;
}

/**
 * Objects: immutable bytes named by their SHA-256. Every implementation has these; a read-only
 * one (static HTTP) refuses `put`/`putStream` with `unsupported` and lacks the `objects.write`
 * capability.
 */
export interface ObjectCapability {
  /** True if the object is stored. */
  has(id: ObjectId, options?: CallOptions): Promise<boolean>;
  /** The subset of `ids` that is not stored, in the order given (one batched question where it can). */
  lacks(ids: readonly ObjectId[], options?: CallOptions): Promise<ObjectId[]>;
  /** The object's length in bytes (`not_found` when absent). */
  objectSize(id: ObjectId, options?: CallOptions): Promise<number>;
  /** A whole object; `verify` rehashes it (`corrupt` on a mismatch). `not_found` when absent. */
  readObject(id: ObjectId, options?: ObjectReadOptions): Promise<Uint8Array>;
  /** `length` bytes at `offset` of an object (`invalid_argument` outside it, `not_found` when absent). */
  readObjectRange(id: ObjectId, offset: number, length: number, options?: CallOptions): Promise<Uint8Array>;
  /** Admits bytes held in memory; `corrupt` (nothing visible) if `expected` differs from their hash. */
  put(bytes: Chunks, options?: PutOptions): Promise<PutResult>;
  /** Admits a stream; `expected` and `expectedLength` are checked before anything is visible. */
  putStream(chunks: AsyncIterable<Uint8Array>, options?: PutStreamOptions): Promise<PutResult>;
}

/** Refs: names pointing at objects, moved only by compare-and-swap. */
export interface RefCapability {
  /** The id a ref names, or null. `invalid_argument` for a bad name. */
  getRef(name: string, options?: CallOptions): Promise<ObjectId | null>;
  /**
   * The one way to move a ref: compare-and-swap (see {@link SetRefOptions.expected}; `conflict`
   * when it does not hold). Of N concurrent calls with the same `expected`, exactly one wins.
   * Stores that can check it refuse a target whose closure is not stored (`not_found`).
   */
  setRef(name: string, id: ObjectId, options?: SetRefOptions): Promise<void>;
  /** Deletes a ref (`not_found` if absent, `conflict` if it does not hold `expected`). */
  deleteRef(name: string, options?: DeleteRefOptions): Promise<void>;
  /**
   * The one listing: readable refs, and every entry that is not one, named with why (never a
   * throw for one bad ref). `unsupported` without the `refs.list` capability (static HTTP).
   */
  scanRefs(options?: CallOptions): Promise<RefListing>;
}

/** Leases: objects admitted under a live lease are kept until a ref or root names them. */
export interface LeaseCapability {
  /** Starts a lease. */
  lease(options?: LeaseOptions): Promise<Lease>;
}

/** Many in-memory objects in one call with batched durability. */
export interface BatchCapability {
  putBatch(items: readonly BatchItem[], options?: { lease?: Lease; signal?: AbortSignal }): Promise<BatchOutcome[]>;
}

/** A resumable part file the store hashes while it is written (see {@link ObjectPart}). */
export interface PartCapability {
  openPart(
    key: string,
    options: { expectedLength: number; signal?: AbortSignal; direct?: boolean },
  ): Promise<ObjectPart>;
}

/** An object as a stream of chunks from an offset, reusing buffers the consumer gives back. */
export interface StreamCapability {
  objectStream(id: ObjectId, options?: ObjectStreamOptions): AsyncIterable<Uint8Array>;
}

/**
 * The named capabilities. Every implementation has `objects` and `refs` (their members exist
 * everywhere); the rest are announced in {@link Store.capabilities} and checked by name with
 * {@link supports}, never probed with `?.`.
 *
 * - `objects.write`: `put`/`putStream` admit bytes (absent: they are `unsupported`).
 * - `refs.write`: `setRef` moves refs (absent: `unsupported`).
 * - `refs.delete`: `deleteRef` removes refs (absent: `unsupported`).
 * - `refs.list`: `scanRefs` lists refs (absent: `unsupported`).
 * - `refs.closure`: `setRef` refuses a target whose closure is not stored.
 * - `leases`: `lease()` holds objects against collection (absent: a lease only records claims).
 * - `objects.batch`: {@link BatchCapability}. `objects.part`: {@link PartCapability}.
 *   `objects.stream`: {@link StreamCapability}.
 */
export type Capability =
  | 'objects.write'
  | 'refs.write'
  | 'refs.delete'
  | 'refs.list'
  | 'refs.closure'
  | 'leases'
  | 'objects.batch'
  | 'objects.part'
  | 'objects.stream';

/** The members a capability brings (the ones beyond every store's). */
export interface CapabilityMembers {
  'objects.write': ObjectCapability;
  'refs.write': RefCapability;
  'refs.delete': RefCapability;
  'refs.list': RefCapability;
  'refs.closure': RefCapability;
  leases: LeaseCapability;
  'objects.batch': BatchCapability;
  'objects.part': PartCapability;
  'objects.stream': StreamCapability;
}

/**
 * The storage contract. Every failure is a `TensorFSError`: a malformed id or ref name is
 * `invalid_argument`, an absent object `not_found`, bytes that do not hash to their id
 * `corrupt`, a failed compare-and-swap or a dead lease `conflict`, an aborted call `cancelled`, a
 * capability the implementation lacks `unsupported`.
 */
export interface Store extends ObjectCapability, RefCapability, LeaseCapability {
  /** What this implementation can do beyond reading (see {@link Capability}). */
  readonly capabilities: ReadonlySet<Capability>;

  /**
   * Random access over a record list (a stored file): every piece is length-checked against its
   * record (`corrupt`), `verify` rehashes each object before its bytes are returned.
   */
  recordsSource(records: readonly RecordRef[], options?: ReadOptions): FileSource;
  /** Stores a TFM1 manifest as an object; its id is the snapshot id. */
  putManifest(m: Manifest, options?: { lease?: Lease }): Promise<ObjectId>;
  /** Reads, verifies and decodes a manifest (`malformed` if the object is not one). */
  getManifest(id: ObjectId): Promise<Manifest>;
  /** A stored object id passes through; otherwise a ref name is read. `not_found` if neither. */
  resolve(refOrId: string): Promise<ObjectId>;
}

/**
 * The capability check: true (and `store` typed with the capability's members) when `store`
 * announces `capability`. Callers ask by name, never by probing for a member.
 */
export function supports<C extends Capability>(
  store: { readonly capabilities: ReadonlySet<Capability> },
  capability: C,
): store is typeof store & CapabilityMembers[C] {
  return store.capabilities.has(capability);
}
