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
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, join } from 'node:path';
import {
  comparePaths,
  type ManifestEntry,
  type ObjectId,
  type Progress,
  progressEvent,
  TensorFSError,
  isTensorFSError,
  throwIfAborted,
  validatePath,
  validateSymlinkTarget,
  wrongArgument,
} from '@tensorfs/format';
import { planAndHash, type ReadRecord, type Seams } from '@tensorfs/planner';
import { createNodeHasher } from '../hash/index.js';
import { checkObject, checkString } from './args.js';
import { DIRECT_ALIGN, DIRECT_MIN_BYTES } from './direct.js';
import { WholeFileHashes } from './file-sha256.js';
import { fileHandleSource } from './file-source.js';
import { CHUNK_BYTES, errnoOf, ioError, readFully } from './fsutil.js';
import type { Lease } from './leases.js';
import { admitGroup, type GroupItem } from './group.js';
import { hashChunks, type Objects, type OpenTemp, type PutResult, type Temp } from './objects.js';

/** The running counts of an import, reported as a {@link Progress} (phase `import`, unit `bytes`). */
interface ImportCounts {
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
   * `importEntries` only: the SHA-256 (hex) of each file of several records, by path, for the
   * caller to record (`recordFileSha256`) once it names the snapshot. `importPath` records them
   * itself, with or without `name`.
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
function changedError(rel: string, change: string, cause?: unknown): TensorFSError {
  return new TensorFSError('conflict', `${rel} changed while it was being imported (${change}); import it again`, {
    details: { rule: 'import.source_changed', path: rel, actual: change },
    ...(cause !== undefined ? { cause } : {}),
  });
}

/** lstat of `abs` as a stamp; null if it is gone. */
async function lstamp(abs: string): Promise<Stamp | null> {
  try {
    return stampOf(await fsp.lstat(abs, { bigint: true }));
  } catch {
    return null;
  }
}

/**
 * Opens a scanned regular file for reading without following a symlink put in its place
 * (`O_NOFOLLOW`) and without blocking on a FIFO put in its place (`O_NONBLOCK`), then checks the
 * handle is the very file scanned (device, inode, type, size, times): anything else is `conflict`.
 */
async function openScanned(f: Found): Promise<fsp.FileHandle> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(f.abs, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (err) {
    const errno = errnoOf(err);
    if (errno === 'ELOOP') throw changedError(f.rel, 'replaced by a symlink', err);
    if (errno === 'ENOENT' || errno === 'ENOTDIR') throw changedError(f.rel, 'removed', err);
    if (errno === 'ENXIO') throw changedError(f.rel, 'replaced by a special file', err);
    throw accessError(err, 'open', f.rel);
  }
  try {
    const change = stampChange(f.stamp, stampOf(await fh.stat({ bigint: true })));
    if (change !== null) throw changedError(f.rel, change);
    return fh;
  } catch (err) {
    await fh.close();
    throw ioError(err, 'stat', f.rel);
  }
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

function isChanged(err: TensorFSError): boolean {
  return err.details.rule === 'import.source_changed';
}

/** `conflict` (with `cause`) unless both the open handle and the name still show the scanned file unchanged. */
async function checkUnchanged(f: Found, fh: fsp.FileHandle, cause?: unknown): Promise<void> {
  let handle: Stamp | null = null;
  try {
    handle = stampOf(await fh.stat({ bigint: true }));
  } catch {
    // an unreadable handle is judged by the name alone
  }
  const name = await lstamp(f.abs);
  const change =
    (handle === null ? null : stampChange(f.stamp, handle)) ?? (name === null ? 'removed' : stampChange(f.stamp, name));
  if (change !== null) throw changedError(f.rel, change, cause);
}

/** Streams `[offset, offset+length)` of an open file in 8 MiB chunks. */
async function* fileRange(fh: fsp.FileHandle, offset: number, length: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < length; at += CHUNK_BYTES) {
    const buf = new Uint8Array(Math.min(CHUNK_BYTES, length - at));
    await readFully(
      fh,
      offset + at,
      buf,
      (end) =>
        new TensorFSError('conflict', 'file shrank while being imported', {
          details: { rule: 'import.source_changed', offset: end },
        }),
    );
    yield buf;
  }
}

/** What {@link importTree} and {@link importFound} return. */
export interface TreeImport {
  entries: ManifestEntry[];
  files: number;
  bytes: number;
  bytesWritten: number;
  objectsWritten: number;
  /** The SHA-256 (hex) of each file of several records, by path (see `file-sha256.ts`). */
  fileSha256: Map<string, string>;
}

/** Plans, hashes and admits every entry; returns the manifest entries and counts. */
export async function importTree(
  objects: Objects,
  lease: Lease,
  abs: string,
  options: ImportOptions,
): Promise<TreeImport> {
  return importFound(objects, lease, await scanTree(abs), options);
}

/**
 * Imports entries scanned elsewhere (sorted by `rel`, as {@link scanTree} gives them): each file
 * read from its `abs` with the same race checks, each `expect`ed digest checked.
 */
export async function importFound(
  objects: Objects,
  lease: Lease,
  found: readonly Found[],
  options: ImportOptions,
): Promise<TreeImport> {
  const { signal, onProgress } = options;
  const progress: ImportCounts = {
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
  const wholes = new WholeFileHashes();
  const fileSha256 = new Map<string, string>();
  const counted = (r: PutResult): void => {
    if (r.written) {
      objectsWritten++;
      progress.bytesWritten += r.length;
    }
  };
  const flushes = new Flushes();
  const early = new EarlyTemps(objects, lease.id);
  const group = new SmallGroup(objects, lease.id, signal, counted);
  try {
    for (const f of found) {
      throwIfAborted(signal);
      progress.path = f.rel;
      if (f.kind === 'symlink' && f.target !== undefined) {
        entries.push({ path: f.rel, kind: 'symlink', target: f.target });
      } else if (f.kind === 'symlink') {
        const target = await fsp.readlink(f.abs).catch((err) => {
          if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'EINVAL') throw changedError(f.rel, 'type', err);
          throw ioError(err, 'readlink', f.rel);
        });
        // A link swapped for another between the scan and the readlink has a new inode.
        const now = await lstamp(f.abs);
        const change = now === null ? 'removed' : stampChange(f.stamp, now);
        if (change !== null) throw changedError(f.rel, change);
        if (target.startsWith('/')) {
          throw new TensorFSError(
            'invalid_argument',
            'symlink target is absolute (only links inside the folder can be imported)',
            {
              details: { rule: 'import.symlink_absolute', path: f.rel, target },
            },
          );
        }
        validateSymlinkTarget(f.rel, target);
        entries.push({ path: f.rel, kind: 'symlink', target });
      } else {
        const fh = await openScanned(f);
        try {
          const size = f.size;
          const seams = options.seams?.[f.rel];
          const whole = f.expect ? new WholeFile(f.expect, size) : undefined;
          const sha256 = wholes.file(size);
          const plan = await planAndHash(fileHandleSource(fh, size), {
            hasher,
            signal,
            // Big records start page-aligned in the hasher's page-aligned buffers: written with O_DIRECT.
            ...(objects.directIO ? { align: DIRECT_ALIGN } : {}),
            ...(seams ? { seams } : {}),
            // Write a temp while the record hashes (and start its fdatasync), when it is likely new.
            onRead: (record, bytes) => early.start(record, bytes),
            onRecord: async (record, bytes) => {
              whole?.add(record.digest, bytes);
              const hashed = sha256.add(record, bytes);
              hashed.catch(() => {});
              const temp = early.take(record.index);
              if (bytes === null) {
                // Read again from the file: bytes that differ from what was hashed mean the
                // source changed (conflict), not that the store is damaged.
                const put = await objects
                  .putStream(fileRange(fh, record.offset, record.length), {
                    expected: record.digest,
                    expectedLength: record.length,
                    lease: lease.id,
                    signal,
                  })
                  .catch((err) => {
                    if (isTensorFSError(err) && err.code === 'corrupt') throw changedError(f.rel, 'content', err);
                    throw err;
                  });
                counted(put);
              } else if (record.length <= SMALL_RECORD) {
                // Small: copied and admitted with its group (one decision, one durability point).
                if (temp) await flushes.add(() => early.discard(temp));
                await group.add(record.digest, bytes, record.length);
              } else if (objects.present(record.digest, lease.id, record.length) >= 0) {
                early.decided(false);
                if (temp) await flushes.add(() => early.discard(temp));
              } else {
                early.decided(true);
                // Publish (link into objects/) only once the temp's bytes are durable; the digest
                // was computed over the very bytes the temp was written from.
                if (temp) {
                  await flushes.add(async () => {
                    const published = await objects.publish(await early.synced(temp), record.digest);
                    counted({ id: record.digest, length: record.length, written: published });
                  });
                } else {
                  // Write the temp now (the planner reuses these buffers once we return), but let
                  // its fdatasync and publish run while the planner reads and hashes on.
                  const tmp = await objects.fillTempFrom(bytes, record.length);
                  await flushes.add(async () => {
                    const published = await objects.publish(await early.sync(tmp), record.digest);
                    counted({ id: record.digest, length: record.length, written: published });
                  });
                }
              }
              progress.bytes += record.length;
              onProgress?.(progressEvent('import', 'bytes', progress));
              await hashed;
            },
          });
          const hex = await sha256.finish();
          if (hex !== undefined) fileSha256.set(f.rel, hex);
          // After every byte was read: the handle and the name must still be the file scanned,
          // unchanged (a write during the read would have moved mtime/ctime).
          await checkUnchanged(f, fh);
          if (whole) await whole.check(fh, signal);
          entries.push({
            path: f.rel,
            kind: 'file',
            mode: f.mode & 0o111 ? 0o755 : 0o644,
            size: plan.size,
            profile: plan.profile,
            records: plan.records.map((r) => ({ digest: r.digest, length: r.length })),
          });
        } catch (err) {
          // Whatever failed (a header that stopped parsing, a short read), if the file changed
          // meanwhile that is the cause to report.
          if (!isTensorFSError(err) || (err.code !== 'cancelled' && !isChanged(err))) {
            await checkUnchanged(f, fh, err);
          }
          throw err;
        } finally {
          await fh.close();
        }
      }
      progress.files++;
      onProgress?.(progressEvent('import', 'bytes', progress));
    }
    await group.flush();
    await flushes.drain();
  } finally {
    await flushes.settle();
    await early.abandon();
    await hasher.close();
    await wholes.close();
  }
  return {
    entries,
    files: found.length,
    bytes: progress.bytesTotal,
    bytesWritten: progress.bytesWritten,
    objectsWritten,
    fileSha256,
  };
}

/**
 * A whole file's digest computed from the planner's records as they arrive (in file order, the
 * very bytes imported). A record too big to be buffered (`bytes` null) is the file's only record
 * (`blob-v1`): its digest is the file's SHA-256; git's SHA-1 then needs one more read of the file.
 */
class WholeFile {
  private readonly hash: ReturnType<typeof createHash>;
  private unbuffered: ObjectId | null = null;

