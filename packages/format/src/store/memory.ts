/**
 * The in-memory implementation of the storage contract: objects, refs and leases in maps. Runs
 * anywhere (SHA-256 through WebCrypto). What upper layers use without a disk (a browser, a
 * test), and the reference every other implementation's conformance is compared with.
 */
import { TensorFSError, throwIfAborted } from '../errors.js';
import { isObjectId, type ObjectId, parseObjectId } from '../ids.js';
import { objectReferences } from '../references.js';
import { checkRange } from '../source.js';
import {
  casConflict,
  chunkList,
  concatChunks,
  digestMismatch,
  objectNotFound,
  RecordingLease,
  recordsSourceOf,
  StoreBase,
  sha256Id,
} from './base.js';
import type {
  BatchItem,
  BatchOutcome,
  CallOptions,
  Capability,
  Chunks,
  DeleteRefOptions,
  FileSource,
  Lease,
  LeaseOptions,
  ObjectReadOptions,
  PutOptions,
  PutResult,
  ReadOptions,
  RefListing,
  SetRefOptions,
} from './contract.js';
import type { RecordRef } from '../manifest/index.js';
import { validateRefName } from './names.js';

const CAPABILITIES: ReadonlySet<Capability> = new Set<Capability>([
  'objects.write',
  'refs.write',
  'refs.delete',
  'refs.list',
  'refs.closure',
  'leases',
  'objects.batch',
]);

class MemoryLease extends RecordingLease {
  constructor(
    readonly owner: MemoryStore,
    ttlMs: number | undefined,
  ) {
    super(ttlMs);
  }
  override live(): boolean {
    return super.live() && this.owner.leases.has(this.id);
  }
  override add(ids: readonly ObjectId[]): void {
    super.add(ids);
    const held = this.owner.leases.get(this.id)!;
    for (const id of ids) held.add(id);
  }
  override async release(): Promise<void> {
    this.owner.leases.delete(this.id);
    await super.release();
  }
}

/** A store held in maps: objects by id, refs by name, leases by id. No GC; same codes as the local store. */
export class MemoryStore extends StoreBase {
  readonly capabilities = CAPABILITIES;
  readonly display = 'memory store';
  /** Stored objects (tests may corrupt or drop them directly). */
  readonly objects = new Map<ObjectId, Uint8Array>();
  /** Refs by name. */
  readonly refs = new Map<string, ObjectId>();
  /** Live leases and the objects they claim. */
  readonly leases = new Map<string, Set<ObjectId>>();

  private get(id: ObjectId): Uint8Array {
    const bytes = this.objects.get(parseObjectId(id));
    if (bytes === undefined) throw objectNotFound(id);
    return bytes;
  }

  private async verified(id: ObjectId): Promise<Uint8Array> {
    const bytes = this.get(id);
    const actual = await sha256Id(bytes);
    if (actual !== id) {
      throw new TensorFSError('corrupt', 'object does not hash to its id', {
        details: { rule: 'store.digest', digest: id, actual },
      });
    }
    return bytes;
  }

  private claim(lease: Lease | undefined, id: ObjectId): void {
    if (lease === undefined) return;
    if (!(lease instanceof MemoryLease) || lease.owner !== this) {
      throw new TensorFSError('invalid_argument', 'lease of another store', {
        details: { rule: 'store.lease_foreign', lease: lease.id },
      });
    }
    lease.add([id]);
  }

  async has(id: ObjectId, options: CallOptions = {}): Promise<boolean> {
    throwIfAborted(options.signal);
    return this.objects.has(parseObjectId(id));
  }

  async objectSize(id: ObjectId, options: CallOptions = {}): Promise<number> {
    throwIfAborted(options.signal);
    return this.get(id).length;
  }

  override async readObject(id: ObjectId, options: ObjectReadOptions = {}): Promise<Uint8Array> {
    throwIfAborted(options.signal);
    return (options.verify ? await this.verified(id) : this.get(id)).slice();
  }

  async readObjectRange(id: ObjectId, offset: number, length: number, options: CallOptions = {}): Promise<Uint8Array> {
    throwIfAborted(options.signal);
    const bytes = this.get(id);
    checkRange(offset, length, bytes.length);
    return bytes.slice(offset, offset + length);
  }

  async put(bytes: Chunks, options: PutOptions = {}): Promise<PutResult> {
    throwIfAborted(options.signal);
    const whole = concatChunks(chunkList(bytes));
    const id = await sha256Id(whole);
    if (options.expected !== undefined && parseObjectId(options.expected) !== id) {
      throw digestMismatch(options.expected, id);
    }
    throwIfAborted(options.signal);
    this.claim(options.lease, id);
    const written = !this.objects.has(id);
    if (written) this.objects.set(id, new Uint8Array(whole)); // a copy, and a plain Uint8Array even from a Buffer
    return { id, length: whole.length, written };
  }

