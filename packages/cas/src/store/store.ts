/**
 * {@link LocalStore}: one local content-addressed store on disk (docs/store.md), the
 * SQLite-backed implementation of the {@link Store} port. See docs/store.md for the durability,
 * lease and GC protocols.
 *
 * LocalStore is a facade: it checks each call's arguments and that the store is open and
 * writable, and hands the work to the module that does that job: lifecycle.ts (open, init,
 * `--shared`), objects.ts and staging.ts (admission and reads), ref-read.ts and ref-write.ts (refs),
 * leases.ts, roots.ts, the import pipeline (`sources/pipeline.ts`, with local-admission.ts) and
 * export.ts, gc.ts, verify.ts, remove.ts and usage.ts (maintenance), cache.ts, cache-list.ts and prune.ts (saved and cached refs, the budget).
 */
import * as fsp from 'node:fs/promises';
import {
  type Manifest,
  type ObjectId,
  type RecordRef,
  TensorFSError,
  encodeManifest,
  parseObjectId,
  throwIfAborted,
  wrongArgument,
} from '@tensorfs/format';
import type {
  CallOptions,
  Capability,
  DeleteRefOptions,
  ObjectReadOptions,
  PutOptions,
  Store,
} from '@tensorfs/format/store';
import {
  checkAsyncIterable,
  checkChunks,
  checkObject,
  checkObjects,
  checkOptionalBoolean,
  checkOptions,
  checkString,
} from './args.js';
import { DEFAULT_USE_FLUSH_MS, UseTracker, cachedRefRows, setCached } from './cache.js';
import { type CacheListing, addCachedObjects, listCache } from './cache-list.js';
import { type Db, openDb } from './db.js';
import { directFromEnv } from './direct.js';
import { type ExportOptions, exportFile, exportSnapshot, readManifest } from './export.js';
import type { FileSource } from './file-source.js';
import { type GcOptions, type GcResult, collect, freshenObjects } from './gc.js';
import type { Found, ImportOptions, ImportResult } from './import.js';
import { type Layout, validateRefName } from './layout.js';
import { DEFAULT_LEASE_TTL_MS, DbLease, type Lease, type LeaseOptions } from './leases.js';
import {
  DEFAULT_GRACE_MS,
  type InitOptions,
  type InitResult,
  type StoreOptions,
  capabilitiesOf,
  defaultRoot,
  initStore,
  openLocal,
} from './lifecycle.js';
import { type Chunks, type ObjectStreamOptions, Objects, type PutResult } from './objects.js';
import type { StoreParts } from './parts.js';
import { type PruneOptions, type PruneResult, prune } from './prune.js';
import { type ReadOptions, recordsSource } from './read.js';
import { type RefFileListing, type RefListing, checkRefs, resolveRefOrId, scanRefFiles } from './ref-read.js';
import { type LocalSetRefOptions, setRefChecked } from './ref-write.js';
import { type RefEntry, listRefs, readRef, removeRef } from './refs.js';
import { type RemoveOptions, type RemoveResult, removeAndFree } from './remove.js';
import { type RootEntry, addRoot, listRoots, removeRoot, rootIds, tops } from './roots.js';
import { isSharedRoot } from './shared.js';
import { importSources, type ImportSourcesOptions, type ImportSourcesResult } from '../sources/pipeline.js';
import { localSource, scannedSource } from '../sources/local.js';
import { LOCAL_OBJECTS } from './local-admission.js';
import { type BatchItem, type BatchOutcome, type ObjectPart, openPart, putBatch } from './staging.js';
import { type Usage, measureUsage } from './usage.js';
import { type VerifyOptions, type VerifyResult, verifyStore } from './verify.js';

export { DEFAULT_GRACE_MS };
export type { InitOptions, InitResult, StoreOptions } from './lifecycle.js';
export type { LocalSetRefOptions } from './ref-write.js';
export type { CacheListing, CachedObjectInfo, CachedRefInfo } from './cache-list.js';
export type { RootEntry } from './roots.js';
export type { RefFileListing, RefListing, RefProblem } from './ref-read.js';
export type { RefUsage, RepositoryUsage, Usage } from './usage.js';
export type { ExportOptions } from './export.js';

