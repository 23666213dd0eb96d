/**
 * {@link LocalStore}: one local content-addressed store on disk (docs/store.md), the
 * SQLite-backed implementation of the {@link Store} port. See docs/store.md for the durability,
 * lease and GC protocols.
 */
import * as fsp from 'node:fs/promises';
import * as fs from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, join, resolve, sep } from 'node:path';
import {
  type ErrorCode,
  type Manifest,
  type ObjectId,
  type RecordRef,
  TensorFSError,
  wrongArgument,
  decodeCheckpoint,
  decodeManifest,
  encodeManifest,
  isCheckpointHeader,
  decodeRevision,
  isObjectId,
  isRevisionDocument,
  parseObjectId,
  parseRepoRefName,
  isTensorFSError,
  throwIfAborted,
  validatePath,
} from '@tensorfs/format';
import { type Db, bumpEpoch, damagedMetadata, durably, openDb } from './db.js';
import { errnoOf, fsyncDir, ioError, mkdirDurable, siblingTemp } from './fsutil.js';
import { isSharedRoot, resolveGroup, SHARED_DIR_MODE, shareEntry, shareLayout, sharedUmask } from './shared.js';
import { type GcOptions, type GcResult, collect } from './gc.js';
import {
  DEFAULT_USE_FLUSH_MS,
  UseTracker,
  addCacheEntries,
  cacheEntryRows,
  cachedRefRows,
  markRefWrite,
  setCached,
} from './cache.js';
import { type PruneOptions, type PruneResult, prune } from './prune.js';
import { type RemoveOptions, type RemoveResult, removeAndFree } from './remove.js';
import { childrenOf, reach } from './graph.js';
import { type Found, type ImportOptions, type ImportResult, importFound, importTree } from './import.js';
import { type Layout, layoutOf, validateRefName } from './layout.js';
import {
  DEFAULT_LEASE_TTL_MS,
  DbLease,
  type Lease,
  type LeaseOptions,
  assertLeaseLive,
  leasedObjects,
} from './leases.js';
import { type Chunks, type ObjectStreamOptions, Objects, type PutResult } from './objects.js';
import { type BatchItem, type BatchOutcome, type ObjectPart, openPart, putBatch } from './staging.js';
import {
  checkAsyncIterable,
  checkChunks,
  checkObject,
  checkObjects,
  checkOptionalBoolean,
  checkOptions,
  checkString,
} from './args.js';
import type { FileSource } from './file-source.js';
import type {
  CallOptions,
  Capability,
  DeleteRefOptions,
  ObjectReadOptions,
  PutOptions,
  SetRefOptions,
  Store,
} from '@tensorfs/format/store';
import { type ReadOptions, recordsSource, writeRecordsFile } from './read.js';
import { type RefEntry, listRefs, readRef, readRefSync, removeRef, scanRefs, writeRef } from './refs.js';
import { type VerifyOptions, type VerifyResult, verifyStore } from './verify.js';
import { listObjects } from './walk.js';

/** Options of {@link LocalStore.init}. */
export interface InitOptions {
  /** A store the users of a group can all read and write at once (docs/store.md "Shared stores"). */
  shared?: boolean;
  /** The group (a name or a gid) that shares it (default: the root folder's group). Needs `shared`. */
  group?: string | number;
}

/** What {@link LocalStore.init} did. */
export interface InitResult {
  /** The store's root folder (absolute). */
  root: string;
  /** False when a store was there already (then adopted: made shared if asked). */
  created: boolean;
  /** True when the store is shared. */
  shared: boolean;
  /** The root folder's group. */
  gid: number;
}

/** Options of {@link openStore} and {@link LocalStore.open}. */
export interface StoreOptions {
  /** Open without writing anything (no layout creation, no migrations); every mutation is `denied`. */
  readOnly?: boolean;
  /** GC grace period: unreachable objects younger than this are kept (default 1 hour). */
  graceMs?: number;
  /**
   * Start an empty `metadata.sqlite3` when it is missing or empty although the store holds refs or
   * objects (default: refuse with `corrupt`, since roots and the quarantine list would be lost
   * silently). Objects and refs are kept; re-add roots and run a verify with data afterwards.
   */
  recreateMetadata?: boolean;
  /**
   * Write large new objects (imported records, pulled parts) with `O_DIRECT` where the OS and
   * filesystem allow it (Linux): the device reads the writer's buffer, saving the CPU of copying
   * every byte into the page cache (on a 2-core VM, half of an import's CPU). The price: the new
   * objects are not in the page cache, so the first read after an import or pull comes from disk,
   * and reads stay slower while those pages are cached (measured 15–40 % more CPU per read here).
   * Worth it for transfers larger than the page cache, or when nothing reads right after. Default:
   * `TENSORFS_DIRECT_IO=1` in the environment, else off.
   */
  directIO?: boolean;
  /**
   * Record when refs and objects are used (resolved, read), for the cache's least-recently-used
   * order and the reader lease that keeps a cached ref this process reads from eviction (docs/store.md
   * "Cache"). Recorded in memory and written at most every `useFlushMs` and at close. Default: on
   * for a read-write store; a read-only one records through a side connection when this is true,
   * and silently not at all where the metadata cannot be written (read-only media).
   */
  recordUse?: boolean;
  /** Longest delay before recorded use is written (default 30 s; 0 writes every use at once). */
  useFlushMs?: number;
}

