/** What an origin offers for retention (see `gc.ts`). */
import type { ObjectId } from '@tensorfs/format';

/** One stored object of an origin, with its size and the time it was last written. */
export interface SweepableObject {
  id: ObjectId;
  size: number;
  /** Milliseconds since the epoch: file mtime, S3 `LastModified`. */
  modifiedMs: number;
}

/** What an origin offers for retention: its objects listed with their ages, and deletion. */
export interface Sweeper {
  /** Every stored object (temps and upload parts excluded). */
  list(signal?: AbortSignal): AsyncIterable<SweepableObject>;
  /** Deletes these objects (absent ones are no error). */
  remove(ids: readonly ObjectId[], signal?: AbortSignal): Promise<void>;
}