  constructor(
    private readonly expect: ContentDigest,
    private readonly size: number,
  ) {
    this.hash = createHash(expect.algorithm === 'sha256' ? 'sha256' : 'sha1');
    if (expect.algorithm === 'git-sha1') this.hash.update(`blob ${size}\0`);
  }

  add(digest: ObjectId, bytes: readonly Uint8Array[] | null): void {
    if (bytes === null) this.unbuffered = digest;
    else for (const b of bytes) this.hash.update(b);
  }

  /** `corrupt` with the expected rule unless the bytes have the expected digest. */
  async check(fh: fsp.FileHandle, signal?: AbortSignal): Promise<void> {
    let actual: string;
    if (this.unbuffered !== null && this.expect.algorithm === 'sha256') {
      actual = this.unbuffered.slice('sha256:'.length);
    } else {
      if (this.unbuffered !== null) {
        for await (const chunk of fileRange(fh, 0, this.size)) {
          throwIfAborted(signal);
          this.hash.update(chunk);
        }
      }
      actual = this.hash.digest('hex');
    }
    if (actual !== this.expect.hex) {
      throw new TensorFSError(
        'corrupt',
        `${this.expect.source}: its bytes do not match its name (${this.expect.algorithm} ${actual})`,
        { details: { rule: this.expect.rule, path: this.expect.source, expected: this.expect.hex, actual } },
      );
    }
  }
}

/**
 * Records at most this long are admitted in groups ({@link admitGroup}): copied out of the
 * planner's buffers, decided together in one transaction, written to temps closed at once, made
 * durable together. Larger ones (those `directIO` writes with O_DIRECT) keep the overlapped path:
 * a temp written while the record hashes, fdatasynced on its own.
 */
export const SMALL_RECORD = DIRECT_MIN_BYTES - 1;

/** A group is admitted once it holds this many objects or {@link GROUP_BYTES} bytes. */
const GROUP_OBJECTS = 16384;
const GROUP_BYTES = 64 << 20;

/** The small records of an import waiting for their group commit. */
class SmallGroup {
  private items: GroupItem[] = [];
  private bytes = 0;

