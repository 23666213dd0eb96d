/**
 * `tfs export <repo>[@<rev>] <dir> --hf-cache`: a repository revision written into `<dir>` as a
 * Hugging Face cache root, the layout huggingface_hub itself writes, so `from_pretrained` with
 * `HF_HUB_CACHE=<dir> HF_HUB_OFFLINE=1` loads it.
 *
 * Everything is first written into a staging folder inside `<dir>` (same filesystem), every blob
 * fdatasynced and named by the ETag the client expects (SHA-256 for files the Hub stores with
 * LFS, git's blob id for the others). A repository folder that does not exist yet is then put in
 * place by one rename; an existing one is merged into: an existing blob of the same name is kept
 * after its bytes are checked against its name (never replaced), an existing snapshot must hold
 * the same links, and each `refs/<name>` is replaced atomically (refs move).
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import {
  type ObjectId,
  type Progress,
  progressEvent,
  TensorFSError,
  parseObjectId,
  resolveRevision,
  throwIfAborted,
  wrongArgument,
} from '@tensorfs/format';
import { errnoOf, fsyncDir, ioError, mkdirDurable, tempName } from './fsutil.js';
import { type HfRepoType, gitBlobHasher, hfRepoOf, isLfsFile } from './hf-cache.js';
import { checkObject, checkOptions, checkString } from './args.js';
import type { LocalStore } from './store.js';

const COMMIT = /^[0-9a-f]{40}$/;
const CHUNK = 8 << 20;

/** Options of {@link exportHfCache}. */
export interface HfCacheExportOptions {
  /** Rehash every object before its bytes are written (default true). */
  verify?: boolean;
  /**
   * The tree a checkpoint revision is exported as: its `--safetensors` export (`@tensorfs/tensors`
   * `safetensorsExportTree`, which puts the few objects it makes into the store). Without it a
   * checkpoint revision is `unsupported` (`hf_cache.checkpoint_target`).
   */
  checkpointTree?: (store: LocalStore, checkpoint: ObjectId) => Promise<ObjectId>;
  signal?: AbortSignal;
  /**
   * Called as bytes are written and as each file is done: phase `export`, unit `bytes`, with
   * `files`/`filesTotal` and `bytes`/`bytesTotal`.
   */
  onProgress?: (p: Progress) => void;
}

/** What {@link exportHfCache} wrote. */
export interface HfCacheExportResult {
  repo: string;
  /** The id on the Hub (`owner/name`; without the `datasets/` of a dataset's repository id). */
  id: string;
  type: HfRepoType;
  /** The repository folder name under the cache root. */
  folder: string;
  /** The 40-hex commit of the snapshot folder. */
  commit: string;
  /** The `refs/` entry written, if the revision was a branch or a tag. */
  ref: string | null;
  /** The tree exported (for a checkpoint revision: its `--safetensors` export tree). */
  snapshot: ObjectId;
  files: number;
  bytes: number;
  /** Blobs already present (checked and kept) and blobs written. */
  blobsKept: number;
  blobsWritten: number;
}

/**
 * The 40-hex commit a revision has in the Hugging Face cache, the one the hub's Hugging Face API
 * answers as its `sha`: the upstream commit recorded at import or pull, else the first 40 hex
 * digits of the revision document's id (of the target's id for a ref without one).
 */
export function hfCommitOf(revision: {
  commit: ObjectId | null;
  target: ObjectId;
  document?: { upstream?: { source?: string; revision?: string } | null } | null;
}): string {
  checkObject(revision, 'revision');
  const up = (revision.document as { upstream?: { revision?: unknown } | null } | null | undefined)?.upstream?.revision;
  if (typeof up === 'string' && COMMIT.test(up)) return up;
  const id = revision.commit ?? revision.target;
  checkString(id, 'revision.target');
  return parseObjectId(id).slice('sha256:'.length, 'sha256:'.length + 40);
}

/** One file staged as a blob. */
interface Staged {
  path: string;
  etag: string;
  /** The staged blob file (under the staging folder). */
  file: string;
  lfs: boolean;
}

