import { type RecordRef, TensorFSError } from '@tensorfs/format';

/** A half-open range of record indices `[first, end)`. */
export interface RecordSpan {
  readonly first: number;
  readonly end: number;
}

/**
 * The byte layout of a stored file's record list: where each record starts, and which records
 * exactly cover a byte range.
 * @internal
 */
export class RecordLayout {
  /** `starts[i]` is the file offset of record `i`; `starts[n]` is the file size. */
  private readonly starts: Float64Array;

  /** @throws {TensorFSError} `corrupt` if a length is not a non-negative integer; `limit_exceeded` past 2^53 − 1 bytes. */
  constructor(readonly records: readonly RecordRef[]) {
    this.starts = new Float64Array(records.length + 1);
    let at = 0;
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!;
      if (!Number.isSafeInteger(record.length) || record.length < 0) {
        throw new TensorFSError('corrupt', 'a record length is not a non-negative integer', {
          details: { rule: 'tensors.record_length', digest: record.digest, actual: record.length },
        });
      }
      this.starts[i] = at;
      at += record.length;
    }
    if (!Number.isSafeInteger(at)) {
      throw new TensorFSError('limit_exceeded', 'a file is larger than 2^53 - 1 bytes', { details: { actual: at } });
    }
    this.starts[records.length] = at;
  }

  /** The file size: the sum of the record lengths. */
  get size(): number {
    return this.starts[this.records.length]!;
  }

  /** The file offset where record `index` starts (`index === records.length` gives the size). */
  start(index: number): number {
    return this.starts[index]!;
  }

  /**
   * The records that cover `[offset, offset + length)` exactly (the range starts and ends on
   * record boundaries), or `null` when it does not. An empty range yields an empty span.
   */
  span(offset: number, length: number): RecordSpan | null {
    if (length === 0) return { first: 0, end: 0 };
    const first = this.boundary(offset);
    if (first < 0) return null;
    const end = this.boundary(offset + length);
    if (end < 0 || end <= first) return null;
    return { first, end };
  }

  /** The index of the record starting at `offset` (or `records.length` at the end), else -1. */
  private boundary(offset: number): number {
    let lo = 0;
    let hi = this.records.length;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = this.starts[mid]!;
      if (at === offset) return mid;
      if (at < offset) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }
}
