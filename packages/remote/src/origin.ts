/** The interface every origin (folder, static HTTP, hub, S3) implements; see spec/v1/remote.md. */
import type { ErrorCode, ObjectId } from '@tensorfs/format';

/** Per-call options. */
export interface CallOptions {
  signal?: AbortSignal;
}

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

/** A ref as listed by an origin. */
export interface OriginRef {
  name: string;
  id: ObjectId;
}

/** A ref an origin could not read: its name, and why (the family and `details.rule` of the failure). */
export interface OriginRefProblem {
  name: string;
  code: ErrorCode;
  rule: string;
}

/** The refs an origin could read, and the ones it could not (see {@link Origin.scanRefs}). */
export interface OriginRefListing {
  refs: OriginRef[];
  problems: OriginRefProblem[];
}

/** A place objects and refs can be pulled from (and, when writable, pushed to). */
export interface Origin {
  /** `folder`, `http`, `hub` or `s3`. */
  readonly kind: 'folder' | 'http' | 'hub' | 's3';
  /** A description safe to print: no credentials, no query string. */
  readonly display: string;
  /** False for read-only origins (static HTTP): pushes are `unsupported`. */
  readonly writable: boolean;
  /** The id a ref names, or null when it does not exist. */
  getRef(name: string, options?: CallOptions): Promise<ObjectId | null>;
  /** Every ref (`unsupported` where the origin cannot list, e.g. static HTTP). */
  listRefs(options?: CallOptions): Promise<OriginRef[]>;
  /**
   * Every ref the origin can read, sorted by name, and every ref it cannot with why, so one bad ref
   * neither fails the listing nor vanishes unexplained (what the hub's `GET /v1/refs` answers).
   * Optional: without it a listing has only {@link listRefs}.
   */
  scanRefs?(options?: CallOptions): Promise<OriginRefListing>;
  /**
   * Moves a ref by compare-and-swap: `expected` an id → it must hold it; null → it must not
   * exist; undefined → unconditional. `conflict` otherwise.
   */
  setRef(name: string, id: ObjectId, expected: ObjectId | null | undefined, options?: CallOptions): Promise<void>;
  /** The subset of `ids` the origin does not hold (one batched question where it can). */
  lacks(ids: readonly ObjectId[], options?: CallOptions): Promise<ObjectId[]>;
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
