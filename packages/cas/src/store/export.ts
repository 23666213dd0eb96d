/**
 * Export from a local store: a snapshot's manifest read back, one file or a whole snapshot rebuilt
 * on disk byte-exact and atomically, never into the store itself.
 */
import * as fsp from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import {
  type Manifest,
  type ObjectId,
  type Progress,
  progressEvent,
  TensorFSError,
  decodeManifest,
  parseObjectId,
  throwIfAborted,
  validatePath,
} from '@tensorfs/format';
import { errnoOf, fsyncDir, ioError, mkdirDurable, siblingTemp } from './fsutil.js';
import type { Objects } from './objects.js';
import { type ReadOptions, writeRecordsFile } from './read.js';

/** Options of {@link LocalStore.exportSnapshot} and {@link LocalStore.exportFile}. */
export interface ExportOptions extends ReadOptions {
  signal?: AbortSignal;
  /** Called as bytes are written. */
  /**
   * Called as bytes are written and as each file is done: phase `export`, unit `bytes`, with
   * `files`/`filesTotal` and `bytes`/`bytesTotal`.
   */
  onProgress?: (p: Progress) => void;
}

/** Reads, verifies and decodes a manifest; `malformed` if the object is not one. */
export async function readManifest(objects: Objects, id: ObjectId): Promise<Manifest> {
  return decodeManifest(await objects.read(parseObjectId(id), true));
}

/** Rebuilds one file of a snapshot at `dest`, byte-exact and atomically (the store at `storeRoot`). */
export async function exportFile(
  objects: Objects,
  storeRoot: string,
  snapshot: ObjectId,
  path: string,
  dest: string,
  options: ExportOptions,
): Promise<void> {
  validatePath(path);
  const m = await readManifest(objects, snapshot);
  const entry = m.entries.find((e) => e.path === path);
  if (!entry)
    throw new TensorFSError('not_found', 'no such path in the snapshot', { details: { rule: 'store.no_path', path } });
  if (entry.kind !== 'file') {
    throw new TensorFSError('invalid_argument', 'not a regular file in the snapshot', {
      details: { rule: 'store.not_a_file', path },
    });
  }
  await refuseInsideStore(storeRoot, resolve(dest));
  await writeRecordsFile(objects, entry.records, resolve(dest), { ...options, mode: entry.mode });
}

/**
 * Rebuilds a whole snapshot under `destDir` (see {@link LocalStore.exportSnapshot}; the store at
 * `storeRoot`).
 */
export async function exportSnapshot(
  objects: Objects,
  storeRoot: string,
  snapshot: ObjectId,
  destDir: string,
  options: ExportOptions,
): Promise<{ files: number; bytes: number }> {
  const m = await readManifest(objects, snapshot);
  const root = resolve(destDir);
  const filesTotal = m.entries.length;
  const bytesTotal = m.entries.reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0);
  let files = 0;
  let bytes = 0;
  const report = () => options.onProgress?.(progressEvent('export', 'bytes', { files, filesTotal, bytes, bytesTotal }));
  await refuseInsideStore(storeRoot, root);
  try {
    await mkdirDurable(root);
  } catch (err) {
    const errno = errnoOf(err);
    if (errno === 'EEXIST' || errno === 'ENOTDIR') {
      throw new TensorFSError(
        'conflict',
        `export destination ${basename(root)} exists and is not a folder: remove it or choose another folder`,
        { details: { rule: 'export.not_a_folder', path: basename(root) } },
      );
    }
    throw ioError(err, 'create export folder');
  }
  for (const e of m.entries) {
    throwIfAborted(options.signal);
    validatePath(e.path);
    const dest = join(root, ...e.path.split('/'));
    await ensureParents(root, e.path);
    if (e.kind === 'file') {
      await writeRecordsFile(objects, e.records, dest, {
        ...options,
        mode: e.mode,
        onBytes: (n) => {
          bytes += n;
          report();
        },
      });
    } else {
      await replaceSymlink(e.target, dest);
    }
    files++;
    report();
  }
  return { files, bytes };
}

/** `invalid_argument` if `dest` (symlinks resolved as far as it exists) lies inside the store at `storeRoot`. */
async function refuseInsideStore(storeRoot: string, dest: string): Promise<void> {
  const real = async (p: string): Promise<string> => {
    const tail: string[] = [];
    for (let d = p; ; d = dirname(d)) {
      try {
        return join(await fsp.realpath(d), ...tail.reverse());
      } catch {
        if (dirname(d) === d) return p;
        tail.push(basename(d));
      }
    }
  };
  const store = await real(storeRoot);
  const at = await real(dest);
  if (at === store || at.startsWith(store.endsWith(sep) ? store : store + sep)) {
    throw new TensorFSError('invalid_argument', 'cannot export into the store itself', {
      details: { rule: 'export.inside_store', path: basename(dest) },
    });
  }
}

/** Creates the parent folders of `rel` under `root`, refusing to pass through a symlink or file. */
async function ensureParents(root: string, rel: string): Promise<void> {
  const parts = rel.split('/').slice(0, -1);
  let dir = root;
  for (const p of parts) {
    dir = join(dir, p);
    try {
      const st = await fsp.lstat(dir);
      if (!st.isDirectory()) {
        throw new TensorFSError('conflict', 'export path passes through a non-directory', {
          details: { rule: 'export.not_a_folder', path: rel },
        });
      }
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw ioError(err, 'export', rel);
      try {
        await fsp.mkdir(dir);
        await fsyncDir(dirname(dir));
      } catch (e) {
        if (errnoOf(e) !== 'EEXIST') throw ioError(e, 'mkdir', rel);
      }
    }
  }
}

/** Replaces `dest` with a symlink to `target` atomically (temp link + rename + dir fsync). */
async function replaceSymlink(target: string, dest: string): Promise<void> {
  const tmp = siblingTemp(dest);
  try {
    await fsp.symlink(target, tmp);
    await fsp.rename(tmp, dest);
    await fsyncDir(dirname(dest));
  } catch (err) {
    await fsp.rm(tmp, { force: true });
    throw ioError(err, 'symlink', basename(dest));
  }
}
