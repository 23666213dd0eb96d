/**
 * The transfer engine: fetches a set of objects a store lacks from an origin with bounded
 * concurrency, in batches where the origin answers them, through the store's part files or
 * resumable part files on disk for large ones, each verified (length and SHA-256) before the store
 * admits it. Pull, fetch-on-read and the selection of tensors all run on it.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import {
  type ObjectId,
  type Progress,
  progressEvent,
  TensorFSError,
  isTensorFSError,
  cancelledError,
} from '@tensorfs/format';
import { type Lease, type Store, supports } from '@tensorfs/format/store';
import { sleep } from './http.js';
import type { Origin } from './origin.js';
import { runPool } from './pool.js';
import { referencesOf } from './references.js';
import { FileSink, MemorySink, type Sink } from './sinks.js';
import { sha256Id } from './verify-stream.js';

/** Options of the transfer engine ({@link fetchObjects}, and the transfer part of a pull). */
export interface FetchOptions {
  /** Objects fetched at once (default 4). */
  concurrency?: number;
  /**
   * Folder for partial downloads (`pull-<hex>.part`), kept across runs so an interrupted pull
   * resumes with `Range` (the CLI uses the store's `tmp/`). Without it large objects restart.
   */
  partsDir?: string;
  /** Objects up to this size are fetched in memory; larger ones through a part file (default 8 MiB). */
  memoryLimit?: number;
  /**
   * Write objects fetched through a store part with `O_DIRECT` where the filesystem allows
   * (default true; buffered where it refuses). Nothing in the pulling process reads them next, and
   * a page-cache copy costs CPU the transfer needs (0.3–2.3 s per GiB on the VMs measured) and
   * evicts what a serving host has cached; the first read of a pulled object then comes from the
   * device. False writes them through the page cache (see `StoreOptions.directIO`).
   */
  directIO?: boolean;
  /**
   * Objects up to this size are fetched in groups: in one request where the origin answers
   * batches (the hub), and admitted with batched durability where the store can (default 256 KiB;
   * 0 turns batching off). Every object is verified on its own.
   */
  batchObjectBytes?: number;
  /** Failed transfers of one object tolerated before giving up (default 5). */
  maxAttempts?: number;
  /** Base backoff between attempts (default 200 ms). */
  backoffMs?: number;
  signal?: AbortSignal;
  /**
   * Called as objects arrive (or are found already held): phase `pull`, unit `bytes`, with
   * `objects`/`objectsTotal` and `bytes`/`bytesTotal` of the closure.
   */
  onProgress?: (p: Progress) => void;
}

/** What a transfer found and did. */
export interface TransferCounts {
  total: number;
  present: number;
  fetched: number;
  bytes: { total: number; present: number; fetched: number; resumed: number };
}

/** Largest referencing object (manifest, header) fetched into memory. */
const MAX_REFERENCING_BYTES = 1 << 30;

/** Default size up to which objects are fetched in groups. */
export const BATCH_OBJECT_BYTES = 256 << 10;
/** Most objects, and bytes, asked in one batch. */
const BATCH_MAX_OBJECTS = 256;
const BATCH_MAX_BYTES = 16 << 20;

/** Leaves asked of the store in one `lacks` call while planning. */
const LACKS_STEP = 4096;

/** The largest declared length in a group. */
function largest(group: readonly [ObjectId, number][]): number {
  let m = 0;
  for (const [, len] of group) m = Math.max(m, len);
  return m;
}

/**
 * Fetches `objects` (id → declared length, if known) that `store` lacks from `origin`, each
 * verified before it is admitted under `lease`. Returns what was present and what was fetched.
 * Unlike a pull, parts follow the store's own `directIO` unless `directIO` is given: what
 * is fetched here is usually read at once (fetch on read).
 */
export async function fetchObjects(
  store: Store,
  origin: Origin,
  objects: ReadonlyMap<ObjectId, number | undefined>,
  lease: Lease,
  options: FetchOptions = {},
): Promise<TransferCounts> {
  const t = new Transfer(store, origin, lease, options);
  await t.fetchAll(new Map(objects));
  return {
    total: t.objectsTotal,
    present: t.objectsPresent,
    fetched: t.objectsFetched,
    bytes: { total: t.bytesTotal, present: t.bytesPresent, fetched: t.bytesFetched, resumed: t.bytesResumed },
  };
}

