/**
 * `tfs import <Hugging Face cache>`: one TFM1 snapshot per commit, the repository named by its
 * cache folder, a branch per `refs/<name>`, the upstream commit recorded on each revision.
 *
 * Order: scan and check everything (links, blob types, refs) → import every snapshot under one
 * lease through the one import pipeline ({@link importSources} with {@link hfCacheSource}: blobs
 * read with the local source's race checks, each checked against its name) → only then
 * move the branches (and tag the commits no ref names). A failure before the last step leaves no
 * ref changed; the objects already admitted are unreferenced and go with the next GC.
 */
import { recordFileSha256 } from './file-sha256.js';
import {
  type ObjectId,
  TensorFSError,
  createTag,
  encodeRevision,
  isTensorFSError,
  moveBranch,
  type Progress,
  progressEvent,
  resolveRevision,
  throwIfAborted,
} from '@tensorfs/format';
import { scannedSource } from '../sources/local.js';
import { importSources } from '../sources/pipeline.js';
import type { Source } from '../sources/source.js';
import { type HfCacheForm, type HfCacheRepo, type HfCacheSnapshot, type HfRepoType, scanHfCache } from './hf-cache.js';
import { checkObject, checkOptions, checkString } from './args.js';
import type { LocalStore } from './store.js';

/** Where a snapshot imported from the Hugging Face cache came from (its source's provenance). */
export interface HfCacheProvenance {
  kind: 'hf-cache';
  /** The repository id (`owner/name`; a dataset: `datasets/owner/name`). */
  repo: string;
  type: HfRepoType;
  /** The cache folder (`models--owner--name`). */
  folder: string;
  /** The 40-hex commit of the snapshot folder. */
  commit: string;
  /** Regular files (the blobs the snapshot links to, and plain files in it). */
  files: number;
}

/**
 * One snapshot of a scanned Hugging Face cache repository (see `scanHfCache`) as a source of the
 * one import pipeline: each file is read from its blob (the snapshot's links point into `blobs/`)
 * with the local source's race checks, and the digest the blob is named by (64 hex: SHA-256, an
 * LFS file; 40 hex: the git blob id) is announced, so the pipeline checks it over the very bytes
 * imported (`corrupt`, rule `hf_cache.blob_digest`); links that stay inside the snapshot are links.
 */
export function hfCacheSource(repo: HfCacheRepo, snapshot: HfCacheSnapshot): Source<HfCacheProvenance> {
  checkObject(repo, 'repo');
  checkObject(snapshot, 'snapshot');
  checkString(repo.repo, 'repo.repo');
  checkString(snapshot.commit, 'snapshot.commit');
  const files = snapshot.entries.filter((e) => e.kind === 'file').length;
  return scannedSource(snapshot.entries, `hf-cache ${repo.repo}@${snapshot.commit.slice(0, 12)}`, () => ({
    kind: 'hf-cache',
    repo: repo.repo,
    type: repo.type,
    folder: repo.folder,
    commit: snapshot.commit,
    files,
  }));
}

/** Options of {@link importHfCache}. */
export interface HfCacheImportOptions {
  signal?: AbortSignal;
  /**
   * Progress over all snapshots: phase `import`, unit `bytes` (`files`/`bytes`/`bytesWritten`
   * summed; `path` is `<repo>@<commit>/<file>`).
   */
  onProgress?: (p: Progress) => void;
  /** Hashing worker threads (default: one per core). */
  threads?: number;
  /** Recorded as the author of each branch move (default `tfs import`). */
  author?: string;
}

/** One commit imported. */
export interface HfCacheCommitResult {
  commit: string;
  snapshot: ObjectId;
  files: number;
  bytes: number;
  /** Files another snapshot (or the cache's `trees/<commit>.json`) has and this one lacks. */
  missing: string[];
}

