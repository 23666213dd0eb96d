/**
 * Any implementation of the storage contract as an {@link Origin}: what the hub serves and what
 * the transfer engine reads from when its peer is not an origin already (the local store, the
 * in-memory store, a store that fetches on a miss). Every contract member is the store's own;
 * only the transfer members (streamed `read`, verified `write`) are added, from the contract's
 * `objects.stream` capability when the store has it and from `readObjectRange` otherwise.
 */
import type { ObjectId } from '@tensorfs/format';
import {
  type BatchCapability,
  type Capability,
  type PartCapability,
  type Store,
  type StreamCapability,
  supports,
  unsupportedCapability,
} from '@tensorfs/format/store';
import { type CallOptions, isOrigin, type ObjectRead, type Origin } from './origin.js';

/** Any store of the contract (the hub serves it; kept as a name for existing callers). */
export type ServableStore = Store;

/** Reads are served in pieces of this size. */
const PIECE = 1 << 20;

/** Buffers a read keeps for reuse (given back by {@link ObjectRead.recycle}). */
const SPARE = 4;

/** An origin over a store. Writes go through `putStream` with `expected`, so they are verified before visible. */
export class StoreOrigin implements Origin {
  readonly kind = 'folder' as const;
  readonly display: string;
  readonly capabilities: ReadonlySet<Capability>;
  readonly writable: boolean;

  constructor(private readonly store: Store) {
    this.capabilities = store.capabilities;
    this.writable = store.capabilities.has('objects.write');
    this.display = (store as { display?: string }).display ?? 'store';
  }

  /** The store this origin serves (a hub's admin GC runs the store's own). */
  get inner(): Store {
    return this.store;
  }

  has: Store['has'] = (id, options) => this.store.has(id, options);
  lacks: Store['lacks'] = (ids, options) => this.store.lacks(ids, options);
  /** The store's own `freshen` (a local store's: mtimes under its write lock), else `lacks`. */
  freshen: NonNullable<Origin['freshen']> = (ids, options) => {
    const s = this.store as Store & { freshen?: Origin['freshen'] };
    return typeof s.freshen === 'function' ? s.freshen(ids, options) : this.store.lacks(ids, options);
  };
  objectSize: Store['objectSize'] = (id, options) => this.store.objectSize(id, options);
  readObject: Store['readObject'] = (id, options) => this.store.readObject(id, options);
  readObjectRange: Store['readObjectRange'] = (id, offset, length, options) =>
    this.store.readObjectRange(id, offset, length, options);
  put: Store['put'] = (bytes, options) => this.store.put(bytes, options);
  putStream: Store['putStream'] = (chunks, options) => this.store.putStream(chunks, options);
  recordsSource: Store['recordsSource'] = (records, options) => this.store.recordsSource(records, options);
  putManifest: Store['putManifest'] = (m, options) => this.store.putManifest(m, options);
  getManifest: Store['getManifest'] = (id) => this.store.getManifest(id);
  resolve: Store['resolve'] = (refOrId) => this.store.resolve(refOrId);
  getRef: Store['getRef'] = (name, options) => this.store.getRef(name, options);
  setRef: Store['setRef'] = (name, id, options) => this.store.setRef(name, id, options);
  deleteRef: Store['deleteRef'] = (name, options) => this.store.deleteRef(name, options);
  lease: Store['lease'] = (options) => this.store.lease(options);
  // The members of the capabilities it announces (the store's own): an importer that finds
  // `objects.batch` announced calls `putBatch`, so each one must be here, not only the name.
  putBatch: BatchCapability['putBatch'] = (items, options) => {
    const s = this.store;
    if (!supports(s, 'objects.batch')) throw unsupportedCapability('objects.batch', this.display);
    return s.putBatch(items, options);
  };
  openPart: PartCapability['openPart'] = (key, options) => {
    const s = this.store;
    if (!supports(s, 'objects.part')) throw unsupportedCapability('objects.part', this.display);
    return s.openPart(key, options);
  };
  objectStream: StreamCapability['objectStream'] = (id, options) => {
    const s = this.store;
    if (!supports(s, 'objects.stream')) throw unsupportedCapability('objects.stream', this.display);
    return s.objectStream(id, options);
  };

  /**
   * The refs whose file reads, and every entry that is not a readable ref with its code and rule
   * (the store's one listing). No object is read: a ref naming a missing or damaged object is
   * listed, and a pull of it fails on that object.
   */
  scanRefs: Store['scanRefs'] = async (options) => {
    const { refs, problems } = await this.store.scanRefs(options);
    return {
      refs: refs.map((r) => ({ name: r.name, id: r.id })),
      problems: problems.map((p) => ({ name: p.name, code: p.code, rule: p.rule, message: p.message })),
    };
  };

  async read(id: ObjectId, offset: number, options: CallOptions = {}): Promise<ObjectRead> {
    const size = await this.store.objectSize(id, options);
    const store = this.store;
    if (supports(store, 'objects.stream')) {
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
    const store = this.store;
    if (!supports(store, 'objects.stream')) return;
    try {
      for await (const _ of store.objectStream(id, { verify: true })) {
        // only the hash matters
      }
    } catch {
      // `corrupt`: quarantined by the store; anything else leaves it as it is
    }
  }

  async close(): Promise<void> {}
}

/** `store` itself when it is an origin already, else a {@link StoreOrigin} over it. */
export function originOf(store: Store): Origin {
  return isOrigin(store) ? store : new StoreOrigin(store);
}
