import { RecordOffsets, type RecordRef, type RecordSpan } from '@tensorfs/format';

export type { RecordSpan };

/**
 * The byte layout of a stored file's record list (format's one record-offset table), with a bad
 * length reported as `corrupt`: the list comes from a stored manifest.
 * @internal
 */
export class RecordLayout extends RecordOffsets {
  /** @throws {TensorFSError} `corrupt` if a length is not a non-negative integer; `limit_exceeded` past 2^53 − 1 bytes. */
  constructor(records: readonly RecordRef[]) {
    super(records, 'corrupt');
  }
}