/**
 * Opens the local store at `root` (see {@link LocalStore.open}): the factory upper layers and
 * tools use, returning the implementation (its maintenance methods included).
 */
export function openStore(root: string, options: StoreOptions = {}): Promise<LocalStore> {
  return LocalStore.open(root, options);
}

/** A local content-addressed store: the {@link Store} port plus GC, verify, import, export, usage and roots. */
export class LocalStore implements Store {
  /** The store's root directory. */
  readonly root: string;
  private readonly layout: Layout;
  private readonly db: Db;
  private readonly objects: Objects;
  /** The layout, metadata and objects, as the modules doing the store's jobs take them. */
  private readonly parts: StoreParts;
  private readonly readOnly: boolean;
  private readonly graceMs: number;
  private readonly use: UseTracker | undefined;
  private sideDb: Db | null | undefined;
  private closed = false;
  /**
   * Every capability of the contract; opened read-only, none that writes (`put`, `setRef`… are
   * then refused as before, `invalid_argument` rule `store.read_only`).
   */
  readonly capabilities: ReadonlySet<Capability>;
  /** A description safe to print (never the local path). */
  readonly display = 'local store';

  /**
   * The objects, for the import pipeline's local admission (early temps, `O_DIRECT`); not a
   * contract member. Typed `unknown` so the published types do not name the metadata database's.
   */
  [LOCAL_OBJECTS](): unknown {
    return this.objects;
  }

  private constructor(layout: Layout, db: Db, options: StoreOptions, scratch?: string) {
    this.root = layout.root;
    this.layout = layout;
    this.db = db;
    this.readOnly = options.readOnly ?? false;
    this.graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    this.objects = new Objects(layout, db, this.readOnly, options.directIO ?? directFromEnv());
    this.parts = { layout, db, objects: this.objects };
    if (!this.readOnly && isSharedRoot(layout.root)) this.objects.shareFolders();
    if (options.recordUse ?? !this.readOnly) {
      this.use = new UseTracker(() => this.useDb(), options.useFlushMs ?? DEFAULT_USE_FLUSH_MS);
    }
    this.capabilities = capabilitiesOf(this.readOnly);
    if (scratch !== undefined) this.scratch = scratch;
  }

  /** `TENSORFS_HOME`, else `~/.cache/tensorfs`. */
  static defaultRoot(): string {
    return defaultRoot();
  }

  /**
   * Opens the store at `root`. Read-write: creates the layout durably and `metadata.sqlite3` (WAL),
   * then runs pending migrations. Read-only: the store must exist; nothing is written.
   */
  static async open(root: string, options: StoreOptions = {}): Promise<LocalStore> {
    return openLocal(root, options, (layout, db, scratch) => new LocalStore(layout, db, options, scratch));
  }

  /**
   * Creates a store at `root` (or adopts the one there) and, with `shared`, makes it one that the
   * users of a group can all read and write at once: every folder group-writable and setgid (in
   * group `group` when given, a name or a gid), the metadata database group-writable. Idempotent.
   * `denied` `store.shared_permission` when this user may not give an entry to the group.
   */
  static async init(root: string, options: InitOptions = {}): Promise<InitResult> {
    return initStore(root, options, (r) => LocalStore.open(r));
  }

  /** The connection recorded use is written through (a side one for a read-only store; null: none). */
  private useDb(): Db | null {
    if (!this.readOnly) return this.db;
    if (this.sideDb === undefined) {
      try {
        this.sideDb = openDb(this.layout.db, false);
      } catch {
        this.sideDb = null;
      }
    }
    return this.sideDb;
  }

  /** Writes recorded use, releases the reader lease, closes the metadata database. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.use?.close();
    this.sideDb?.close();
    this.db.close();
    if (this.scratch !== undefined) await fsp.rm(this.scratch, { recursive: true, force: true });
  }

  /** A private copy of the metadata, when the store is on read-only media. */
  private scratch: string | undefined;

  private live(): void {
    if (this.closed)
      throw new TensorFSError('invalid_argument', 'the store is closed', { details: { rule: 'store.closed' } });
  }

