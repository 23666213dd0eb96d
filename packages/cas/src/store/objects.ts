/**
 * Object admission and reads (docs/store.md "Admission"): unique exclusive temp in `tmp/`, hash
 * while writing, length and digest checked, fdatasync, publish with link() so an existing object
 * wins, directory fsync. The dedup decision runs under the store's write lock so GC cannot unlink
 * an object between "it is there" and "it is leased / freshened".
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type Database from 'better-sqlite3';
import {
  type ObjectId,
  TensorFSError,
  checkRange,
  objectIdFromDigest,
  parseObjectId,
  throwIfAborted,
} from '@tensorfs/format';
import { type Db, immediate } from './db.js';
import { directView, O_DIRECT, writeDirect } from './direct.js';
import {
  CHUNK_BYTES,
  WRITE_PIECE,
  errnoOf,
  fsyncDir,
  fsyncDirSync,
  ioError,
  readFully,
  tempName,
  writeFully,
} from './fsutil.js';
import { type Layout, objectDir, objectPath, objectRel } from './layout.js';
import { SHARED_DIR_MODE } from './shared.js';

import type { Chunks, PutResult } from '@tensorfs/format/store';

export type { Chunks, PutResult } from '@tensorfs/format/store';

/**
 * The largest object (or range) {@link Objects.read} and {@link Objects.readRange} read with
 * synchronous calls on the calling thread: microseconds from the page cache, against a round
 * trip through libuv's thread pool per open, fstat, read and close; at most one disk read of
 * this size when the object is cold. Larger reads run on the thread pool.
 */
export const SMALL_READ_BYTES = 256 << 10;

/** Flattens {@link Chunks} to a list. */
export function chunkList(bytes: Chunks): readonly Uint8Array[] {
  return bytes instanceof Uint8Array ? [bytes] : bytes;
}

/** SHA-256 id and total length of some chunks. */
export function hashChunks(chunks: readonly Uint8Array[]): { id: ObjectId; length: number } {
  const h = createHash('sha256');
  let length = 0;
  for (const c of chunks) {
    h.update(c);
    length += c.length;
  }
  return { id: objectIdFromDigest(h.digest()), length };
}

/** A complete, synced temp file. */
export interface Temp {
  path: string;
  length: number;
}

/** A temp file written but not yet synced (its handle still open). */
export interface OpenTemp extends Temp {
  fh: fsp.FileHandle;
}

/** A sync the object path makes: a temp's fdatasync, a folder's fsync, a filesystem's syncfs. */
export type SyncOp = 'fdatasync' | 'fsync-dir' | 'syncfs';

/**
 * Fault-injection seam for tests (not part of the package's entry point): `before` runs before
 * every sync the object path makes, with the operation and the absolute path; a throw there is
 * that sync failing (as EIO would).
 */
export const syncSeam: { before?: (op: SyncOp, path: string) => void } = {};

/** fsync of a folder through {@link syncSeam}. */
export async function syncDir(dir: string): Promise<void> {
  syncSeam.before?.('fsync-dir', dir);
  await fsyncDir(dir);
}

/** Sync twin of {@link syncDir}. */
export function syncDirSync(dir: string): void {
  syncSeam.before?.('fsync-dir', dir);
  fsyncDirSync(dir);
}

/** fdatasync of an open temp through {@link syncSeam}. */
export async function datasync(fh: fsp.FileHandle, path: string): Promise<void> {
  syncSeam.before?.('fdatasync', path);
  await fh.datasync();
}

/** Ids {@link Objects.lacks} checks between two looks at the clock. */
const LACKS_STEP = 256;
/** {@link Objects.lacks} runs this long before it lets other work (and a cancellation) in. */
const SLICE_MS = 8;

/** Objects of one store: admission, existence, reads, quarantine. */
export class Objects {
  /**
   * Object folders (`xx` and `xx/yy`) whose own entry this process has seen durable: it created
   * them and fsynced their parent, or found them and fsynced their parent after (another process
   * may have created one and not synced its parent yet). A folder joins only after that fsync
   * succeeded.
   */
  private readonly dirsReady = new Set<string>();
  /** The filesystem refused O_DIRECT (or the OS has none): nothing is written with it, whatever a caller asks. */
  private refused = O_DIRECT === 0;
  private readonly isQuarantinedStmt;
  private readonly anyQuarantinedStmt;

  constructor(
    readonly layout: Layout,
    private readonly db: Db,
    private readonly readOnly: boolean,
    /**
     * `StoreOptions.directIO`: true, every large temp and part written with O_DIRECT unless
     * refused; undefined (the default), imported records direct and parts as their caller asks
     * (buffered when it does not say); false, everything buffered.
     */
    private readonly wantsDirect: boolean | undefined = undefined,
  ) {
    this.isQuarantinedStmt = db.prepare('SELECT 1 FROM corrupt_objects WHERE id = ?').pluck();
    this.anyQuarantinedStmt = db.prepare('SELECT 1 FROM corrupt_objects LIMIT 1').pluck();
  }

  /** Folders this store creates get {@link SHARED_DIR_MODE} explicitly (a shared store). */
  private shared = false;

  /** Marks the store shared: every object folder it creates is group-writable and setgid, whatever the umask. */
  shareFolders(): void {
    this.shared = true;
  }

  /** Gives folders just created the shared mode (a shared store only). */
  private shareNew(created: Iterable<string>): void {
    if (!this.shared) return;
    for (const d of created) fs.chmodSync(d, SHARED_DIR_MODE);
  }

