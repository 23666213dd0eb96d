/**
 * Origins (folder, static HTTP, hub, S3): the storage contract of `@tensorfs/format/store`, plus
 * what a transfer engine needs on top (streamed reads from an offset, batched reads, verified
 * writes of a known id). See spec/v1/remote.md and docs/architecture.md "The storage contract".
 */
import { checkRange, type ObjectId, parseObjectId, TensorFSError, throwIfAborted } from '@tensorfs/format';
import {
  type CallOptions,
  type Chunks,
  chunkList,
  concatChunks,
  type DeleteRefOptions,
  digestMismatch,
  type ObjectReadOptions,
  type PutOptions,
  type PutResult,
  type RefEntry,
  type RefListing,
  type RefProblem,
  type Store,
  StoreBase,
  sha256Id,
  unsupportedCapability,
} from '@tensorfs/format/store';

export type { CallOptions } from '@tensorfs/format/store';

/** Options of {@link Origin.write}. */
export interface WriteOptions extends CallOptions {
  /** Told the bytes that actually go out (a resumed upload sends only the parts it lacks). */
  sent?: (bytes: number) => void;
}

/** Options of {@link Origin.read}. */
export interface ReadOptions extends CallOptions {
  /**
   * The caller streams a large object to disk: the origin may read it in fewer, larger chunks
   * (the HTTP origins' raw reader). A hint; every origin may ignore it.
   */
  large?: boolean;
}

/** A byte range answer: the bytes from `offset` (which may be 0 when the origin ignored `Range`). */
export interface ObjectRead {
  /** Where the body starts in the object: the asked offset, or 0 if the origin ignored the range. */
  offset: number;
  /** The whole object's size, when the origin said it. */
  size?: number;
  /** The bytes; may end early or fail (the caller resumes with a new read). */
  body: AsyncIterable<Uint8Array>;
  /** Stops reading and releases the connection. */
  cancel(): void;
  /**
   * True when every chunk of `body` is memory nothing else refers to (undici's socket reads; the
   * raw reader's buffers, until given back with {@link ObjectRead.recycle}): the consumer may keep
   * the chunks, or hand them to another thread, without a copy.
   */
  owned?: boolean;
  /**
   * Optional: the consumer is done with a chunk of `body` (nothing refers to its bytes any more),
   * so the origin may read later chunks into the same memory.
   */
  recycle?(chunk: Uint8Array): void;
}

/** One object of a batched read: its bytes, or null when the origin does not hold it. */
export interface BatchRead {
  id: ObjectId;
  bytes: Uint8Array | null;
}

/** A ref as listed by an origin (the contract's {@link RefEntry}). */
export type OriginRef = RefEntry;

/** A ref an origin could not read (the contract's {@link RefProblem}). */
export type OriginRefProblem = RefProblem;

/** The refs an origin could read, and the ones it could not (the contract's {@link RefListing}). */
export type OriginRefListing = RefListing;

/**
 * A place objects and refs can be pulled from (and, when writable, pushed to): a {@link Store}
 * (the one contract: `has`, `objectSize`, `readObject`, `readObjectRange`, `put`, `getRef`,
 * compare-and-swap `setRef`, `deleteRef`, `scanRefs`…) with the transfer members below.
 */
export interface Origin extends Store {
  /** `folder`, `http`, `hub` or `s3`. */
  readonly kind: 'folder' | 'http' | 'hub' | 's3';
  /** A description safe to print: no credentials, no query string. */
  readonly display: string;
  /** False for read-only origins (static HTTP): pushes are `unsupported`. */
  readonly writable: boolean;
  /** The subset of `ids` the origin does not hold (one batched question where it can). */
  lacks(ids: readonly ObjectId[], options?: CallOptions): Promise<ObjectId[]>;
  /**
   * Optional: {@link lacks}, and every one of `ids` the origin holds is made young again for
   * retention (its age restarts: a folder's mtime, S3's `LastModified`, a hub's store), so a
   * remote GC's grace window covers what a push skips because the origin has it
   * (docs/remote.md "Retention"). Returns the ids the origin does not hold.
   */
  freshen?(ids: readonly ObjectId[], options?: CallOptions): Promise<ObjectId[]>;
  /** Reads an object from `offset` (`not_found` when absent). */
  read(id: ObjectId, offset: number, options?: ReadOptions): Promise<ObjectRead>;
  /**
   * Optional: many small objects in one request (the hub's `POST /v1/objects/batch`), yielded in
   * the order asked. Unverified: the caller checks every object's digest. The iteration may end
   * early or throw (a truncated answer); the caller fetches what it did not get one by one.
   * Objects longer than `maxObjectBytes` end the answer as `malformed`.
   */
  readBatch?(ids: readonly ObjectId[], options: CallOptions & { maxObjectBytes: number }): AsyncIterable<BatchRead>;
  /**
   * Stores an object of `length` bytes. The bytes are verified against `id` before the object is
   * visible; `corrupt` if they do not match. `body(offset, end)` yields the bytes from
   * `offset` (default 0) up to `end` (default the whole object) and may be called again for a retry or, by origins that upload large objects in
   * resumable parts, for each part still missing.
   */
  write(
    id: ObjectId,
    length: number,
    body: (offset?: number, end?: number) => AsyncIterable<Uint8Array>,
    options?: WriteOptions,
  ): Promise<void>;
  /** Releases connections. */
  close(): Promise<void>;
}

