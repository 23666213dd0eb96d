/**
 * The Hugging Face cache (`~/.cache/huggingface/hub`), read and written.
 *
 * Layout (huggingface_hub's `file_download.py`): `<root>/models--owner--name/` (or `datasets--…`)
 * with `blobs/<etag>` (the file's SHA-256 for LFS files, the git blob id for the others),
 * `snapshots/<commit>/<path>` relative symlinks into `../../blobs/`, `refs/<branch>` holding the
 * commit, `.no_exist/<commit>/<path>` marking files known to be absent, and optionally
 * `trees/<commit>.json` (the file list of that commit).
 *
 * Scanning follows a snapshot's links into its own repository's `blobs/` only (the blob must be a
 * regular file, itself no link), keeps links that stay inside the snapshot as links, and refuses
 * every other link exactly as a folder import does; it checks each blob against its name when
 * the name is a digest. Everything is scanned and checked before anything is read.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import {
  comparePaths,
  TensorFSError,
  isTensorFSError,
  validatePath,
  validateRepoId,
  validateRevisionName,
  validateSymlinkTarget,
  wrongArgument,
} from '@tensorfs/format';
import { checkString } from './args.js';
import { errnoOf, ioError } from './fsutil.js';
import { type ContentDigest, type Found, scanTree, stampOf } from './import.js';

/** What a path given to `tfs import` is, when it is part of a Hugging Face cache. */
export type HfCacheForm = 'hub' | 'repo' | 'snapshot';

/** `models--owner--name`, `datasets--owner--name`, `spaces--…` (spaces are not imported). */
const REPO_FOLDER = /^(models|datasets|spaces)--(.+)$/;
const COMMIT = /^[0-9a-f]{40}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;

/** The kind of Hub repository a cache folder holds. */
export type HfRepoType = 'model' | 'dataset';

/** One commit's snapshot folder, scanned. */
export interface HfCacheSnapshot {
  /** The 40-hex commit. */
  commit: string;
  /** Its entries, sorted; linked blobs appear as the regular files they are. */
  entries: Found[];
  /** Paths another snapshot of the repository (or its `trees/<commit>.json`) has and this one lacks. */
  missing: string[];
}

/** One `models--…` / `datasets--…` folder, scanned. */
export interface HfCacheRepo {
  /** The folder name (`models--owner--name`). */
  folder: string;
  /** The repository id (`owner/name`, or `name` for an id without owner). */
  repo: string;
  type: HfRepoType;
  snapshots: HfCacheSnapshot[];
  /** `refs/<name>` → commit, for names that are one segment. */
  refs: { name: string; commit: string }[];
  /** Refs that cannot be branches here (nested names such as `refs/pr/1`), or name a commit with no snapshot. */
  skippedRefs: { name: string; commit: string | null; reason: string }[];
  /** Bytes of the distinct blob files (and plain files in snapshots) the snapshots reach. */
  diskBytes: number;
}

/** A scanned cache: what {@link scanHfCache} returns. */
export interface HfCacheScan {
  form: HfCacheForm;
  repos: HfCacheRepo[];
  /** Folders of the hub folder that are not imported (spaces, other entries), by name. */
  skipped: string[];
}

function fail(
  code: 'invalid_argument' | 'malformed' | 'unsupported' | 'not_found',
  rule: string,
  message: string,
  details: Record<string, unknown> = {},
): never {
  throw new TensorFSError(code, message, { details: { rule: `hf_cache.${rule}`, ...details } });
}

async function lstatOrNull(p: string): Promise<fs.BigIntStats | null> {
  try {
    return await fsp.lstat(p, { bigint: true });
  } catch (err) {
    const errno = errnoOf(err);
    if (errno === 'ENOENT' || errno === 'ENOTDIR') return null;
    throw ioError(err, 'stat', basename(p));
  }
}

async function isDir(p: string): Promise<boolean> {
  const st = await lstatOrNull(p);
  return st?.isDirectory() === true;
}

/** A repository folder: `models--…`/`datasets--…`/`spaces--…` holding a `snapshots/` folder. */
async function isRepoFolder(dir: string): Promise<boolean> {
  return REPO_FOLDER.test(basename(dir)) && (await isDir(join(dir, 'snapshots')));
}

