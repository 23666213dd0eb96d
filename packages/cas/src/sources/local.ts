/**
 * A local file or folder as a source of the import pipeline, so any `Store` (the in-memory one, a
 * folder origin) can import files, and local files can be imported together with remote ones in
 * one snapshot. A folder's regular files and relative symlinks inside it are taken (a special
 * file is `unsupported`); a file that changes between the scan and its read is `conflict`. Each
 * file offers positioned reads ({@link SourceFile.reader}): opened without following a symlink
 * or blocking on a FIFO put in its place, checked on the open handle against what the scan saw
 * (device, inode, size, times in nanoseconds), read with preads into the pipeline's buffers, and
 * checked again once every byte was read.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { checkObjects, checkString } from '../store/args.js';
import { errnoOf } from '../store/fsutil.js';
import {
  changedError,
  type ContentDigest,
  type Found,
  scanTree,
  type Stamp,
  stampChange,
  stampOf,
} from '../store/import.js';
import { TensorFSError, validateSymlinkTarget, wrongArgument } from '@tensorfs/format';
import type { FileReader, OpenedRange, Source, SourceFile, SourceLink } from './source.js';

/** Where a local import came from (recorded like any source's metadata). */
export interface LocalProvenance {
  kind: 'local';
  /** The absolute path imported. */
  path: string;
  files: number;
}

interface Scanned {
  rel: string;
  abs: string;
  size: number;
  stamp: Stamp;
  executable: boolean;
  expect?: ContentDigest;
}

/** The I/O error of a local read, without the local path. */
function readError(rel: string, op: string, err: unknown): TensorFSError {
  const errno = errnoOf(err);
  if (errno === 'EACCES' || errno === 'EPERM') {
    return new TensorFSError('denied', `permission denied (${op})`, {
      details: { rule: 'import.denied', op, errno, path: rel },
      cause: err,
    });
  }
  return new TensorFSError('io', `${op} failed${errno ? ` (${errno})` : ''}`, {
    details: { rule: 'import.io', op, path: rel, ...(errno ? { errno } : {}) },
    cause: err,
  });
}

/** Opens a scanned file for preads (see the module comment). */
async function openReader(f: Scanned): Promise<FileReader> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(f.abs, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (err) {
    const errno = errnoOf(err);
    if (errno === 'ELOOP') throw changedError(f.rel, 'replaced by a symlink');
    if (errno === 'ENOENT' || errno === 'ENOTDIR') throw changedError(f.rel, 'removed');
    if (errno === 'ENXIO') throw changedError(f.rel, 'replaced by a special file');
    throw readError(f.rel, 'open', err);
  }
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await fh.close().catch(() => {});
  };
  /** The change since the scan, by the handle and by the name; null if none. */
  const change = async (): Promise<string | null> => {
    const handle = await fh.stat({ bigint: true }).then(stampOf, () => null);
    const name = await fsp.lstat(f.abs, { bigint: true }).then(stampOf, () => null);
    return (
      (handle === null ? null : stampChange(f.stamp, handle)) ??
      (name === null ? 'removed' : stampChange(f.stamp, name))
    );
  };
  try {
    const now = stampChange(f.stamp, stampOf(await fh.stat({ bigint: true })));
    if (now !== null) throw changedError(f.rel, now);
  } catch (err) {
    await close();
    throw err instanceof TensorFSError ? err : readError(f.rel, 'stat', err);
  }
  return {
    async readInto(offset: number, target: Uint8Array): Promise<void> {
      let at = 0;
      while (at < target.length) {
        let n: number;
        try {
          ({ bytesRead: n } = await fh.read(target, at, target.length - at, offset + at));
        } catch (err) {
          throw readError(f.rel, 'read', err);
        }
        if (n === 0) throw changedError(f.rel, 'size');
        at += n;
      }
    },
    async verify(cause?: unknown): Promise<void> {
      const what = await change();
      if (what !== null) throw changedError(f.rel, what, cause);
    },
    close,
  };
}