/** Writes `repo@revision` (null: `main`) as a Hugging Face cache under `root`. */
export async function exportHfCache(
  store: LocalStore,
  repo: string,
  revision: string | null,
  root: string,
  options: HfCacheExportOptions = {},
): Promise<HfCacheExportResult> {
  checkObject(store, 'store');
  checkString(repo, 'repo');
  if (revision !== null && revision !== undefined) checkString(revision, 'revision');
  checkString(root, 'root');
  checkOptions(options);
  const { signal } = options;
  const rev = await resolveRevision(store, repo, revision ?? undefined);
  if (options.checkpointTree !== undefined && typeof options.checkpointTree !== 'function') {
    wrongArgument('store', 'options.checkpointTree', 'a function', options.checkpointTree);
  }
  if (rev.targetKind !== 'tree' && options.checkpointTree === undefined) {
    throw new TensorFSError(
      'unsupported',
      'this revision is a checkpoint, not a tree: export it with --safetensors, import that folder and export the tree',
      {
        details: { rule: 'hf_cache.checkpoint_target', repo },
      },
    );
  }
  const { id, type, folder } = hfRepoOf(rev.repo);
  const commit = hfCommitOf(rev);
  const refName = rev.kind === 'id' ? null : rev.revision;
  // A checkpoint as the files its `--safetensors` export writes (what the hub serves it as).
  const tree = rev.targetKind === 'tree' ? rev.target : await options.checkpointTree!(store, rev.target);
  const m = await store.getManifest(tree);
  try {
    await mkdirDurable(root);
  } catch (err) {
    throw ioError(err, 'create export folder');
  }
  const stage = join(root, `.tfs-hf-${tempName()}`);
  await fsp.mkdir(join(stage, 'blobs'), { recursive: true });
  const filesTotal = m.entries.length;
  const bytesTotal = m.entries.reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0);
  const progress = { files: 0, filesTotal, bytes: 0, bytesTotal };
  try {
    // 1. Every file as a staged blob named by its ETag.
    const staged: Staged[] = [];
    const byEtag = new Map<string, Staged>();
    for (const e of m.entries) {
      throwIfAborted(signal);
      if (e.kind !== 'file') continue;
      const tmp = join(stage, 'blobs', `${progress.files}.tmp`);
      const { etag, lfs } = await writeBlob(store, e.records, e.size, e.path, tmp, options, (n) => {
        progress.bytes += n;
        options.onProgress?.(progressEvent('export', 'bytes', progress));
      });
      const file = join(stage, 'blobs', etag);
      if (byEtag.has(etag)) await fsp.rm(tmp);
      else await fsp.rename(tmp, file);
      const s: Staged = { path: e.path, etag, file, lfs };
      byEtag.set(etag, s);
      staged.push(s);
      progress.files++;
      options.onProgress?.(progressEvent('export', 'bytes', progress));
    }
    // 2. The snapshot's links, as huggingface_hub makes them: relative, into ../../blobs/.
    const links = new Map<string, string>();
    for (const s of staged) {
      const depth = s.path.split('/').length - 1;
      links.set(s.path, `${'../'.repeat(depth + 2)}blobs/${s.etag}`);
    }
    for (const e of m.entries) if (e.kind === 'symlink') links.set(e.path, e.target);
    const dest = join(root, folder);
    const existing = await fsp.lstat(dest).catch((err) => {
      if (errnoOf(err) === 'ENOENT') return null;
      throw ioError(err, 'stat', folder);
    });
    let blobsKept = 0;
    if (existing === null) {
      await writeLinks(join(stage, 'snapshots', commit), links);
      if (refName !== null) {
        await fsp.mkdir(join(stage, 'refs'));
        await writeSynced(join(stage, 'refs', refName), commit);
      }
      await syncTree(stage);
      await fsp.rename(stage, dest);
      await fsyncDir(root);
    } else {
      if (!existing.isDirectory()) {
        throw new TensorFSError('conflict', `${folder} exists in the cache and is not a folder`, {
          details: { rule: 'hf_cache.not_a_folder', path: folder },
        });
      }
      blobsKept = await merge(dest, stage, folder, byEtag, links, commit, refName, signal);
    }
    return {
      repo: rev.repo,
      id,
      type,
      folder,
      commit,
      ref: refName,
      snapshot: tree,
      files: progress.files,
      bytes: progress.bytes,
      blobsKept,
      blobsWritten: byEtag.size - blobsKept,
    };
  } finally {
    await fsp.rm(stage, { recursive: true, force: true });
  }
}

/** Rebuilds one file into `tmp` (checked against its records), hashing what its ETag needs; fdatasynced. */
async function writeBlob(
  store: LocalStore,
  records: readonly { digest: ObjectId; length: number }[],
  size: number,
  path: string,
  tmp: string,
  options: HfCacheExportOptions,
  onBytes: (n: number) => void,
): Promise<{ etag: string; lfs: boolean }> {
  const source = store.recordsSource(records, { verify: options.verify ?? true });
  const fh = await fsp.open(tmp, 'wx', 0o600);
  try {
    let hash: ReturnType<typeof createHash> | undefined;
    let lfs = false;
    const buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(size, 1)));
    for (let at = 0; at < size || at === 0; ) {
      throwIfAborted(options.signal);
      const n = Math.min(buf.length, size - at);
      const piece = buf.subarray(0, n);
      if (n > 0) piece.set(await source.read(at, n));
      if (hash === undefined) {
        lfs = isLfsFile(path, size, piece);
        hash = lfs ? createHash('sha256') : gitBlobHasher(size);
      }
      hash.update(piece);
      let w = 0;
      while (w < n) w += (await fh.write(piece, w, n - w, at + w)).bytesWritten;
      at += n;
      onBytes(n);
      if (n === 0) break;
    }
    await fh.datasync();
    await fh.chmod(0o644);
    return { etag: hash!.digest('hex'), lfs };
  } finally {
    await fh.close();
  }
}