/**
 * Whether `path` is a Hugging Face cache: the hub folder (holding `models--…` folders), one
 * repository folder, or one `snapshots/<commit>` folder of one. Null for anything else (a plain
 * file or folder, imported as such). The path itself may be a symlink (followed).
 */
export async function detectHfCache(path: string): Promise<HfCacheForm | null> {
  checkString(path, 'path');
  let dir: string;
  try {
    dir = await fsp.realpath(resolve(path));
  } catch {
    return null;
  }
  if (!(await isDir(dir))) return null;
  if (await isRepoFolder(dir)) return 'repo';
  if (
    COMMIT.test(basename(dir)) &&
    basename(dirname(dir)) === 'snapshots' &&
    (await isRepoFolder(dirname(dirname(dir))))
  ) {
    return 'snapshot';
  }
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return null;
  }
  for (const n of names) if (/^(models|datasets)--/.test(n) && (await isRepoFolder(join(dir, n)))) return 'hub';
  return null;
}

/**
 * `models--owner--name` → `{ repo: 'owner/name', type: 'model' }`; `datasets--owner--name` →
 * `{ repo: 'datasets/owner/name', type: 'dataset' }` (a dataset is the repository whose id
 * starts with `datasets/`, as the hub's Hugging Face API serves it); `invalid_argument` if the
 * folder names no repository.
 */
export function parseRepoFolder(folder: string): { repo: string; type: HfRepoType | 'space' } {
  checkString(folder, 'folder');
  const m = REPO_FOLDER.exec(folder);
  const parts = m?.[2]?.split('--') ?? [];
  const ok = (s: string): boolean => /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(s) && !s.includes('..') && s.length <= 96;
  if (!m || parts.length < 1 || parts.length > 2 || !parts.every(ok)) {
    fail('invalid_argument', 'repo_folder', `${folder} does not name a Hugging Face repository (models--owner--name)`, {
      path: folder,
    });
  }
  const type = m[1] === 'models' ? 'model' : m[1] === 'datasets' ? 'dataset' : 'space';
  return { repo: `${type === 'dataset' ? DATASET_PREFIX : ''}${parts.join('/')}`, type };
}

/** A repository whose id starts with this is a Hugging Face dataset (`datasets/owner/name`). */
export const DATASET_PREFIX = 'datasets/';

/**
 * The Hub id and kind of a repository (`datasets/owner/name` → `owner/name`, a dataset) and the
 * folder huggingface_hub gives it in its cache (`repo_folder_name`): `models--owner--name` /
 * `datasets--owner--name`.
 */
export function hfRepoOf(repo: string): { id: string; type: HfRepoType; folder: string } {
  checkString(repo, 'repo');
  const dataset = repo.startsWith(DATASET_PREFIX);
  const id = dataset ? repo.slice(DATASET_PREFIX.length) : repo;
  const type: HfRepoType = dataset ? 'dataset' : 'model';
  return { id, type, folder: `${type}s--${id.split('/').join('--')}` };
}

/**
 * Scans `path` (see {@link detectHfCache}) and checks every link, blob and ref before anything
 * is read. `only` (the snapshot form) limits the scan to that commit.
 * @throws {TensorFSError} `invalid_argument` (a link leaving the repository, a link to a link, a
 * bad ref or folder name), `not_found` (a link to a missing blob), `unsupported` (a blob that is
 * not a regular file), `malformed` (a ref not holding a 40-hex commit), `io`.
 */
export async function scanHfCache(path: string): Promise<HfCacheScan> {
  checkString(path, 'path');
  const form = await detectHfCache(path);
  if (form === null) {
    fail(
      'invalid_argument',
      'not_a_cache',
      'not a Hugging Face cache folder (hub/, models--owner--name or snapshots/<commit>)',
      {
        path: basename(path),
      },
    );
  }
  const dir = await fsp.realpath(resolve(path));
  if (form === 'repo') return { form, repos: [await scanRepo(dir)], skipped: [] };
  if (form === 'snapshot') return { form, repos: [await scanRepo(dirname(dirname(dir)), basename(dir))], skipped: [] };
  const repos: HfCacheRepo[] = [];
  const skipped: string[] = [];
  const names = (await fsp.readdir(dir)).sort(comparePaths);
  for (const n of names) {
    const full = join(dir, n);
    if (/^(models|datasets)--/.test(n) && (await isRepoFolder(full))) repos.push(await scanRepo(full));
    else if (!n.startsWith('.') && n !== 'CACHEDIR.TAG' && n !== 'version.txt') skipped.push(n);
  }
  return { form, repos, skipped };
}