  constructor(
    private readonly objects: Objects,
    private readonly lease: string,
    private readonly signal: AbortSignal | undefined,
    private readonly counted: (r: PutResult) => void,
  ) {}

  /** Copies the record's bytes (the planner reuses its buffers) and admits the group when full. */
  async add(id: ObjectId, chunks: readonly Uint8Array[], length: number): Promise<void> {
    const copy = new Uint8Array(length);
    let at = 0;
    for (const c of chunks) {
      copy.set(c, at);
      at += c.length;
    }
    this.items.push({ id, chunks: [copy], length });
    this.bytes += length;
    if (this.items.length >= GROUP_OBJECTS || this.bytes >= GROUP_BYTES) await this.flush();
  }

  /** Admits what is collected; its objects and names are durable when this resolves. */
  async flush(): Promise<void> {
    const items = this.items;
    this.items = [];
    this.bytes = 0;
    for (const r of await admitGroup(this.objects, items, { lease: this.lease, signal: this.signal })) this.counted(r);
  }
}

/** Temps being synced and published in the background, at most {@link Flushes.MAX} at once. */
class Flushes {
  static readonly MAX = 8;
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

/** A temp written from a record's bytes before its digest was known. */
interface Early {
  /** Settles when the bytes are in the temp, still open until its sync (the planner may then reuse its buffer). */
  written: Promise<OpenTemp>;
  /** The synced temp, or null once it was discarded before its sync started. */
  synced: Promise<Temp | null>;
  discarded: boolean;
}

/**
 * First-import overlap: temps written while their records hash. A record read from the source
 * is written to a temp at once and its fdatasync queued (at most {@link EarlyTemps.SYNCS} at a
 * time, so the reads and writes always find a free libuv thread); once its digest is known the
 * caller publishes the synced temp, or discards it if the object turned out to be present.
 *
 * Writing before knowing the digest wastes a write for an object the store already has, so it
 * happens only while records look new: the first record of a file is checked directly when it is
 * small (a header object already present means a re-import or a fine-tune), every later one
 * follows the last decision made (`decided`). Nothing here publishes: publishing stays with the
 * caller, after the sync and the digest check.
 */
class EarlyTemps {
  /**
   * fdatasyncs in flight at once. libuv's pool has 4 threads and the planner's next read needs one;
   * with buffered writes each sync writes its 8 MiB out, and three at a time kept the disk busier
   * than two (imp17: default-mode import 14–18 % less wall time under load, directIO unchanged).
   */
  static readonly SYNCS = 3;
  /** Records at most this long are hashed here to decide whether a file looks new. */
  static readonly PROBE_BYTES = 1 << 20;
  /** Early temps (each an open descriptor until its sync) at most at once. */
  static readonly OPEN = 16;
  private readonly open = new Map<number, Early>();
  private readonly all = new Set<Early>();
  private lastNew: boolean;
  private syncing = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly objects: Objects,
    private readonly lease: string,
  ) {
    this.lastNew = storeLooksEmpty(objects);
  }

