/**
 * What every implementation of the storage contract shares: the record-offset walk, the portable
 * SHA-256 (WebCrypto: Node ≥ 20 and browsers in a secure context), the `unsupported` refusal of
 * an absent capability, and {@link StoreBase}, which derives the convenience members of the
 * contract (`lacks`, `putStream`, `recordsSource`, manifests, `resolve`, `lease`) from the core
 * ones, so an origin implements only what it really does.
 */
import { wrongArgument } from '../args.js';
import { TensorFSError, throwIfAborted } from '../errors.js';
import { isObjectId, type ObjectId, objectIdFromDigest, parseObjectId } from '../ids.js';
import { decodeManifest, encodeManifest, type Manifest } from '../manifest/index.js';
import type { RecordRef } from '../manifest/index.js';
import { RecordOffsets } from '../records.js';
import { checkRange } from '../source.js';
import {
  type CallOptions,
  type Capability,
  type Chunks,
  DEFAULT_LEASE_TTL_MS,
  type DeleteRefOptions,
  type FileSource,
  type Lease,
  type LeaseOptions,
  type ObjectReadOptions,
  type PutOptions,
  type PutResult,
  type PutStreamOptions,
  type ReadOptions,
  type RefListing,
  type SetRefOptions,
  type Store,
} from './contract.js';

/** Flattens {@link Chunks} to a list. */
export function chunkList(bytes: Chunks): readonly Uint8Array[] {
  return bytes instanceof Uint8Array ? [bytes] : bytes;
}

/** Concatenates chunks into one buffer. */
export function concatChunks(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  let n = 0;
  for (const c of chunks) n += c.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

interface SubtleLike {
  digest(algorithm: string, data: Uint8Array): Promise<ArrayBuffer>;
}

/** The SHA-256 object id of `bytes`, through WebCrypto (`unsupported` where it is unavailable). */
export async function sha256Id(bytes: Chunks): Promise<ObjectId> {
  const subtle = (globalThis as { crypto?: { subtle?: SubtleLike } }).crypto?.subtle;
  if (subtle === undefined) {
    throw new TensorFSError('unsupported', 'no WebCrypto SHA-256 here (browsers give it only to secure contexts)', {
      details: { rule: 'store.no_hasher' },
    });
  }
  const digest = await subtle.digest('SHA-256', concatChunks(chunkList(bytes)));
  return objectIdFromDigest(new Uint8Array(digest));
}

/** The error of a capability an implementation lacks: `unsupported`, rule `store.capability`. */
export function unsupportedCapability(capability: Capability, display: string): TensorFSError {
  return new TensorFSError('unsupported', `${display} cannot do this (no ${capability} capability)`, {
    details: { rule: 'store.capability', capability },
  });
}

/** The `not_found` of an absent object (rule `store.not_found`). */
export function objectNotFound(id: ObjectId): TensorFSError {
  return new TensorFSError('not_found', 'object not in the store', {
    details: { rule: 'store.not_found', digest: id },
  });
}

/** The `corrupt` of bytes that do not hash to their expected id (rule `store.digest`). */
export function digestMismatch(expected: ObjectId, actual: ObjectId): TensorFSError {
  return new TensorFSError('corrupt', 'bytes do not hash to the expected id', {
    details: { rule: 'store.digest', expected, actual },
  });
}

/** The `conflict` of a failed compare-and-swap. */
export function casConflict(
  name: string,
  expected: ObjectId | null | undefined,
  actual: ObjectId | null,
): TensorFSError {
  const why =
    expected === null
      ? 'ref already exists (it was expected not to)'
      : actual === null
        ? 'ref does not exist (it was expected to hold an id)'
        : 'ref holds another id than expected (compare-and-swap failed)';
  return new TensorFSError('conflict', why, { details: { rule: 'store.ref_cas', ref: name, expected, actual } });
}

/**
 * Fills `target` with the bytes at `start` of record `record`'s object. It checks what the
 * implementation can (the object's length against the record: `corrupt`; with verification, its
 * digest) and fails `not_found` for an absent object.
 */
export type PieceReader = (record: RecordRef, start: number, target: Uint8Array, signal?: AbortSignal) => Promise<void>;

/**
 * A random-access {@link FileSource} over a record list, reading each piece through `readPiece`:
 * the one record-offset walk every store implementation shares (the list is validated first:
 * `invalid_argument` for a bad id or length; reads outside the file are `invalid_argument`).
 */
export function recordsSourceOf(records: readonly RecordRef[], readPiece: PieceReader): FileSource {
  if (!Array.isArray(records)) wrongArgument('store', 'records', 'an array', records);
  for (const item of records) {
    if (typeof item !== 'object' || item === null) wrongArgument('store', 'records[]', 'an object', item);
  }
  if (typeof readPiece !== 'function') wrongArgument('store', 'readPiece (a function)', 'an object', null);
  for (const r of records) parseObjectId(r.digest);
  const table = new RecordOffsets(records);
  const size = table.size;
  const readInto = async (offset: number, target: Uint8Array, signal?: AbortSignal): Promise<void> => {
    const length = target.length;
    checkRange(offset, length, size);
    let done = 0;
    for (let i = length === 0 ? records.length : table.indexAt(offset); done < length; i++) {
      throwIfAborted(signal);
      const r = records[i]!;
      const start = offset + done - table.start(i);
      const n = Math.min(r.length - start, length - done);
      if (n <= 0) continue;
      await readPiece(r, start, target.subarray(done, done + n), signal);
      done += n;
    }
  };
  return {
    size,
    readInto,
    async read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
      checkRange(offset, length, size);
      const out = new Uint8Array(length);
      await readInto(offset, out, signal);
      return out;
    },
  };
}