/** Options of {@link LocalStore.setRef}: the contract's, and whether the ref is cached. */
export interface LocalSetRefOptions extends SetRefOptions {
  /**
   * Cached (evictable under the budget) rather than saved. A new ref, or one already cached,
   * becomes cached; a saved ref stays saved (only {@link LocalStore.unpin} makes it evictable).
   * Omitted or false: the ref is saved.
   */
  cached?: boolean;
}

/** One cached ref in {@link CacheListing}. */
export interface CachedRefInfo {
  name: string;
  id: ObjectId;
  /** Bytes of the distinct stored objects it reaches. */
  storedBytes: number;
  /** Bytes only it reaches (no saved ref, root, lease or other cached ref): what evicting it frees. */
  exclusiveBytes: number;
  /** Objects it reaches. */
  objects: number;
  /** Last use (ms since the epoch; a read, a pull, a serve). */
  lastUseMs: number;
  addedMs: number;
}

/** One cached object (fetched on read) that no ref reaches, in {@link CacheListing}. */
export interface CachedObjectInfo {
  id: ObjectId;
  size: number;
  /** Where it was fetched from (an origin's display name). */
  origin: string;
  lastUseMs: number;
}

/** What {@link LocalStore.cacheList} found. */
export interface CacheListing {
  /** Cached refs, least recently used first. */
  refs: CachedRefInfo[];
  /** Cached objects no ref reaches, least recently used first. */
  objects: CachedObjectInfo[];
  /** Bytes evicting every cached unit would free. */
  evictableBytes: number;
  /** Bytes of every object file (as `tfs du`). */
  storedBytes: number;
}

/** A root: an object kept forever (with what it reaches) until removed. */
export interface RootEntry {
  id: ObjectId;
  reason: string;
  createdMs: number;
}

/**
 * A ref that a listing could not show or measure, and why. The listing goes on with the other refs.
 */
export interface RefProblem {
  /** The ref's name (its path under `refs/`). */
  name: string;
  /** The id the ref names, when its file could be read. */
  id?: ObjectId;
  /**
   * `corrupt` (not a regular file, not one id and a newline, names an object that is missing or
   * does not decode), or the code of a failed read (`io`, `denied`).
   */
  code: ErrorCode;
  /**
   * `details.rule` of the failure: `ref.not_regular`, `ref.content`, `ref.target_missing`,
   * `ref.target_malformed`, `store.digest`, ... (`ref.unreadable` for a read that failed otherwise).
   */
  rule: string;
  /** What went wrong, without local paths. */
  message: string;
}

/** What {@link LocalStore.scanRefs} found: every ref whose file reads, and every entry of `refs/` that is not one. */
export interface RefFileListing {
  /** The refs whose file holds one id and a newline, sorted by name (their targets unchecked). */
  refs: RefEntry[];
  /** Entries of `refs/` that are not readable refs (`ref.not_regular`, `ref.content`, ...), sorted by name. */
  problems: RefProblem[];
}

/** What {@link LocalStore.checkRefs} found: every readable ref, and every ref that is not. */
export interface RefListing {
  /** The refs whose file and target object read and decode, sorted by name. */
  refs: (RefEntry & { kind: 'snapshot' | 'checkpoint' })[];
  /** The others, sorted by name. */
  problems: RefProblem[];
}

/** A ref's head object, read and decoded once: what {@link LocalStore.checkRefs} and `usage` share. */
interface Head {
  /** The verified bytes. */
  bytes: Uint8Array;
  kind: 'snapshot' | 'checkpoint';
  /** Sum of a snapshot's file sizes; bytes of a checkpoint's tensors, parts and assets. */
  logical: number;
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** Storage figures of {@link LocalStore.usage}. */
export interface Usage {
  /** Sum of the sizes of the files of every distinct snapshot named by a ref or root. */
  logicalBytes: number;
  /** Bytes of every object file in the store. */
  storedBytes: number;
  /** Object files in the store. */
  objects: number;
  /** logicalBytes / bytes of the objects those snapshots reach (1 when nothing is stored). */
  dedupRatio: number;
  /**
   * Bytes of the objects no ref, root or live lease reaches and the cache does not hold (what a
   * GC past the grace period would take): `storedBytes` minus the bytes of every kept object.
   */
  unreferencedBytes: number;
  /** Per ref: see {@link RefUsage}. */
  refs: RefUsage[];
  /**
   * Per repository (its branches and tags together, `parseRepoRefName`): see
   * {@link RepositoryUsage}. Refs outside the repository layout are in no repository.
   */
  repositories: RepositoryUsage[];
  /**
   * Refs left out of every figure: their file cannot be read, or what they name (or a snapshot a
   * checkpoint names) is missing or does not decode. See {@link RefProblem}.
   */
  problems: RefProblem[];
}

/** One ref's figures in {@link Usage}. */
export interface RefUsage {
  name: string;
  id: ObjectId;
  /** Its snapshot's file sizes (a checkpoint: its tensors, parts and assets). */
  logicalBytes: number;
  /** Bytes of the distinct stored objects it reaches. */
  storedBytes: number;
  /** Those objects. */
  objects: number;
  /**
   * Bytes of the objects only it reaches (no other ref, no root, no live lease): what removing
   * just it would free (`tfs rm`, once they are older than the grace period).
   */
  exclusiveBytes: number;
  /** `storedBytes - exclusiveBytes`: its bytes that something else also keeps. */
  sharedBytes: number;
}

/** One repository's figures in {@link Usage}: its branch and tag refs taken together. */
export interface RepositoryUsage {
  repo: string;
  /** Its refs (branches and tags), by name. */
  refs: string[];
  /** Sum of the logical bytes of the distinct heads its refs name. */
  logicalBytes: number;
  /** Bytes of the distinct stored objects its refs reach. */
  storedBytes: number;
  /** Those objects. */
  objects: number;
  /** Bytes only its refs reach (no other repository's ref, no root, no live lease): what `tfs rm <repo> --all --tags` frees. */
  exclusiveBytes: number;
  /** `storedBytes - exclusiveBytes`. */
  sharedBytes: number;
}

/** Options of {@link LocalStore.exportSnapshot} and {@link LocalStore.exportFile}. */
export interface ExportOptions extends ReadOptions {
  signal?: AbortSignal;
  /** Called as bytes are written. */
  onProgress?: (p: { files: number; filesTotal: number; bytes: number; bytesTotal: number }) => void;
}

/** Default GC grace period. */
export const DEFAULT_GRACE_MS = 3600_000;

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