  /** The planner's `onRead`: writes a temp for the record if it looks new. */
  start(record: ReadRecord, bytes: readonly Uint8Array[]): Promise<void> | undefined {
    if (record.index === 0 && record.length <= EarlyTemps.PROBE_BYTES) {
      const { id } = hashChunks(bytes);
      this.lastNew = this.objects.present(id, this.lease, record.length) < 0;
    }
    if (!this.lastNew || record.length <= SMALL_RECORD || this.all.size >= EarlyTemps.OPEN) return undefined;
    // Left open until its sync (a temp closed and re-opened to sync can lose a writeback error):
    // at most OPEN early temps at a time, later records take the path without one.
    const written = this.objects.fillTempFrom(bytes, record.length);
    const early: Early = { written, synced: Promise.resolve(null), discarded: false };
    early.synced = written.then((tmp) =>
      this.limited(() => (early.discarded ? this.drop(tmp) : this.objects.syncTemp(tmp))),
    );
    early.synced.catch(() => {});
    this.open.set(record.index, early);
    this.all.add(early);
    return written.then(() => undefined);
  }

  /** The early temp of record `index`, if one was started (the caller now owns it). */
  take(index: number): Early | undefined {
    const early = this.open.get(index);
    this.open.delete(index);
    return early;
  }