/** One repository imported. */
export interface HfCacheRepoResult {
  repo: string;
  type: HfRepoType;
  folder: string;
  commits: HfCacheCommitResult[];
  /** Branches set from `refs/` (`moved: false`: already there with this tree and commit). */
  branches: { name: string; commit: string; revision: ObjectId; moved: boolean }[];
  /**
   * Commits no one-segment ref names, kept by a tag `hf-<first 12 hex of the commit>` whose
   * revision document records the commit upstream (`created: false`: it was there already).
   */
  tags: { name: string; commit: string; created: boolean }[];
  skippedRefs: { name: string; commit: string | null; reason: string }[];
  /** Bytes of its distinct blobs (and plain snapshot files) on disk. */
  diskBytes: number;
}

/** What {@link importHfCache} did, with the dedup figure. */
export interface HfCacheImportResult {
  form: HfCacheForm;
  repos: HfCacheRepoResult[];
  /** Entries of the hub folder that were not imported (spaces, stray files). */
  skipped: string[];
  /** What the Hugging Face cache holds on disk for what was imported: each blob counted once. */
  cacheBytes: number;
  /** Logical bytes of all imported files (each snapshot's files summed). */
  bytes: number;
  files: number;
  /** Bytes of the new objects the store admitted for those files (the store's growth, manifests and revision documents aside). */
  bytesWritten: number;
  objectsWritten: number;
}

/**
 * Imports a Hugging Face cache (the hub folder, one `models--…` folder or one `snapshots/<commit>`
 * folder) into `store`: repository `owner/name` (a dataset: `datasets/owner/name`), branch
 * `<name>` per `refs/<name>`, every revision recording `{ source: 'hf', revision: <commit> }`.
 * A branch already at the same tree and commit is left as it is, so importing again changes nothing.
 */