  private constructor(layout: Layout, db: Db, options: StoreOptions) {
    this.root = layout.root;
    this.layout = layout;
    this.db = db;
    this.readOnly = options.readOnly ?? false;
    this.graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    this.objects = new Objects(layout, db, this.readOnly, options.directIO ?? process.env.TENSORFS_DIRECT_IO === '1');
    if (!this.readOnly && isSharedRoot(layout.root)) this.objects.shareFolders();
    if (options.recordUse ?? !this.readOnly) {
      this.use = new UseTracker(() => this.useDb(), options.useFlushMs ?? DEFAULT_USE_FLUSH_MS);
    }
    this.capabilities = new Set<Capability>(
      this.readOnly
        ? ['refs.list', 'objects.stream']
        : [
            'objects.write',
            'refs.write',
            'refs.delete',
            'refs.list',
            'refs.closure',
            'leases',
            'objects.batch',
            'objects.part',
            'objects.stream',
          ],
    );
  }

  /** `TENSORFS_HOME`, else `~/.cache/tensorfs`. */
  static defaultRoot(): string {
    const env = process.env.TENSORFS_HOME;
    return env && env.length > 0 ? resolve(env) : join(homedir(), '.cache', 'tensorfs');
  }

  /**
   * Opens the store at `root`. Read-write: creates the layout durably and `metadata.sqlite3` (WAL),
   * then runs pending migrations. Read-only: the store must exist; nothing is written.
   */
  static async open(root: string, options: StoreOptions = {}): Promise<LocalStore> {
    checkString(root, 'root');
    checkOptions(options);
    if (options.graceMs !== undefined && (!Number.isSafeInteger(options.graceMs) || options.graceMs < 0)) {
      throw new TensorFSError('invalid_argument', 'graceMs must be a non-negative integer', {
        details: { actual: options.graceMs },
      });
    }
    const layout = layoutOf(resolve(root));
    // A shared store (docs/store.md "Shared stores"): what this process creates keeps its group bits.
    if (!options.readOnly && isSharedRoot(layout.root)) sharedUmask();
    if (options.readOnly) {
      await refuseLostMetadata(layout);
      try {
        await fsp.access(layout.db);
      } catch {
        throw new TensorFSError('not_found', 'no store at this path', { details: { rule: 'store.no_metadata' } });
      }
    } else {
      if (!options.recreateMetadata) await refuseLostMetadata(layout);
      try {
        for (const d of [layout.objects, layout.tmp, layout.refs]) await mkdirDurable(d);
      } catch (err) {
        throw ioError(err, 'create store layout');
      }
    }
    if (!options.readOnly) return new LocalStore(layout, openDb(layout.db, false), options);
    try {
      return new LocalStore(layout, openDb(layout.db, true), options);
    } catch (err) {
      // Read-only media (a CD, a read-only mount, a folder we may not write): SQLite cannot
      // create the WAL index (-shm) it needs even to read. Read a private copy of the metadata
      // instead; nothing on such media can change under it.
      if (!isTensorFSError(err) || err.details.errno !== 'SQLITE_CANTOPEN' || canWrite(layout.root)) throw err;
      const copy = await copyMetadata(layout);
      try {
        const store = new LocalStore(layout, openDb(join(copy, 'metadata.sqlite3'), true), options);
        store.scratch = copy;
        return store;
      } catch (e) {
        await fsp.rm(copy, { recursive: true, force: true });
        throw e;
      }
    }
  }

  /**
   * Creates a store at `root` (or adopts the one there) and, with `shared`, makes it one that the
   * users of a group can all read and write at once: every folder group-writable and setgid (in
   * group `group` when given, a name or a gid), the metadata database group-writable. Idempotent.
   * `denied` `store.shared_permission` when this user may not give an entry to the group.
   */
  static async init(root: string, options: InitOptions = {}): Promise<InitResult> {
    checkString(root, 'root');
    checkOptions(options);
    const layout = layoutOf(resolve(root));
    const gid = options.group === undefined ? undefined : resolveGroup(options.group);
    if (gid !== undefined && !options.shared) {
      throw new TensorFSError('invalid_argument', '--group needs --shared', {
        details: { rule: 'store.group_needs_shared' },
      });
    }
    const existed = fs.existsSync(layout.db);
    if (options.shared) {
      sharedUmask();
      try {
        fs.mkdirSync(layout.root, { recursive: true });
      } catch (err) {
        throw ioError(err, 'create store layout');
      }
      // The root first: the layout created below inherits its group and setgid.
      shareEntry(layout.root, SHARED_DIR_MODE, gid, '.');
    }
    const store = await LocalStore.open(layout.root);
    await store.close();
    if (options.shared) shareLayout(layout, gid);
    const st = fs.statSync(layout.root);
    return { root: layout.root, created: !existed, shared: isSharedRoot(layout.root), gid: st.gid };
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
    const out: ObjectId[] = [];
    for (const id of ids) {
      throwIfAborted(options.signal);
      checkString(id, 'ids[]');
      if (!(await this.objects.has(id))) out.push(id);
    }
    return out;
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
    return decodeManifest(await this.objects.read(parseObjectId(id), true));
  }

