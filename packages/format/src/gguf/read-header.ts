/**
 * Reading a GGUF header from a {@link ByteSource}, incrementally.
 */
import { requireOptions } from '../args.js';
import { TensorFSError, throwIfAborted } from '../errors.js';
import { type ByteSource, checkByteSource, readInto } from '../source.js';
import { NeedMoreBytes } from './_cursor.js';
import { emptyMetadata, GGUF_FIXED_HEADER_BYTES, limitsOption, parseGgufPrefix } from './parse-header.js';
import type { GgufHeader, GgufParseOptions } from './types.js';

/** First read: 1 MiB covers the header of most models (a 2,000-tensor header is about 200 KiB). */
export const GGUF_INITIAL_READ_BYTES = 1024 * 1024;

/**
 * Reads and validates a GGUF header from `source`: first `min(size, initialReadBytes)` bytes, then, while the header
 * continues, larger prefixes (at least double, or an extrapolation when a long string array is cut) up to
 * `maxHeaderBytes`; KVs already parsed are kept across re-reads. Tensor data is never read beyond what
 * those prefixes happen to cover.
 *
 * @throws {TensorFSError} as {@link parseGgufHeader}; `io`/`cancelled` from the source or the signal.
 */
export async function readGgufHeader(source: ByteSource, options: GgufParseOptions = {}): Promise<GgufHeader> {
  checkByteSource(source);
  requireOptions(options, 'options', 'gguf');
  const fileSize = source.size;
  if (!Number.isSafeInteger(fileSize) || fileSize < 0) {
    throw new TensorFSError('invalid_argument', 'the source size must be a non-negative integer', {
      details: { rule: 'gguf.file_size', size: fileSize },
    });
  }
  if (options.fileSize !== undefined && options.fileSize !== fileSize) {
    throw new TensorFSError('invalid_argument', 'fileSize differs from the source size', {
      details: { rule: 'gguf.file_size', fileSize: options.fileSize, size: fileSize },
    });
  }
  const limits = limitsOption(options);
  const { maxHeaderBytes } = limits;
  const first = options.initialReadBytes ?? GGUF_INITIAL_READ_BYTES;
  if (!Number.isSafeInteger(first) || first < 1) {
    throw new TensorFSError('invalid_argument', 'initialReadBytes must be a positive integer', {
      details: { rule: 'gguf.options', initialReadBytes: first },
    });
  }
  let bytes = await readCopy(source, new Uint8Array(0), Math.min(fileSize, first), options.signal);
  const progress = emptyMetadata(GGUF_FIXED_HEADER_BYTES, limits.maxArrayItems);
  for (;;) {
    try {
      return parseGgufPrefix(bytes, fileSize, limits, progress);
    } catch (err) {
      if (!(err instanceof NeedMoreBytes)) throw err;
      const grown = Math.min(fileSize, Math.max(err.needed, Math.min(bytes.length * 2, maxHeaderBytes)));
      bytes = await readCopy(source, bytes, grown, options.signal);
    }
  }
}

/**
 * `prefix` extended to `length` bytes with the source's bytes after it, read straight into the new
 * buffer when the source can (else read and copied: sources may reuse their buffers).
 */
async function readCopy(
  source: ByteSource,
  prefix: Uint8Array,
  length: number,
  signal: AbortSignal | undefined,
): Promise<Uint8Array> {
  throwIfAborted(signal);
  const out = new Uint8Array(length);
  out.set(prefix);
  await readInto(source, prefix.length, out.subarray(prefix.length), signal);
  return out;
}
