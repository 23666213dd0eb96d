/**
 * An in-memory implementation of the cas {@link Store} port, for tests: it proves the port is all
 * an upper layer needs (the tensors suites run against it and against the local store) and gives
 * fast stores to tests of layers above. Same contract, same error codes as `LocalStore`; no GC.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Chunks, FileSource, Lease, LeaseOptions, PutResult, ReadOptions, Store } from '@tensorfs/cas';
import { DEFAULT_LEASE_TTL_MS, recordsSourceOf, validateRefName } from '@tensorfs/cas';
import {
  checkRange,
  decodeManifest,
  encodeManifest,
  isObjectId,
  type Manifest,
  type ObjectId,
  objectReferences,
  parseObjectId,
  type RecordRef,
  TensorFSError,
  throwIfAborted,
} from '@tensorfs/format';

function hashOf(pieces: readonly Uint8Array[]): { id: ObjectId; length: number; bytes: Uint8Array } {
  const h = createHash('sha256');
  let length = 0;
  for (const p of pieces) {
    h.update(p);
    length += p.length;
  }
  const bytes = new Uint8Array(length);
  let at = 0;
  for (const p of pieces) {
    bytes.set(p, at);
    at += p.length;
  }
  return { id: `sha256:${h.digest('hex')}`, length, bytes };
}

class MemoryLease implements Lease {
  readonly id = randomBytes(16).toString('hex');
  private expires: number;
  constructor(
    private readonly owner: MemoryStore,
    private readonly ttlMs: number,
  ) {
    this.expires = Date.now() + ttlMs;
  }
  live(): boolean {
    return this.expires > Date.now() && this.owner.leases.has(this.id);
  }
  assertLive(): void {
    if (!this.live()) throw new TensorFSError('conflict', 'lease expired or released', { details: { lease: this.id } });
  }
  add(ids: readonly ObjectId[]): void {
    for (const id of ids) parseObjectId(id);
    this.assertLive();
    const held = this.owner.leases.get(this.id)!;
    for (const id of ids) held.add(id);
  }
  async renew(): Promise<void> {
    this.assertLive();
    this.expires = Date.now() + this.ttlMs;
  }
  async release(): Promise<void> {
    this.owner.leases.delete(this.id);
  }
}

/** A {@link Store} held in maps: objects by id, refs by name, leases by id. */
export class MemoryStore implements Store {
  /** Stored objects (tests may corrupt or drop them directly). */
  readonly objects = new Map<ObjectId, Uint8Array>();
  /** Refs by name. */
  readonly refs = new Map<string, ObjectId>();
  /** Live leases and the objects they claim. */
  readonly leases = new Map<string, Set<ObjectId>>();

  private get(id: ObjectId): Uint8Array {
    const bytes = this.objects.get(parseObjectId(id));
    if (bytes === undefined)
      throw new TensorFSError('not_found', 'object not in the store', { details: { digest: id } });
    return bytes;
  }

  private verified(id: ObjectId): Uint8Array {
    const bytes = this.get(id);
    const actual = hashOf([bytes]).id;
    if (actual !== id) {
      throw new TensorFSError('corrupt', 'object does not hash to its id', {
        details: { rule: 'store.digest', digest: id, actual },
      });
    }
    return bytes;
  }

  private claim(lease: Lease | undefined, id: ObjectId): void {
    if (lease === undefined) return;
    if (!(lease instanceof MemoryLease)) {
      throw new TensorFSError('invalid_argument', 'lease of another store', { details: { lease: lease.id } });
    }
    lease.add([id]);
  }

  async has(id: ObjectId): Promise<boolean> {
    return this.objects.has(parseObjectId(id));
  }

  async put(bytes: Chunks, options: { expected?: ObjectId; lease?: Lease } = {}): Promise<PutResult> {
    const h = hashOf(bytes instanceof Uint8Array ? [bytes] : bytes);
    if (options.expected !== undefined && parseObjectId(options.expected) !== h.id) {
      throw new TensorFSError('corrupt', 'bytes do not hash to the expected id', {
        details: { rule: 'store.digest', expected: options.expected, actual: h.id },
      });
    }
    this.claim(options.lease, h.id);
    const written = !this.objects.has(h.id);
    if (written) this.objects.set(h.id, h.bytes);
    return { id: h.id, length: h.length, written };
  }

