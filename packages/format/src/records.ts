import { type ErrorCode, TensorFSError } from './errors.js';
import type { RecordRef } from './manifest/manifest.js';

/** A half-open range of record indices `[first, end)`. */
export interface RecordSpan {
  readonly first: number;
  readonly end: number;
}

/**
 * The byte layout of a record list: where each record starts, which record holds a byte, and
 * which records exactly cover a byte range. The one record-offset table of TensorFS (the store's
 * record sources and tensor views both use it).
 */
export class RecordOffsets {
  /** `starts[i]` is the file offset of record `i`; `starts[n]` is the file size. */
  private readonly starts: Float64Array;

  /**
   * @param code - the family a bad length is reported in: `invalid_argument` for a list a caller
   *   gave (the default), `corrupt` for one read from a stored manifest.
   * @throws {TensorFSError} `code` (rule `records.length`) if a length is not a non-negative safe
   *   integer; `limit_exceeded` (rule `records.size`) if the total passes 2^53 − 1.
   */
  constructor(
    readonly records: readonly RecordRef[],
    code: ErrorCode = 'invalid_argument',
  ) {
    if (!Array.isArray(records)) {
      throw new TensorFSError('invalid_argument', 'records must be an array', {
        details: { rule: 'records.argument' },
      });
    }
    this.starts = new Float64Array(records.length + 1);
    let at = 0;
    for (let i = 0; i < records.length; i++) {
      const record = records[i];
      const length = (record as RecordRef | undefined)?.length;
      if (!Number.isSafeInteger(length) || (length as number) < 0) {
        throw new TensorFSError(code, 'a record length is not a non-negative integer', {
          details: { rule: 'records.length', index: i, digest: record?.digest, actual: length },
        });
      }
      this.starts[i] = at;
      at += length as number;
    }
    if (!Number.isSafeInteger(at)) {
      throw new TensorFSError('limit_exceeded', 'a file is larger than 2^53 - 1 bytes', {
        details: { rule: 'records.size', actual: at },
      });
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

  /** The index of the record holding byte `offset` (`0 <= offset < size`; the last record starting at or before it). */
  indexAt(offset: number): number {
    let lo = 0;
    let hi = this.records.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
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