  // ---------------------------------------------------------------------------------------------
  // Objects

  /** True if the object is stored (and not quarantined as corrupt). */
  async has(id: ObjectId, options: CallOptions = {}): Promise<boolean> {
    checkString(id, 'id');
    checkOptions(options);
    this.live();
    throwIfAborted(options.signal);
    return this.objects.has(id);
  }

  /** The subset of `ids` not stored, in the order given. */
  async lacks(ids: readonly ObjectId[], options: CallOptions = {}): Promise<ObjectId[]> {
    if (!Array.isArray(ids)) checkObjects(ids, 'ids');
    checkOptions(options);
    this.live();
    for (const id of ids) checkString(id, 'ids[]');
    return this.objects.lacks(ids, options.signal);
  }

  /** {@link lacks}, and each held object's mtime restarts under the write lock (GC's grace; remote push). */
  async freshen(ids: readonly ObjectId[], options: CallOptions = {}): Promise<ObjectId[]> {
    if (!Array.isArray(ids)) checkObjects(ids, 'ids');
    for (const id of ids) parseObjectId(id);
    checkOptions(options);
    this.live();
    this.objects.assertWritable();
    return freshenObjects(this.db, this.objects, ids);
  }

  /**
   * Admits bytes held in memory. They are hashed (and compared with `expected`: `corrupt` on a
   * mismatch); a present object costs that hash and no write. With a lease, the object is claimed
   * before the existence check, so GC cannot take it until the lease ends.
   */
  async put(bytes: Chunks, options: PutOptions = {}): Promise<PutResult> {
    checkChunks(bytes, 'bytes');
    checkOptions(options);
    this.live();
    throwIfAborted(options.signal);
    return this.objects.put(bytes, { expected: options.expected, lease: options.lease?.id });
  }

  /**
   * Admits a stream, hashed while written to a temp; `expected` and `expectedLength` are checked
   * before anything is published (`corrupt` otherwise). With `expected` already present, the
   * stream is not read at all.
   */
  async putStream(
    chunks: AsyncIterable<Uint8Array>,
    options: { expected?: ObjectId; expectedLength?: number; lease?: Lease; signal?: AbortSignal } = {},
  ): Promise<PutResult> {
    checkAsyncIterable(chunks, 'chunks');
    checkOptions(options);
    this.live();
    return this.objects.putStream(chunks, { ...options, lease: options.lease?.id });
  }

  /**
   * Opens (or resumes) the part file `tmp/<key>.<host>-<pid>.part` of an object of
   * `expectedLength` bytes: hashed by the store as it is written, adopted as the object by
   * link/rename on {@link ObjectPart.commit} once verified and synced (no second copy). Kept
   * across runs until committed or discarded (a later process takes over the part of a writer
   * that is gone); GC sweeps parts older than a day. `direct`: write it with O_DIRECT where the
   * filesystem allows (default: the store's `directIO`); see {@link StoreOptions.directIO}.
   */
  async openPart(
    key: string,
    options: { expectedLength: number; signal?: AbortSignal; direct?: boolean },
  ): Promise<ObjectPart> {
    checkString(key, 'key');
    checkObject(options, 'options');
    checkOptions(options);
    checkOptionalBoolean(options.direct, 'options.direct');
    this.live();
    return openPart(this.objects, key, options.expectedLength, options.signal, options.direct);
  }

  /**
   * Admits many in-memory objects with batched durability (one group commit: temps closed once
   * written, made durable together, then the names); an item that does not hash to its
   * `expected` is refused alone (`corrupt`).
   */
  async putBatch(
    items: readonly BatchItem[],
    options: { lease?: Lease; signal?: AbortSignal } = {},
  ): Promise<BatchOutcome[]> {
    checkObjects(items, 'items');
    for (const item of items) checkChunks(item.bytes, 'items[].bytes');
    checkOptions(options);
    this.live();
    return putBatch(this.objects, items, options);
  }

  /** Size in bytes of a stored object; `not_found` if absent. */
  async objectSize(id: ObjectId, options: CallOptions = {}): Promise<number> {
    checkString(id, 'id');
    checkOptions(options);
    this.live();
    throwIfAborted(options.signal);
    return this.objects.size(id);
  }