  /** True while parts whose caller does not choose (fetch on read) are written with O_DIRECT (`directIO: true`, not refused). */
  get directIO(): boolean {
    return this.wantsDirect === true && !this.refused;
  }

  /** True while an import's large records are written with O_DIRECT (unless `directIO: false`, not refused). */
  get directImports(): boolean {
    return this.wantsDirect !== false && !this.refused;
  }

  /** False once the filesystem refused O_DIRECT (or where the OS has none): a part asking for it gets buffered writes. */
  get directPossible(): boolean {
    return !this.refused;
  }

  /** The filesystem refused O_DIRECT (`EINVAL`): every later temp and part of this store is buffered. */
  refuseDirect(): void {
    this.refused = true;
  }

  /** Absolute path of an object file. */
  path(id: ObjectId): string {
    return objectPath(this.layout, id);
  }

  /** True if the object file exists (and is not quarantined as corrupt). */
  async has(id: ObjectId): Promise<boolean> {
    parseObjectId(id);
    if (this.quarantined(id)) return false;
    try {
      await fsp.stat(this.path(id));
      return true;
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') return false;
      throw ioError(err, 'stat', objectRel(id));
    }
  }

  /** Synchronous existence check (for use under the write lock). */
  existsSync(id: ObjectId): boolean {
    if (this.quarantined(id)) return false;
    try {
      fs.statSync(this.path(id));
      return true;
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') return false;
      throw ioError(err, 'stat', objectRel(id));
    }
  }

  /**
   * The subset of `ids` not stored (or quarantined), in the order given: the existence checks of
   * a pull's plan or a push's answer. Checked synchronously (one `stat` each, and the quarantine
   * looked up only when something is quarantined), with a turn for other work every few
   * milliseconds: an `await` per id cost a thread-pool round trip each, most of a 100,000-object
   * plan on a loaded machine. `invalid_argument` for an id that is not one.
   */
  async lacks(ids: readonly ObjectId[], signal?: AbortSignal): Promise<ObjectId[]> {
    const out: ObjectId[] = [];
    let slice = performance.now();
    for (let i = 0; i < ids.length; i += LACKS_STEP) {
      throwIfAborted(signal);
      const step = ids.slice(i, i + LACKS_STEP);
      for (const id of step) parseObjectId(id);
      out.push(...this.absentSync(step));
      if (performance.now() - slice > SLICE_MS && i + LACKS_STEP < ids.length) {
        await new Promise((resolve) => setImmediate(resolve));
        slice = performance.now();
      }
    }
    return out;
  }

  /** Synchronous {@link lacks} (for use under the write lock): the ids absent or quarantined, in order. */
  absentSync(ids: readonly ObjectId[]): ObjectId[] {
    const anyQuarantined = this.anyQuarantinedStmt.get() !== undefined;
    const out: ObjectId[] = [];
    for (const id of ids) {
      if (anyQuarantined && this.quarantined(id)) out.push(id);
      else if (!this.fileExistsSync(id)) out.push(id);
    }
    return out;
  }

  /**
   * True if the object file exists, false if it does not; `io` if it cannot be told (a folder on
   * the way is not one, permissions). `existsSync` answers the common case (present) without
   * allocating a `Stats` (a million of them were a fifth of a 1,000,000-object plan, with the
   * garbage collection they caused); only a "no" is asked again with `stat`, for its reason.
   */
  private fileExistsSync(id: ObjectId): boolean {
    const file = this.path(id);
    if (fs.existsSync(file)) return true;
    try {
      return fs.statSync(file, { throwIfNoEntry: false }) !== undefined;
    } catch (err) {
      throw ioError(err, 'stat', objectRel(id));
    }
  }

  /** True if verify or a reader found this object corrupt and no good copy was admitted since. */
  quarantined(id: ObjectId): boolean {
    return this.isQuarantinedStmt.get(id) !== undefined;
  }

  /** Records a corrupt object so every later reader refuses it until a good copy is admitted. */
  quarantine(id: ObjectId, reason: string): void {
    if (this.readOnly) return;
    immediate(this.db, () => {
      this.db
        .prepare('INSERT OR REPLACE INTO corrupt_objects(id, found_ms, reason) VALUES (?, ?, ?)')
        .run(id, Date.now(), reason);
    });
  }

  /** Size of a stored object; `not_found` if absent, `corrupt` if quarantined. */
  async size(id: ObjectId): Promise<number> {
    parseObjectId(id);
    this.refuseQuarantined(id);
    try {
      return (await fsp.stat(this.path(id))).size;
    } catch (err) {
      throw this.openError(err, id);
    }
  }

  /**
   * The dedup decision, under the write lock: registers `leaseId` on `id` first, then looks for a
   * good copy (right length when `length` is given, not quarantined) and freshens its mtime so the
   * GC grace period restarts. Returns the stored length, or -1 when the caller must write it.
   */
  present(id: ObjectId, leaseId: string | undefined, length?: number): number {
    const file = this.path(id);
    const found = immediate(this.db, () => {
      if (leaseId !== undefined) this.leaseObjectStmt(leaseId, id);
      let st: fs.Stats;
      try {
        st = fs.statSync(file);
      } catch (err) {
        if (errnoOf(err) === 'ENOENT') return -1;
        throw ioError(err, 'stat', objectRel(id));
      }
      if (length !== undefined && st.size !== length) return -1;
      if (this.isQuarantinedStmt.get(id) !== undefined) return -1;
      const now = new Date();
      try {
        fs.utimesSync(file, now, now);
      } catch (err) {
        // Another user's object in a shared store: it stays protected by the caller's lease (if
        // any); without one, a later ref to it fails closed (`not_found`) if GC took it meanwhile.
        const code = errnoOf(err);
        if (code !== 'EPERM' && code !== 'EACCES' && code !== 'EROFS') throw ioError(err, 'utimes', objectRel(id));
      }
      return st.size;
    });
    if (found >= 0) this.presentDurableSync(id);
    return found;
  }

