/**
 * Fetch on read: a {@link Store} that falls back to an origin on a miss. Every object a read
 * needs (and only those) is fetched, verified and admitted to the local store before a byte of it
 * is returned, so one tensor of a remote model costs that tensor's records plus the headers.
 */
import type { FileSource, Lease, Store } from '@tensorfs/cas';
import { type ObjectId, type RecordRef, TensorFSError, isObjectId } from '@tensorfs/format';
import type { Origin } from './origin.js';
import { type FetchOptions, fetchObjects } from './pull.js';

/** Options of {@link FetchingStore}. */
export interface FetchingStoreOptions extends Omit<FetchOptions, 'onProgress'> {
  /** Lease holding what is fetched (default: one of the store's own, released by {@link FetchingStore.close}). */
  lease?: Lease;
  /** Called after each fetch with the running totals. */
  onFetch?: (totals: { objects: number; bytes: number }) => void;
}

/** A local store backed by an origin: misses are fetched, verified and admitted. */
export class FetchingStore implements Store {
  private ownLease: Promise<Lease> | undefined;
  private readonly inflight = new Map<ObjectId, Promise<void>>();
  /** Objects and bytes fetched so far. */
  readonly fetched = { objects: 0, bytes: 0 };

  constructor(
    readonly local: Store,
    readonly origin: Origin,
    private readonly options: FetchingStoreOptions = {},
  ) {}

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
  async has(id: ObjectId): Promise<boolean> {
    if (await this.local.has(id)) return true;
    return (await this.origin.lacks([id], { signal: this.options.signal })).length === 0;
  }

  /** Size of an object (fetched first if need be). */
  async objectSize(id: ObjectId): Promise<number> {
    await this.one(id);
    const local = this.local as Store & { objectSize?: (id: ObjectId) => Promise<number> };
    return local.objectSize ? local.objectSize(id) : (await this.local.readObject(id)).length;
  }

  put: Store['put'] = (bytes, options) => this.local.put(bytes, options);
  putStream: Store['putStream'] = (chunks, options) => this.local.putStream(chunks, options);

  async readObject(id: ObjectId, options?: { verify?: boolean }): Promise<Uint8Array> {
    await this.one(id);
    return this.local.readObject(id, options);
  }

  async readObjectRange(id: ObjectId, offset: number, length: number): Promise<Uint8Array> {
    await this.one(id);
    return this.local.readObjectRange(id, offset, length);
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
          details: { digest: refOrId },
        });
      }
      return refOrId;
    }
    const id =
      (await this.local.getRef(refOrId)) ?? (await this.origin.getRef(refOrId, { signal: this.options.signal }));
    if (id === null) throw new TensorFSError('not_found', 'no such ref', { details: { ref: refOrId } });
    await this.one(id);
    return id;
  }

  getRef: Store['getRef'] = (name) => this.local.getRef(name);
  setRef: Store['setRef'] = (name, id, options) => this.local.setRef(name, id, options);
  lease: Store['lease'] = (options) => this.local.lease(options);

  /** Releases the lease this store took (a given one stays the caller's). */
  async close(): Promise<void> {
    if (this.ownLease && !this.options.lease) await (await this.ownLease).release().catch(() => {});
    this.ownLease = undefined;
  }
}
