/**
 * What an import of local files is given and gives back (`LocalStore.importPath`, which runs the
 * one import pipeline, `importSources`, with the local source), and the scan of a file or folder
 * both the local source and the Hugging Face cache scan use.
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
  type ObjectId,
  type Progress,
  TensorFSError,
  validatePath,
  wrongArgument,
} from '@tensorfs/format';
import type { Seams } from '@tensorfs/planner';
import { checkObject, checkString } from './args.js';
import { errnoOf, ioError } from './fsutil.js';

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
  /**
   * Called as bytes are hashed and as each file is done: phase `import`, unit `bytes`, with
   * `files`/`filesTotal`, `bytes`/`bytesTotal`, `bytesWritten` (new objects' bytes) and `path`.
   */
  onProgress?: (p: Progress) => void;
  /** Hashing worker threads (default: one per core). */
  threads?: number;
  /**
   * Extra cut points inside tensors, per file: tree-relative path (the file itself when importing
   * one file: its base name) → tensor name → byte offsets, exactly as `planAndHash`'s `seams`
   * (e.g. where a fused `qkv_proj` splits into q, k and v, so the split form shares its objects).
   * Seams move cut points, never bytes. A seam naming no tensor of its file is `invalid_argument`
   * (`planner.seam_tensor`); paths without seams are planned as usual.
   */
  seams?: Readonly<Record<string, Seams>>;
  /**
   * Also compute and record each multi-record file's whole-file SHA-256 (`_hf/sha256/<tree>`),
   * for a Hugging Face server's first `HEAD`: one more SHA-256 pass over every byte (default
   * false; `importSources`' `fileSha256`).
   */
  fileSha256?: boolean;
}

/** Result of {@link Store.importPath}. */
export interface ImportResult {
  /** The snapshot id (the manifest's digest). */
  snapshot: ObjectId;
  files: number;
  bytes: number;
  bytesWritten: number;
  objectsWritten: number;
  /**
   * `importEntries` only: the SHA-256 (hex) of each file of several records whose digest is known
   * (announced by the entry, or computed with `fileSha256`), by path, for the caller to record
   * (`recordFileSha256`) once it names the snapshot. `importPath` records them itself, with or
   * without `name`.
   */
  fileSha256?: ReadonlyMap<string, string>;
}

/** One entry of a scanned tree: `rel` in the snapshot, read from `abs`. */
export interface Found {
  rel: string;
  abs: string;
  kind: 'file' | 'symlink';
  size: number;
  mode: number;
  /** The file's identity and change stamps when it was scanned (lstat, nanoseconds). */
  stamp: Stamp;
  /**
   * A digest the whole file's bytes must have (a Hugging Face cache blob is named by one), checked
   * over the very bytes imported; a mismatch is `corrupt` with `rule`.
   */
  expect?: ContentDigest;
  /** For a symlink entry: its target, already read and checked by the scanner. */
  target?: string;
}

/**
 * A whole-file digest to check: `sha256` of the bytes, or `git-sha1`, git's blob id
 * (SHA-1 of `blob <length>\0` followed by the bytes).
 */
export interface ContentDigest {
  algorithm: 'sha256' | 'git-sha1';
  /** Lowercase hex. */
  hex: string;
  /** The error rule on a mismatch, e.g. `hf_cache.blob_digest`. */
  rule: string;
  /** What names the file in the message (e.g. `blobs/<name>`). */
  source: string;
}

/**
 * What says a file is still the one that was scanned and has not changed since: device and inode
 * (the same file, not a swapped one), type, size, and modification and status-change times in
 * nanoseconds (git's racy-file check uses the same fields). Any write changes mtime and ctime.
 */
export interface Stamp {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  regular: boolean;
  symlink: boolean;
}

/**
 * The stamp of a `bigint: true` lstat/fstat result.
 * @throws `invalid_argument` (`store.argument`) when `st` is not such a result.
 */
export function stampOf(st: import('node:fs').BigIntStats): Stamp {
  if (typeof st !== 'object' || st === null || typeof st.isFile !== 'function' || typeof st.ino !== 'bigint') {
    wrongArgument('store', 'st', 'the result of lstat or fstat with { bigint: true }', st);
  }
  return {
    dev: st.dev,
    ino: st.ino,
    size: st.size,
    mtimeNs: st.mtimeNs,
    ctimeNs: st.ctimeNs,
    regular: st.isFile(),
    symlink: st.isSymbolicLink(),
  };
}

/**
 * The field that differs between two stamps (`type`, `inode`, `size`, `mtime`, `ctime`, checked in
 * that order), or null if they are equal.
 * @throws `invalid_argument` (`store.argument`) when either is not an object.
 */
export function stampChange(a: Stamp, b: Stamp): string | null {
  checkObject(a, 'a');
  checkObject(b, 'b');
  if (a.regular !== b.regular || a.symlink !== b.symlink) return 'type';
  if (a.dev !== b.dev || a.ino !== b.ino) return 'inode';
  if (a.size !== b.size) return 'size';
  if (a.mtimeNs !== b.mtimeNs) return 'mtime';
  if (a.ctimeNs !== b.ctimeNs) return 'ctime';
  return null;
}