export async function importHfCache(
  store: LocalStore,
  path: string,
  options: HfCacheImportOptions = {},
): Promise<HfCacheImportResult> {
  checkObject(store, 'store');
  checkString(path, 'path');
  checkOptions(options);
  const { signal } = options;
  const scan = await scanHfCache(path);
  const all = scan.repos.flatMap((r) => r.snapshots);
  const progress = {
    files: 0,
    filesTotal: all.reduce((n, s) => n + s.entries.length, 0),
    bytes: 0,
    bytesTotal: all.reduce((n, s) => n + s.entries.reduce((m, e) => m + e.size, 0), 0),
    bytesWritten: 0,
    path: '',
  };
  const result: HfCacheImportResult = {
    form: scan.form,
    repos: [],
    skipped: scan.skipped,
    cacheBytes: 0,
    bytes: 0,
    files: 0,
    bytesWritten: 0,
    objectsWritten: 0,
  };
  const lease = await store.lease({ purpose: 'import Hugging Face cache' });
  try {
    const snapshots = new Map<string, Map<string, ObjectId>>();
    const sha256s = new Map<ObjectId, ReadonlyMap<string, string>>();
    for (const repo of scan.repos) {
      const out: HfCacheRepoResult = {
        repo: repo.repo,
        type: repo.type,
        folder: repo.folder,
        commits: [],
        branches: [],
        tags: [],
        skippedRefs: repo.skippedRefs,
        diskBytes: repo.diskBytes,
      };
      const ids = new Map<string, ObjectId>();
      for (const snap of repo.snapshots) {
        throwIfAborted(signal);
        const before = { ...progress };
        const imported = await importSources(store, hfCacheSource(repo, snap), {
          lease,
          ...(signal ? { signal } : {}),
          ...(options.threads !== undefined ? { threads: options.threads } : {}),
          onProgress: (p) =>
            options.onProgress?.(
              progressEvent('import', 'bytes', {
                ...progress,
                files: before.files + p.files!,
                bytes: before.bytes + p.bytes!,
                bytesWritten: before.bytesWritten + p.bytesWritten!,
                path: `${repo.repo}@${snap.commit.slice(0, 12)}/${p.path}`,
              }),
            ),
        });
        // Counted as every import of local files counts them: links too.
        const r = { ...imported, files: imported.files + imported.links };
        progress.files += r.files;
        progress.bytes += r.bytes;
        progress.bytesWritten += r.bytesWritten;
        ids.set(snap.commit, r.snapshot);
        sha256s.set(r.snapshot, r.fileSha256);
        out.commits.push({
          commit: snap.commit,
          snapshot: r.snapshot,
          files: r.files,
          bytes: r.bytes,
          missing: snap.missing,
        });
        result.files += r.files;
        result.bytes += r.bytes;
        result.bytesWritten += r.bytesWritten;
        result.objectsWritten += r.objectsWritten;
      }
      snapshots.set(repo.folder, ids);
      result.cacheBytes += repo.diskBytes;
      result.repos.push(out);
    }
    // Every snapshot is durable: now name them.
    const author = options.author ?? 'tfs import';
    for (const [k, repo] of scan.repos.entries()) {
      const out = result.repos[k]!;
      const ids = snapshots.get(repo.folder)!;
      const named = new Set<string>();
      for (const ref of repo.refs) {
        throwIfAborted(signal);
        named.add(ref.commit);
        const target = ids.get(ref.commit)!;
        const head = await currentHead(store, repo.repo, ref.name, signal);
        if (head !== null && head.target === target && head.upstream === ref.commit) {
          out.branches.push({ name: ref.name, commit: ref.commit, revision: head.commit, moved: false });
          continue;
        }
        const moved = await moveBranch(store, {
          repo: repo.repo,
          branch: ref.name,
          target,
          expected: head?.commit ?? null,
          author,
          message: `imported from the Hugging Face cache (${repo.folder}, refs/${ref.name})`,
          upstream: { source: 'hf', revision: ref.commit },
          signal,
        });
        out.branches.push({ name: ref.name, commit: ref.commit, revision: moved.commit, moved: true });
      }
      for (const snap of repo.snapshots) {
        if (named.has(snap.commit)) continue;
        throwIfAborted(signal);
        const tag = `hf-${snap.commit.slice(0, 12)}`;
        const target = ids.get(snap.commit)!;
        const head = await currentHead(store, repo.repo, tag, signal);
        if (head !== null) {
          if (head.target !== target || head.upstream !== snap.commit) {
            throw new TensorFSError(
              'conflict',
              `${repo.repo} has a tag ${tag} naming another tree; a tag never moves`,
              {
                details: { rule: 'repo.tag_exists', repo: repo.repo, tag },
              },
            );
          }
          out.tags.push({ name: tag, commit: snap.commit, created: false });
          continue;
        }
        // A tag names a revision document, so the commit stays recorded (what the hub answers as its sha).
        const doc = await store.put(
          encodeRevision({
            repo: repo.repo,
            branch: tag,
            target,
            parent: null,
            time: Date.now(),
            author,
            message: `imported from the Hugging Face cache (${repo.folder}, snapshot ${snap.commit}; no ref named it)`,
            upstream: { source: 'hf', revision: snap.commit },
            history: [],
          }),
          { lease },
        );
        await createTag(store, { repo: repo.repo, tag, revision: doc.id, signal });
        out.tags.push({ name: tag, commit: snap.commit, created: true });
      }
    }
    // Named: each snapshot's whole-file SHA-256s are kept with it (what a hub answers as ETags).
    for (const [id, sha256] of sha256s) {
      await recordFileSha256(store, id, (await store.getManifest(id)).entries, sha256, { lease });
    }
    return result;
  } finally {
    await lease.release();
  }
}

/** A branch's or tag's head as this import compares it: head id, tree and recorded upstream commit; null if absent. */
async function currentHead(
  store: LocalStore,
  repo: string,
  name: string,
  signal?: AbortSignal,
): Promise<{ commit: ObjectId; target: ObjectId; upstream: string | null } | null> {
  try {
    const r = await resolveRevision(store, repo, name, { signal });
    return { commit: r.head, target: r.target, upstream: r.document?.upstream?.revision ?? null };
  } catch (err) {
    if (isTensorFSError(err) && err.code === 'not_found') return null;
    throw err;
  }
}
