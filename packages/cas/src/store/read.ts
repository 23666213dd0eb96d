/**
 * Reading stored files: a random-access {@link ByteSource} over a record list, and the byte-exact,
 * atomic rebuild of a file from its records (temp in the destination directory, fsync, rename,
 * directory fsync). Every piece is length-checked against its record; with `verify` every object
 * is rehashed before any of its bytes is returned or written.
 */
import { createHash } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import {
  type ByteSource,
  type ObjectId,
  type RecordRef,
  TensorFSError,
  checkRange,
  throwIfAborted,
} from '@tensorfs/format';
import { errnoOf, fsyncDir, ioError } from './fsutil.js';
import { objectRel } from './layout.js';
import { type Objects, checkId } from './objects.js';

/** Options for reads over records. */
export interface ReadOptions {
  /** Rehash each object (once per source) before returning any of its bytes. */
  verify?: boolean;
}

/** Start offsets of each record (and the total size as the last entry); validates the list. */
function offsetsOf(records: readonly RecordRef[]): number[] {
  const offsets = new Array<number>(records.length + 1);
  let at = 0;
  records.forEach((r, i) => {
    checkId(r.digest);
    if (!Number.isSafeInteger(r.length) || r.length < 0) {
      throw new TensorFSError('invalid_argument', 'record length must be a non-negative integer', {
        details: { index: i, actual: r.length },
      });
    }
    offsets[i] = at;
    at += r.length;
  });
  offsets[records.length] = at;
  return offsets;
}