  /**
   * Makes the name of an object found present durable before anyone counts on it (a ref naming
   * it): its bytes are durable by the protocol (every writer syncs them before link()), but the
   * writer may be another process that linked it and has not fsynced its folder yet, or crashed
   * in between. So its folder is fsynced (every time: cheap when nothing is dirty), and the
   * folders above it once per process. An `io` error if that fails.
   */
  presentDurableSync(id: ObjectId): void {
    const dir = objectDir(this.layout, id);
    try {
      this.readyChainSync(dir);
      syncDirSync(dir);
    } catch (err) {
      throw ioError(err, 'fsync', objectRel(id));
    }
  }

  /** Folders to fsync so the names of these present objects are durable (see {@link presentDurableSync}); `ready` gets the folders to mark ready once they were. */
  presentNames(ids: Iterable<ObjectId>, dirs: Set<string>, ready: Set<string>): void {
    for (const id of ids) {
      const dir = objectDir(this.layout, id);
      this.chainToSync(dir, dirs, ready);
      dirs.add(dir);
    }
  }

  /** Marks folders ready whose parents were fsynced (see {@link chainToSync}). */
  markReady(ready: Iterable<string>): void {
    for (const d of ready) this.dirsReady.add(d);
  }

  /** Adds to `dirs` the parents to fsync for `dir`'s chain (`xx`, `xx/yy`) not yet ready, and those folders to `ready`. */
  private chainToSync(dir: string, dirs: Set<string>, ready: Set<string>): void {
    if (this.dirsReady.has(dir)) return;
    const xx = dirname(dir);
    if (!this.dirsReady.has(xx)) {
      dirs.add(dirname(xx));
      ready.add(xx);
    }
    dirs.add(xx);
    ready.add(dir);
  }

  /** fsyncs the parents of `dir`'s chain not yet ready, then marks them ready. */
  private readyChainSync(dir: string): void {
    const dirs = new Set<string>();
    const ready = new Set<string>();
    this.chainToSync(dir, dirs, ready);
    for (const d of dirs) syncDirSync(d);
    this.markReady(ready);
  }

  /** Async {@link readyChainSync}, after creating `dir` if needed. */
  private async readyChain(dir: string): Promise<void> {
    if (this.dirsReady.has(dir)) return;
    const first = fs.mkdirSync(dir, { recursive: true });
    if (first !== undefined)
      this.shareNew(first === dir ? [dir] : [dirname(dir), dir].filter((d) => d.length >= first.length));
    const dirs = new Set<string>();
    const ready = new Set<string>();
    this.chainToSync(dir, dirs, ready);
    for (const d of dirs) await syncDir(d);
    this.markReady(ready);
  }

  /**
   * {@link present} for many objects in ONE write transaction (a group commit's decision): the
   * lease claims each id first, then each is looked for and freshened, exactly as one by one.
   * Returns the stored length of each, or -1 where the caller must write it.
   */
  presentMany(items: readonly { id: ObjectId; length: number }[], leaseId: string | undefined): number[] {
    return immediate(this.db, () => {
      if (leaseId !== undefined) this.checkLease(leaseId);
      const claim = leaseId === undefined ? undefined : this.claimStmt();
      const now = new Date();
      return items.map(({ id, length }) => {
        if (claim !== undefined) claim.run(leaseId!, id);
        const file = this.path(id);
        let st: fs.Stats | undefined;
        try {
          // Absent is the common answer in a group: no exception for it.
          st = fs.statSync(file, { throwIfNoEntry: false });
        } catch (err) {
          if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ENOTDIR') return -1;
          throw ioError(err, 'stat', objectRel(id));
        }
        if (st === undefined || st.size !== length) return -1;
        if (this.isQuarantinedStmt.get(id) !== undefined) return -1;
        try {
          fs.utimesSync(file, now, now);
        } catch (err) {
          const code = errnoOf(err);
          if (code !== 'EPERM' && code !== 'EACCES' && code !== 'EROFS') throw ioError(err, 'utimes', objectRel(id));
        }
        return st.size;
      });
    });
  }

  private claimStmtCached: Database.Statement<[string, ObjectId]> | undefined;

  /**
   * A claim is a row appended to `lease_claims` (docs/store.md "Leases"). The same object claimed
   * again by the same lease is a second row until the lease goes: remembering the claims made to
   * skip a repeat cost a quarter of what the claims themselves cost (measured), for a rare repeat.
   */
  private claimStmt(): Database.Statement<[string, ObjectId]> {
    this.claimStmtCached ??= this.db.prepare<[string, ObjectId]>(
      'INSERT INTO lease_claims(lease_id, object_id) VALUES (?, ?)',
    );
    return this.claimStmtCached;
  }

  private checkLease(leaseId: string): void {
    const live = this.db.prepare('SELECT expires_ms FROM leases WHERE id = ?').pluck().get(leaseId) as
      | number
      | undefined;
    if (live === undefined || live <= Date.now()) {
      throw new TensorFSError('conflict', 'lease expired or released', {
        details: { rule: 'store.lease_dead', lease: leaseId },
      });
    }
  }

