/**
 * Import of a file or a folder. Each regular file is planned and hashed once by `planAndHash`
 * (hashing on worker threads); every record's bytes arrive in `onRecord` exactly as hashed and are
 * admitted from memory only if absent; a blob record too big to be held (bytes null) is copied
 * from the file with hash-while-write and checked against the planner's digest.
 *
 * A folder may hold regular files, folders and relative symlinks that stay inside it. Anything
 * else (sockets, devices, FIFOs, absolute or escaping symlinks) is refused: a snapshot that
 * silently drops or rewrites entries would not be the tree the user imported. Empty folders are
 * not recorded (a manifest lists files and symlinks).
 */
import * as fsp from 'node:fs/promises';
import { basename, join } from 'node:path';
import {
  comparePaths,
  type ManifestEntry,
  type ObjectId,
  TensorFSError,
  throwIfAborted,
  validatePath,
  validateSymlinkTarget,
} from '@tensorfs/format';
import { planAndHash } from '@tensorfs/planner';
import { createNodeHasher } from '../hash/index.js';
import { fileHandleSource } from './file-source.js';
import { CHUNK_BYTES, errnoOf, ioError, readFully, shrank } from './fsutil.js';
import type { Lease } from './leases.js';
import { type Objects, type PutResult, writeAllv } from './objects.js';

/** Progress of an import. */
export interface Progress {
  /** Files finished. */
  files: number;
  filesTotal: number;
  /** Bytes planned and hashed so far. */
  bytes: number;
  bytesTotal: number;
  /** Bytes of new objects written so far. */
  bytesWritten: number;
  /** The file being imported (tree-relative). */
  path: string;
}

/** Options of {@link Store.importPath}. */
export interface ImportOptions {
  /** Ref to point at the snapshot once it is durable. Without it nothing roots the snapshot. */
  name?: string;
  /**
   * Compare-and-swap for `name`: the id the ref must hold now, or `null` if it must not exist
   * (`conflict` otherwise; the objects stay, unreferenced, for GC). Default: unconditional.
   */
  expected?: ObjectId | null;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
  /** Hashing worker threads (default: one per core). */
  threads?: number;
}

/** Result of {@link Store.importPath}. */
export interface ImportResult {
  /** The snapshot id (the manifest's digest). */
  snapshot: ObjectId;
  files: number;
  bytes: number;
  bytesWritten: number;
  objectsWritten: number;
}

interface Found {
  rel: string;
  abs: string;
  kind: 'file' | 'symlink';
  size: number;
  mode: number;
}

/** Entries of the tree at `abs` (a file gives one entry named by its basename). */
export async function scanTree(abs: string): Promise<Found[]> {
  let st: Awaited<ReturnType<typeof fsp.lstat>>;
  try {
    st = await fsp.lstat(abs);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT')
      throw new TensorFSError('not_found', 'nothing to import at this path', { details: { path: basename(abs) } });
    throw ioError(err, 'stat', basename(abs));
  }
  if (st.isFile()) return [{ rel: basename(abs), abs, kind: 'file', size: st.size, mode: st.mode }];
  if (!st.isDirectory()) {
    throw new TensorFSError('unsupported', 'only a regular file or a folder can be imported', {
      details: { path: basename(abs), rule: 'store.file_type' },
    });
  }
  // Walk with lstat semantics: a symlink (to a folder too) is recorded as a link, never followed
  // (Node 20's recursive readdir descends into linked folders and loops on a link to a parent).
  const out: Found[] = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    let dirents: import('node:fs').Dirent[];
    try {
      dirents = await fsp.readdir(dir, { withFileTypes: true });
    } catch (err) {
      throw ioError(err, 'readdir', prefix || basename(abs));
    }
    for (const d of dirents) {
      const file = join(dir, d.name);
      const rel = prefix ? `${prefix}/${d.name}` : d.name;
      if (d.isDirectory()) {
        await walk(file, rel);
        continue;
      }
      validatePath(rel); // fail before hashing anything if the manifest could not hold this name
      if (d.isFile()) {
        const s = await fsp.lstat(file).catch((err) => {
          throw ioError(err, 'stat', rel);
        });
        out.push({ rel, abs: file, kind: 'file', size: s.size, mode: s.mode });
      } else if (d.isSymbolicLink()) out.push({ rel, abs: file, kind: 'symlink', size: 0, mode: 0 });
      else {
        throw new TensorFSError('unsupported', 'the folder holds a special file (socket, device or FIFO)', {
          details: { path: rel, rule: 'store.file_type' },
        });
      }
    }
  };
  await walk(abs, '');
  // Manifest order (UTF-8 bytes), not UTF-16 code units: they differ for astral vs U+E000+ names.
  return out.sort((a, b) => comparePaths(a.rel, b.rel));
}