  /** A whole object. `verify` rehashes it: a mismatch is quarantined and `corrupt`. */
  async readObject(id: ObjectId, options: ObjectReadOptions = {}): Promise<Uint8Array> {
    checkString(id, 'id');
    checkOptions(options);
    this.live();
    throwIfAborted(options.signal);
    this.use?.objectsRead([id]);
    return this.objects.read(id, options.verify ?? false);
  }

  /**
   * An object as a stream of chunks (default 8 MiB), from `offset` (default 0). `verify` hashes it
   * on the way and withholds the last chunk until the digest matched (`corrupt` otherwise). With
   * `spare`, chunks are read into buffers taken from that array (each chunk a view at offset 0 of
   * its own buffer: `chunkSize` bytes, or what is left of a smaller object); push
   * `new Uint8Array(chunk.buffer)` back once nothing uses a chunk any more, and the next reads
   * reuse it instead of allocating.
   */
  objectStream(id: ObjectId, options: ObjectStreamOptions = {}): AsyncIterable<Uint8Array> {
    checkString(id, 'id');
    checkOptions(options);
    this.live();
    this.use?.objectsRead([id]);
    return this.objects.stream(id, options);
  }

  /** `length` bytes at `offset` of an object. */
  async readObjectRange(id: ObjectId, offset: number, length: number, options: CallOptions = {}): Promise<Uint8Array> {
    checkString(id, 'id');
    checkOptions(options);
    this.live();
    throwIfAborted(options.signal);
    this.use?.objectsRead([id]);
    return this.objects.readRange(id, offset, length);
  }

  /**
   * Random access over a record list (a stored file). Every piece is length-checked against its
   * record (`corrupt` otherwise); `verify` also rehashes each object before returning its bytes.
   * `readInto(offset, target)` fills a caller's buffer without an intermediate copy.
   */
  recordsSource(records: readonly RecordRef[], options: ReadOptions = {}): FileSource {
    checkObjects(records, 'records');
    checkOptions(options);
    this.live();
    this.use?.objectsRead(records.map((r) => r.digest));
    return recordsSource(this.objects, records, options);
  }

  // ---------------------------------------------------------------------------------------------
  // Leases

  /** Starts a lease: objects added to it (or admitted with it) are kept by GC until it ends. */
  async lease(options: LeaseOptions = {}): Promise<Lease> {
    checkOptions(options);
    this.live();
    this.objects.assertWritable();
    return new DbLease(
      this.db,
      options.ttlMs ?? DEFAULT_LEASE_TTL_MS,
      options.purpose ?? '',
      options.keepAlive ?? true,
    );
  }

  // ---------------------------------------------------------------------------------------------
  // Manifests and snapshots

  /** Stores a TFM1 manifest as an object; its id is the snapshot id. */
  async putManifest(m: Manifest, options: { lease?: Lease } = {}): Promise<ObjectId> {
    checkOptions(options);
    this.live();
    return (await this.objects.put(encodeManifest(m), { lease: options.lease?.id })).id;
  }

  /** Reads, verifies and decodes a manifest; `malformed` if the object is not one. */
  async getManifest(id: ObjectId): Promise<Manifest> {
    checkString(id, 'id');
    this.live();
    return readManifest(this.objects, id);
  }

  /**
   * Imports a file or a folder as a snapshot through the one import pipeline:
   * `importSources(this, localSource(path), options)` — each file is planned and hashed once, new
   * objects are admitted from the hashed bytes under a lease, then the manifest; with `name` the
   * ref is set (after everything is durable). See {@link ImportOptions} for what a folder may hold.
   */
  async importPath(path: string, options: ImportOptions = {}): Promise<ImportResult> {
    checkString(path, 'path');
    checkOptions(options);
    this.live();
    this.objects.assertWritable();
    if (options.name !== undefined) validateRefName(options.name);
    return importResultOf(await importSources(this, localSource(path), importSourcesOptions(options)));
  }

