/**
 * Reading stored files: a random-access {@link ByteSource} over a record list, and the byte-exact,
 * atomic rebuild of a file from its records (temp in the destination directory, fsync, rename,
 * directory fsync). Every piece is length-checked against its record; with `verify` every object
 * is rehashed before any of its bytes is returned or written.
 */
import { checkObject, checkObjects } from './args.js';
import { createHash } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import {
  type ObjectId,
  type RecordRef,
  TensorFSError,
  checkRange,
  parseObjectId,
  RecordOffsets,
  throwIfAborted,
} from '@tensorfs/format';
import type { FileSource } from './file-source.js';
import {
  CHUNK_BYTES,
  HOST,
  errnoOf,
  fsyncDir,
  ioError,
  parseTempName,
  pidAlive,
  siblingTemp,
  writeFully,
} from './fsutil.js';
import { objectRel } from './layout.js';
import { type Objects, readExactlyInto } from './objects.js';

/** Options for reads over records. */
export interface ReadOptions {
  /** Rehash each object (once per source) before returning any of its bytes. */
  verify?: boolean;
}

/**
 * Fills `target` with the bytes at `start` of record `record`'s object. It checks what the
 * implementation can (the object's length against the record: `corrupt`; with verification, its
 * digest) and fails `not_found` for an absent object.
 */
export type PieceReader = (record: RecordRef, start: number, target: Uint8Array, signal?: AbortSignal) => Promise<void>;

/**
 * A random-access {@link FileSource} over a record list, reading each piece through `readPiece`:
 * the one record-offset walk every store implementation shares (the list is validated first:
 * `invalid_argument` for a bad id or length; reads outside the file are `invalid_argument`).
 */
export function recordsSourceOf(
  records: readonly RecordRef[],
  readPiece: PieceReader,
): FileSource & { readInto(offset: number, target: Uint8Array, signal?: AbortSignal): Promise<void> } {
  checkObjects(records, 'records');
  if (typeof readPiece !== 'function') checkObject(null, 'readPiece (a function)');
  for (const r of records) parseObjectId(r.digest);
  const table = new RecordOffsets(records);
  const size = table.size;
  const readInto = async (offset: number, target: Uint8Array, signal?: AbortSignal): Promise<void> => {
    const length = target.length;
    checkRange(offset, length, size);
    let done = 0;
    for (let i = length === 0 ? records.length : table.indexAt(offset); done < length; i++) {
      throwIfAborted(signal);
      const r = records[i]!;
      const start = offset + done - table.start(i);
      const n = Math.min(r.length - start, length - done);
      if (n <= 0) continue;
      await readPiece(r, start, target.subarray(done, done + n), signal);
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

/**
 * A random-access byte source over a record list of the local store. Besides `read`, it has
 * `readInto(offset, target)`, which fills a caller's buffer straight from the object files.
 */
export function recordsSource(
  objects: Objects,
  records: readonly RecordRef[],
  options: ReadOptions = {},
): FileSource & { readInto(offset: number, target: Uint8Array, signal?: AbortSignal): Promise<void> } {
  const verified = new Set<ObjectId>();
  return recordsSourceOf(records, async (r, start, target, signal) => {
    if (options.verify && !verified.has(r.digest)) {
      await checkWhole(objects, r, signal);
      verified.add(r.digest);
    }
    await objects.readRangeInto(r.digest, r.length, start, target);
  });
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
  // Validates the list (ids, lengths, total) before a temp exists.
  for (const r of records) parseObjectId(r.digest);
  new RecordOffsets(records);
  const dir = dirname(dest);
  await removeDeadTemps(dir, `.${basename(dest).slice(0, 100)}.`);
  const tmp = siblingTemp(dest);
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(tmp, 'wx', 0o600);
  } catch (err) {
    throw ioError(err, 'create export temp', basename(dest));
  }
  let total = 0;
  try {
    const bufs = [Buffer.allocUnsafe(CHUNK_BYTES), Buffer.allocUnsafe(CHUNK_BYTES)];
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

/**
 * Removes temps an earlier export of the same destination left when it was killed (SIGKILL, power
 * loss): `<prefix><pid>-<hex>.tmp` whose writer is no longer running. Best effort.
 */
async function removeDeadTemps(dir: string, prefix: string): Promise<void> {
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const t = parseTempName(name.slice(prefix.length));
    if (t === null || t.host !== HOST || pidAlive(t.pid)) continue;
    await fsp.rm(join(dir, name), { force: true }).catch(() => {});
  }
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
      await readExactlyInto(fh, done, buf.subarray(0, want), r.digest);
      const chunk = buf.subarray(0, want);
      h?.update(chunk);
      await pending;
      pending = writeFully(out, chunk, at + done).then(() => options.onBytes?.(want));
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