  private leaseObjectStmt(leaseId: string, id: ObjectId): void {
    const live = this.db.prepare('SELECT expires_ms FROM leases WHERE id = ?').pluck().get(leaseId) as
      | number
      | undefined;
    if (live === undefined || live <= Date.now()) {
      throw new TensorFSError('conflict', 'lease expired or released', {
        details: { rule: 'store.lease_dead', lease: leaseId },
      });
    }
    this.claimStmt().run(leaseId, id);
  }

  /** Refuses writes on a read-only store. */
  assertWritable(): void {
    if (this.readOnly) {
      throw new TensorFSError('denied', 'the store was opened read-only', { details: { rule: 'store.read_only' } });
    }
  }

  /** Admits bytes held in memory: hash, check `expected`, then write only if absent. */
  async put(bytes: Chunks, options: { expected?: ObjectId; lease?: string } = {}): Promise<PutResult> {
    this.assertWritable();
    const chunks = chunkList(bytes);
    const { id, length } = hashChunks(chunks);
    if (options.expected !== undefined && parseObjectId(options.expected) !== id) {
      throw new TensorFSError('corrupt', 'bytes do not hash to the expected id', {
        details: { rule: 'store.digest_mismatch', expected: options.expected, actual: id },
      });
    }
    return this.putHashed(id, chunks, options.lease, length);
  }

  /**
   * Admits bytes whose digest was computed over exactly these buffers by the caller (import's
   * planner hashes each record once). Writes only if absent.
   */
  async putHashed(id: ObjectId, chunks: readonly Uint8Array[], lease?: string, length?: number): Promise<PutResult> {
    const len = length ?? chunks.reduce((n, c) => n + c.length, 0);
    if (this.present(id, lease, len) >= 0) return { id, length: len, written: false };
    const tmp = await this.writeTemp(async (fh) => {
      await writeAllv(fh, chunks);
      return len;
    });
    return { id, length: len, written: await this.publish(tmp, id) };
  }

  /**
   * Admits a stream: when `expected` is present already nothing is read; otherwise the stream is
   * written to a temp while hashed, and length and digest are checked before publishing.
   */
  async putStream(
    stream: AsyncIterable<Uint8Array>,
    options: { expected?: ObjectId; expectedLength?: number; lease?: string; signal?: AbortSignal } = {},
  ): Promise<PutResult> {
    this.assertWritable();
    const { expected, expectedLength, signal } = options;
    if (expected !== undefined) {
      parseObjectId(expected);
      const have = this.present(expected, options.lease, expectedLength);
      if (have >= 0) return { id: expected, length: have, written: false };
    }
    const h = createHash('sha256');
    const tmp = await this.writeTemp(async (fh) => {
      let n = 0;
      for await (const chunk of stream) {
        throwIfAborted(signal);
        n += chunk.length;
        if (expectedLength !== undefined && n > expectedLength) {
          throw new TensorFSError('corrupt', 'stream is longer than expected', {
            details: { rule: 'store.length', expected: expectedLength, actual: n, digest: expected },
          });
        }
        h.update(chunk);
        await writeFully(fh, chunk);
      }
      return n;
    });
    try {
      const id = objectIdFromDigest(h.digest());
      if (expectedLength !== undefined && tmp.length !== expectedLength) {
        throw new TensorFSError('corrupt', 'stream is shorter than expected', {
          details: { rule: 'store.length', expected: expectedLength, actual: tmp.length, digest: expected },
        });
      }
      if (expected !== undefined && id !== expected) {
        throw new TensorFSError('corrupt', 'stream does not hash to the expected id', {
          details: { rule: 'store.digest_mismatch', expected, actual: id },
        });
      }
      if (expected === undefined && this.present(id, options.lease, tmp.length) >= 0) {
        await fsp.rm(tmp.path, { force: true });
        return { id, length: tmp.length, written: false };
      }
      return { id, length: tmp.length, written: await this.publish(tmp, id) };
    } catch (err) {
      await fsp.rm(tmp.path, { force: true });
      throw err;
    }
  }

  /**
   * Creates an exclusive temp (mode 0444), lets `fill` write it, fdatasyncs and closes it. On any
   * failure the temp is removed and the error is `io` (or the TensorFSError `fill` threw).
   */
  async writeTemp(fill: (fh: fsp.FileHandle) => Promise<number>): Promise<Temp> {
    return this.syncTemp(await this.fillTemp(fill));
  }