/** A scanned link's target, read and checked as `importPath` reads it (`conflict` if it was swapped). */
async function linkTarget(rel: string, abs: string, stamp: Stamp): Promise<string> {
  const target = await fsp.readlink(abs).catch((err) => {
    const errno = errnoOf(err);
    if (errno === 'ENOENT' || errno === 'EINVAL') throw changedError(rel, 'type', err);
    throw readError(rel, 'readlink', err);
  });
  const now = await fsp.lstat(abs, { bigint: true }).then(stampOf, () => null);
  const what = now === null ? 'removed' : stampChange(stamp, now);
  if (what !== null) throw changedError(rel, what);
  if (target.startsWith('/')) {
    throw new TensorFSError(
      'invalid_argument',
      'symlink target is absolute (only links inside the folder can be imported)',
      {
        details: { rule: 'import.symlink_absolute', path: rel, target },
      },
    );
  }
  validateSymlinkTarget(rel, target);
  return target;
}

/** `path` (a file: one file named by its base name; a folder: its tree) as a pipeline source. */
export function localSource(path: string): Source<LocalProvenance> {
  checkString(path, 'path');
  const root = resolve(path);
  return {
    async resolve() {
      // The local store's own scan: raw (non-UTF-8) names refused by name, the argument followed
      // when it is a symlink, links inside recorded, never followed, special files refused.
      const resolved = await scannedFiles(await scanTree(root));
      return {
        label: `local ${basename(root)}`,
        voice: LOCAL_VOICE,
        ...resolved,
        provenance: () => ({ kind: 'local', path: root, files: resolved.files.length }),
      };
    },
  };
}

/** The words of local reads' errors (`import.*` rules). */
const LOCAL_VOICE = { rules: 'import', who: 'the local file' } as const;

/**
 * Entries scanned elsewhere (`scanTree`'s, or the Hugging Face cache scan's, whose files are its
 * blobs) as a pipeline source: each file read from its `abs` with the local source's race checks,
 * a file's `expect`ed digest announced (checked by the pipeline over the very bytes imported; a
 * mismatch is `corrupt` with the entry's own rule), a link's `target` taken as scanned (or read
 * and checked now when the scan left it out).
 */
export function scannedSource<P>(
  found: readonly Found[],
  label: string,
  provenance: (digests: ReadonlyMap<string, string>) => P,
): Source<P> {
  checkObjects(found, 'found');
  checkString(label, 'label');
  if (typeof provenance !== 'function') wrongArgument('store', 'provenance', 'a function', provenance);
  return {
    async resolve() {
      return { label, voice: LOCAL_VOICE, ...(await scannedFiles(found)), provenance };
    },
  };
}

/** The files and links of scanned entries (see {@link scannedSource}). */
async function scannedFiles(scanned: readonly Found[]): Promise<{ files: SourceFile[]; links: SourceLink[] }> {
  const found: Scanned[] = [];
  const links: SourceLink[] = [];
  for (const f of scanned) {
    if (f.kind === 'file') {
      found.push({
        rel: f.rel,
        abs: f.abs,
        size: f.size,
        stamp: f.stamp,
        executable: (f.mode & 0o111) !== 0,
        ...(f.expect ? { expect: f.expect } : {}),
      });
      continue;
    }
    links.push({ path: f.rel, symlink: f.target ?? (await linkTarget(f.rel, f.abs, f.stamp)) });
  }
  const files: SourceFile[] = found.map((f) => ({
    path: f.rel,
    size: f.size,
    executable: f.executable,
    ...(f.expect ? announced(f.expect) : {}),
    check: async () => {
      const now = await fsp.lstat(f.abs, { bigint: true }).catch(() => null);
      if (now === null) throw changedError(f.rel, 'removed');
      const what = stampChange(f.stamp, stampOf(now));
      if (what !== null) throw changedError(f.rel, what);
    },
    reader: () => openReader(f),
    open: async (start: number, end: number | undefined): Promise<OpenedRange> => {
      if (end !== undefined && end <= start) return { body: (async function* () {})(), skip: 0 };
      const stream = fs.createReadStream(f.abs, { start, ...(end !== undefined ? { end: end - 1 } : {}) });
      return { body: stream, skip: 0 };
    },
  }));
  return { files, links };
}

/** A scanned entry's expected digest as the pipeline checks it, with the entry's own mismatch error. */
function announced(expect: ContentDigest): Pick<SourceFile, 'digest' | 'digestError'> {
  return {
    digest: { algorithm: expect.algorithm === 'sha256' ? 'sha256' : 'git-blob', hex: expect.hex },
    digestError: (actual) =>
      new TensorFSError(
        'corrupt',
        `${expect.source}: its bytes do not match its name (${expect.algorithm} ${actual})`,
        { details: { rule: expect.rule, path: expect.source, expected: expect.hex, actual } },
      ),
  };
}