function transient(err: unknown): boolean {
  if (!isTensorFSError(err)) return true; // stream/socket errors
  return err.code === 'unavailable' || err.code === 'io' || err.code === 'limit_exceeded';
}

/** One transfer's bookkeeping (a pull's, or one fetch on read). */
export class Transfer {
  objectsTotal = 0;
  objectsPresent = 0;
  objectsFetched = 0;
  bytesTotal = 0;
  bytesPresent = 0;
  bytesFetched = 0;
  bytesResumed = 0;
  private bytesDone = 0;
  private objectsDone = 0;
  /** Batched requests made, and objects a batch delivered with wrong bytes (refetched alone). */
  batches = 0;
  batchRejected = 0;
  private noBatch = false;
  readonly referencingIds = new Set<ObjectId>();

  constructor(
    private readonly store: Store,
    private readonly origin: Origin,
    private readonly lease: Lease,
    private readonly o: FetchOptions,
  ) {}

  private progress(): void {
    this.o.onProgress?.(
      progressEvent('pull', 'bytes', {
        objects: this.objectsDone,
        objectsTotal: this.objectsTotal,
        bytes: this.bytesDone,
        bytesTotal: this.bytesTotal,
      }),
    );
  }

  /** The bytes of a referencing object: from the store, else fetched, verified and admitted. */
  async referencing(id: ObjectId): Promise<Uint8Array> {
    this.referencingIds.add(id);
    if (await this.store.has(id)) {
      const b = await this.store.readObject(id, { verify: true });
      this.count(b.length, true);
      return b;
    }
    const sink = new MemorySink();
    await this.download(id, undefined, sink, MAX_REFERENCING_BYTES);
    const bytes = sink.bytes();
    if (sha256Id(bytes) !== id) {
      throw new TensorFSError('corrupt', 'the origin sent bytes that do not match their id', {
        details: { rule: 'remote.digest_mismatch', digest: id },
      });
    }
    await this.store.put(bytes, { expected: id, lease: this.lease });
    this.count(bytes.length, false);
    return bytes;
  }

  /** Counts an object this transfer's caller fetched outside it (a selection's header reads). */
  async countFetched(id: ObjectId): Promise<void> {
    const n = await this.store.objectSize(id);
    this.objectsTotal++;
    this.objectsFetched++;
    this.objectsDone++;
    this.bytesTotal += n;
    this.bytesFetched += n;
    this.bytesDone += n;
    this.progress();
  }

  private count(n: number, present: boolean): void {
    this.objectsTotal++;
    this.bytesTotal += n;
    this.objectsDone++;
    this.bytesDone += n;
    if (present) {
      this.objectsPresent++;
      this.bytesPresent += n;
    } else {
      this.objectsFetched++;
    }
    this.progress();
  }

  /** Collects the leaves under `bytes`, fetching nested referencing objects on the way. */
  async walk(bytes: Uint8Array, leaves: Map<ObjectId, number | undefined>): Promise<void> {
    for (const r of referencesOf(bytes)) {
      if (r.follow) {
        if (!this.referencingIds.has(r.id)) await this.walk(await this.referencing(r.id), leaves);
      } else if (!leaves.has(r.id)) leaves.set(r.id, r.length);
    }
  }

  /**
   * What the store lacks of `ids`: asked in steps of {@link LACKS_STEP} (one call each, not an
   * existence check per object: a plan of 100,000 leaves made 100,000 round trips), cancellable
   * between steps.
   */
  private async lacking(ids: readonly ObjectId[]): Promise<Set<ObjectId>> {
    const out = new Set<ObjectId>();
    for (let i = 0; i < ids.length; i += LACKS_STEP) {
      if (this.o.signal?.aborted) throw cancelledError();
      for (const id of await this.store.lacks(ids.slice(i, i + LACKS_STEP), { signal: this.o.signal })) out.add(id);
    }
    return out;
  }

