/**
 * Pull-through: a hub with an upstream (`tfs serve --upstream URL`, any Hugging Face compatible
 * endpoint, including another TensorFS hub) imports what a client asks for and the store lacks,
 * then serves it.
 *
 * - A revision the store lacks (a branch or tag name) is pinned to the upstream's commit
 *   (`GET /api/models/{repo}/revision/{rev}`, `/api/datasets/…` for a dataset), imported with the `hf://` importer (headers first,
 *   every file checked against the SHA-256 the upstream announced, or its git blob id for small
 *   non-LFS files), and recorded as the branch of that name, whose revision document says
 *   `upstream: { source: "<endpoint>/<repo>", revision: <commit> }`. A request for one file
 *   (`/resolve/`) imports only that file; later requests for other files of the same revision
 *   import those and move the branch on (same upstream commit, so the same `sha`). The
 *   repository info and tree listing import the whole revision.
 * - A 40-hex revision the store lacks is imported the same way onto the branch `up-<first 12 hex>`.
 * - Every import runs once for all concurrent requests (single flight per repository, revision
 *   and file).
 * - The upstream is asked with the hub's own token only (never the client's); who may read what
 *   was fetched is the hub's tokens file, checked before anything is fetched.
 * - A dataset (the hub's repository `datasets/owner/name`, asked for under `/api/datasets/…` or
 *   `/datasets/…/resolve/…`) is fetched the same way from the upstream's dataset routes and kept
 *   under that same repository name, so it is served as a dataset afterwards.
 */
import { type ManifestEntry, TensorFSError, isTensorFSError, moveBranch, sortManifestEntries } from '@tensorfs/format';
import { type HfFile, type HfRepoSpec, HuggingFaceRepo, importHuggingFace } from '../hf/index.js';
import type { HfApi, HfSource } from './hf-api.js';
import { COMMIT_RE, type HfRevision } from './hf-revisions.js';
import type { UpstreamOptions } from './types.js';

/** How long a failed upstream listing is remembered. */
const FAILURE_MS = 30_000;
const DATASET_PREFIX = 'datasets/';

/** Glob characters escaped, so an include pattern matches exactly one path. */
function exactGlob(path: string): string {
  return path.replace(/[\\*?[\]{}()!+@|^$]/g, (ch) => `\\${ch}`);
}

/** The upstream's name of the hub's repository `repo`: `datasets/owner/name` is the dataset `owner/name`. */
function upstreamSpec(repo: string, revision: string): HfRepoSpec {
  return repo.startsWith(DATASET_PREFIX)
    ? { repo: repo.slice(DATASET_PREFIX.length), revision, type: 'dataset' }
    : { repo, revision };
}

/** The branch a 40-hex upstream commit asked for by a client is kept on (a branch name has at most 32 characters). */
export function upstreamBranch(commit: string): string {
  return `up-${commit.slice(0, 12)}`;
}

/** Imports from an upstream what a client asked for and the store lacks (see the module comment). */
export class PullThrough implements HfSource {
  private readonly flights = new Map<string, Promise<HfRevision | null>>();
  private readonly listings = new Map<string, Promise<HfFile[]>>();
  private readonly endpoint: string;

  constructor(private readonly options: UpstreamOptions) {
    this.endpoint = options.endpoint.replace(/\/+$/, '');
    // Checks the URL now (`invalid_argument` `hf.endpoint`), not on the first request.
    new HuggingFaceRepo({ repo: 'x', revision: 'main' }, { endpoint: this.endpoint });
  }

  fetch(
    api: HfApi,
    request: { repo: string; revision: string; path?: string; local?: HfRevision },
  ): Promise<HfRevision | null> {
    const key = `${request.repo}\0${request.revision}\0${request.path ?? ''}`;
    let p = this.flights.get(key);
    if (p === undefined) {
      p = this.run(api, request).finally(() => this.flights.delete(key));
      this.flights.set(key, p);
    }
    return p;
  }

  private repo(repo: string, revision: string): HuggingFaceRepo {
    return new HuggingFaceRepo(upstreamSpec(repo, revision), {
      endpoint: this.endpoint,
      ...(this.options.token !== undefined ? { token: this.options.token } : {}),
      ...(this.options.http ? { http: this.options.http } : {}),
    });
  }