/**
 * What every origin derives from its transfer members, once: `has` from `lacks`, `readObject`
 * and `readObjectRange` from streamed `read`, `put` from a verified `write`; and
 * what an origin without a capability answers (`unsupported`). An origin extends it and
 * implements `lacks`, `objectSize`, `read`, `write`, the ref members it has, and `capabilities`.
 */
export abstract class OriginBase extends StoreBase implements Origin {
  abstract readonly kind: Origin['kind'];
  abstract readonly writable: boolean;
  abstract override lacks(ids: readonly ObjectId[], options?: CallOptions): Promise<ObjectId[]>;
  abstract read(id: ObjectId, offset: number, options?: ReadOptions): Promise<ObjectRead>;
  abstract write(
    id: ObjectId,
    length: number,
    body: (offset?: number, end?: number) => AsyncIterable<Uint8Array>,
    options?: WriteOptions,
  ): Promise<void>;
  abstract close(): Promise<void>;

  async has(id: ObjectId, options: CallOptions = {}): Promise<boolean> {
    parseObjectId(id);
    throwIfAborted(options.signal);
    return (await this.lacks([id], options)).length === 0;
  }

  /** The object's length without reading it (`not_found` when absent): a stat, a `HEAD`. */
  abstract override objectSize(id: ObjectId, options?: CallOptions): Promise<number>;

  override async readObject(id: ObjectId, options: ObjectReadOptions = {}): Promise<Uint8Array> {
    parseObjectId(id);
    throwIfAborted(options.signal);
    const r = await this.read(id, 0, options);
    const chunks: Uint8Array[] = [];
    try {
      for await (const c of r.body) {
        throwIfAborted(options.signal);
        chunks.push(r.owned ? c : c.slice());
      }
    } finally {
      r.cancel();
    }
    const bytes = concatChunks(chunks);
    if (r.size !== undefined && bytes.length !== r.size) {
      throw new TensorFSError('unavailable', 'the origin ended the object early', {
        details: { rule: 'remote.short_read', digest: id, expected: r.size, actual: bytes.length },
      });
    }
    if (options.verify) {
      const actual = await sha256Id(bytes);
      if (actual !== id) {
        throw new TensorFSError('corrupt', 'object does not hash to its id', {
          details: { rule: 'store.digest', digest: id, actual },
        });
      }
    }
    return bytes;
  }

  async readObjectRange(id: ObjectId, offset: number, length: number, options: CallOptions = {}): Promise<Uint8Array> {
    parseObjectId(id);
    throwIfAborted(options.signal);
    const size = await this.objectSize(id, options);
    checkRange(offset, length, size);
    const out = new Uint8Array(length);
    if (length === 0) return out;
    const r = await this.read(id, offset, options);
    let skip = offset - r.offset;
    let got = 0;
    try {
      for await (const c of r.body) {
        throwIfAborted(options.signal);
        let piece = c;
        if (skip > 0) {
          const s = Math.min(skip, piece.length);
          piece = piece.subarray(s);
          skip -= s;
        }
        const n = Math.min(piece.length, length - got);
        out.set(piece.subarray(0, n), got);
        got += n;
        if (got === length) break;
      }
    } finally {
      r.cancel();
    }
    if (got !== length) {
      throw new TensorFSError('unavailable', 'the origin ended the object early', {
        details: { rule: 'remote.short_read', digest: id, expected: length, actual: got },
      });
    }
    return out;
  }

  /** Hashes the bytes, refuses a mismatch before sending anything, then a verified `write`. */
  async put(bytes: Chunks, options: PutOptions = {}): Promise<PutResult> {
    throwIfAborted(options.signal);
    if (!this.capabilities.has('objects.write')) throw unsupportedCapability('objects.write', this.display);
    const whole = concatChunks(chunkList(bytes));
    const id = await sha256Id(whole);
    if (options.expected !== undefined && parseObjectId(options.expected) !== id) {
      throw digestMismatch(options.expected, id);
    }
    options.lease?.add([id]);
    if (await this.has(id, options)) return { id, length: whole.length, written: false };
    await this.write(id, whole.length, (start = 0, end = whole.length) => single(whole.subarray(start, end)), {
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return { id, length: whole.length, written: true };
  }

  /** Without `refs.delete`: `unsupported`. */
  async deleteRef(_name: string, options: DeleteRefOptions = {}): Promise<void> {
    throwIfAborted(options.signal);
    throw unsupportedCapability('refs.delete', this.display);
  }

  /** Without `refs.list`: `unsupported`. */
  async scanRefs(options: CallOptions = {}): Promise<RefListing> {
    throwIfAborted(options.signal);
    throw unsupportedCapability('refs.list', this.display);
  }
}

async function* single(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

/** Is this store an origin already (has the transfer members)? */
export function isOrigin(store: Store): store is Origin {
  const s = store as Partial<Origin>;
  return typeof s.read === 'function' && typeof s.write === 'function' && typeof s.kind === 'string';
}