  /**
   * Fetches what the store lacks of `leaves`. Of those present, the ones in `fetchedEarlier` (this
   * pull fetched them before, to select) count as fetched, the ones in `made` (written here by
   * the selection) are not counted.
   */
  async fetchAll(
    leaves: Map<ObjectId, number | undefined>,
    earlier: { fetchedEarlier?: ReadonlySet<ObjectId>; made?: ReadonlySet<ObjectId> } = {},
  ): Promise<void> {
    const missing: [ObjectId, number | undefined][] = [];
    const lacking = await this.lacking([...leaves.keys()]);
    for (const [id, len] of leaves) {
      const present = !lacking.has(id);
      if (earlier.made?.has(id) && present) continue;
      this.objectsTotal++;
      this.bytesTotal += len ?? 0;
      if (earlier.fetchedEarlier?.has(id) && present) {
        this.objectsFetched++;
        this.objectsDone++;
        this.bytesFetched += len ?? 0;
        this.bytesDone += len ?? 0;
      } else if (present) {
        this.objectsPresent++;
        this.objectsDone++;
        this.bytesPresent += len ?? 0;
        this.bytesDone += len ?? 0;
      } else missing.push([id, len]);
    }
    this.progress();
    const limit = this.o.memoryLimit ?? 8 << 20;
    const small = Math.min(this.o.batchObjectBytes ?? BATCH_OBJECT_BYTES, limit);
    // Small objects in groups (one request each where the origin batches), the rest one by one.
    const tasks: [ObjectId, number | undefined][][] = [];
    let group: [ObjectId, number][] = [];
    let groupBytes = 0;
    for (const [id, len] of missing) {
      if (len === undefined || len > small || small <= 0) {
        tasks.push([[id, len]]);
        continue;
      }
      if (group.length >= BATCH_MAX_OBJECTS || groupBytes + len > BATCH_MAX_BYTES) {
        tasks.push(group);
        group = [];
        groupBytes = 0;
      }
      group.push([id, len]);
      groupBytes += len;
    }
    if (group.length > 0) tasks.push(group);
    try {
      await runPool(tasks, this.o.concurrency ?? 4, this.o.signal, async (task, signal) => {
        if (task.length > 1 || (task[0]![1] !== undefined && task[0]![1] <= small && small > 0)) {
          await this.viaBatch(task as [ObjectId, number][], signal);
          return;
        }
        const [id, len] = task[0]!;
        // Counted as fetched by its commit, which runs on while the next object downloads.
        if (len !== undefined && len > limit && supports(this.store, 'objects.part'))
          return this.viaStorePart(id, len, signal);
        if (len !== undefined && len > limit && this.o.partsDir) await this.viaPart(id, len, signal);
        else await this.viaMemory(id, len, signal);
        this.fetched();
      });
    } finally {
      // Every commit settles before the pull reports (or fails): nothing runs on behind it.
      while (this.commits.size > 0) await Promise.all([...this.commits]);
    }
    if (this.commitFailure !== undefined) throw this.commitFailure;
  }

  /** Commits of large objects still syncing (their downloads are done). */
  private readonly commits = new Set<Promise<void>>();
  private commitFailure: unknown;

  private fetched(): void {
    this.objectsFetched++;
    this.objectsDone++;
    this.progress();
  }

  /**
   * A group of small objects: asked in one batch where the origin answers batches (falling back
   * to one request per object for what the batch did not deliver, or delivered wrong), each
   * verified, then admitted together (batched durability where the store offers it).
   */
  private async viaBatch(group: [ObjectId, number][], signal: AbortSignal): Promise<void> {
    const want = new Map(group);
    const got = new Map<ObjectId, Uint8Array>();
    if (this.origin.readBatch && !this.noBatch) {
      this.batches++;
      try {
        for await (const item of this.origin.readBatch([...want.keys()], { signal, maxObjectBytes: largest(group) })) {
          if (signal.aborted) throw cancelledError();
          const len = want.get(item.id);
          if (len === undefined || item.bytes === null || item.bytes.length !== len || got.has(item.id)) continue;
          got.set(item.id, item.bytes);
          this.bytesFetched += len;
          this.bytesDone += len;
        }
      } catch (err) {
        if (signal.aborted) throw cancelledError();
        // A hub without the route: ask one by one from now on. Other failures (a truncated or
        // garbled answer, a reset) fall back to single requests for what is missing.
        if (isTensorFSError(err) && err.code === 'not_found' && err.details.rule === 'hub.no_route')
          this.noBatch = true;
        else if (isTensorFSError(err) && (err.code === 'denied' || err.code === 'cancelled')) throw err;
      }
      this.progress();
    }
    // Verified and admitted together; an object whose bytes do not match is refetched alone.
    const retry: [ObjectId, number][] = [];
    const admitted = await this.admitMany([...got], signal);
    for (const [id, len] of group) {
      if (admitted.has(id)) {
        this.fetched();
        continue;
      }
      if (got.has(id)) {
        this.batchRejected++;
        this.bytesDone -= len;
      }
      retry.push([id, len]);
    }
    const fetchedAlone: [ObjectId, Uint8Array][] = [];
    for (const [id, len] of retry) {
      const sink = new MemorySink();
      await this.download(id, len, sink, len, signal);
      fetchedAlone.push([id, sink.bytes()]);
    }
    const again = await this.admitMany(fetchedAlone, signal);
    for (const [id, len] of retry) {
      if (!again.has(id)) {
        this.bytesDone -= len;
        // Fetched alone and still wrong: one more try through the single-object path, which
        // ends in `corrupt` naming the object when the origin keeps lying.
        await this.viaMemory(id, len, signal);
      }
      this.fetched();
    }
  }