/** Index of the record holding byte `offset` (the last record starting at or before it). */
function recordAt(offsets: readonly number[], offset: number): number {
  let lo = 0;
  let hi = offsets.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (offsets[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * A random-access byte source over a record list of the store. Besides `read`, it has
 * `readInto(offset, target)`, which fills a caller's buffer straight from the object files.
 */
export function recordsSource(
  objects: Objects,
  records: readonly RecordRef[],
  options: ReadOptions = {},
): ByteSource & { readInto(offset: number, target: Uint8Array, signal?: AbortSignal): Promise<void> } {
  const offsets = offsetsOf(records);
  const size = offsets[records.length]!;
  const verified = new Set<ObjectId>();
  const readInto = async (offset: number, target: Uint8Array, signal?: AbortSignal): Promise<void> => {
    const length = target.length;
    checkRange(offset, length, size);
    let done = 0;
    for (let i = length === 0 ? records.length : recordAt(offsets, offset); done < length; i++) {
      throwIfAborted(signal);
      const r = records[i]!;
      const start = offset + done - offsets[i]!;
      const n = Math.min(r.length - start, length - done);
      if (n <= 0) continue;
      if (options.verify && !verified.has(r.digest)) {
        await checkWhole(objects, r, signal);
        verified.add(r.digest);
      }
      await objects.readRangeInto(r.digest, r.length, start, target.subarray(done, done + n));
      done += n;
    }
  };
  return {
    size,
    readInto,
    async read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
      checkRange(offset, length, size);
      const out = new Uint8Array(length);
      await readInto(offset, out, signal);
      return out;
    },
  };
}

async function checkWhole(objects: Objects, r: RecordRef, signal?: AbortSignal): Promise<void> {
  const { actual, length } = await objects.hashFile(r.digest, signal);
  if (length !== r.length) objects.corrupt(r.digest, 'length', { expected: r.length, actual: length });
  if (actual !== r.digest) objects.corrupt(r.digest, 'digest', { actual });
}

/** Options of {@link writeRecordsFile}. */
export interface WriteFileOptions extends ReadOptions {
  /** File mode of the result (default 0o644). */
  mode?: number;
  signal?: AbortSignal;
  /** Called with the number of bytes just written. */
  onBytes?: (n: number) => void;
}

const COPY_BUF = 8 << 20;

/**
 * Rebuilds a file from its records at `dest`, byte-exact and atomically: a unique temp beside
 * `dest`, every record copied with its length checked (and rehashed with `verify`), fdatasync,
 * chmod, rename over `dest`, directory fsync. On failure nothing is left at `dest` or in the temp.
 */
export async function writeRecordsFile(
  objects: Objects,
  records: readonly RecordRef[],
  dest: string,
  options: WriteFileOptions = {},
): Promise<number> {
  offsetsOf(records);
  const dir = dirname(dest);
  const tmp = join(
    dir,
    `.${basename(dest).slice(0, 100)}.tfs-${process.pid}-${Math.random().toString(16).slice(2, 10)}.tmp`,
  );
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(tmp, 'wx', 0o600);
  } catch (err) {
    throw ioError(err, 'create export temp', basename(dest));
  }
  let total = 0;
  try {
    const bufs = [Buffer.allocUnsafe(COPY_BUF), Buffer.allocUnsafe(COPY_BUF)];
    for (const r of records) {
      total += await copyObject(objects, r, fh, total, bufs, options);
    }
    await fh.datasync();
    await fh.chmod(options.mode ?? 0o644);
    await fh.close();
    await fsp.rename(tmp, dest);
  } catch (err) {
    await fh.close().catch(() => {});
    await fsp.rm(tmp, { force: true });
    if (errnoOf(err) === 'EISDIR') {
      throw new TensorFSError('conflict', 'export destination is a directory', { details: { path: basename(dest) } });
    }
    throw ioError(err, 'export', basename(dest));
  }
  await fsyncDir(dir).catch((err) => {
    throw ioError(err, 'fsync', basename(dir));
  });
  return total;
}

/** Copies one object into `out` at `at` with double buffering (read the next chunk while writing). */
async function copyObject(
  objects: Objects,
  r: RecordRef,
  out: fsp.FileHandle,
  at: number,
  bufs: Buffer[],
  options: WriteFileOptions,
): Promise<number> {
  const { fh, size } = await objects.open(r.digest);
  let pending: Promise<void> = Promise.resolve();
  try {
    if (size !== r.length) objects.corrupt(r.digest, 'length', { expected: r.length, actual: size });
    const h = options.verify ? createHash('sha256') : undefined;
    let done = 0;
    for (let which = 0; done < size; which ^= 1) {
      throwIfAborted(options.signal);
      const buf = bufs[which]!;
      const want = Math.min(buf.length, size - done);
      await readInto(fh, buf, want, done, r.digest);
      const chunk = buf.subarray(0, want);
      h?.update(chunk);
      await pending;
      pending = writeAt(out, chunk, at + done).then(() => options.onBytes?.(want));
      done += want;
    }
    await pending;
    if (h) {
      const actual = `sha256:${h.digest('hex')}` as ObjectId;
      if (actual !== r.digest) objects.corrupt(r.digest, 'digest', { actual });
    }
    return size;
  } catch (err) {
    await pending.catch(() => {});
    throw ioError(err, 'copy', objectRel(r.digest));
  } finally {
    await fh.close();
  }
}

/** Fills `buf[0, n)` from `fh` at `pos`; a short file is `corrupt`. */
async function readInto(fh: fsp.FileHandle, buf: Buffer, n: number, pos: number, id: ObjectId): Promise<void> {
  let got = 0;
  while (got < n) {
    const { bytesRead } = await fh.read(buf, got, n - got, pos + got);
    if (bytesRead === 0) {
      throw new TensorFSError('corrupt', 'object is shorter than expected', {
        details: { rule: 'length', digest: id, actual: pos + got },
      });
    }
    got += bytesRead;
  }
}

/** Writes all of `chunk` at `pos`. */
async function writeAt(fh: fsp.FileHandle, chunk: Uint8Array, pos: number): Promise<void> {
  let off = 0;
  while (off < chunk.length) {
    const { bytesWritten } = await fh.write(chunk, off, chunk.length - off, pos + off);
    off += bytesWritten;
  }
}