  /**
   * Imports a file or a folder as a snapshot: each file is planned and hashed once, new objects
   * are admitted from the hashed bytes under a lease, then the manifest; with `name` the ref is
   * set (after everything is durable). See {@link ImportOptions} for what a folder may hold.
   */
  async importPath(path: string, options: ImportOptions = {}): Promise<ImportResult> {
    checkString(path, 'path');
    checkOptions(options);
    this.live();
    this.objects.assertWritable();
    if (options.name !== undefined) validateRefName(options.name);
    const lease = await this.lease({ purpose: `import ${basename(path)}` });
    try {
      const result = await importTree(this.objects, lease, resolve(path), options);
      const snapshot = await this.putManifest({ entries: result.entries }, { lease });
      if (options.name !== undefined) {
        await this.setRef(options.name, snapshot, { lease, expected: options.expected });
      }
      return {
        snapshot,
        files: result.files,
        bytes: result.bytes,
        bytesWritten: result.bytesWritten,
        objectsWritten: result.objectsWritten,
      };
    } finally {
      await lease.release();
    }
  }

  /**
   * Imports entries scanned elsewhere (the Hugging Face cache's snapshots, see `scanHfCache`) as
   * one snapshot, with the same reads, race checks and digest checks as {@link importPath}, under
   * the caller's `lease`: nothing roots the snapshot until the caller names it by a ref while the
   * lease is live. `name`/`expected` are not used.
   */
  async importEntries(found: readonly Found[], lease: Lease, options: ImportOptions = {}): Promise<ImportResult> {
    checkObjects(found, 'found');
    if (typeof lease !== 'object' || lease === null || typeof (lease as { id?: unknown }).id !== 'string') {
      wrongArgument('store', 'lease', 'a Lease', lease);
    }
    checkOptions(options);
    this.live();
    this.objects.assertWritable();
    const result = await importFound(this.objects, lease, found, options);
    const snapshot = await this.putManifest({ entries: result.entries }, { lease });
    return {
      snapshot,
      files: result.files,
      bytes: result.bytes,
      bytesWritten: result.bytesWritten,
      objectsWritten: result.objectsWritten,
    };
  }

  // ---------------------------------------------------------------------------------------------
  // Refs

  /** An object id passes through if stored; otherwise a ref name is read. `not_found` if neither. */
  async resolve(refOrId: string): Promise<ObjectId> {
    checkString(refOrId, 'refOrId');
    this.live();
    if (isObjectId(refOrId)) {
      if (await this.objects.has(refOrId)) return refOrId;
      throw new TensorFSError('not_found', 'object not in the store', { details: { digest: refOrId } });
    }
    const id = await readRef(this.layout, refOrId);
    if (id === null) throw new TensorFSError('not_found', 'no such ref', { details: { ref: refOrId } });
    this.use?.ref(refOrId, id);
    return id;
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
    parseObjectId(id);
    if (options.expected !== undefined && options.expected !== null) parseObjectId(options.expected);
    const children = await this.closureOf(id);
    writeRef(this.db, this.layout, name, id, options.expected, () => {
      if (options.lease) assertLeaseLive(this.db, options.lease.id);
      this.assertPresentSync(id, children);
      // Saved or cached, in the ref write's own transaction.
      let previous: ObjectId | null = null;
      try {
        previous = readRefSync(this.layout, name);
      } catch {
        // A damaged ref being replaced: it was nothing, so the new one is as asked.
      }
      markRefWrite(this.db, name, id, previous, options.cached === true);
    });
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
    const scan = await scanRefs(this.layout);
    return { refs: scan.refs, problems: scan.bad.map((b) => refProblem(b.name, undefined, b.error)) };
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
    const out: RefListing = { refs: [], problems: [] };
    for await (const r of this.refHeads(options.signal)) {
      if ('problem' in r) out.problems.push(r.problem);
      else out.refs.push({ ...r.ref, kind: r.head.kind });
    }
    out.problems.sort(byName);
    return out;
  }

  /**
   * Every entry of refs/: the bad ones first (as problems), then each readable ref in name order
   * with its head object read, verified and decoded once, or the problem that read found. One
   * head is held at a time: {@link usage} walks from it without reading it again.
   */
  private async *refHeads(
    signal: AbortSignal | undefined,
  ): AsyncGenerator<{ ref: RefEntry; head: Head } | { problem: RefProblem }> {
    const scan = await this.scanRefs();
    for (const problem of scan.problems) yield { problem };
    for (const r of scan.refs) {
      throwIfAborted(signal);
      let head: Head;
      try {
        head = await this.readHead(r.id);
      } catch (err) {
        yield { problem: refProblem(r.name, r.id, err) };
        continue;
      }
      yield { ref: r, head };
    }
  }