  /** Like {@link writeTemp} but leaves the temp open and unsynced: finish it with {@link syncTemp}. */
  async fillTemp(fill: (fh: fsp.FileHandle) => Promise<number>): Promise<OpenTemp> {
    const path = join(this.layout.tmp, tempName());
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(path, 'wx', 0o444);
    } catch (err) {
      throw ioError(err, 'create temp', 'tmp/');
    }
    try {
      return { path, length: await fill(fh), fh };
    } catch (err) {
      await fh.close().catch(() => {});
      await fsp.rm(path, { force: true });
      throw ioError(err, 'write temp', 'tmp/');
    }
  }

  /**
   * Writes an imported record held in memory to a new temp, left open and unsynced like
   * {@link fillTemp}: with O_DIRECT when its bytes lie in page-aligned memory (see `direct.ts`)
   * and {@link directImports}, buffered otherwise.
   */
  async fillTempFrom(chunks: readonly Uint8Array[], length: number): Promise<OpenTemp> {
    const view = this.directImports ? directView(chunks, length) : null;
    if (view !== null) {
      const tmp = await this.fillDirect(view, length);
      if (tmp !== null) return tmp;
    }
    return this.fillTemp(async (out) => {
      await writeAllv(out, chunks);
      return length;
    });
  }

  /**
   * An O_DIRECT temp of `length` bytes written from `view` (the record rounded up to the
   * alignment) and cut back to `length`; null (nothing left behind) when the filesystem refuses
   * O_DIRECT, which turns it off for this store.
   */
  private async fillDirect(view: Uint8Array, length: number): Promise<OpenTemp | null> {
    const path = join(this.layout.tmp, tempName());
    const { O_WRONLY, O_CREAT, O_EXCL } = fs.constants;
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(path, O_WRONLY | O_CREAT | O_EXCL | O_DIRECT, 0o444);
    } catch (err) {
      if (errnoOf(err) === 'EINVAL') {
        this.refuseDirect();
        return null;
      }
      throw ioError(err, 'create temp', 'tmp/');
    }
    try {
      await writeDirect(fh, view, 0);
      if (view.length !== length) await fh.truncate(length);
      return { path, length, fh };
    } catch (err) {
      await fh.close().catch(() => {});
      await fsp.rm(path, { force: true });
      if (errnoOf(err) === 'EINVAL') {
        this.refuseDirect();
        return null;
      }
      throw ioError(err, 'write temp', 'tmp/');
    }
  }

  /** fdatasyncs and closes an open temp; on failure removes it (`io`). */
  async syncTemp(tmp: OpenTemp): Promise<Temp> {
    try {
      // Synced through the descriptor that wrote it, before closing: a temp closed first and
      // re-opened to sync can lose a writeback error (the kernel keeps it with the in-memory
      // inode, which may be evicted once its pages were written back, failed or not).
      await datasync(tmp.fh, tmp.path);
      await tmp.fh.close();
      return { path: tmp.path, length: tmp.length };
    } catch (err) {
      await tmp.fh.close().catch(() => {});
      await fsp.rm(tmp.path, { force: true });
      throw ioError(err, 'sync temp', 'tmp/');
    }
  }

  /**
   * Publishes a complete, synced temp as object `id` with link(): an existing good object wins and
   * is never touched; an existing object of the wrong length or quarantined is replaced by rename.
   * Then the temp name is removed and the object directory fsynced. Returns true if this call
   * published the bytes. `syncDir: false` leaves the directory fsync to the caller (a batch syncs
   * each folder once).
   */
  async publish(tmp: Temp, id: ObjectId, options: { syncDir?: boolean } = {}): Promise<boolean> {
    const dir = objectDir(this.layout, id);
    const final = this.path(id);
    let published = true;
    try {
      await this.readyChain(dir);
      try {
        await linkOrRename(tmp.path, final);
      } catch (err) {
        if (errnoOf(err) !== 'EEXIST') throw err;
        const st = await fsp.stat(final);
        if (st.size === tmp.length && !this.quarantined(id)) {
          published = false;
        } else {
          await fsp.rename(tmp.path, final);
          this.clearQuarantine(id);
        }
      }
      await fsp.rm(tmp.path, { force: true });
      // Also when another writer won: it may not have fsynced the folder yet.
      if (options.syncDir !== false) await syncDir(dir);
      return published;
    } catch (err) {
      await fsp.rm(tmp.path, { force: true });
      throw ioError(err, 'publish', objectRel(id));
    }
  }

  /**
   * {@link publish} without any fsync, synchronously (a group commit publishes thousands of small
   * objects and makes the names durable together afterwards): creates the object folder if
   * needed, links (an existing good object wins) and removes the temp name. Adds to `dirs` every
   * folder whose entries changed (parents of new folders first). Returns true if this call
   * published the bytes.
   */
  publishSync(tmp: Temp, id: ObjectId, dirs: Set<string>, ready: Set<string>): boolean {
    const dir = objectDir(this.layout, id);
    const final = this.path(id);
    let published = true;
    try {
      // A folder in `dirs` was made (or found) by an earlier publish of this group already.
      if (!this.dirsReady.has(dir) && !dirs.has(dir)) {
        // Ready (its entry known durable) only once the caller's sync of `dirs` succeeded: a
        // later publish must not skip the parent fsync because this one created the folder.
        const changed = mkdirsNew(dir);
        for (const d of changed) dirs.add(d);
        // The folders created are the children of the changed ones along the path.
        this.shareNew(changed.length === 0 ? [] : changed.slice(1).concat(dir));
        this.chainToSync(dir, dirs, ready);
      }
      try {
        linkOrRenameSync(tmp.path, final);
      } catch (err) {
        if (errnoOf(err) !== 'EEXIST') throw err;
        const st = fs.statSync(final);
        if (st.size === tmp.length && !this.quarantined(id)) {
          published = false;
        } else {
          fs.renameSync(tmp.path, final);
          this.clearQuarantine(id);
        }
      }
      // unlink, not rm: rm would lstat first (one more call per object of a group); after a
      // rename the name is gone already.
      unlinkQuiet(tmp.path);
      // Also when another writer won: it may not have fsynced the folder yet.
      dirs.add(dir);
      return published;
    } catch (err) {
      fs.rmSync(tmp.path, { force: true });
      throw ioError(err, 'publish', objectRel(id));
    }
  }

  /** Lifts a quarantine (a good copy was admitted, or verify rehashed the file and it matched). */
  clearQuarantine(id: ObjectId): void {
    if (this.readOnly) return;
    immediate(this.db, () => {
      this.db.prepare('DELETE FROM corrupt_objects WHERE id = ?').run(id);
    });
  }

  private refuseQuarantined(id: ObjectId): void {
    if (this.quarantined(id)) {
      throw new TensorFSError('corrupt', 'object is quarantined as corrupt (run verify, re-admit a good copy)', {
        details: { rule: 'store.quarantined', digest: id },
      });
    }
  }

  private openError(err: unknown, id: ObjectId): TensorFSError {
    if (errnoOf(err) === 'ENOENT') {
      return new TensorFSError('not_found', 'object not in the store', {
        details: { rule: 'store.not_found', digest: id },
      });
    }
    return ioError(err, 'open', objectRel(id));
  }

  /** Size of the object file, or null if absent; ignores quarantine (for verify). */
  async rawSize(id: ObjectId): Promise<number | null> {
    try {
      const st = await fsp.lstat(this.path(id));
      // Anything but a regular file (a folder, a symlink) at an object's path is not the object.
      return st.isFile() ? st.size : null;
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') return null;
      throw ioError(err, 'stat', objectRel(id));
    }
  }

  /** Synchronous {@link rawSize}. */
  rawSizeSync(id: ObjectId): number | null {
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(this.path(id), { throwIfNoEntry: false });
    } catch (err) {
      throw ioError(err, 'stat', objectRel(id));
    }
    return st?.isFile() ? st.size : null;
  }

  /** Every quarantined id now (one query, for a pass over many objects such as verify's). */
  quarantinedIds(): Set<ObjectId> {
    return new Set(this.db.prepare('SELECT id FROM corrupt_objects').pluck().all() as ObjectId[]);
  }

  /**
   * {@link hashFile} (raw) of a small object in one synchronous read: verify's many tiny objects
   * spent most of their time in the thread-pool round trips of an awaited open, read and close.
   */
  hashSmallSync(id: ObjectId): { actual: ObjectId; length: number } {
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(this.path(id));
    } catch (err) {
      throw errnoOf(err) === 'ENOENT' ? this.openError(err, id) : ioError(err, 'read', objectRel(id));
    }
    return { actual: objectIdFromDigest(createHash('sha256').update(bytes).digest()), length: bytes.length };
  }

  /** Opens an object for reading; `not_found`, `corrupt` (quarantined, unless `raw`) or `io`. */
  async open(id: ObjectId, raw = false): Promise<{ fh: fsp.FileHandle; size: number }> {
    parseObjectId(id);
    if (!raw) this.refuseQuarantined(id);
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(this.path(id), 'r');
    } catch (err) {
      throw this.openError(err, id);
    }
    try {
      return { fh, size: (await fh.stat()).size };
    } catch (err) {
      await fh.close();
      throw ioError(err, 'stat', objectRel(id));
    }
  }

  /**
   * Fills `target` from object `id` at `start`, after checking that the object file is `length`
   * bytes (a wrong length is quarantined and `corrupt`). The hot path of tensor reads: open,
   * fstat and close are direct syscalls (microseconds on a local disk) instead of three trips
   * through libuv's thread pool per object, which cost more than reading 8 MiB from the page
   * cache; only the read itself runs off the main thread.
   */
  async readRangeInto(id: ObjectId, length: number, start: number, target: Uint8Array): Promise<void> {
    const fd = this.openSync(id);
    try {
      const size = this.fdSize(fd, id);
      if (size !== length) this.corrupt(id, 'length', { expected: length, actual: size });
      await readFdExactlyInto(fd, start, target, id);
    } finally {
      fs.closeSync(fd);
    }
  }

  /**
   * A whole object; with `verify` it is rehashed and a mismatch is quarantined and `corrupt`. An
   * object of at most {@link SMALL_READ_BYTES} (a manifest, a file's header record, a ref's
   * revision) is opened, read and closed with direct syscalls, as {@link readRangeInto} opens:
   * opening a snapshot reads several such objects one after another, and each trip through
   * libuv's thread pool cost more than the read itself.
   */
  async read(id: ObjectId, verify: boolean): Promise<Uint8Array> {
    const fd = this.openSync(id);
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(this.fdSize(fd, id));
      await readFdExactly(fd, 0, bytes, id);
    } finally {
      fs.closeSync(fd);
    }
    if (verify) this.checkDigest(id, [bytes]);
    return bytes;
  }

  /** Opens an object file with a direct syscall; `not_found`, `corrupt` (quarantined) or `io`. */
  private openSync(id: ObjectId): number {
    parseObjectId(id);
    this.refuseQuarantined(id);
    try {
      return fs.openSync(this.path(id), 'r');
    } catch (err) {
      throw this.openError(err, id);
    }
  }

  /** The size of an open object file (`io` on a failed fstat). */
  private fdSize(fd: number, id: ObjectId): number {
    try {
      return fs.fstatSync(fd).size;
    } catch (err) {
      throw ioError(err, 'stat', objectRel(id));
    }
  }

  /**
   * An object as a stream of chunks (at most `chunkSize` bytes each), from `offset`. With `verify`
   * the object is hashed as it streams and the last chunk is held back until the digest matched,
   * so a consumer that commits only at the end never commits wrong bytes (`corrupt` instead).
   * With `spare`, chunks are read into buffers popped from it (fresh ones when it is empty); a
   * consumer done with a chunk may push `new Uint8Array(chunk.buffer)` back for reuse.
   */
  async *stream(id: ObjectId, options: ObjectStreamOptions = {}): AsyncGenerator<Uint8Array> {
    const chunkSize = options.chunkSize ?? CHUNK_BYTES;
    const offset = options.offset ?? 0;
    if (!Number.isSafeInteger(chunkSize) || chunkSize < 1) {
      throw new TensorFSError('invalid_argument', 'chunkSize must be a positive integer', {
        details: { rule: 'store.chunk_size', actual: chunkSize },
      });
    }
    if (!Number.isSafeInteger(offset) || offset < 0 || (offset > 0 && options.verify)) {
      throw new TensorFSError('invalid_argument', 'offset must be a non-negative integer (0 with verify)', {
        details: { rule: 'store.offset', actual: offset },
      });
    }
    const { fh, size } = await this.open(id);
    const h = options.verify ? createHash('sha256') : undefined;
    const spare = options.spare;
    try {
      let held: Uint8Array | undefined;
      for (let at = Math.min(offset, size); at < size; at += chunkSize) {
        throwIfAborted(options.signal);
        const n = Math.min(chunkSize, size - at);
        let chunk: Uint8Array;
        if (spare) {
          let buf = spare.pop();
          // Never more than what is left of the object: a small object gets a small buffer.
          if (buf === undefined || buf.length < n) buf = new Uint8Array(Math.min(chunkSize, size - at));
          chunk = buf.subarray(0, n);
          await readExactlyInto(fh, at, chunk, id);
        } else chunk = await readExactly(fh, at, n, id);
        if (!h) {
          yield chunk;
          continue;
        }
        h.update(chunk);
        if (held) yield held;
        held = chunk;
      }
      if (h) {
        const actual = objectIdFromDigest(h.digest());
        if (actual !== id) this.corrupt(id, 'digest', { actual });
      }
      if (held) yield held;
    } finally {
      await fh.close();
    }
  }

  /**
   * `length` bytes at `offset` of an object (range-checked against its size); a range of at most
   * {@link SMALL_READ_BYTES} (such as the four bytes that tell a snapshot from a checkpoint) is
   * read with direct syscalls, as {@link read} reads a small object.
   */
  async readRange(id: ObjectId, offset: number, length: number): Promise<Uint8Array> {
    const fd = this.openSync(id);
    try {
      checkRange(offset, length, this.fdSize(fd, id));
      const out = new Uint8Array(length);
      await readFdExactly(fd, offset, out, id);
      return out;
    } finally {
      fs.closeSync(fd);
    }
  }

  /** Throws `corrupt` (and quarantines) unless `chunks` hash to `id`. */
  checkDigest(id: ObjectId, chunks: readonly Uint8Array[]): void {
    const actual = hashChunks(chunks).id;
    if (actual !== id) this.corrupt(id, 'digest', { actual });
  }

  /** Quarantines `id` and throws `corrupt`. */
  corrupt(id: ObjectId, rule: 'digest' | 'length', details: Record<string, unknown> = {}): never {
    this.quarantine(id, rule);
    throw new TensorFSError(
      'corrupt',
      `object ${rule === 'digest' ? 'does not match its digest' : 'has the wrong length'}`,
      {
        details: { rule: `store.${rule}`, digest: id, ...details },
      },
    );
  }

  /** Hashes a whole object file (streaming, bounded memory); `{id, length}` of what is on disk. */
  async hashFile(id: ObjectId, signal?: AbortSignal, raw = false): Promise<{ actual: ObjectId; length: number }> {
    const { fh, size } = await this.open(id, raw);
    const h = createHash('sha256');
    let length = 0;
    try {
      // Sized to the object: an 8 MiB buffer per tiny object made verifying 100,000 of them
      // mostly garbage collection (a file that grew meanwhile is still read to its end).
      const buf = Buffer.allocUnsafe(Math.max(4096, Math.min(CHUNK_BYTES, size)));
      for (;;) {
        throwIfAborted(signal);
        const { bytesRead } = await fh.read(buf, 0, buf.length, length);
        if (bytesRead === 0) break;
        h.update(buf.subarray(0, bytesRead));
        length += bytesRead;
      }
    } catch (err) {
      throw ioError(err, 'read', objectRel(id));
    } finally {
      await fh.close();
    }
    return { actual: objectIdFromDigest(h.digest()), length };
  }
}

