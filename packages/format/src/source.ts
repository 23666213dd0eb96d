import { requireBytes } from './args.js';
import { isTensorFSError, TensorFSError, throwIfAborted } from './errors.js';

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
  /**
   * Optional: fills `target` with the bytes at `[offset, offset + target.length)`, saving the
   * copy `read` would need (a file handle can; `@tensorfs/cas` file and record sources do).
   */
  readInto?(offset: number, target: Uint8Array, signal?: AbortSignal): Promise<void>;
}

/** A {@link ByteSource} that implements {@link ByteSource.readInto}. */
export type ReadIntoSource = ByteSource & Required<Pick<ByteSource, 'readInto'>>;

/** True if `source` implements {@link ByteSource.readInto}. */
export function canReadInto(source: ByteSource): source is ReadIntoSource {
  return (
    typeof source === 'object' && source !== null && typeof (source as Partial<ReadIntoSource>).readInto === 'function'
  );
}

/**
 * `invalid_argument` (rule `source.argument`) unless `source` looks like a {@link ByteSource}: an
 * object with a safe non-negative integer `size` and a `read` function.
 */
export function checkByteSource(source: unknown): asserts source is ByteSource {
  const s = source as Partial<ByteSource> | null;
  if (
    typeof s !== 'object' ||
    s === null ||
    typeof s.read !== 'function' ||
    !Number.isSafeInteger(s.size) ||
    (s.size as number) < 0
  ) {
    throw new TensorFSError('invalid_argument', 'a byte source is { size, read(offset, length) }', {
      details: { rule: 'source.argument', actual: s === null ? 'null' : typeof s },
    });
  }
}

/** A {@link ByteSource} over bytes already in memory (zero-copy subarrays). */
export function bytesSource(bytes: Uint8Array): ByteSource {
  requireBytes(bytes, 'bytes', 'source');
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
      details: { rule: 'source.range', offset, length, size },
    });
  }
}

/**
 * Exactly `length` bytes of `source` at `offset` — the one read-fully helper. A read that throws
 * becomes `io` (a TensorFSError of the source passes through; an abort is `cancelled`); an answer
 * that is shorter is `io`, one that is not a `Uint8Array` is `invalid_argument`. The result may be the source's own
 * buffer: copy it to keep it past the next read.
 * @throws {TensorFSError} `io` (rule `source.read` / `source.short_read`), `invalid_argument` (rule
 *   `source.contract`: the source answered with something other than bytes), `cancelled`, the source's own.
 */
export async function readFully(
  source: ByteSource,
  offset: number,
  length: number,
  signal?: AbortSignal,
): Promise<Uint8Array> {
  throwIfAborted(signal);
  checkByteSource(source);
  checkRange(offset, length, source.size);
  let bytes: unknown;
  try {
    bytes = await source.read(offset, length, signal);
  } catch (err) {
    throw readFailure(err, offset, length, signal);
  }
  if (!(bytes instanceof Uint8Array)) {
    // A source that breaks its contract is the caller's bug, not an I/O failure.
    throw new TensorFSError('invalid_argument', 'the source returned something other than bytes', {
      details: { rule: 'source.contract', offset, length, actual: bytes === null ? 'null' : typeof bytes },
    });
  }
  if (bytes.length !== length) {
    throw new TensorFSError('io', 'the source returned fewer bytes than asked', {
      details: { rule: 'source.short_read', offset, expected: length, actual: bytes.length },
    });
  }
  return bytes;
}

/**
 * Fills `target` from `source` at `offset`: through `readInto` when the source has it, else
 * {@link readFully} and a copy. Failures as {@link readFully}.
 */
export async function readInto(
  source: ByteSource,
  offset: number,
  target: Uint8Array,
  signal?: AbortSignal,
): Promise<void> {
  checkByteSource(source);
  requireBytes(target, 'target', 'source');
  checkRange(offset, target.length, source.size);
  if (canReadInto(source)) {
    try {
      await source.readInto(offset, target, signal);
    } catch (err) {
      throw readFailure(err, offset, target.length, signal);
    }
    return;
  }
  target.set(await readFully(source, offset, target.length, signal));
}

function readFailure(err: unknown, offset: number, length: number, signal: AbortSignal | undefined): TensorFSError {
  if (isTensorFSError(err)) return err;
  if (signal?.aborted)
    return new TensorFSError('cancelled', 'operation cancelled', {
      details: { rule: 'source.cancelled' },
      cause: signal.reason,
    });
  // The message names the failure, never a path: a source's own error text may hold one.
  const name = err instanceof Error ? err.name : typeof err;
  const code = (err as { code?: unknown } | null)?.code;
  return new TensorFSError('io', `read failed (${typeof code === 'string' ? code : name})`, {
    details: { rule: 'source.read', offset, length },
    cause: err,
  });
}