  /** The upstream's files at `commit` (asked once per commit: a commit never changes). */
  private files(hf: HuggingFaceRepo, repo: string, commit: string): Promise<HfFile[]> {
    const key = `${repo}\0${commit}`;
    let p = this.listings.get(key);
    if (p === undefined) {
      p = hf.listFiles(commit);
      // A failure is remembered for a while, so an unreachable upstream is not asked on every request.
      p.catch(() => setTimeout(() => this.listings.delete(key), FAILURE_MS).unref());
      if (this.listings.size > 1000) this.listings.delete(this.listings.keys().next().value as string);
      this.listings.set(key, p);
    }
    return p;
  }

  private async run(
    api: HfApi,
    { repo, revision, path, local }: { repo: string; revision: string; path?: string; local?: HfRevision },
  ): Promise<HfRevision | null> {
    const hf = this.repo(repo, revision);
    const missing = (err: unknown) => isTensorFSError(err) && err.code === 'not_found';
    let commit: string;
    try {
      commit =
        local?.document?.upstream && COMMIT_RE.test(local.document.upstream.revision)
          ? local.document.upstream.revision
          : await hf.resolveRevision(revision);
    } catch (err) {
      if (missing(err) || (isTensorFSError(err) && err.code === 'denied')) return null;
      throw err;
    }
    const all = await this.files(hf, repo, commit);
    const have = new Set(local ? (await api.tree(local)).byPath.keys() : []);
    const wanted = path !== undefined ? all.filter((f) => f.path === path) : all.filter((f) => !have.has(f.path));
    if (wanted.length === 0) {
      if (path !== undefined) return null;
      if (local) await api.markComplete(local.target);
      return local ?? null;
    }
    const onBranch = local?.kind === 'branch' && local.name !== null ? local.name : undefined;
    const branch = onBranch ?? (COMMIT_RE.test(revision) ? upstreamBranch(revision) : revision);
    const result = await importHuggingFace(api.store, upstreamSpec(repo, commit), {
      endpoint: this.endpoint,
      ...(this.options.token !== undefined ? { token: this.options.token } : {}),
      ...(this.options.http ? { http: this.options.http } : {}),
      include: wanted.map((f) => exactGlob(f.path)),
    });
    const imported = (await api.store.getManifest(result.snapshot)).entries;
    // What the importer verified against the upstream's SHA-256 is recorded, so no HEAD recomputes it.
    for (const e of imported) {
      const f = result.source.files.find((x) => x.path === e.path);
      if (e.kind === 'file' && f?.sha256 !== undefined) await api.digests.record(e.records, f.sha256);
    }
    let previous: ManifestEntry[] = [];
    if (local && local.targetKind === 'tree' && local.document?.upstream?.revision === commit) {
      previous = (await api.store.getManifest(local.target)).entries;
    }
    const names = new Set(imported.map((e) => e.path));
    const entries = sortManifestEntries([...previous.filter((e) => !names.has(e.path)), ...imported]);
    const target = await api.store.putManifest({ entries });
    const held = new Set(entries.map((e) => e.path));
    if (all.every((f) => held.has(f.path))) await api.markComplete(target);
    const source = `${this.endpoint}/${repo}`;
    try {
      await moveBranch(api.store, {
        repo,
        branch,
        target,
        expected: onBranch !== undefined ? local!.commit : null,
        author: 'tfs serve (pull-through)',
        message: `pull-through: ${wanted.length} file(s) of ${source}@${commit}`,
        upstream: { source, revision: commit },
        // What was fetched from upstream is a cache: evictable under the store's budget.
        cached: true,
      });
    } catch (err) {
      // Another hub process moved it meanwhile: what it holds now is served.
      if (!isTensorFSError(err) || err.code !== 'conflict') throw err;
    }
    api.revisions.forget(repo);
    this.options.log?.(`pull-through ${repo}@${commit} ${wanted.length} file(s)`);
    const served = await api.revisions.resolve(repo, COMMIT_RE.test(revision) ? revision : branch);
    if (served.targetKind !== 'tree') {
      throw new TensorFSError('internal', 'the pulled revision is not a tree', { details: { rule: 'hf.pull' } });
    }
    return served;
  }
}
