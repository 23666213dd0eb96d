/**
 * Fetch on read: a {@link Store} that falls back to an origin on a miss. Every object a read
 * needs (and only those) is fetched, verified and admitted to the local store before a byte of it
 * is returned, so one tensor of a remote model costs that tensor's records plus the headers.
 */
import { type ObjectId, type RecordRef, TensorFSError, isObjectId, throwIfAborted } from '@tensorfs/format';
import {
  type BatchItem,
  type BatchOutcome,
  type CallOptions,
  type Capability,
  type FileSource,
  type Lease,
  type ObjectReadOptions,
  type Store,
  supports,
  unsupportedCapability,
} from '@tensorfs/format/store';
import type { Origin } from './origin.js';
import { originOf } from './store-origin.js';
import { type FetchOptions, fetchObjects } from './transfer.js';

/** Options of {@link FetchingStore}. */
export interface FetchingStoreOptions extends Omit<FetchOptions, 'onProgress'> {
  /** Lease holding what is fetched (default: one of the store's own, released by {@link FetchingStore.close}). */
  lease?: Lease;
  /** Called after each fetch with the running totals. */
  onFetch?: (totals: { objects: number; bytes: number }) => void;
  /**
   * Called with the ids of each fetch once they are admitted (still under the lease), before any
   * read returns them: the CLI records them as cached objects (`LocalStore.addCachedObjects`), so
   * the store's budget evicts them and GC does not.
   */
  onFetched?: (ids: ObjectId[]) => void | Promise<void>;
}

/**
 * A store backed by another: misses are fetched from `remote`, verified and admitted to `local`.
 * Both are any implementation of the storage contract (an origin, the local store, the in-memory
 * store…); what it can do beyond reading is what `local` can.
 */
export class FetchingStore implements Store {
  /** The remote side as an origin (itself when it is one). */
  readonly origin: Origin;
  readonly capabilities: ReadonlySet<Capability>;
  readonly display: string;
  private ownLease: Promise<Lease> | undefined;
  private readonly inflight = new Map<ObjectId, Promise<void>>();
  /** Objects and bytes fetched so far. */
  readonly fetched = { objects: 0, bytes: 0 };

  constructor(
    readonly local: Store,
    remote: Store,
    private readonly options: FetchingStoreOptions = {},
  ) {
    this.origin = originOf(remote);
    // What it forwards to the local side: every capability but parts and streams (a part or a
    // stream of an object that is not here yet would skip the fetch).
    this.capabilities = new Set([...local.capabilities].filter((c) => c !== 'objects.part' && c !== 'objects.stream'));
    this.display = `${(local as { display?: string }).display ?? 'store'} fetching from ${this.origin.display}`;
  }

  private theLease(): Promise<Lease> {
    this.ownLease ??= this.options.lease
      ? Promise.resolve(this.options.lease)
      : this.local.lease({ purpose: 'fetch on read' });
    return this.ownLease;
  }

  /** Makes `ids` present locally (fetching what is missing). */
  async ensure(ids: ReadonlyMap<ObjectId, number | undefined>): Promise<void> {
    const todo = new Map<ObjectId, number | undefined>();
    const waits: Promise<void>[] = [];
    for (const [id, len] of ids) {
      const w = this.inflight.get(id);
      if (w) waits.push(w);
      else if (!(await this.local.has(id))) todo.set(id, len);
    }
    if (todo.size > 0) {
      const p = (async () => {
        const r = await fetchObjects(this.local, this.origin, todo, await this.theLease(), this.options);
        await this.options.onFetched?.([...todo.keys()]);
        this.fetched.objects += r.fetched;
        this.fetched.bytes += r.bytes.fetched;
        this.options.onFetch?.({ ...this.fetched });
      })();
      for (const id of todo.keys()) this.inflight.set(id, p);
      waits.push(p);
      p.finally(() => {
        for (const id of todo.keys()) if (this.inflight.get(id) === p) this.inflight.delete(id);
      }).catch(() => {});
    }
    await Promise.all(waits);
  }

  private one(id: ObjectId, length?: number): Promise<void> {
    return this.ensure(new Map([[id, length]]));
  }

  /** Present locally, or held by the origin (fetched when first read). */
  async has(id: ObjectId, options: CallOptions = {}): Promise<boolean> {
    if (await this.local.has(id, options)) return true;
    return (await this.origin.lacks([id], { signal: options.signal ?? this.options.signal })).length === 0;
  }