/** `conflict`: the source changed (was rewritten, replaced, swapped) while it was imported. */
export function changedError(rel: string, change: string, cause?: unknown): TensorFSError {
  return new TensorFSError('conflict', `${rel} changed while it was being imported (${change}); import it again`, {
    details: { rule: 'import.source_changed', path: rel, actual: change },
    ...(cause !== undefined ? { cause } : {}),
  });
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** A file name as text; `invalid_argument` naming it if it is not UTF-8 (manifests hold UTF-8 paths). */
function utf8Name(raw: Buffer, prefix: string): string {
  try {
    return strictUtf8.decode(raw);
  } catch {
    const shown = raw.toString('utf8'); // with U+FFFD where the bytes are not UTF-8
    throw new TensorFSError(
      'invalid_argument',
      `file name is not UTF-8: ${JSON.stringify(shown)}; rename it to import`,
      {
        details: {
          rule: 'import.name_not_utf8',
          path: prefix ? `${prefix}/${shown}` : shown,
          bytes: raw.toString('hex'),
        },
      },
    );
  }
}

/**
 * The entries of the file or folder at `given`, sorted in manifest order (a file gives one entry
 * named by its base name; a symlink argument is followed, links inside a folder are entries of
 * their own), each with the stamp it had when scanned.
 * @throws {TensorFSError} `not_found` (`import.not_found`), `unsupported` (`store.file_type`: a
 *   special file), `invalid_argument` (`import.name_not_utf8`, a path a manifest cannot hold),
 *   `denied` (`import.denied`), `io`.
 */
export async function scanTree(given: string): Promise<Found[]> {
  checkString(given, 'path');
  const name = basename(given);
  let abs = given;
  let st: import('node:fs').BigIntStats;
  try {
    st = await fsp.lstat(abs, { bigint: true });
    if (st.isSymbolicLink()) {
      // The argument itself may be a symlink (a Hugging Face cache snapshot is one, or links
      // to blobs): follow it, as inspect and plan do; links inside a folder stay links.
      abs = await fsp.realpath(given);
      st = await fsp.lstat(abs, { bigint: true });
    }
  } catch (err) {
    if (errnoOf(err) === 'ENOENT')
      throw new TensorFSError('not_found', 'nothing to import at this path', {
        details: { rule: 'import.not_found', path: name },
      });
    throw accessError(err, 'stat', name);
  }
  if (st.isFile()) {
    return [{ rel: name, abs, kind: 'file', size: Number(st.size), mode: Number(st.mode), stamp: stampOf(st) }];
  }
  if (!st.isDirectory()) {
    throw new TensorFSError('unsupported', 'only a regular file or a folder can be imported', {
      details: { path: name, rule: 'store.file_type' },
    });
  }
  // Walk with lstat semantics: a symlink (to a folder too) is recorded as a link, never followed
  // (Node 20's recursive readdir descends into linked folders and loops on a link to a parent).
  const out: Found[] = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    let dirents: import('node:fs').Dirent<Buffer>[];
    try {
      // Raw names: a name that is not UTF-8 would otherwise come back with U+FFFD in it, and the
      // file would then be looked up (and reported missing) under that mangled name.
      dirents = await fsp.readdir(dir, { withFileTypes: true, encoding: 'buffer' });
    } catch (err) {
      throw accessError(err, 'readdir', prefix || name);
    }
    for (const d of dirents) {
      const name = utf8Name(d.name, prefix);
      const file = join(dir, name);
      const rel = prefix ? `${prefix}/${name}` : name;
      if (d.isDirectory()) {
        await walk(file, rel);
        continue;
      }
      validatePath(rel); // fail before hashing anything if the manifest could not hold this name
      if (d.isFile() || d.isSymbolicLink()) {
        const s = await fsp.lstat(file, { bigint: true }).catch((err) => {
          if (errnoOf(err) === 'ENOENT') throw changedError(rel, 'removed', err);
          throw ioError(err, 'stat', rel);
        });
        const stamp = stampOf(s);
        if (d.isFile() ? !stamp.regular : !stamp.symlink) throw changedError(rel, 'type');
        if (stamp.regular)
          out.push({ rel, abs: file, kind: 'file', size: Number(s.size), mode: Number(s.mode), stamp });
        else out.push({ rel, abs: file, kind: 'symlink', size: 0, mode: 0, stamp });
      } else {
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

/** A permission error is `denied` (as inspect and plan say), anything else `io`. */
function accessError(err: unknown, op: string, path: string): TensorFSError {
  const errno = errnoOf(err);
  if (errno === 'EACCES' || errno === 'EPERM') {
    return new TensorFSError('denied', `permission denied (${op})`, {
      details: { rule: 'import.denied', op, errno, path },
      cause: err,
    });
  }
  return ioError(err, op, path);
}