  /** A head object (a snapshot manifest or a checkpoint header): read, rehashed and decoded. */
  private async readHead(id: ObjectId, depth = 0): Promise<Head> {
    const bytes = await this.objects.read(parseObjectId(id), true);
    if (isRevisionDocument(bytes) && depth === 0) {
      // A branch head (a revision document): its kind and logical size are its target's.
      const target = await this.readHead(decodeRevision(bytes).target, 1);
      return { bytes, kind: target.kind, logical: target.logical };
    }
    if (isCheckpointHeader(bytes)) {
      // A checkpoint's logical size: the bytes of its tensors, parts and assets.
      let logical = 0;
      for (const c of decodeCheckpoint(bytes).components) {
        for (const t of c.tensors) {
          const parts = t.records !== undefined ? [t.records] : Object.values(t.encoding.parts).map((p) => p.records);
          for (const records of parts) for (const r of records) logical += r.length;
        }
        for (const a of c.assets) for (const r of a.records) logical += r.length;
      }
      return { bytes, kind: 'checkpoint', logical };
    }
    const logical = decodeManifest(bytes).entries.reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0);
    return { bytes, kind: 'snapshot', logical };
  }

  // ---------------------------------------------------------------------------------------------
  // Roots

  /** Keeps `id` (and what it reaches) until {@link removeRoot}; it must be stored with its closure. */
  async addRoot(id: ObjectId, reason: string): Promise<void> {
    checkString(id, 'id');
    checkString(reason, 'reason');
    this.live();
    this.objects.assertWritable();
    parseObjectId(id);
    if (typeof reason !== 'string' || reason.length === 0 || reason.length > 500) {
      throw new TensorFSError('invalid_argument', 'a root needs a reason of 1..500 characters', {
        details: { actual: typeof reason === 'string' ? reason.length : typeof reason },
      });
    }
    const children = await this.closureOf(id);
    durably(this.db, () => {
      this.assertPresentSync(id, children);
      this.db
        .prepare(
          'INSERT INTO roots(id, reason, created_ms) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET reason = excluded.reason',
        )
        .run(id, reason, Date.now());
      bumpEpoch(this.db, id);
    });
  }

  /** Stops keeping `id` as a root; `not_found` if it is not one. */
  async removeRoot(id: ObjectId): Promise<void> {
    checkString(id, 'id');
    this.live();
    this.objects.assertWritable();
    parseObjectId(id);
    const changes = durably(this.db, () => this.db.prepare('DELETE FROM roots WHERE id = ?').run(id).changes);
    if (changes === 0) throw new TensorFSError('not_found', 'not a root', { details: { digest: id } });
  }

  /** Every root, oldest first. */
  async listRoots(): Promise<RootEntry[]> {
    this.live();
    return (
      this.db.prepare('SELECT id, reason, created_ms FROM roots ORDER BY created_ms, id').all() as {
        id: ObjectId;
        reason: string;
        created_ms: number;
      }[]
    ).map((r) => ({ id: r.id, reason: r.reason, createdMs: r.created_ms }));
  }

  /** What `id` references (read and decoded now, outside the lock). */
  private async closureOf(id: ObjectId): Promise<ObjectId[]> {
    const out: ObjectId[] = [];
    for (const c of await childrenOf(this.objects, id)) {
      out.push(c.id);
      // A followed child (a checkpoint's source snapshot) must be whole too.
      if (c.follow) for (const g of await childrenOf(this.objects, c.id)) out.push(g.id);
    }
    return out;
  }

  /** Under the lock: `id` and `children` must all be stored, else `not_found`. */
  private assertPresentSync(id: ObjectId, children: readonly ObjectId[]): void {
    const absent = [id, ...children].filter((c) => !this.objects.existsSync(c));
    if (absent.length > 0) {
      throw new TensorFSError('not_found', 'objects referenced by this snapshot are missing from the store', {
        details: { missing: absent.slice(0, 20), count: absent.length },
      });
    }
  }

  /** Ids named by refs and roots (GC and verify start there). */
  private async tops(): Promise<ObjectId[]> {
    const ids = new Set<ObjectId>((await listRefs(this.layout)).map((r) => r.id));
    for (const r of this.db.prepare('SELECT id FROM roots').pluck().all() as ObjectId[]) ids.add(r);
    return [...ids];
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
    validatePath(path);
    const m = await this.getManifest(snapshot);
    const entry = m.entries.find((e) => e.path === path);
    if (!entry) throw new TensorFSError('not_found', 'no such path in the snapshot', { details: { path } });
    if (entry.kind !== 'file') {
      throw new TensorFSError('invalid_argument', 'not a regular file in the snapshot', { details: { path } });
    }
    await this.refuseInsideStore(resolve(dest));
    await writeRecordsFile(this.objects, entry.records, resolve(dest), { ...options, mode: entry.mode });
  }

  /** `invalid_argument` if `dest` (symlinks resolved as far as it exists) lies inside this store. */
  private async refuseInsideStore(dest: string): Promise<void> {
    const real = async (p: string): Promise<string> => {
      const tail: string[] = [];
      for (let d = p; ; d = dirname(d)) {
        try {
          return join(await fsp.realpath(d), ...tail.reverse());
        } catch {
          if (dirname(d) === d) return p;
          tail.push(basename(d));
        }
      }
    };
    const store = await real(this.root);
    const at = await real(dest);
    if (at === store || at.startsWith(store.endsWith(sep) ? store : store + sep)) {
      throw new TensorFSError('invalid_argument', 'cannot export into the store itself', {
        details: { rule: 'export.inside_store', path: basename(dest) },
      });
    }
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
    const m = await this.getManifest(snapshot);
    const root = resolve(destDir);
    const filesTotal = m.entries.length;
    const bytesTotal = m.entries.reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0);
    let files = 0;
    let bytes = 0;
    const report = () => options.onProgress?.({ files, filesTotal, bytes, bytesTotal });
    await this.refuseInsideStore(root);
    try {
      await mkdirDurable(root);
    } catch (err) {
      const errno = errnoOf(err);
      if (errno === 'EEXIST' || errno === 'ENOTDIR') {
        throw new TensorFSError(
          'conflict',
          `export destination ${basename(root)} exists and is not a folder: remove it or choose another folder`,
          { details: { rule: 'export.not_a_folder', path: basename(root) } },
        );
      }
      throw ioError(err, 'create export folder');
    }
    for (const e of m.entries) {
      throwIfAborted(options.signal);
      validatePath(e.path);
      const dest = join(root, ...e.path.split('/'));
      await ensureParents(root, e.path);
      if (e.kind === 'file') {
        await writeRecordsFile(this.objects, e.records, dest, {
          ...options,
          mode: e.mode,
          onBytes: (n) => {
            bytes += n;
            report();
          },
        });
      } else {
        await replaceSymlink(e.target, dest);
      }
      files++;
      report();
    }
    return { files, bytes };
  }

  // ---------------------------------------------------------------------------------------------
  // Maintenance

  /** Checks every object reachable from refs and roots (see {@link VerifyOptions}). */
  async verify(options: VerifyOptions = {}): Promise<VerifyResult> {
    checkOptions(options);
    this.live();
    return verifyStore(this.objects, await this.tops(), options);
  }

  /** Collects unreachable objects older than the grace period (see docs/store.md). */
  async gc(options: GcOptions = {}): Promise<GcResult> {
    checkOptions(options);
    this.live();
    if (!options.dryRun) this.objects.assertWritable();
    return collect(
      { db: this.db, layout: this.layout, objects: this.objects, tops: () => this.tops() },
      options.graceMs ?? this.graceMs,
      options,
    );
  }

  /**
   * Removes ref `name` and, at once, the objects only it reached (see {@link RemoveOptions}):
   * GC's mark (every other ref, every root, every live lease) and sweep (write-lock batches, the
   * ref log, lease and grace-period re-checks) with the ref's closure as the candidates. Objects
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
        tops: () => this.tops(),
        refs: () => listRefs(this.layout),
        roots: () => this.db.prepare('SELECT id FROM roots').pluck().all() as ObjectId[],
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
    const items: { id: ObjectId; size: number }[] = [];
    for (const id of ids) {
      parseObjectId(id);
      const size = await this.objects.rawSize(id);
      if (size !== null) items.push({ id, size });
    }
    addCacheEntries(this.db, items, origin);
  }

  /** Writes recorded use now (it is otherwise written at most every `useFlushMs` and at close). */
  flushUse(): void {
    this.use?.flush();
  }

  /** Cached refs (with stored and exclusive bytes) and cached objects no ref reaches, least recently used first. */
  async cacheList(options: { signal?: AbortSignal } = {}): Promise<CacheListing> {
    checkOptions(options);
    this.live();
    const { signal } = options;
    this.use?.flush();
    const sizes = new Map<ObjectId, number>();
    let storedBytes = 0;
    for await (const o of listObjects(this.layout, signal)) {
      sizes.set(o.id, o.size);
      storedBytes += o.size;
    }
    const rows = cachedRefRows(this.db, this.layout);
    const cachedIds = new Map(rows.map((r) => [r.name, r.id]));
    const keepTops = new Set<ObjectId>(this.db.prepare('SELECT id FROM roots').pluck().all() as ObjectId[]);
    const leased = leasedObjects(this.db);
    for (const id of leased) keepTops.add(id);
    for (const r of (await this.scanRefs()).refs) if (cachedIds.get(r.name) !== r.id) keepTops.add(r.id);
    const kept = new Set((await reach(this.objects, keepTops, signal)).objects.keys());
    for (const id of leased) kept.add(id);
    // The only cached ref reaching each object beyond the kept set, or -1 once two do.
    const holder = new Map<ObjectId, number>();
    const refs: CachedRefInfo[] = [];
    const reached = new Set<ObjectId>();
    for (const row of rows) {
      const r = await reach(this.objects, [row.id], signal);
      let stored = 0;
      for (const o of r.objects.keys()) {
        stored += sizes.get(o) ?? 0;
        reached.add(o);
        if (kept.has(o)) continue;
        const prev = holder.get(o);
        holder.set(o, prev === undefined || prev === refs.length ? refs.length : -1);
      }
      refs.push({
        name: row.name,
        id: row.id,
        storedBytes: stored,
        exclusiveBytes: 0,
        objects: r.objects.size,
        lastUseMs: row.lastUseMs,
        addedMs: row.addedMs,
      });
    }
    let evictableBytes = 0;
    for (const [o, who] of holder) {
      const size = sizes.get(o) ?? 0;
      evictableBytes += size;
      if (who >= 0) refs[who]!.exclusiveBytes += size;
    }
    const objects: CachedObjectInfo[] = [];
    for (const e of cacheEntryRows(this.db)) {
      const size = sizes.get(e.id);
      if (size === undefined || reached.has(e.id) || kept.has(e.id)) continue;
      objects.push({ id: e.id, size, origin: e.origin, lastUseMs: e.lastUseMs });
      evictableBytes += size;
    }
    refs.sort((a, b) => a.lastUseMs - b.lastUseMs || (a.name < b.name ? -1 : 1));
    return { refs, objects, evictableBytes, storedBytes };
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
        tops: () => this.tops(),
        refs: async () => (await this.scanRefs()).refs,
        roots: () => this.db.prepare('SELECT id FROM roots').pluck().all() as ObjectId[],
        flushUse: () => this.use?.flush(),
      },
      options,
    );
  }

  /** Logical vs stored bytes, overall and per ref. Abort `signal` to stop (`cancelled`). */
  async usage(options: { signal?: AbortSignal } = {}): Promise<Usage> {
    checkOptions(options);
    this.live();
    const { signal } = options;
    let storedBytes = 0;
    let objects = 0;
    const sizes = new Map<ObjectId, number>();
    for await (const o of listObjects(this.layout, signal)) {
      storedBytes += o.size;
      objects++;
      sizes.set(o.id, o.size);
    }
    const refs: Usage['refs'] = [];
    const logical = new Map<ObjectId, number>();
    // Who keeps each reached object: the index of the only ref that reaches it, or SHARED (two
    // refs, a root, a live lease). One entry per object and one visit per (ref, object it
    // reaches): linear in what the refs reach, never in pairs of refs.
    const SHARED = -1;
    /** Held by a live lease alone (kept, but not reached by a ref or root). */
    const LEASED = -2;
    const holder = new Map<ObjectId, number>();
    const hold = (o: ObjectId, who: number) => {
      const prev = holder.get(o);
      holder.set(o, prev === undefined || prev === who ? who : SHARED);
    };
    for (const o of leasedObjects(this.db)) holder.set(o, LEASED);
    const problems: RefProblem[] = [];
    // The same bookkeeping per repository (its refs together).
    interface RepoAcc {
      index: number;
      repo: string;
      refs: string[];
      heads: Set<ObjectId>;
      objects: Set<ObjectId>;
    }
    const repos = new Map<string, RepoAcc>();
    const repoHolder = new Map<ObjectId, number>();
    const repoHold = (o: ObjectId, who: number) => {
      const prev = repoHolder.get(o);
      repoHolder.set(o, prev === undefined || prev === who ? who : SHARED);
    };
    for (const o of leasedObjects(this.db)) repoHolder.set(o, LEASED);
    // A ref whose id is also a root: its objects are held by the root too (no repository has
    // them alone); known before the walk so no head is read twice.
    const rootIds = new Set(this.db.prepare('SELECT id FROM roots').pluck().all() as ObjectId[]);
    // Each head object is read once: the check, the walk from it and its logical size share it.
    const measure = async (name: string, id: ObjectId, head: Head | undefined, isRef: boolean): Promise<void> => {
      const r = await reach(this.objects, [id], signal, head && new Map([[id, head.bytes]]));
      // A checkpoint whose source snapshot is missing or does not decode: its figures would be wrong.
      const broken = r.missing[0] ?? r.corrupt[0];
      if (isRef && broken !== undefined) {
        const missing = r.missing.length > 0;
        const what = `an object this ref reaches ${missing ? 'is missing' : 'does not decode'} (${broken})`;
        problems.push(targetProblem(name, id, missing ? 'missing' : 'malformed', what));
        return;
      }
      const who = isRef ? refs.length : SHARED;
      const repoName = isRef ? (parseRepoRefName(name)?.repo ?? null) : null;
      let acc: RepoAcc | undefined;
      if (repoName !== null) {
        acc = repos.get(repoName);
        if (acc === undefined) {
          acc = { index: repos.size, repo: repoName, refs: [], heads: new Set(), objects: new Set() };
          repos.set(repoName, acc);
        }
        acc.refs.push(name);
        acc.heads.add(id);
      }
      let own = 0;
      for (const o of r.objects.keys()) {
        own += sizes.get(o) ?? 0;
        hold(o, who);
        if (acc !== undefined) {
          acc.objects.add(o);
          repoHold(o, rootIds.has(id) ? SHARED : acc.index);
        } else repoHold(o, SHARED);
      }
      if (!logical.has(id)) {
        // A root that is not a snapshot or checkpoint counts its raw size.
        logical.set(id, head?.logical ?? (await this.objects.rawSize(id)) ?? 0);
      }
      const lb = logical.get(id)!;
      if (isRef) {
        refs.push({
          name,
          id,
          logicalBytes: lb,
          storedBytes: own,
          objects: r.objects.size,
          exclusiveBytes: 0,
          sharedBytes: 0,
        });
      }
    };
    for await (const r of this.refHeads(signal)) {
      if ('problem' in r) problems.push(r.problem);
      else await measure(r.ref.name, r.ref.id, r.head, true);
    }
    // A root a ref names reaches exactly what that ref does: not walked again (its head was read
    // once), its ref's objects just count as shared below.
    const rootedRefIds = new Set<ObjectId>();
    for (const root of await this.listRoots()) {
      if (logical.has(root.id)) {
        rootedRefIds.add(root.id);
        continue;
      }
      let head: Head | undefined;
      try {
        head = await this.readHead(root.id);
      } catch (err) {
        if (isTensorFSError(err) && err.code === 'cancelled') throw err;
      }
      await measure(`root:${root.reason}`, root.id, head, false);
    }
    problems.sort(byName);
    // Cached objects no ref reaches are kept (GC leaves them to the cache's budget): not unreferenced.
    for (const o of this.db.prepare('SELECT id FROM cache_entries').pluck().all() as ObjectId[]) {
      if (!holder.has(o)) holder.set(o, LEASED);
    }
    const logicalBytes = [...logical.values()].reduce((a, b) => a + b, 0);
    let reachedBytes = 0;
    let keptBytes = 0;
    for (const [o, who] of holder) {
      const size = sizes.get(o) ?? 0;
      keptBytes += size;
      if (who !== LEASED) reachedBytes += size;
      if (who >= 0 && !rootedRefIds.has(refs[who]!.id)) refs[who]!.exclusiveBytes += size;
    }
    for (const r of refs) r.sharedBytes = r.storedBytes - r.exclusiveBytes;
    const repositories: RepositoryUsage[] = [...repos.values()]
      .sort((a, b) => (a.repo < b.repo ? -1 : a.repo > b.repo ? 1 : 0))
      .map((a) => {
        let storedBytes = 0;
        let exclusiveBytes = 0;
        for (const o of a.objects) {
          const size = sizes.get(o) ?? 0;
          storedBytes += size;
          if (repoHolder.get(o) === a.index) exclusiveBytes += size;
        }
        const logicalBytes = [...a.heads].reduce((n, h) => n + (logical.get(h) ?? 0), 0);
        return {
          repo: a.repo,
          refs: [...a.refs].sort(),
          logicalBytes,
          storedBytes,
          objects: a.objects.size,
          exclusiveBytes,
          sharedBytes: storedBytes - exclusiveBytes,
        };
      });
    const dedupRatio = reachedBytes > 0 ? logicalBytes / reachedBytes : 1;
    const unreferencedBytes = storedBytes - keptBytes;
    return { logicalBytes, storedBytes, objects, dedupRatio, unreferencedBytes, refs, repositories, problems };
  }
}