/** Streams `[offset, offset+length)` of an open file in 8 MiB chunks. */
async function* fileRange(fh: fsp.FileHandle, offset: number, length: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < length; at += CHUNK_BYTES) {
    const buf = new Uint8Array(Math.min(CHUNK_BYTES, length - at));
    await readFully(fh, offset + at, buf, (end) => shrank('file shrank while being imported', end));
    yield buf;
  }
}

/** Plans, hashes and admits every entry; returns the manifest entries and counts. */
export async function importTree(
  objects: Objects,
  lease: Lease,
  abs: string,
  options: ImportOptions,
): Promise<{ entries: ManifestEntry[]; files: number; bytes: number; bytesWritten: number; objectsWritten: number }> {
  const found = await scanTree(abs);
  const { signal, onProgress } = options;
  const progress: Progress = {
    files: 0,
    filesTotal: found.length,
    bytes: 0,
    bytesTotal: found.reduce((n, f) => n + f.size, 0),
    bytesWritten: 0,
    path: '',
  };
  let objectsWritten = 0;
  const entries: ManifestEntry[] = [];
  const hasher = createNodeHasher({ threads: options.threads });
  const counted = (r: PutResult): void => {
    if (r.written) {
      objectsWritten++;
      progress.bytesWritten += r.length;
    }
  };
  const flushes = new Flushes();
  try {
    for (const f of found) {
      throwIfAborted(signal);
      progress.path = f.rel;
      if (f.kind === 'symlink') {
        const target = await fsp.readlink(f.abs).catch((err) => {
          throw ioError(err, 'readlink', f.rel);
        });
        validateSymlinkTarget(f.rel, target);
        entries.push({ path: f.rel, kind: 'symlink', target });
      } else {
        const fh = await fsp.open(f.abs, 'r').catch((err) => {
          throw ioError(err, 'open', f.rel);
        });
        try {
          const size = (await fh.stat()).size;
          const plan = await planAndHash(fileHandleSource(fh, size), {
            hasher,
            signal,
            onRecord: async (record, bytes) => {
              if (bytes === null) {
                counted(
                  await objects.putStream(fileRange(fh, record.offset, record.length), {
                    expected: record.digest,
                    expectedLength: record.length,
                    lease: lease.id,
                    signal,
                  }),
                );
              } else if (objects.present(record.digest, lease.id, record.length) < 0) {
                // Write the temp now (the planner reuses these buffers once we return), but let
                // its fdatasync and publish run while the planner reads and hashes on.
                const tmp = await objects.fillTemp(async (out) => {
                  await writeAllv(out, bytes);
                  return record.length;
                });
                await flushes.add(async () => {
                  const published = await objects.publish(await objects.syncTemp(tmp), record.digest);
                  counted({ id: record.digest, length: record.length, written: published });
                });
              }
              progress.bytes += record.length;
              onProgress?.({ ...progress });
            },
          });
          entries.push({
            path: f.rel,
            kind: 'file',
            mode: f.mode & 0o111 ? 0o755 : 0o644,
            size: plan.size,
            profile: plan.profile,
            records: plan.records.map((r) => ({ digest: r.digest, length: r.length })),
          });
        } finally {
          await fh.close();
        }
      }
      progress.files++;
      onProgress?.({ ...progress });
    }
    await flushes.drain();
  } finally {
    await flushes.settle();
    await hasher.close();
  }
  return {
    entries,
    files: found.length,
    bytes: progress.bytesTotal,
    bytesWritten: progress.bytesWritten,
    objectsWritten,
  };
}

/** Temps being synced and published in the background, at most {@link Flushes.MAX} at once. */
class Flushes {
  static readonly MAX = 4;
  private readonly running = new Set<Promise<void>>();
  private failure: unknown;

  /** Starts `job`; waits first while {@link Flushes.MAX} are running. Rethrows an earlier failure. */
  async add(job: () => Promise<void>): Promise<void> {
    this.check();
    while (this.running.size >= Flushes.MAX) await Promise.race(this.running);
    this.check();
    const p: Promise<void> = job()
      .catch((err) => {
        this.failure ??= err;
      })
      .finally(() => this.running.delete(p));
    this.running.add(p);
  }

  /** Waits for every job; throws the first failure. */
  async drain(): Promise<void> {
    await this.settle();
    this.check();
  }

  /** Waits for every job, ignoring failures (cleanup path). */
  async settle(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running);
  }

  private check(): void {
    if (this.failure !== undefined) throw this.failure;
  }
}