  override async putStream(
    chunks: AsyncIterable<Uint8Array>,
    options: PutOptions & { expectedLength?: number } = {},
  ): Promise<PutResult> {
    if (options.expected !== undefined && this.objects.has(parseObjectId(options.expected))) {
      this.claim(options.lease, options.expected);
      return { id: options.expected, length: this.objects.get(options.expected)!.length, written: false };
    }
    return super.putStream(chunks, options);
  }

  /** Every item hashed and admitted on its own: a bad one is refused `corrupt`, the others go on. */
  async putBatch(
    items: readonly BatchItem[],
    options: { lease?: Lease; signal?: AbortSignal } = {},
  ): Promise<BatchOutcome[]> {
    const out: BatchOutcome[] = [];
    for (const item of items) {
      try {
        out.push({ ok: true, result: await this.put(item.bytes, { ...options, expected: item.expected }) });
      } catch (err) {
        if (!(err instanceof TensorFSError) || err.code === 'cancelled') throw err;
        out.push({ ok: false, error: err });
      }
    }
    return out;
  }

  override recordsSource(records: readonly RecordRef[], options: ReadOptions = {}): FileSource {
    const verified = new Set<ObjectId>();
    return recordsSourceOf(records, async (r, start, target) => {
      const bytes = options.verify && !verified.has(r.digest) ? await this.verified(r.digest) : this.get(r.digest);
      verified.add(r.digest);
      if (bytes.length !== r.length) {
        throw new TensorFSError('corrupt', 'object length differs from its record', {
          details: { rule: 'store.length', digest: r.digest, expected: r.length, actual: bytes.length },
        });
      }
      target.set(bytes.subarray(start, start + target.length));
    });
  }

  async getRef(name: string, options: CallOptions = {}): Promise<ObjectId | null> {
    throwIfAborted(options.signal);
    return this.refs.get(validateRefName(name)) ?? null;
  }

  async setRef(name: string, id: ObjectId, options: SetRefOptions = {}): Promise<void> {
    validateRefName(name);
    parseObjectId(id);
    if (options.expected !== undefined && options.expected !== null) parseObjectId(options.expected);
    throwIfAborted(options.signal);
    if (options.lease instanceof MemoryLease) options.lease.assertLive();
    const current = this.refs.get(name) ?? null;
    if (options.expected !== undefined && options.expected !== current) {
      throw casConflict(name, options.expected, current);
    }
    for (const other of this.refs.keys()) {
      if (other !== name && (other.startsWith(`${name}/`) || name.startsWith(`${other}/`))) {
        throw new TensorFSError('conflict', 'a ref name is a folder of another', {
          details: { rule: 'store.ref_namespace', ref: name, other },
        });
      }
    }
    const bytes = this.objects.get(id);
    const children = bytes === undefined ? [] : (objectReferences(bytes)?.children ?? []);
    const absent = [id, ...children.map((c) => c.id)].filter((c) => !this.objects.has(c));
    if (absent.length > 0) {
      throw new TensorFSError('not_found', 'objects referenced by this snapshot are missing from the store', {
        details: { rule: 'store.closure', missing: absent.slice(0, 20), count: absent.length },
      });
    }
    this.refs.set(name, id);
  }

  async deleteRef(name: string, options: DeleteRefOptions = {}): Promise<void> {
    validateRefName(name);
    if (options.expected !== undefined) parseObjectId(options.expected);
    throwIfAborted(options.signal);
    const current = this.refs.get(name) ?? null;
    if (current === null)
      throw new TensorFSError('not_found', 'no such ref', { details: { rule: 'store.no_ref', ref: name } });
    if (options.expected !== undefined && options.expected !== current)
      throw casConflict(name, options.expected, current);
    this.refs.delete(name);
  }

  /** Every ref, sorted by name; a map holds no bad entry. */
  async scanRefs(options: CallOptions = {}): Promise<RefListing> {
    throwIfAborted(options.signal);
    const listing: RefListing = { refs: [], problems: [] };
    const names = [...this.refs.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (const name of names) {
      const id = this.refs.get(name)!;
      // A test may plant a value that is no id (the map is public): named, never thrown.
      if (isObjectId(id)) listing.refs.push({ name, id });
      else
        listing.problems.push({
          name,
          code: 'corrupt',
          rule: 'ref.content',
          message: 'ref does not hold an object id',
        });
    }
    return listing;
  }

  override async lease(options: LeaseOptions = {}): Promise<Lease> {
    const lease = new MemoryLease(this, options.ttlMs);
    this.leases.set(lease.id, new Set());
    return lease;
  }
}
