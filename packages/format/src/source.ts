import { TensorFSError } from './errors.js';

/**
 * Random-access bytes: a file handle, a stored record list, an HTTP range reader or a buffer.
 * Offsets and sizes are plain numbers (files are far below 2^53 bytes).
 */
export interface ByteSource {
  /** Total size in bytes. */
  readonly size: number;
  /**
   * Reads exactly `length` bytes at `offset` (`offset + length <= size`). The result may be a
   * view into a shared buffer only until the next call; copy it to keep it.
   */
  read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array>;
}

/** A {@link ByteSource} over bytes already in memory (zero-copy subarrays). */
export function bytesSource(bytes: Uint8Array): ByteSource {
  return {
    size: bytes.length,
    async read(offset: number, length: number): Promise<Uint8Array> {
      checkRange(offset, length, bytes.length);
      return bytes.subarray(offset, offset + length);
    },
  };
}

/** Throws `invalid_argument` unless `[offset, offset+length)` lies inside `[0, size)`. */
export function checkRange(offset: number, length: number, size: number): void {
  if (
    !Number.isSafeInteger(offset) ||
    !Number.isSafeInteger(length) ||
    offset < 0 ||
    length < 0 ||
    offset + length > size
  ) {
    throw new TensorFSError('invalid_argument', 'read outside the source', {
      details: { offset, length, size },
    });
  }
}