  /**
   * Imports entries scanned elsewhere (the Hugging Face cache's snapshots, see `scanHfCache`) as
   * one snapshot through the same pipeline ({@link scannedSource}: the same reads, race checks and
   * digest checks as {@link importPath}), under the caller's `lease`: nothing roots the snapshot
   * until the caller names it by a ref while the lease is live. `name`/`expected` are not used.
   */
  async importEntries(found: readonly Found[], lease: Lease, options: ImportOptions = {}): Promise<ImportResult> {
    checkObjects(found, 'found');
    if (typeof lease !== 'object' || lease === null || typeof (lease as { id?: unknown }).id !== 'string') {
      wrongArgument('store', 'lease', 'a Lease', lease);
    }
    checkOptions(options);
    this.live();
    this.objects.assertWritable();
    const { name: _name, expected: _expected, ...rest } = options;
    const r = await importSources(
      this,
      scannedSource(found, 'scanned entries', () => null),
      { ...importSourcesOptions(rest), lease },
    );
    return { ...importResultOf(r), fileSha256: r.fileSha256 };
  }

  // ---------------------------------------------------------------------------------------------
  // Refs

  /** An object id passes through if stored; otherwise a ref name is read. `not_found` if neither. */
  async resolve(refOrId: string): Promise<ObjectId> {
    checkString(refOrId, 'refOrId');
    this.live();
    return resolveRefOrId(this.parts, this.use, refOrId);
  }

  /** The id a ref names, or null. */
  async getRef(name: string, options: CallOptions = {}): Promise<ObjectId | null> {
    checkString(name, 'name');
    checkOptions(options);
    this.live();
    throwIfAborted(options.signal);
    const id = await readRef(this.layout, name);
    this.use?.ref(name, id);
    return id;
  }

  /**
   * Sets a ref with compare-and-swap: `expected` an id → the ref must hold it; `null` → it must
   * not exist; omitted → unconditional. `conflict` otherwise. Under the lock, the target and
   * everything it reaches must be stored (`not_found`), and `lease` (if given) must be live, so
   * a ref never names anything GC may have taken.
   */
  async setRef(name: string, id: ObjectId, options: LocalSetRefOptions = {}): Promise<void> {
    checkString(name, 'name');
    checkString(id, 'id');
    checkOptions(options);
    checkOptionalBoolean(options.cached, 'options.cached');
    this.live();
    throwIfAborted(options.signal);
    this.objects.assertWritable();
    return setRefChecked(this.parts, name, id, options);
  }

  /** Deletes a ref (compare-and-swap with `expected`); `not_found` if absent. */
  async deleteRef(name: string, options: DeleteRefOptions = {}): Promise<void> {
    checkString(name, 'name');
    checkOptions(options);
    this.live();
    throwIfAborted(options.signal);
    this.objects.assertWritable();
    removeRef(this.db, this.layout, name, options.expected);
  }

  /**
   * Every ref, sorted by name. Anything in `refs/` that is not a readable ref fails the whole
   * listing (`corrupt`, naming it); {@link checkRefs} lists the good ones and names the others.
   */
  async listRefs(): Promise<RefEntry[]> {
    this.live();
    return listRefs(this.layout);
  }

  /**
   * Every ref whose file reads, and every entry of `refs/` that is not a readable ref as a
   * {@link RefProblem} (`ref.not_regular`, `ref.content`, a failed read): one bad ref never hides
   * the others. No object is read, so a ref naming a missing or damaged object is listed here
   * ({@link checkRefs} checks targets). What the hub's `GET /v1/refs` and the web page resolve from.
   */
  async scanRefs(options: CallOptions = {}): Promise<RefFileListing> {
    checkOptions(options);
    this.live();
    throwIfAborted(options.signal);
    return scanRefFiles(this.layout);
  }

  /**
   * Every ref whose file reads and whose target object is present, intact (rehashed) and decodes
   * as a snapshot manifest or a checkpoint header, with its kind; every other ref as a
   * {@link RefProblem}. One bad ref never hides the others (what `tfs ls` shows). Abort `signal`
   * to stop (`cancelled`).
   */
  async checkRefs(options: { signal?: AbortSignal } = {}): Promise<RefListing> {
    checkOptions(options);
    this.live();
    return checkRefs(this.parts, options.signal);
  }