/**
 * A ref's failure as a {@link RefProblem}. Its target being absent is `corrupt`
 * (`ref.target_missing`): the store never sets a ref to an object it does not hold. A target that
 * does not decode as a manifest or checkpoint header is `corrupt` (`ref.target_malformed`).
 */
function refProblem(name: string, id: ObjectId | undefined, err: unknown): RefProblem {
  const e = isTensorFSError(err) ? err : ioError(err, 'read ref');
  if (e.code === 'cancelled') throw e;
  if (id !== undefined && e.code === 'not_found') {
    return targetProblem(name, id, 'missing', `the object this ref names is missing (${id})`);
  }
  if (id !== undefined && e.code === 'malformed') {
    return targetProblem(
      name,
      id,
      'malformed',
      `the object this ref names is not a snapshot or checkpoint: ${e.message}`,
    );
  }
  const at = id === undefined ? {} : { id };
  const rule = typeof e.details.rule === 'string' ? e.details.rule : 'ref.unreadable';
  return { name, ...at, code: e.code, rule, message: e.message };
}

/** `corrupt`: what a ref names (or reaches) is missing (`ref.target_missing`) or does not decode. */
function targetProblem(name: string, id: ObjectId, kind: 'missing' | 'malformed', message: string): RefProblem {
  return { name, id, code: 'corrupt', rule: `ref.target_${kind}`, message };
}