/** Reads exactly `length` bytes at `offset`; a short read means the file shrank (`corrupt`). */
export async function readExactly(
  fh: fsp.FileHandle,
  offset: number,
  length: number,
  id: ObjectId,
): Promise<Uint8Array> {
  const out = new Uint8Array(length);
  await readExactlyInto(fh, offset, out, id);
  return out;
}

/** Fills `target` from object `id`'s open file at `offset`: a short object is `corrupt`, an OS failure `io`. */
export function readExactlyInto(fh: fsp.FileHandle, offset: number, target: Uint8Array, id: ObjectId): Promise<void> {
  return readFully(
    fh,
    offset,
    target,
    (at) =>
      new TensorFSError('corrupt', 'object is shorter than expected', {
        details: { rule: 'store.length', digest: id, expected: offset + target.length, actual: at },
      }),
    objectRel(id),
  );
}

/** Fills `target` from `offset`: with synchronous reads up to {@link SMALL_READ_BYTES}, else on the thread pool. */
async function readFdExactly(fd: number, offset: number, target: Uint8Array, id: ObjectId): Promise<void> {
  if (target.length <= SMALL_READ_BYTES) readFdExactlySync(fd, offset, target, id);
  else await readFdExactlyInto(fd, offset, target, id);
}

/** {@link readFdExactlyInto} with synchronous reads (for at most {@link SMALL_READ_BYTES}). */
function readFdExactlySync(fd: number, offset: number, target: Uint8Array, id: ObjectId): void {
  const length = target.length;
  let done = 0;
  try {
    while (done < length) {
      const bytesRead = fs.readSync(fd, target, done, length - done, offset + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
  } catch (err) {
    throw ioError(err, 'read', objectRel(id));
  }
  if (done !== length) throw shortObject(id, offset + length, offset + done);
}

/** {@link readExactlyInto} on a raw file descriptor (reads run on libuv's thread pool). */
async function readFdExactlyInto(fd: number, offset: number, target: Uint8Array, id: ObjectId): Promise<void> {
  const length = target.length;
  let done = 0;
  try {
    while (done < length) {
      const bytesRead = await new Promise<number>((resolve, reject) =>
        fs.read(fd, target, done, length - done, offset + done, (err, n) => (err ? reject(err) : resolve(n))),
      );
      if (bytesRead === 0) break;
      done += bytesRead;
    }
  } catch (err) {
    throw ioError(err, 'read', objectRel(id));
  }
  if (done !== length) throw shortObject(id, offset + length, offset + done);
}

/** An object file that ends before `expected` (at `actual`): `corrupt`. */
function shortObject(id: ObjectId, expected: number, actual: number): TensorFSError {
  return new TensorFSError('corrupt', 'object is shorter than expected', {
    details: { rule: 'store.length', digest: id, expected, actual },
  });
}

/** Options of {@link Objects.stream} (and `LocalStore.objectStream`). */
export interface ObjectStreamOptions {
  /** Rehash on the way; the last chunk is withheld until the digest matched. Needs `offset` 0. */
  verify?: boolean;
  /** Largest chunk (default 8 MiB). */
  chunkSize?: number;
  /** First byte (default 0). */
  offset?: number;
  /** Buffers to read into, reused: see {@link Objects.stream}. */
  spare?: Uint8Array[];
  signal?: AbortSignal;
}

/**
 * Writes several buffers completely at the current position: one writev per {@link WRITE_PIECE}
 * bytes (a received object arrives in ~64 KiB chunks, and a write per chunk cost a transfer's main
 * thread more than the bytes did; a write of several MiB costs the kernel more than its pieces).
 */
export async function writeAllv(fh: fsp.FileHandle, chunks: readonly Uint8Array[]): Promise<void> {
  let i = 0;
  let off = 0;
  for (;;) {
    while (i < chunks.length && off === chunks[i]!.length) {
      i++;
      off = 0;
    }
    if (i === chunks.length) return;
    const batch: Uint8Array[] = [];
    let want = 0;
    for (let k = i, o = off; k < chunks.length && want < WRITE_PIECE && batch.length < IOV_MAX; k++, o = 0) {
      const take = Math.min(chunks[k]!.length - o, WRITE_PIECE - want);
      batch.push(chunks[k]!.subarray(o, o + take));
      want += take;
    }
    let written: number;
    try {
      ({ bytesWritten: written } = await fh.writev(batch));
    } catch (err) {
      throw ioError(err, 'write');
    }
    if (written === 0) throw ioError(Object.assign(new Error('no progress'), { code: 'EIO' }), 'write');
    while (written > 0) {
      const left = chunks[i]!.length - off;
      if (written >= left) {
        written -= left;
        i++;
        off = 0;
      } else {
        off += written;
        written = 0;
      }
    }
  }
}

/** Buffers one writev takes (Linux's IOV_MAX). */
const IOV_MAX = 1024;

/** `link` errors that mean "this filesystem has no hard links" (FAT/exFAT, some FUSE and SMB mounts). */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK']);

/**
 * Publishes `tmp` as `final` without replacing an existing `final` (`EEXIST` then, as `link`
 * gives). Where the filesystem cannot hard-link, falls back to an exclusive rename: check, then
 * rename. Two writers racing there can both rename, but both hold the same verified bytes of the
 * same id, so the one replaced is identical.
 */
async function linkOrRename(tmp: string, final: string): Promise<void> {
  try {
    await fsp.link(tmp, final);
    return;
  } catch (err) {
    if (!NO_HARD_LINKS.has(errnoOf(err) ?? '')) throw err;
  }
  try {
    await fsp.lstat(final);
    throw Object.assign(new Error('object exists'), { code: 'EEXIST' });
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
  }
  // The caller removes `tmp` afterwards; after a rename it is already gone (rm with force).
  await fsp.rename(tmp, final);
}

/** Sync twin of {@link linkOrRename}. */
function linkOrRenameSync(tmp: string, final: string): void {
  try {
    fs.linkSync(tmp, final);
    return;
  } catch (err) {
    if (!NO_HARD_LINKS.has(errnoOf(err) ?? '')) throw err;
  }
  try {
    fs.lstatSync(final);
    throw Object.assign(new Error('object exists'), { code: 'EEXIST' });
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
  }
  fs.renameSync(tmp, final);
}

/** unlink of a name that may be gone already (ENOENT is not an error). */
function unlinkQuiet(path: string): void {
  try {
    fs.unlinkSync(path);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
  }
}

/**
 * `mkdir -p dir` (no fsync; inside the store, so Node's recursive mkdir cannot meet `/proc`);
 * returns the folders whose entries it changed, outermost first: the parent of each folder it
 * created. Empty when `dir` existed.
 */
function mkdirsNew(dir: string): string[] {
  const first = fs.mkdirSync(dir, { recursive: true });
  if (first === undefined) return [];
  const changed: string[] = [];
  for (let d = dir; d.length >= first.length; d = dirname(d)) {
    changed.push(dirname(d));
    if (d === first) break;
  }
  return changed.reverse();
}