  // ---------------------------------------------------------------------------------------------
  // Roots

  /** Keeps `id` (and what it reaches) until {@link removeRoot}; it must be stored with its closure. */
  async addRoot(id: ObjectId, reason: string): Promise<void> {
    checkString(id, 'id');
    checkString(reason, 'reason');
    this.live();
    this.objects.assertWritable();
    return addRoot(this.parts, id, reason);
  }

  /** Stops keeping `id` as a root; `not_found` if it is not one. */
  async removeRoot(id: ObjectId): Promise<void> {
    checkString(id, 'id');
    this.live();
    this.objects.assertWritable();
    removeRoot(this.db, id);
  }

  /** Every root, oldest first. */
  async listRoots(): Promise<RootEntry[]> {
    this.live();
    return listRoots(this.db);
  }

  // ---------------------------------------------------------------------------------------------
  // Export

  /** Rebuilds one file of a snapshot at `dest`, byte-exact and atomically. */
  async exportFile(snapshot: ObjectId, path: string, dest: string, options: ExportOptions = {}): Promise<void> {
    checkString(snapshot, 'snapshot');
    checkString(path, 'path');
    checkString(dest, 'dest');
    checkOptions(options);
    this.live();
    return exportFile(this.objects, this.root, snapshot, path, dest, options);
  }

  /**
   * Rebuilds a whole snapshot under `destDir` (created if missing): files atomically and
   * byte-exact with their modes, symlinks as stored, new folders fsynced into their parents. An
   * existing file at an entry's path is replaced; other files already in `destDir` are left
   * alone; a path that would pass through a symlink or a non-directory is `conflict`.
   */
  async exportSnapshot(
    snapshot: ObjectId,
    destDir: string,
    options: ExportOptions = {},
  ): Promise<{ files: number; bytes: number }> {
    checkString(snapshot, 'snapshot');
    checkString(destDir, 'destDir');
    checkOptions(options);
    this.live();
    return exportSnapshot(this.objects, this.root, snapshot, destDir, options);
  }

  // ---------------------------------------------------------------------------------------------
  // Maintenance

  /** Checks every object reachable from refs and roots (see {@link VerifyOptions}). */
  async verify(options: VerifyOptions = {}): Promise<VerifyResult> {
    checkOptions(options);
    this.live();
    return verifyStore(this.objects, await tops(this.db, this.layout), options);
  }

  /** Collects unreachable objects older than the grace period (see docs/store.md). */
  async gc(options: GcOptions = {}): Promise<GcResult> {
    checkOptions(options);
    this.live();
    if (!options.dryRun) this.objects.assertWritable();
    return collect(
      { db: this.db, layout: this.layout, objects: this.objects, tops: () => tops(this.db, this.layout) },
      options.graceMs ?? this.graceMs,
      options,
    );
  }

  /**
   * Removes ref `name` and, at once, the objects only it reached (see {@link RemoveOptions}):
   * GC's mark (every other ref, every root, every live lease) and sweep (write-lock batches, the
   * ref log, the claims since the mark, the grace-period re-check) with the ref's closure as the candidates. Objects
   * younger than the grace period stay for a later GC (`left`). `not_found` if there is no such
   * ref, `conflict` if `expected` differs, `corrupt` (nothing removed) if another ref or root
   * cannot be walked.
   */
  async remove(name: string, options: RemoveOptions = {}): Promise<RemoveResult> {
    checkString(name, 'name');
    checkOptions(options);
    this.live();
    this.objects.assertWritable();
    validateRefName(name);
    if (options.expected !== undefined) parseObjectId(options.expected);
    return removeAndFree(
      {
        db: this.db,
        layout: this.layout,
        objects: this.objects,
        tops: () => tops(this.db, this.layout),
        refs: () => listRefs(this.layout),
        roots: () => rootIds(this.db),
      },
      name,
      options.graceMs ?? this.graceMs,
      options,
    );
  }

  // ---------------------------------------------------------------------------------------------
  // Cache (docs/store.md "Cache")