  /** The ids neither here nor at the origin. */
  async lacks(ids: readonly ObjectId[], options: CallOptions = {}): Promise<ObjectId[]> {
    const here = await this.local.lacks(ids, options);
    return here.length === 0 ? here : this.origin.lacks(here, { signal: options.signal ?? this.options.signal });
  }

  /** Size of an object (fetched first if need be). */
  async objectSize(id: ObjectId, options: CallOptions = {}): Promise<number> {
    throwIfAborted(options.signal);
    await this.one(id);
    return this.local.objectSize(id, options);
  }

  put: Store['put'] = (bytes, options) => this.local.put(bytes, options);

  /** The local store's batch (`unsupported` when it has none: see {@link capabilities}). */
  async putBatch(
    items: readonly BatchItem[],
    options: { lease?: Lease; signal?: AbortSignal } = {},
  ): Promise<BatchOutcome[]> {
    if (!supports(this.local, 'objects.batch')) throw unsupportedCapability('objects.batch', this.display);
    return this.local.putBatch(items, options);
  }
  putStream: Store['putStream'] = (chunks, options) => this.local.putStream(chunks, options);

  async readObject(id: ObjectId, options: ObjectReadOptions = {}): Promise<Uint8Array> {
    throwIfAborted(options.signal);
    await this.one(id);
    return this.local.readObject(id, options);
  }

  async readObjectRange(id: ObjectId, offset: number, length: number, options: CallOptions = {}): Promise<Uint8Array> {
    throwIfAborted(options.signal);
    await this.one(id);
    return this.local.readObjectRange(id, offset, length, options);
  }

  /** A record list whose reads first fetch the records they overlap. */
  recordsSource(records: readonly RecordRef[], options?: Parameters<Store['recordsSource']>[1]): FileSource {
    const starts: number[] = [];
    let size = 0;
    for (const r of records) {
      starts.push(size);
      size += r.length;
    }
    const inner = this.local.recordsSource(records, options);
    const need = async (offset: number, length: number) => {
      const ids = new Map<ObjectId, number>();
      for (let i = 0; i < records.length; i++) {
        const a = starts[i]!;
        const b = a + records[i]!.length;
        if (b > offset && a < offset + length) ids.set(records[i]!.digest, records[i]!.length);
      }
      await this.ensure(ids);
    };
    return {
      size: inner.size,
      async read(offset: number, length: number) {
        await need(offset, length);
        return inner.read(offset, length);
      },
      async readInto(offset: number, target: Uint8Array) {
        await need(offset, target.length);
        return inner.readInto(offset, target);
      },
    };
  }

  async putManifest(...args: Parameters<Store['putManifest']>): ReturnType<Store['putManifest']> {
    return this.local.putManifest(...args);
  }

  async getManifest(id: ObjectId): ReturnType<Store['getManifest']> {
    await this.one(id);
    return this.local.getManifest(id);
  }

  /** An id is fetched if need be; a ref name is the origin's (the local one only if the origin has none). */
  async resolve(refOrId: string): Promise<ObjectId> {
    if (isObjectId(refOrId)) {
      if (!(await this.has(refOrId))) {
        throw new TensorFSError('not_found', 'object neither in the store nor at the origin', {
          details: { rule: 'remote.no_object', digest: refOrId },
        });
      }
      return refOrId;
    }
    const id =
      (await this.local.getRef(refOrId)) ?? (await this.origin.getRef(refOrId, { signal: this.options.signal }));
    if (id === null)
      throw new TensorFSError('not_found', 'no such ref', { details: { rule: 'remote.no_ref', ref: refOrId } });
    await this.one(id);
    return id;
  }

  getRef: Store['getRef'] = (name, options) => this.local.getRef(name, options);
  deleteRef: Store['deleteRef'] = (name, options) => this.local.deleteRef(name, options);
  /** The local store's refs (the origin's are read by name, through {@link resolve}). */
  scanRefs: Store['scanRefs'] = (options) => this.local.scanRefs(options);
  setRef: Store['setRef'] = (name, id, options) => this.local.setRef(name, id, options);
  lease: Store['lease'] = (options) => this.local.lease(options);

  /** Releases the lease this store took (a given one stays the caller's). */
  async close(): Promise<void> {
    if (this.ownLease && !this.options.lease) await (await this.ownLease).release().catch(() => {});
    this.ownLease = undefined;
  }
}