/** Writes a small file and fdatasyncs it (huggingface_hub's refs hold the commit, no newline). */
async function writeSynced(file: string, text: string): Promise<void> {
  const fh = await fsp.open(file, 'wx', 0o644);
  try {
    await fh.writeFile(text);
    await fh.datasync();
  } finally {
    await fh.close();
  }
}

/** Creates `dir` and the links in it (parents as needed). */
async function writeLinks(dir: string, links: Map<string, string>): Promise<void> {
  for (const [path, target] of links) {
    const at = join(dir, ...path.split('/'));
    await fsp.mkdir(join(at, '..'), { recursive: true });
    await fsp.symlink(target, at);
  }
}

/** fsyncs every folder under `dir` (new entries durable before the rename publishes them). */
async function syncTree(dir: string): Promise<void> {
  for (const e of await fsp.readdir(dir, { withFileTypes: true }))
    if (e.isDirectory()) await syncTree(join(dir, e.name));
  await fsyncDir(dir);
}

/** The hex digest of an existing blob file, by the algorithm its name implies (null: not a regular file). */
async function hashExisting(file: string, etag: string): Promise<string | null> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (err) {
    if (errnoOf(err) === 'ELOOP' || errnoOf(err) === 'ENXIO') return null;
    throw ioError(err, 'open', `blobs/${etag}`);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) return null;
    const hash = etag.length === 64 ? createHash('sha256') : gitBlobHasher(st.size);
    const buf = Buffer.allocUnsafe(CHUNK);
    for (let at = 0; at < st.size; ) {
      const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, st.size - at), at);
      if (bytesRead === 0) break;
      hash.update(buf.subarray(0, bytesRead));
      at += bytesRead;
    }
    return hash.digest('hex');
  } finally {
    await fh.close();
  }
}

/** Merges the staged blobs, links and ref into an existing repository folder; returns the blobs kept. */
async function merge(
  dest: string,
  stage: string,
  folder: string,
  byEtag: Map<string, Staged>,
  links: Map<string, string>,
  commit: string,
  refName: string | null,
  signal: AbortSignal | undefined,
): Promise<number> {
  // Check everything already there before adding anything.
  const present = new Set<string>();
  for (const etag of byEtag.keys()) {
    throwIfAborted(signal);
    const file = join(dest, 'blobs', etag);
    const st = await fsp.lstat(file).catch(() => null);
    if (st === null) continue;
    const actual = await hashExisting(file, etag);
    if (actual !== etag) {
      throw new TensorFSError(
        'corrupt',
        `${folder}/blobs/${etag} already exists with other bytes; it is left as it is (remove it to export)`,
        {
          details: {
            rule: 'hf_cache.existing_blob',
            path: `${folder}/blobs/${etag}`,
            actual: actual ?? 'not a regular file',
          },
        },
      );
    }
    present.add(etag);
  }
  const snapDir = join(dest, 'snapshots', commit);
  const toLink = new Map<string, string>();
  for (const [path, target] of links) {
    const at = join(snapDir, ...path.split('/'));
    let now: string | null = null;
    try {
      now = await fsp.readlink(at);
    } catch (err) {
      const errno = errnoOf(err);
      if (errno === 'EINVAL') now = '';
      else if (errno !== 'ENOENT' && errno !== 'ENOTDIR')
        throw ioError(err, 'readlink', `${folder}/snapshots/${commit}/${path}`);
    }
    if (now === null) toLink.set(path, target);
    else if (now !== target) {
      throw new TensorFSError(
        'conflict',
        `${folder}/snapshots/${commit}/${path} already exists and differs from this revision's file`,
        {
          details: { rule: 'hf_cache.snapshot_differs', path: `${folder}/snapshots/${commit}/${path}` },
        },
      );
    }
  }
  // Blobs first (by link: an existing name is never replaced), then links, then the ref.
  await fsp.mkdir(join(dest, 'blobs'), { recursive: true });
  for (const [etag, s] of byEtag) {
    if (present.has(etag)) continue;
    try {
      await fsp.link(s.file, join(dest, 'blobs', etag));
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw ioError(err, 'link', `${folder}/blobs/${etag}`);
      if ((await hashExisting(join(dest, 'blobs', etag), etag)) !== etag) {
        throw new TensorFSError('corrupt', `${folder}/blobs/${etag} appeared with other bytes while exporting`, {
          details: { rule: 'hf_cache.existing_blob', path: `${folder}/blobs/${etag}` },
        });
      }
      present.add(etag);
    }
  }
  await fsyncDir(join(dest, 'blobs'));
  for (const [path, target] of toLink) {
    const at = join(snapDir, ...path.split('/'));
    await mkdirDurable(join(at, '..'));
    const tmp = join(stage, `link-${tempName()}`);
    await fsp.symlink(target, tmp);
    await fsp.rename(tmp, at);
    await fsyncDir(join(at, '..'));
  }
  if (refName !== null) {
    await mkdirDurable(join(dest, 'refs'));
    const tmp = join(stage, `ref-${tempName()}`);
    await writeSynced(tmp, commit);
    await fsp.rename(tmp, join(dest, 'refs', refName));
    await fsyncDir(join(dest, 'refs'));
  }
  return present.size;
}
