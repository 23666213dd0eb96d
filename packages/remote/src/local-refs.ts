/**
 * An origin whose objects live in another origin (an S3 bucket) and whose refs live in a local
 * refs folder, moved with the local store's compare-and-swap: what `tfs serve --objects s3://…
 * --refs DIR` serves, so a bucket without conditional writes still serves a team through one hub.
 * The bucket keeps the portable layout's `chunks/`, readable directly; its `refs/` are not used.
 */
import type { RefFolder } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import type {
  BatchRead,
  CallOptions,
  ObjectRead,
  Origin,
  OriginRef,
  OriginRefListing,
  ReadOptions,
  WriteOptions,
} from './origin.js';

/** Objects from `objects`, refs from `refs`. Closing it closes neither. */
export class LocalRefsOrigin implements Origin {
  readonly kind: Origin['kind'];
  readonly writable = true;
  readonly display: string;
  readBatch?: Origin['readBatch'];

  constructor(
    private readonly objects: Origin,
    private readonly refs: RefFolder,
  ) {
    this.kind = objects.kind;
    this.display = `${objects.display} (refs in ${refs.root})`;
    const batch = objects.readBatch?.bind(objects);
    if (batch) {
      this.readBatch = (ids: readonly ObjectId[], options: CallOptions & { maxObjectBytes: number }) =>
        batch(ids, options) as AsyncIterable<BatchRead>;
    }
  }

  getRef(name: string): Promise<ObjectId | null> {
    return this.refs.getRef(name);
  }

  async listRefs(): Promise<OriginRef[]> {
    return (await this.refs.scanRefs()).refs.map((r) => ({ name: r.name, id: r.id }));
  }

  async scanRefs(): Promise<OriginRefListing> {
    const { refs, problems } = await this.refs.scanRefs();
    return { refs: refs.map((r) => ({ name: r.name, id: r.id })), problems };
  }

  /** Compare-and-swap on the local folder; the hub checks the target's closure in `objects` first. */
  setRef(name: string, id: ObjectId, expected: ObjectId | null | undefined): Promise<void> {
    return this.refs.setRef(name, id, expected);
  }

  lacks(ids: readonly ObjectId[], options?: CallOptions): Promise<ObjectId[]> {
    return this.objects.lacks(ids, options);
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