/** The expected digest of a blob, from its name: 64 hex = SHA-256 (LFS), 40 hex = git blob id. */
function blobDigest(name: string): ContentDigest | undefined {
  if (SHA256_HEX.test(name))
    return { algorithm: 'sha256', hex: name, rule: 'hf_cache.blob_digest', source: `blobs/${name}` };
  if (COMMIT.test(name))
    return { algorithm: 'git-sha1', hex: name, rule: 'hf_cache.blob_digest', source: `blobs/${name}` };
  return undefined;
}

async function scanRepo(repoDir: string, only?: string): Promise<HfCacheRepo> {
  const folder = basename(repoDir);
  const { repo, type } = parseRepoFolder(folder);
  try {
    validateRepoId(repo);
  } catch (err) {
    if (!isTensorFSError(err)) throw err;
    fail('invalid_argument', 'repo_folder', `${folder}: ${err.message}`, { path: folder });
  }
  if (type === 'space') {
    fail('unsupported', 'space', 'Spaces in the Hugging Face cache are not imported (models and datasets are)', {
      path: folder,
    });
  }
  const blobsDir = join(repoDir, 'blobs');
  const blobsStat = await lstatOrNull(blobsDir);
  if (blobsStat !== null && !blobsStat.isDirectory()) {
    fail('invalid_argument', 'blobs_folder', `${folder}/blobs is not a folder (a link or a file)`, {
      path: `${folder}/blobs`,
    });
  }
  const commits = only !== undefined ? [only] : (await fsp.readdir(join(repoDir, 'snapshots'))).sort();
  const blobSizes = new Map<string, number>();
  let plainBytes = 0;
  const snapshots: HfCacheSnapshot[] = [];
  for (const commit of commits) {
    const rel = `snapshots/${commit}`;
    if (!COMMIT.test(commit))
      fail('invalid_argument', 'snapshot_name', `${folder}/${rel} is not named by a 40-hex commit`, {
        path: `${folder}/${rel}`,
      });
    const snapDir = join(repoDir, 'snapshots', commit);
    if (!(await isDir(snapDir)))
      fail('invalid_argument', 'snapshot_name', `${folder}/${rel} is not a folder`, { path: `${folder}/${rel}` });
    const entries: Found[] = [];
    for (const f of await scanTree(snapDir)) {
      if (f.kind === 'file') {
        plainBytes += f.size;
        entries.push(f);
        continue;
      }
      entries.push(await resolveLink(f, snapDir, blobsDir, `${folder}/${rel}`, blobSizes));
    }
    snapshots.push({ commit, entries, missing: [] });
  }
  await notePartial(repoDir, snapshots);
  const { refs, skippedRefs } = await scanRefs(
    repoDir,
    folder,
    new Set(snapshots.map((s) => s.commit)),
    only !== undefined,
  );
  let diskBytes = plainBytes;
  for (const n of blobSizes.values()) diskBytes += n;
  return { folder, repo, type, snapshots, refs, skippedRefs, diskBytes };
}

/**
 * A snapshot's symlink: into the repository's own `blobs/` → the blob as a regular file (checked
 * against its name); inside the snapshot → kept as a link; anywhere else → refused as a folder
 * import refuses it.
 */