/** A lease that records claims and expires, for implementations without the `leases` capability. */
export class RecordingLease implements Lease {
  readonly id: string;
  private expires: number;
  private released = false;
  /** The objects claimed so far. */
  readonly claimed = new Set<ObjectId>();

  constructor(private readonly ttlMs: number = DEFAULT_LEASE_TTL_MS) {
    if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) {
      throw new TensorFSError('invalid_argument', 'lease ttlMs must be a positive integer', {
        details: { rule: 'store.argument', actual: ttlMs },
      });
    }
    const bytes = new Uint8Array(16);
    (globalThis as { crypto?: { getRandomValues?(b: Uint8Array): Uint8Array } }).crypto?.getRandomValues?.(bytes);
    this.id = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
    this.expires = Date.now() + ttlMs;
  }

  /** True until it expires or is released. */
  live(): boolean {
    return !this.released && this.expires > Date.now();
  }

  /** `conflict` unless {@link live}. */
  assertLive(): void {
    if (!this.live()) {
      throw new TensorFSError('conflict', 'lease expired or released', {
        details: { rule: 'store.lease_dead', lease: this.id },
      });
    }
  }

  add(ids: readonly ObjectId[]): void {
    for (const id of ids) parseObjectId(id);
    this.assertLive();
    for (const id of ids) this.claimed.add(id);
  }

  async renew(): Promise<void> {
    this.assertLive();
    this.expires = Date.now() + this.ttlMs;
  }

  async release(): Promise<void> {
    this.released = true;
    this.claimed.clear();
  }
}

/**
 * The convenience members of {@link Store}, derived once from the core ones. An implementation
 * extends it and implements `has`, `objectSize`, `readObjectRange`, `put`, the four ref members
 * and `capabilities`; it overrides a derived member only where it has a faster way.
 */
export abstract class StoreBase implements Store {
  abstract readonly capabilities: ReadonlySet<Capability>;
  /** A description safe to print (no credentials, no local path). */
  abstract readonly display: string;

