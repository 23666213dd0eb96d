/** A local store seen as an {@link Origin}: what `tfs serve --store` serves, and a push/pull peer. */
import type { LocalStore, Store } from '@tensorfs/cas';
import { type ObjectId, TensorFSError } from '@tensorfs/format';
import type { CallOptions, ObjectRead, Origin, OriginRef, OriginRefListing } from './origin.js';

/** A store (the port), with the local store's listings, sizes and streams when it has them. */
export type ServableStore = Store & Partial<Pick<LocalStore, 'listRefs' | 'scanRefs' | 'objectSize' | 'objectStream'>>;

/** Reads are served in pieces of this size. */
const PIECE = 1 << 20;

/** Buffers a read keeps for reuse (given back by {@link ObjectRead.recycle}). */
const SPARE = 4;

/** An origin over a local store. Writes go through `putStream` with `expected`, so they are verified before visible. */
export class StoreOrigin implements Origin {
  readonly kind = 'folder' as const;
  readonly writable = true;
  readonly display = 'local store';

  constructor(private readonly store: ServableStore) {}

  getRef(name: string): Promise<ObjectId | null> {
    return this.store.getRef(name);
  }

  /** Every ref whose file reads (one that cannot be read is left out: see {@link scanRefs}). */
  async listRefs(): Promise<OriginRef[]> {
    return (await this.scanRefs()).refs;
  }

  /**
   * The refs whose file reads, and every entry of the store's `refs/` that is not a readable ref
   * (a symlink, garbage, a failed read) with its code and rule. No object is read: a ref naming a
   * missing or damaged object is listed, and a pull of it fails on that object.
   */
  async scanRefs(): Promise<OriginRefListing> {
    if (this.store.scanRefs) {
      const { refs, problems } = await this.store.scanRefs();
      return {
        refs: refs.map((r) => ({ name: r.name, id: r.id })),
        problems: problems.map((p) => ({ name: p.name, code: p.code, rule: p.rule })),
      };
    }
    if (!this.store.listRefs) {
      throw new TensorFSError('unsupported', 'this store cannot list refs', { details: { rule: 'remote.no_listing' } });
    }
    return { refs: (await this.store.listRefs()).map((r) => ({ name: r.name, id: r.id })), problems: [] };
  }

  setRef(name: string, id: ObjectId, expected: ObjectId | null | undefined): Promise<void> {
    return this.store.setRef(name, id, { expected });
  }

  async lacks(ids: readonly ObjectId[]): Promise<ObjectId[]> {
    const out: ObjectId[] = [];
    for (const id of ids) if (!(await this.store.has(id))) out.push(id);
    return out;
  }

  async read(id: ObjectId, offset: number, options: CallOptions = {}): Promise<ObjectRead> {
    const size = this.store.objectSize ? await this.store.objectSize(id) : (await this.store.readObject(id)).length;
    const store = this.store;
    if (store.objectStream) {
      // One open file for the whole read, and the buffers the consumer gives back read into again:
      // a hub serving gigabytes neither reopens the file per piece nor allocates (and collects) a
      // fresh buffer per piece.
      const spare: Uint8Array[] = [];
      const it = store
        .objectStream(id, { offset, chunkSize: PIECE, spare, signal: options.signal })
        [Symbol.asyncIterator]();
      return {
        offset,
        size,
        body: { [Symbol.asyncIterator]: () => it },
        cancel: () => {
          it.return?.().catch(() => {});
        },
        recycle: (chunk) => {
          if (chunk.buffer.byteLength === PIECE && spare.length < SPARE) spare.push(new Uint8Array(chunk.buffer));
        },
      };
    }
    let stop = false;
    const body = (async function* () {
      for (let off = Math.min(offset, size); off < size && !stop; off += PIECE) {
        if (options.signal?.aborted) return;
        yield await store.readObjectRange(id, off, Math.min(PIECE, size - off));
      }
    })();
    return {
      offset,
      size,
      body,
      cancel: () => {
        stop = true;
      },
    };
  }

  async write(
    id: ObjectId,
    length: number,
    body: () => AsyncIterable<Uint8Array>,
    options: CallOptions = {},
  ): Promise<void> {
    await this.store.putStream(body(), { expected: id, expectedLength: length, signal: options.signal });
  }

  /**
   * The hub found `id` damaged while serving it: the store rehashes it and, on a mismatch,
   * quarantines it (`has` is false and verify reports it until a good copy is admitted).
   */
  async quarantine(id: ObjectId): Promise<void> {
    if (!this.store.objectStream) return;
    try {
      for await (const _ of this.store.objectStream(id, { verify: true })) {
        // only the hash matters
      }
    } catch {
      // `corrupt`: quarantined by the store; anything else leaves it as it is
    }
  }

  async close(): Promise<void> {}
}