  async putStream(
    chunks: AsyncIterable<Uint8Array>,
    options: { expected?: ObjectId; expectedLength?: number; lease?: Lease; signal?: AbortSignal } = {},
  ): Promise<PutResult> {
    if (options.expected !== undefined && this.objects.has(parseObjectId(options.expected))) {
      this.claim(options.lease, options.expected);
      return { id: options.expected, length: this.objects.get(options.expected)!.length, written: false };
    }
    const pieces: Uint8Array[] = [];
    for await (const c of chunks) {
      throwIfAborted(options.signal);
      pieces.push(c.slice());
    }
    const length = pieces.reduce((n, p) => n + p.length, 0);
    if (options.expectedLength !== undefined && options.expectedLength !== length) {
      throw new TensorFSError('corrupt', 'stream length differs from the expected length', {
        details: { rule: 'store.length', expected: options.expectedLength, actual: length },
      });
    }
    return this.put(pieces, options);
  }

  async readObject(id: ObjectId, options: { verify?: boolean } = {}): Promise<Uint8Array> {
    return (options.verify ? this.verified(id) : this.get(id)).slice();
  }

  async readObjectRange(id: ObjectId, offset: number, length: number): Promise<Uint8Array> {
    const bytes = this.get(id);
    checkRange(offset, length, bytes.length);
    return bytes.slice(offset, offset + length);
  }

  recordsSource(records: readonly RecordRef[], options: ReadOptions = {}): FileSource {
    return recordsSourceOf(records, async (r, start, target) => {
      const bytes = options.verify ? this.verified(r.digest) : this.get(r.digest);
      if (bytes.length !== r.length) {
        throw new TensorFSError('corrupt', 'object length differs from its record', {
          details: { rule: 'store.length', digest: r.digest, expected: r.length, actual: bytes.length },
        });
      }
      target.set(bytes.subarray(start, start + target.length));
    });
  }

  async putManifest(m: Manifest, options: { lease?: Lease } = {}): Promise<ObjectId> {
    return (await this.put(encodeManifest(m), options)).id;
  }

  async getManifest(id: ObjectId): Promise<Manifest> {
    return decodeManifest(this.verified(id));
  }

  async resolve(refOrId: string): Promise<ObjectId> {
    if (isObjectId(refOrId)) {
      if (this.objects.has(refOrId)) return refOrId;
      throw new TensorFSError('not_found', 'object not in the store', { details: { digest: refOrId } });
    }
    const id = await this.getRef(refOrId);
    if (id === null) throw new TensorFSError('not_found', 'no such ref', { details: { ref: refOrId } });
    return id;
  }

  async getRef(name: string): Promise<ObjectId | null> {
    return this.refs.get(validateRefName(name)) ?? null;
  }

  async setRef(name: string, id: ObjectId, options: { expected?: ObjectId | null; lease?: Lease } = {}): Promise<void> {
    validateRefName(name);
    parseObjectId(id);
    if (options.expected !== undefined && options.expected !== null) parseObjectId(options.expected);
    if (options.lease instanceof MemoryLease) options.lease.assertLive();
    const current = this.refs.get(name) ?? null;
    if (options.expected !== undefined && options.expected !== current) {
      throw new TensorFSError('conflict', 'ref changed meanwhile (compare-and-swap failed)', {
        details: { ref: name, expected: options.expected, actual: current },
      });
    }
    for (const other of this.refs.keys()) {
      if (other !== name && (other.startsWith(`${name}/`) || name.startsWith(`${other}/`))) {
        throw new TensorFSError('conflict', 'a ref name is a folder of another', { details: { ref: name, other } });
      }
    }
    const bytes = this.objects.get(id);
    const children = bytes === undefined ? [] : (objectReferences(bytes)?.children ?? []);
    const absent = [id, ...children.map((c) => c.id)].filter((c) => !this.objects.has(c));
    if (absent.length > 0) {
      throw new TensorFSError('not_found', 'objects referenced by this snapshot are missing from the store', {
        details: { missing: absent.slice(0, 20), count: absent.length },
      });
    }
    this.refs.set(name, id);
  }

  async lease(options: LeaseOptions = {}): Promise<Lease> {
    const ttl = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
    if (!Number.isSafeInteger(ttl) || ttl <= 0) {
      throw new TensorFSError('invalid_argument', 'lease ttlMs must be a positive integer', {
        details: { actual: ttl },
      });
    }
    const lease = new MemoryLease(this, ttl);
    this.leases.set(lease.id, new Set());
    return lease;
  }
}