  /** Records whether the last record decided was new (written) or present. */
  decided(isNew: boolean): void {
    this.lastNew = isNew;
  }

  /** The synced temp of `early` (its failure is the caller's). */
  async synced(early: Early): Promise<Temp> {
    const tmp = await early.synced;
    this.all.delete(early);
    if (tmp === null)
      throw new TensorFSError('internal', 'early temp was discarded', { details: { rule: 'import.internal' } });
    return tmp;
  }

  /** fdatasyncs and closes `tmp`, one of at most {@link EarlyTemps.SYNCS} at a time. */
  sync(tmp: OpenTemp): Promise<Temp> {
    return this.limited(() => this.objects.syncTemp(tmp));
  }

  /** Removes the temp of `early` (its object was present after all); skips its sync if not begun. */
  async discard(early: Early): Promise<void> {
    early.discarded = true;
    const tmp = await early.synced.catch(() => null);
    this.all.delete(early);
    if (tmp !== null) await fsp.rm(tmp.path, { force: true });
  }

  /** After a failure: removes every early temp nobody took over. */
  async abandon(): Promise<void> {
    this.open.clear();
    await Promise.all([...this.all].map((early) => this.discard(early)));
  }

  private async drop(tmp: OpenTemp): Promise<null> {
    await tmp.fh.close().catch(() => {});
    await fsp.rm(tmp.path, { force: true });
    return null;
  }

  private async limited<T>(job: () => Promise<T>): Promise<T> {
    while (this.syncing >= EarlyTemps.SYNCS) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.syncing++;
    try {
      return await job();
    } finally {
      this.syncing--;
      this.waiting.shift()?.();
    }
  }
}

/** True when the store has no object folder yet (a new store: every record will be new). */
function storeLooksEmpty(objects: Objects): boolean {
  try {
    return fs.readdirSync(objects.layout.objects).length === 0;
  } catch {
    return true;
  }
}