async function resolveLink(
  f: Found,
  snapDir: string,
  blobsDir: string,
  where: string,
  sizes: Map<string, number>,
): Promise<Found> {
  let target: string;
  try {
    target = await fsp.readlink(f.abs);
  } catch (err) {
    throw ioError(err, 'readlink', `${where}/${f.rel}`);
  }
  const resolved = isAbsolute(target) ? resolve(target) : resolve(dirname(f.abs), target);
  if (dirname(resolved) === blobsDir) {
    const name = basename(resolved);
    const st = await lstatOrNull(resolved);
    if (st === null) {
      fail(
        'not_found',
        'blob_missing',
        `${where}/${f.rel} links to blobs/${name}, which is missing (an incomplete or damaged cache)`,
        {
          path: `${where}/${f.rel}`,
          target: `blobs/${name}`,
        },
      );
    }
    if (st.isSymbolicLink()) {
      fail(
        'invalid_argument',
        'blob_symlink',
        `blobs/${name} (linked from ${where}/${f.rel}) is itself a symlink; only regular blobs are followed`,
        {
          path: `${where}/${f.rel}`,
          target: `blobs/${name}`,
        },
      );
    }
    if (!st.isFile()) {
      fail('unsupported', 'blob_type', `blobs/${name} (linked from ${where}/${f.rel}) is not a regular file`, {
        path: `${where}/${f.rel}`,
        target: `blobs/${name}`,
      });
    }
    sizes.set(resolved, Number(st.size));
    const expect = blobDigest(name);
    return {
      rel: f.rel,
      abs: resolved,
      kind: 'file',
      size: Number(st.size),
      mode: Number(st.mode),
      stamp: stampOf(st),
      ...(expect ? { expect } : {}),
    };
  }
  // Not a blob: what a folder import would do with it (kept if it stays inside the snapshot).
  if (isAbsolute(target)) {
    throw new TensorFSError(
      'invalid_argument',
      'symlink target is absolute (only links inside the folder can be imported)',
      {
        details: { rule: 'import.symlink_absolute', path: f.rel, target },
      },
    );
  }
  validateSymlinkTarget(f.rel, target);
  if (!(resolved + sep).startsWith(snapDir + sep)) {
    throw new TensorFSError('invalid_argument', 'symlink target leaves the tree', {
      details: { rule: 'manifest.symlink_escape', path: f.rel, target },
    });
  }
  return { ...f, target };
}

/** Fills each snapshot's `missing`: from `trees/<commit>.json` when the cache has it, else from the other snapshots. */
async function notePartial(repoDir: string, snapshots: HfCacheSnapshot[]): Promise<void> {
  const all = new Set<string>();
  for (const s of snapshots) for (const e of s.entries) all.add(e.rel);
  for (const s of snapshots) {
    const have = new Set(s.entries.map((e) => e.rel));
    const absent = await noExist(join(repoDir, '.no_exist', s.commit));
    let listed: Set<string> | null = null;
    try {
      // huggingface_hub's tree cache: `{ "format_version": 1, "files": { "<path>": { size, blob_id, … } } }`.
      const tree = JSON.parse(await fsp.readFile(join(repoDir, 'trees', `${s.commit}.json`), 'utf8')) as {
        files?: unknown;
      };
      if (typeof tree.files === 'object' && tree.files !== null && !Array.isArray(tree.files)) {
        listed = new Set(Object.keys(tree.files));
      }
    } catch {
      // no (readable) tree listing: compare with the other snapshots
    }
    s.missing = [...(listed ?? all)].filter((p) => !have.has(p) && !absent.has(p)).sort(comparePaths);
  }
}

