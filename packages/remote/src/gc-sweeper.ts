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
  /**
   * Deletes those of `ids` still last written before `cutoffMs`, their age re-checked right
   * before each delete (a push that skipped one freshened it since the listing: it stays).
   * Absent ones are no error. Returns the ids deleted.
   */
  remove(ids: readonly ObjectId[], cutoffMs: number, signal?: AbortSignal): Promise<ObjectId[]>;
}
