/**
 * An origin whose objects live in another origin (an S3 bucket) and whose refs live in a local
 * refs folder, moved with the local store's compare-and-swap: what `tfs serve --objects s3://…
 * --refs DIR` serves, so a bucket without conditional writes still serves a team through one hub.
 * The bucket keeps the portable layout's `chunks/`, readable directly; its `refs/` are not used.
 */
import type { RefFolder } from '@tensorfs/cas';
import { type ObjectId, throwIfAborted } from '@tensorfs/format';
import type {
  Capability,
  Chunks,
  ObjectReadOptions,
  PutOptions,
  PutResult,
  RefListing,
  SetRefOptions,
} from '@tensorfs/format/store';
import {
  type BatchRead,
  type CallOptions,
  type ObjectRead,
  type Origin,
  OriginBase,
  type OriginRef,
  type ReadOptions,
  type WriteOptions,
} from './origin.js';

/** Objects from `objects`, refs from `refs`. Closing it closes neither. */
export class LocalRefsOrigin extends OriginBase {
  readonly kind: Origin['kind'];
  readonly writable = true;
  readonly display: string;
  /** The objects origin's object capabilities; refs move and list in the local folder. */
  readonly capabilities: ReadonlySet<Capability>;
  readBatch?: Origin['readBatch'];

  constructor(
    private readonly objects: Origin,
    private readonly refs: RefFolder,
  ) {
    super();
    this.kind = objects.kind;
    this.display = `${objects.display} (refs in ${refs.root})`;
    this.capabilities = new Set<Capability>([
      ...[...objects.capabilities].filter((c) => c.startsWith('objects.')),
      'refs.write',
      'refs.list',
    ]);
    const batch = objects.readBatch?.bind(objects);
    if (batch) {
      this.readBatch = (ids: readonly ObjectId[], options: CallOptions & { maxObjectBytes: number }) =>
        batch(ids, options) as AsyncIterable<BatchRead>;
    }
  }

  getRef(name: string, options: CallOptions = {}): Promise<ObjectId | null> {
    throwIfAborted(options.signal);
    return this.refs.getRef(name);
  }

  /** The refs of {@link scanRefs}. */
  async listRefs(options: CallOptions = {}): Promise<OriginRef[]> {
    return (await this.scanRefs(options)).refs;
  }

  override async scanRefs(options: CallOptions = {}): Promise<RefListing> {
    throwIfAborted(options.signal);
    const { refs, problems } = await this.refs.scanRefs();
    return { refs: refs.map((r) => ({ name: r.name, id: r.id })), problems };
  }

  /** Compare-and-swap on the local folder; the hub checks the target's closure in `objects` first. */
  setRef(name: string, id: ObjectId, options: SetRefOptions = {}): Promise<void> {
    throwIfAborted(options.signal);
    return this.refs.setRef(name, id, options.expected);
  }

  lacks(ids: readonly ObjectId[], options?: CallOptions): Promise<ObjectId[]> {
    return this.objects.lacks(ids, options);
  }

  /** The objects' origin's `freshen` (a bucket: objects copied onto themselves, a new `LastModified`). */
  freshen(ids: readonly ObjectId[], options?: CallOptions): Promise<ObjectId[]> {
    return this.objects.freshen ? this.objects.freshen(ids, options) : this.objects.lacks(ids, options);
  }

  objectSize(id: ObjectId, options?: CallOptions): Promise<number> {
    return this.objects.objectSize(id, options);
  }

  override readObject(id: ObjectId, options?: ObjectReadOptions): Promise<Uint8Array> {
    return this.objects.readObject(id, options);
  }

  override readObjectRange(id: ObjectId, offset: number, length: number, options?: CallOptions): Promise<Uint8Array> {
    return this.objects.readObjectRange(id, offset, length, options);
  }

  override put(bytes: Chunks, options?: PutOptions): Promise<PutResult> {
    return this.objects.put(bytes, options);
  }

  read(id: ObjectId, offset: number, options?: ReadOptions): Promise<ObjectRead> {
    return this.objects.read(id, offset, options);
  }

  write(
    id: ObjectId,
    length: number,
    body: (offset?: number, end?: number) => AsyncIterable<Uint8Array>,
    options?: WriteOptions,
  ): Promise<void> {
    return this.objects.write(id, length, body, options);
  }

  async close(): Promise<void> {}
}