  /**
   * `tfs pin`: makes cached ref `name` saved (kept until removed). Returns true if it was cached.
   * `not_found` if there is no such ref.
   */
  async pin(name: string): Promise<boolean> {
    checkString(name, 'name');
    this.live();
    this.objects.assertWritable();
    validateRefName(name);
    return setCached(this.db, this.layout, name, false);
  }

  /**
   * `tfs unpin`: makes ref `name` cached (evictable under the budget, least recently used first).
   * Returns true if it already was. `not_found` if there is no such ref.
   */
  async unpin(name: string): Promise<boolean> {
    checkString(name, 'name');
    this.live();
    this.objects.assertWritable();
    validateRefName(name);
    return setCached(this.db, this.layout, name, true);
  }

  /** True when ref `name` is cached (a row names it with the id it holds). */
  async isCached(name: string): Promise<boolean> {
    checkString(name, 'name');
    this.live();
    return cachedRefRows(this.db, this.layout).some((r) => r.name === name);
  }

  /**
   * Records objects fetched on read (from `origin`, a display name) as cached: GC keeps them, the
   * budget evicts them least recently used first once no ref reaches them. Objects absent from
   * the store are skipped.
   */
  async addCachedObjects(ids: readonly ObjectId[], origin: string): Promise<void> {
    if (!Array.isArray(ids)) checkObjects(ids, 'ids');
    for (const id of ids) checkString(id, 'ids[]');
    checkString(origin, 'origin');
    this.live();
    this.objects.assertWritable();
    return addCachedObjects(this.parts, ids, origin);
  }

  /** Writes recorded use now (it is otherwise written at most every `useFlushMs` and at close). */
  flushUse(): void {
    this.use?.flush();
  }

  /** Cached refs (with stored and exclusive bytes) and cached objects no ref reaches, least recently used first. */
  async cacheList(options: { signal?: AbortSignal } = {}): Promise<CacheListing> {
    checkOptions(options);
    this.live();
    this.use?.flush();
    return listCache(this.parts, options.signal);
  }

  /**
   * Evicts cached refs and cached objects, least recently used first, until the stored bytes are
   * within `maxBytes` and nothing cached is older than `olderThanMs` (see {@link PruneOptions}).
   * Never what a saved ref, a root or a live lease (writers', readers') reaches.
   */
  async prune(options: PruneOptions): Promise<PruneResult> {
    checkObject(options, 'options');
    checkOptions(options);
    this.live();
    if (!options.dryRun) this.objects.assertWritable();
    return prune(
      {
        db: this.db,
        layout: this.layout,
        objects: this.objects,
        tops: () => tops(this.db, this.layout),
        refs: async () => (await scanRefFiles(this.layout)).refs,
        roots: () => rootIds(this.db),
        flushUse: () => this.use?.flush(),
      },
      options,
    );
  }

  /** Logical vs stored bytes, overall and per ref. Abort `signal` to stop (`cancelled`). */
  async usage(options: { signal?: AbortSignal } = {}): Promise<Usage> {
    checkOptions(options);
    this.live();
    return measureUsage(this.parts, options.signal);
  }
}

/** `importPath`'s options as the pipeline's (the same names; `threads`: the hashing threads). */
function importSourcesOptions(options: ImportOptions): ImportSourcesOptions {
  return {
    ...(options.name !== undefined ? { name: options.name } : {}),
    ...(options.expected !== undefined ? { expected: options.expected } : {}),
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
    ...(options.onProgress !== undefined ? { onProgress: options.onProgress } : {}),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    ...(options.seams !== undefined ? { seams: options.seams } : {}),
    ...(options.fileSha256 !== undefined ? { fileSha256: options.fileSha256 } : {}),
  };
}

/** The pipeline's result as `importPath` reports it. */
function importResultOf(r: ImportSourcesResult): ImportResult {
  return {
    snapshot: r.snapshot,
    // As the import always counted them: every entry, links too.
    files: r.files + r.links,
    bytes: r.bytes,
    bytesWritten: r.bytesWritten,
    objectsWritten: r.objectsWritten,
  };
}