/** Paths under `.no_exist/<commit>/` (files known to be absent at that commit). */
async function noExist(dir: string): Promise<Set<string>> {
  const out = new Set<string>();
  const walk = async (d: string, prefix: string): Promise<void> => {
    let ents: fs.Dirent[];
    try {
      ents = await fsp.readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of ents) {
      const rel = prefix ? `${prefix}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(join(d, e.name), rel);
      else out.add(rel);
    }
  };
  await walk(dir, '');
  return out;
}

/** `refs/<name>` files: one-segment names become branches; nested ones (`refs/pr/1`) are skipped. */
async function scanRefs(
  repoDir: string,
  folder: string,
  commits: Set<string>,
  onlyThese: boolean,
): Promise<{ refs: HfCacheRepo['refs']; skippedRefs: HfCacheRepo['skippedRefs'] }> {
  const refs: HfCacheRepo['refs'] = [];
  const skippedRefs: HfCacheRepo['skippedRefs'] = [];
  const refsDir = join(repoDir, 'refs');
  const st = await lstatOrNull(refsDir);
  if (st === null) return { refs, skippedRefs };
  if (!st.isDirectory())
    fail('invalid_argument', 'refs_folder', `${folder}/refs is not a folder`, { path: `${folder}/refs` });
  const walk = async (d: string, prefix: string): Promise<void> => {
    for (const e of (await fsp.readdir(d, { withFileTypes: true })).sort((a, b) => comparePaths(a.name, b.name))) {
      const name = prefix ? `${prefix}/${e.name}` : e.name;
      const where = `${folder}/refs/${name}`;
      if (e.name.includes('..') || e.name.startsWith('.')) {
        fail('invalid_argument', 'ref_name', `${where}: a ref name may not start with . or hold ..`, { path: where });
      }
      validatePath(name);
      if (e.isDirectory()) {
        await walk(join(d, e.name), name);
        continue;
      }
      if (!e.isFile())
        fail('invalid_argument', 'ref_type', `${where} is not a regular file (a link or a special file)`, {
          path: where,
        });
      const fh = await fsp.open(
        join(d, e.name),
        fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK,
      );
      let text: string;
      try {
        const buf = Buffer.alloc(128);
        const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
        text = buf.subarray(0, bytesRead).toString('latin1');
      } finally {
        await fh.close();
      }
      const commit = text.trim();
      if (!COMMIT.test(commit)) {
        fail('malformed', 'ref_value', `${where} does not hold a 40-hex commit`, {
          path: where,
          actual: commit.slice(0, 64),
        });
      }
      if (!commits.has(commit)) {
        if (!onlyThese) skippedRefs.push({ name, commit, reason: 'no snapshot of this commit in the cache' });
        continue;
      }
      if (prefix !== '') {
        skippedRefs.push({ name, commit, reason: 'a nested ref (such as refs/pr/1) is not a branch name' });
        continue;
      }
      try {
        validateRevisionName(name);
      } catch (err) {
        if (!isTensorFSError(err)) throw err;
        fail('invalid_argument', 'ref_name', `${where}: ${err.message}`, { path: where });
      }
      refs.push({ name, commit });
    }
  };
  await walk(refsDir, '');
  return { refs, skippedRefs };
}

// -------------------------------------------------------------------------------------------------
// Which files the Hub stores with LFS (so their ETag is the SHA-256)

/**
 * The patterns of the `.gitattributes` the Hub puts in every new repository (files matching are
 * stored with Git LFS), as extensions and name fragments.
 */
const LFS_EXTENSIONS = new Set([
  '7z',
  'arrow',
  'bin',
  'bz2',
  'ckpt',
  'ftz',
  'gz',
  'h5',
  'joblib',
  'mlmodel',
  'model',
  'msgpack',
  'npy',
  'npz',
  'onnx',
  'ot',
  'parquet',
  'pb',
  'pickle',
  'pkl',
  'pt',
  'pth',
  'rar',
  'safetensors',
  'tflite',
  'tgz',
  'wasm',
  'xz',
  'zip',
  'zst',
  'gguf',
]);

/** Files larger than this are always LFS on the Hub (it refuses larger regular git files). */
export const LFS_MIN_BYTES = 10 * 1024 * 1024;

/**
 * Whether the Hub would store this file with Git LFS: not empty, and larger than 10 MiB, or
 * named by a pattern of its default `.gitattributes` (`*.safetensors`, `*.bin`, `*.pt`, `*.tar.*`,
 * `*tfevents*`, `saved_model/**`…), or binary (a NUL byte among its first 512 bytes, the sample
 * huggingface_hub sends the Hub's `preupload` call).
 */
export function isLfsFile(path: string, size: number, head: Uint8Array): boolean {
  checkString(path, 'path');
  if (typeof size !== 'number') wrongArgument('store', 'size', 'a number', size);
  if (!(head instanceof Uint8Array)) wrongArgument('store', 'head', 'a Uint8Array', head);
  if (size === 0) return false;
  if (size > LFS_MIN_BYTES) return true;
  const name = path.split('/').pop() ?? path;
  const dot = name.lastIndexOf('.');
  const ext = dot >= 0 ? name.slice(dot + 1).toLowerCase() : '';
  if (LFS_EXTENSIONS.has(ext)) return true;
  if (
    /\.tar\./.test(name) ||
    name.includes('tfevents') ||
    path.startsWith('saved_model/') ||
    path.includes('/saved_model/')
  ) {
    return true;
  }
  return head.subarray(0, 512).includes(0);
}

/** git's blob id of `bytes`: SHA-1 of `blob <length>\0` + bytes, as a running hash. */
export function gitBlobHasher(size: number): ReturnType<typeof createHash> {
  return createHash('sha1').update(`blob ${size}\0`);
}