  /** Admits verified-or-not bytes; returns the ids admitted (bytes that do not match are left out). */
  private async admitMany(items: [ObjectId, Uint8Array][], signal: AbortSignal): Promise<Set<ObjectId>> {
    const ok = new Set<ObjectId>();
    if (items.length === 0) return ok;
    if (supports(this.store, 'objects.batch')) {
      const out = await this.store.putBatch(
        items.map(([id, bytes]) => ({ bytes, expected: id })),
        { lease: this.lease, signal },
      );
      for (const [k, r] of out.entries()) {
        if (r.ok) ok.add(items[k]![0]);
        else if (r.error.code !== 'corrupt') throw r.error;
      }
      return ok;
    }
    for (const [id, bytes] of items) {
      try {
        await this.store.put(bytes, { expected: id, lease: this.lease });
        ok.add(id);
      } catch (err) {
        if (!(isTensorFSError(err) && err.code === 'corrupt')) throw err;
      }
    }
    return ok;
  }

  /**
   * A large object through the store's own part file (`tmp/pull-<hex>.<host>-<pid>.part`): hashed while it is
   * received, resumed by `Range` after an interruption, adopted as the object (no second copy)
   * once its digest matches and its bytes are synced.
   */
  private async viaStorePart(id: ObjectId, len: number, signal: AbortSignal, round = 0): Promise<void> {
    if (!supports(this.store, 'objects.part')) {
      throw new TensorFSError('internal', 'a part file asked of a store without objects.part', {
        details: { rule: 'remote.internal' },
      });
    }
    const part = await this.store.openPart(`pull-${id.slice(7)}`, {
      expectedLength: len,
      signal,
      direct: this.o.directIO,
    });
    this.bytesResumed += part.length;
    this.bytesDone += part.length;
    try {
      await this.download(id, len, part, len, signal);
    } catch (err) {
      await part.close().catch(() => {});
      throw err;
    }
    // The sync and the link run while this worker downloads the next object: the disk and the
    // network overlap instead of taking turns.
    const commit = (async () => {
      try {
        await part.commit({ expected: id, lease: this.lease });
        this.fetched();
      } catch (err) {
        await part.close().catch(() => {});
        // `commit` removed a part that does not hash to the id: never kept, fetched once more.
        if (!(isTensorFSError(err) && err.code === 'corrupt') || round >= 1) throw err;
        this.bytesDone -= len;
        await this.viaStorePart(id, len, signal, round + 1);
      }
    })();
    const tracked: Promise<void> = commit
      .catch((err) => {
        if (this.commitFailure === undefined) this.commitFailure = err;
      })
      .finally(() => this.commits.delete(tracked));
    this.commits.add(tracked);
    // At most `concurrency` commits behind the downloads: the disk sets the pace, and memory
    // (each part's last write batch) stays bounded.
    // (A refetch after a corrupt part runs inside its first commit, so it must not wait on it.)
    while (round === 0 && this.commits.size > (this.o.concurrency ?? 4)) await Promise.race(this.commits);
  }

  private async viaMemory(id: ObjectId, len: number | undefined, signal: AbortSignal): Promise<void> {
    for (let round = 0; ; round++) {
      const sink = new MemorySink();
      await this.download(id, len, sink, len ?? MAX_REFERENCING_BYTES, signal);
      try {
        await this.store.put(sink.bytes(), { expected: id, lease: this.lease });
        return;
      } catch (err) {
        this.bytesDone -= sink.length;
        if (!(isTensorFSError(err) && err.code === 'corrupt') || round >= 1) throw err;
      }
    }
  }