/**
 * `corrupt` when metadata.sqlite3 is missing or empty but the store holds refs or objects: opening
 * would silently start a new database, losing roots and the quarantine list.
 */
async function refuseLostMetadata(layout: Layout): Promise<void> {
  let size: number | null = null;
  try {
    size = (await fsp.stat(layout.db)).size;
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') return; // let the open report it
  }
  if (size !== null && size > 0) return;
  const entries = async (d: string) => (await fsp.readdir(d).catch(() => [] as string[])).length;
  if ((await entries(layout.refs)) + (await entries(layout.objects)) === 0) return;
  throw damagedMetadata(size === null ? 'the file is missing' : 'the file is empty', undefined, true);
}

/** True if this process may create files in `dir`. */
function canWrite(dir: string): boolean {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Copies metadata.sqlite3 (and its -wal, if any) into a new private temp folder. */
async function copyMetadata(layout: Layout): Promise<string> {
  const dir = await fsp.mkdtemp(join(tmpdir(), 'tensorfs-ro-'));
  try {
    await fsp.copyFile(layout.db, join(dir, 'metadata.sqlite3'));
    await fsp.copyFile(`${layout.db}-wal`, join(dir, 'metadata.sqlite3-wal')).catch((err) => {
      if (errnoOf(err) !== 'ENOENT') throw err;
    });
    return dir;
  } catch (err) {
    await fsp.rm(dir, { recursive: true, force: true });
    throw ioError(err, 'copy metadata from read-only media', 'metadata.sqlite3');
  }
}

/** Creates the parent folders of `rel` under `root`, refusing to pass through a symlink or file. */
async function ensureParents(root: string, rel: string): Promise<void> {
  const parts = rel.split('/').slice(0, -1);
  let dir = root;
  for (const p of parts) {
    dir = join(dir, p);
    try {
      const st = await fsp.lstat(dir);
      if (!st.isDirectory()) {
        throw new TensorFSError('conflict', 'export path passes through a non-directory', { details: { path: rel } });
      }
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw ioError(err, 'export', rel);
      try {
        await fsp.mkdir(dir);
        await fsyncDir(dirname(dir));
      } catch (e) {
        if (errnoOf(e) !== 'EEXIST') throw ioError(e, 'mkdir', rel);
      }
    }
  }
}

/** Replaces `dest` with a symlink to `target` atomically (temp link + rename + dir fsync). */
async function replaceSymlink(target: string, dest: string): Promise<void> {
  const tmp = siblingTemp(dest);
  try {
    await fsp.symlink(target, tmp);
    await fsp.rename(tmp, dest);
    await fsyncDir(dirname(dest));
  } catch (err) {
    await fsp.rm(tmp, { force: true });
    throw ioError(err, 'symlink', basename(dest));
  }
}
