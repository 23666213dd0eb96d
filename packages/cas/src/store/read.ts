/**
 * Reading stored files: a random-access {@link ByteSource} over a record list, and the byte-exact,
 * atomic rebuild of a file from its records (temp in the destination directory, fsync, rename,
 * directory fsync). Every piece is length-checked against its record; with `verify` every object
 * is rehashed before any of its bytes is returned or written. The record-offset walk itself is
 * the storage contract's (`recordsSourceOf`, `@tensorfs/format/store`).
 */
import { createHash } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import {
  type ObjectId,
  type RecordRef,
  TensorFSError,
  parseObjectId,
  RecordOffsets,
  throwIfAborted,
} from '@tensorfs/format';
import { type FileSource, type ReadOptions, recordsSourceOf } from '@tensorfs/format/store';
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

export { type PieceReader, type ReadOptions, recordsSourceOf } from '@tensorfs/format/store';

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
      throw new TensorFSError('conflict', 'export destination is a directory', {
        details: { rule: 'export.is_directory', path: basename(dest) },
      });
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