  private async viaPart(id: ObjectId, len: number, signal: AbortSignal): Promise<void> {
    const path = join(this.o.partsDir!, `pull-${id.slice(7)}.part`);
    for (let round = 0; ; round++) {
      const sink = await FileSink.open(path, len);
      this.bytesResumed += sink.length;
      this.bytesDone += sink.length;
      try {
        await this.download(id, len, sink, len, signal);
      } finally {
        await sink.close();
      }
      try {
        await this.store.putStream(fs.createReadStream(path, { highWaterMark: 1 << 20 }), {
          expected: id,
          expectedLength: len,
          lease: this.lease,
          signal,
        });
        await fsp.rm(path, { force: true });
        return;
      } catch (err) {
        if (!(isTensorFSError(err) && err.code === 'corrupt')) throw err;
        // The part holds bytes that do not hash to the id: never keep them.
        await fsp.rm(path, { force: true });
        this.bytesDone -= len;
        if (round >= 1) throw err;
      }
    }
  }

  /**
   * Reads object `id` into `sink` until it holds `len` bytes (or the origin's whole object when
   * `len` is unknown), resuming with `Range` after a broken transfer, restarting when the
   * origin ignores `Range`.
   */
  private async download(
    id: ObjectId,
    len: number | undefined,
    sink: Sink,
    limit: number,
    signal: AbortSignal | undefined = this.o.signal,
  ): Promise<void> {
    const max = this.o.maxAttempts ?? 5;
    let failures = 0;
    const fail = async (err: unknown) => {
      if (signal?.aborted) throw cancelledError();
      if (!transient(err) || ++failures >= max) {
        if (isTensorFSError(err)) throw err;
        throw new TensorFSError('unavailable', 'the transfer failed repeatedly', {
          details: {
            rule: 'remote.transfer_failed',
            digest: id,
            attempts: failures,
            cause: (err as { code?: string })?.code ?? 'stream_error',
          },
        });
      }
      await sleep((this.o.backoffMs ?? 200) * 2 ** (failures - 1), signal);
    };
    for (;;) {
      if (signal?.aborted) throw cancelledError();
      if (len !== undefined && sink.length === len) return;
      let r: Awaited<ReturnType<Origin['read']>>;
      try {
        r = await this.origin.read(id, sink.length, { signal, large: !(sink instanceof MemorySink) });
      } catch (err) {
        await fail(err);
        continue;
      }
      if (r.offset !== sink.length) {
        // The origin ignored Range: start over from its first byte.
        this.bytesDone -= sink.length;
        await sink.reset();
      }
      const size = r.size;
      if (size !== undefined && ((len !== undefined && size !== len) || size > limit)) {
        // The origin announces another size: retried (a proxy may have garbled the headers),
        // then refused. Never read on in the hope the digest sorts it out.
        r.cancel();
        const err = new TensorFSError(
          size > limit && len === undefined ? 'limit_exceeded' : 'corrupt',
          'the origin holds an object of another size',
          {
            details: { rule: 'remote.size_mismatch', digest: id, expected: len ?? limit, actual: size },
          },
        );
        if (++failures >= max) throw err;
        await sleep((this.o.backoffMs ?? 200) * 2 ** (failures - 1), signal);
        continue;
      }
      try {
        for await (const chunk of r.body) {
          if (sink.length + chunk.length > (len ?? limit)) {
            throw new TensorFSError('corrupt', 'the origin sent more bytes than the object has', {
              details: { rule: 'remote.too_long', digest: id, expected: len ?? limit },
            });
          }
          const n = chunk.length; // (a chunk handed over may be detached by the write)
          await sink.write(chunk, { handOver: r.owned === true, done: r.recycle && (() => r.recycle!(chunk)) });
          this.bytesFetched += n;
          this.bytesDone += n;
          this.progress();
        }
      } catch (err) {
        r.cancel();
        if (isTensorFSError(err) && err.code === 'corrupt') {
          this.bytesDone -= sink.length;
          await sink.reset();
        }
        await fail(err);
        continue;
      }
      if (len === undefined) {
        if (size === undefined || sink.length === size) return;
        await fail(
          new TensorFSError('unavailable', 'the transfer ended early', { details: { rule: 'remote.short_body' } }),
        );
      }
    }
  }
}
