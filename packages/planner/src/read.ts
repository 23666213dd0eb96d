import { type ByteSource, TensorFSError } from '@tensorfs/format';

/**
 * A {@link ByteSource} that can also read straight into a caller's buffer (a file handle can;
 * `@tensorfs/cas` file sources do). The planner uses it to skip a copy per record.
 */
export interface ReadIntoSource extends ByteSource {
  /** Fills `target` with the bytes at `[offset, offset + target.length)`. */
  readInto(offset: number, target: Uint8Array, signal?: AbortSignal): Promise<void>;
}

/** True if `source` implements {@link ReadIntoSource.readInto}. */
export function canReadInto(source: ByteSource): source is ReadIntoSource {
  return typeof (source as Partial<ReadIntoSource>).readInto === 'function';
}

/** Fills `target` from `source` at `offset`, through `readInto` when the source has it, else `read` + copy. */
export async function readInto(
  source: ByteSource,
  offset: number,
  target: Uint8Array,
  signal?: AbortSignal,
): Promise<void> {
  if (canReadInto(source)) {
    await source.readInto(offset, target, signal);
    return;
  }
  const bytes = await source.read(offset, target.length, signal);
  if (bytes.length !== target.length) {
    throw new TensorFSError('io', 'source returned a short read', {
      details: { offset, expected: target.length, actual: bytes.length },
    });
  }
  target.set(bytes);
}