  abstract has(id: ObjectId, options?: CallOptions): Promise<boolean>;
  abstract objectSize(id: ObjectId, options?: CallOptions): Promise<number>;
  abstract readObjectRange(id: ObjectId, offset: number, length: number, options?: CallOptions): Promise<Uint8Array>;
  abstract put(bytes: Chunks, options?: PutOptions): Promise<PutResult>;
  abstract getRef(name: string, options?: CallOptions): Promise<ObjectId | null>;
  abstract setRef(name: string, id: ObjectId, options?: SetRefOptions): Promise<void>;
  abstract deleteRef(name: string, options?: DeleteRefOptions): Promise<void>;
  abstract scanRefs(options?: CallOptions): Promise<RefListing>;

  /** One `has` per id. */
  async lacks(ids: readonly ObjectId[], options: CallOptions = {}): Promise<ObjectId[]> {
    const out: ObjectId[] = [];
    for (const id of ids) {
      throwIfAborted(options.signal);
      if (!(await this.has(id, options))) out.push(id);
    }
    return out;
  }

  /** The whole object through `readObjectRange`, rehashed with `verify`. */
  async readObject(id: ObjectId, options: ObjectReadOptions = {}): Promise<Uint8Array> {
    throwIfAborted(options.signal);
    const size = await this.objectSize(id, options);
    const bytes = await this.readObjectRange(id, 0, size, options);
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

  /** Collects the stream, checks its length, then `put`s it. */
  async putStream(chunks: AsyncIterable<Uint8Array>, options: PutStreamOptions = {}): Promise<PutResult> {
    if (!this.capabilities.has('objects.write')) throw unsupportedCapability('objects.write', this.display);
    const pieces: Uint8Array[] = [];
    let length = 0;
    for await (const c of chunks) {
      throwIfAborted(options.signal);
      pieces.push(c.slice());
      length += c.length;
    }
    if (options.expectedLength !== undefined && options.expectedLength !== length) {
      throw new TensorFSError('corrupt', 'stream length differs from the expected length', {
        details: { rule: 'store.length', expected: options.expectedLength, actual: length },
      });
    }
    return this.put(pieces, options);
  }

  /** Record reads through `readObjectRange`, each object's length checked against its record. */
  recordsSource(records: readonly RecordRef[], options: ReadOptions = {}): FileSource {
    const verified = new Set<ObjectId>();
    return recordsSourceOf(records, async (r, start, target, signal) => {
      const size = await this.objectSize(r.digest, { signal });
      if (size !== r.length) {
        throw new TensorFSError('corrupt', 'object length differs from its record', {
          details: { rule: 'store.length', digest: r.digest, expected: r.length, actual: size },
        });
      }
      if (options.verify && !verified.has(r.digest)) {
        await this.readObject(r.digest, { verify: true, signal });
        verified.add(r.digest);
      }
      target.set(await this.readObjectRange(r.digest, start, target.length, { signal }));
    });
  }

  async putManifest(m: Manifest, options: { lease?: Lease } = {}): Promise<ObjectId> {
    return (await this.put(encodeManifest(m), options)).id;
  }

  async getManifest(id: ObjectId): Promise<Manifest> {
    return decodeManifest(await this.readObject(parseObjectId(id), { verify: true }));
  }

  async resolve(refOrId: string): Promise<ObjectId> {
    if (isObjectId(refOrId)) {
      if (await this.has(refOrId)) return refOrId;
      throw objectNotFound(refOrId);
    }
    const id = await this.getRef(refOrId);
    if (id === null)
      throw new TensorFSError('not_found', 'no such ref', { details: { rule: 'store.no_ref', ref: refOrId } });
    return id;
  }

  /**
   * Without the `leases` capability: a {@link RecordingLease}, which only records claims. Objects
   * written to an origin are kept by its retention grace window, not by this lease.
   */
  async lease(options: LeaseOptions = {}): Promise<Lease> {
    return new RecordingLease(options.ttlMs);
  }
}
