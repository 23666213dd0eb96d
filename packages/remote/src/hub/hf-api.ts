/**
 * The Hugging Face Hub download API on the hub's own port (docs/remote.md "The Hugging Face
 * API"), so an unmodified `huggingface_hub`, `transformers` or `@huggingface/hub` client with
 * `HF_ENDPOINT` set reads from a TensorFS hub:
 *
 * - `GET /api/{models|datasets}/{repo}[/revision/{rev}]`: `id`, the 40-hex `sha`, `siblings`;
 * - `GET /api/{models|datasets}/{repo}/tree/{rev}[/{path}]`: entries `{type, path, size, oid,
 *   lfs}`, recursive on request, paginated with `Link: <…>; rel="next"`;
 * - `HEAD`/`GET /[datasets/]{repo}/resolve/{rev}/{path}`: the file with `X-Repo-Commit`, `ETag`
 *   and `X-Linked-Etag` (its SHA-256), `X-Linked-Size`, ranges (`206`), never compressed, no Xet.
 *
 * Tokens are the hub's (`Authorization: Bearer`); read scopes apply per repository. A repository
 * is a dataset when its id starts with `datasets/` (`datasets/owner/name`): it is served under
 * `/datasets/…` and `/api/datasets/…` only, every other repository under the model routes only.
 * Refusals carry `X-Error-Code` the client maps to its errors (`RepoNotFound`,
 * `RevisionNotFound`, `EntryNotFound`, `GatedRepo` for a token without read scope).
 */
import type * as http from 'node:http';
import { type ObjectId, TensorFSError, isTensorFSError, listRepositories, toTensorFSError } from '@tensorfs/format';
import type { RequestContext } from './context.js';
import {
  type CheckpointLayout,
  FileDigests,
  type ServedFile,
  type ServedTree,
  openObject,
  servedTree,
} from './hf-files.js';
import { type HfRevision, HfRevisions } from './hf-revisions.js';
import { parseRange, rangeHeaders } from './objects.js';
import { drained, statusOf } from './respond.js';
import type { HubStore } from './types.js';
import { Digest } from './verify.js';
import type { Quarantine } from './verify.js';

/** Where a missing repository, revision or file may come from (the pull-through upstream). */
export interface HfSource {
  /**
   * Imports `repo` at `revision` (all files, or only `path`) and returns the revision to serve,
   * or null when the upstream does not have it either (the local answer stands).
   */
  fetch(
    api: HfApi,
    request: { repo: string; revision: string; path?: string; local?: HfRevision },
  ): Promise<HfRevision | null>;
}

/** Options of the Hugging Face API. */
export interface HfApiOptions {
  /** Builds a checkpoint's `--safetensors` export tree (the tensors package's export code). */
  layout: CheckpointLayout;
  /** The pull-through upstream (absent, or offline: only what is present is served). */
  source?: HfSource;
  /** Tree entries per page (default 1000). */
  pageSize?: number;
}

const TREE_CACHE = 64;
const DATASET_PREFIX = 'datasets/';

/** A parsed request of the Hugging Face API. */
type HfRequest =
  | { kind: 'info'; repo: string; revision: string; dataset: boolean }
  | { kind: 'tree'; repo: string; revision: string; path: string; dataset: boolean }
  | { kind: 'resolve'; repo: string; revision: string; path: string; dataset: boolean };

/** Decodes one path segment (`%2F` allowed inside); null when it is not valid percent-encoding. */
function decode(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

/** A bad request the client should see as a missing entry / revision (with a 400). */
function badRequest(rule: 'hf.bad_cursor' | 'hf.bad_path', message: string): TensorFSError {
  return new TensorFSError('invalid_argument', message, { details: { rule } });
}

/** Parses an API path; null when it is not one of the Hugging Face routes. */
export function parseHfPath(pathname: string): HfRequest | null {
  const raw = pathname.split('/').slice(1);
  if (raw.length === 0) return null;
  if (raw[0] === 'api' && (raw[1] === 'models' || raw[1] === 'datasets')) {
    const dataset = raw[1] === 'datasets';
    const rest = raw.slice(2);
    // `{repo}` is one or two segments; `revision`/`tree` follow it.
    for (const n of [2, 1]) {
      if (rest.length < n) continue;
      const word = rest[n];
      if (word !== undefined && word !== 'revision' && word !== 'tree') continue;
      const repoSegs = rest.slice(0, n).map(decode);
      if (repoSegs.some((s) => s === null || s === '')) return null;
      const id = (repoSegs as string[]).join('/');
      const repo = dataset ? DATASET_PREFIX + id : id;
      if (word === undefined) return { kind: 'info', repo, revision: 'main', dataset };
      const rev = rest[n + 1] === undefined ? null : decode(rest[n + 1]!);
      if (rev === null || rev === '') return null;
      if (word === 'revision') {
        if (rest.length !== n + 2) return null;
        return { kind: 'info', repo, revision: rev, dataset };
      }
      const sub = rest.slice(n + 2).map(decode);
      if (sub.some((s) => s === null)) return null;
      return { kind: 'tree', repo, revision: rev, path: (sub as string[]).join('/'), dataset };
    }
    return null;
  }
  const dataset = raw[0] === 'datasets';
  const segs = dataset ? raw.slice(1) : raw;
  const at = segs[2] === 'resolve' && segs.length >= 5 ? 2 : segs[1] === 'resolve' && segs.length >= 4 ? 1 : -1;
  if (at < 0) return null;
  const repoSegs = segs.slice(0, at).map(decode);
  if (repoSegs.some((s) => s === null || s === '' || s === 'api')) return null;
  const rev = decode(segs[at + 1]!);
  const file = segs.slice(at + 2).map(decode);
  if (rev === null || file.some((s) => s === null)) return null;
  const id = (repoSegs as string[]).join('/');
  return {
    kind: 'resolve',
    repo: dataset ? DATASET_PREFIX + id : id,
    revision: rev,
    path: (file as string[]).join('/'),
    dataset,
  };
}

/** Checks a file path inside a repository: no traversal, no empty or dot segments. */
function checkFilePath(path: string): void {
  const segs = path.split('/');
  if (
    path.length === 0 ||
    path.length > 4096 ||
    segs.some((s) => s === '' || s === '.' || s === '..' || s.includes('\\') || /[\u0000-\u001f]/.test(s))
  ) {
    throw badRequest('hf.bad_path', 'not a file path of a repository');
  }
}

/** The Hugging Face download API of one hub. */
export class HfApi {
  readonly revisions: HfRevisions;
  readonly digests: FileDigests;
  private readonly trees = new Map<ObjectId, Promise<ServedTree>>();
  private readonly stopped = new AbortController();
  private readonly complete = new Set<ObjectId>();

  constructor(
    readonly store: HubStore,
    readonly quarantine: Quarantine,
    private readonly options: HfApiOptions,
  ) {
    this.revisions = new HfRevisions(store);
    this.digests = new FileDigests(store, quarantine);
  }

  /** Answers `c` when it is a Hugging Face API request; false otherwise (the next handler's). */
  async route(c: RequestContext): Promise<boolean> {
    // The path as sent: URL parsing would resolve dot segments (`..`, `%2E%2E`) before they are refused.
    const raw = (c.req.url ?? '/').split('?')[0]!;
    const r = parseHfPath(raw.startsWith('/') ? raw : c.url.pathname);
    if (r === null) return false;
    if (c.method !== 'GET' && c.method !== 'HEAD') return false;
    let commit: string | undefined;
    try {
      if (r.dataset !== r.repo.startsWith(DATASET_PREFIX) || (!r.dataset && r.repo.split('/')[0] === 'datasets')) {
        throw this.noRepo(r.repo);
      }
      this.authorize(c, r.repo);
      if (r.kind === 'resolve') checkFilePath(r.path);
      if (r.kind === 'tree' && r.path !== '') checkFilePath(r.path);
      // `HEAD` is the default branch (`@huggingface/hub` asks for it).
      if (r.revision === 'HEAD') r.revision = 'main';
      let rev = await this.revision(r.repo, r.revision, r.kind === 'resolve' ? r.path : undefined);
      commit = rev.sha;
      const source = this.options.source;
      if (r.kind !== 'resolve' && source && rev.document?.upstream && !(await this.isComplete(rev.target))) {
        // A revision fetched file by file is completed before it is listed; with the upstream
        // unreachable, what is present is listed.
        const full = await source.fetch(this, { repo: r.repo, revision: r.revision, local: rev }).catch(() => null);
        if (full) {
          rev = full;
          commit = rev.sha;
        }
      }
      let tree = await this.tree(rev);
      if (r.kind === 'info') {
        await this.info(c, r, rev, tree);
        return true;
      }
      if (r.kind === 'tree') {
        await this.listing(c, r, rev, tree);
        return true;
      }
      let file = tree.byPath.get(r.path);
      if (file === undefined && source && rev.document?.upstream && !(await this.isComplete(rev.target))) {
        const more = await source.fetch(this, {
          repo: r.repo,
          revision: r.revision,
          path: r.path,
          local: rev,
        });
        if (more) {
          rev = more;
          commit = rev.sha;
          tree = await this.tree(rev);
          file = tree.byPath.get(r.path);
        }
      }
      if (file === undefined) {
        throw new TensorFSError('not_found', `${r.repo} has no file ${JSON.stringify(r.path)} at ${rev.sha}`, {
          details: { rule: 'hf.entry_not_found' },
        });
      }
      await this.sendFile(c, rev, tree, file);
      return true;
    } catch (err) {
      if (c.res.headersSent) c.res.destroy();
      else this.sendError(c, r, toTensorFSError(err), commit);
      return true;
    }
  }

  private noRepo(repo: string): TensorFSError {
    return new TensorFSError('not_found', `no repository ${repo}`, { details: { rule: 'repo.no_such_repo' } });
  }

  private authorize(c: RequestContext, repo: string): void {
    const p = c.principal;
    if (p.read?.(repo)) return;
    throw new TensorFSError('denied', p.anonymous ? `${repo} needs a token` : `this token may not read ${repo}`, {
      details: { rule: p.anonymous ? 'hub.token_required' : 'hub.scope' },
    });
  }

  /** The revision to serve: local, or fetched from the upstream when the store lacks it. */
  async revision(repo: string, revision: string, path?: string): Promise<HfRevision> {
    try {
      return await this.revisions.resolve(repo, revision);
    } catch (err) {
      const source = this.options.source;
      if (!source || !isTensorFSError(err) || err.code !== 'not_found') throw err;
      const got = await source.fetch(this, { repo, revision, ...(path !== undefined ? { path } : {}) });
      if (got === null) throw err;
      return got;
    }
  }

  /** The served files of a revision's target (kept for the last few targets). */
  async tree(rev: HfRevision): Promise<ServedTree> {
    let p = this.trees.get(rev.target);
    if (p === undefined) {
      p = servedTree(this.store, rev.target, rev.targetKind, this.options.layout);
      p.catch(() => this.trees.delete(rev.target));
      if (this.trees.size >= TREE_CACHE) this.trees.delete(this.trees.keys().next().value as ObjectId);
      this.trees.set(rev.target, p);
    }
    return p;
  }

  /** Computes, in the background and one after another, the digests of a tree's files not yet known. */
  private warm(tree: ServedTree): void {
    const todo = tree.files.filter((f) => this.digests.peek(f) === undefined);
    if (todo.length === 0) return;
    void (async () => {
      for (const f of todo) {
        if (this.stopped.signal.aborted) return;
        await this.digests.of(tree, f, this.stopped.signal).catch(() => {});
      }
    })();
  }

  /**
   * Computes, one file after another, the digests of every branch and tag head's files not yet
   * kept (a hub over a writable store starts it, so a file imported before the hub started is
   * known before its first `HEAD`). Stops at {@link HfApi.stop}.
   */
  async warmAll(): Promise<void> {
    try {
      for (const listing of await listRepositories(this.store)) {
        for (const name of [...listing.branches, ...listing.tags].map((b) => b.name)) {
          if (this.stopped.signal.aborted) return;
          const rev = await this.revisions.resolve(listing.repo, name).catch(() => null);
          const tree = rev && (await this.tree(rev).catch(() => null));
          for (const f of tree?.files ?? []) {
            if (this.stopped.signal.aborted) return;
            if (this.digests.peek(f) === undefined)
              await this.digests.of(tree!, f, this.stopped.signal).catch(() => {});
          }
        }
      }
    } catch {
      // A store that cannot list refs: digests are computed on first use.
    }
  }

  /**
   * True when the tree `target` (of a pull-through revision) holds every file its upstream commit
   * has: a file it lacks is then absent upstream too, and nothing is asked there. Kept in memory
   * and as the side ref `_hf/complete/<tree hex>` (naming a small object, so it keeps no tree).
   */
  async isComplete(target: ObjectId): Promise<boolean> {
    if (this.complete.has(target)) return true;
    const id = await this.store.getRef(`_hf/complete/${target.slice(7)}`).catch(() => null);
    if (id === null) return false;
    this.complete.add(target);
    return true;
  }

  /** Records that `target` holds every file of its upstream commit (see {@link HfApi.isComplete}). */
  async markComplete(target: ObjectId): Promise<void> {
    this.complete.add(target);
    if (!this.store.capabilities.has('objects.write') || !this.store.capabilities.has('refs.write')) return;
    try {
      const { id } = await this.store.put([new TextEncoder().encode(`complete ${target}\n`)]);
      await this.store.setRef(`_hf/complete/${target.slice(7)}`, id);
    } catch {
      // Memory only.
    }
  }

  /** Stops background digest computations. */
  stop(): void {
    this.stopped.abort();
    this.digests.stopped.abort();
  }

  private async info(
    c: RequestContext,
    r: Extract<HfRequest, { kind: 'info' }>,
    rev: HfRevision,
    tree: ServedTree,
  ): Promise<void> {
    const withBlobs = /^(1|true)$/i.test(c.url.searchParams.get('blobs') ?? '');
    const siblings = [];
    for (const f of tree.files) {
      if (withBlobs) {
        const sha = await this.digests.of(tree, f, c.signal);
        siblings.push({ rfilename: f.path, size: f.size, blobId: sha.slice(0, 40), lfs: lfsOf(f, sha) });
      } else siblings.push({ rfilename: f.path, size: f.size });
    }
    if (!withBlobs) this.warm(tree);
    const id = r.dataset ? r.repo.slice(DATASET_PREFIX.length) : r.repo;
    const time = rev.document ? new Date(Number(rev.document.time)).toISOString() : undefined;
    const body = {
      _id: rev.sha.slice(0, 24),
      id,
      ...(r.dataset ? {} : { modelId: id }),
      author: id.includes('/') ? id.split('/')[0] : undefined,
      sha: rev.sha,
      ...(time ? { lastModified: time, createdAt: time } : {}),
      private: false,
      gated: false,
      disabled: false,
      downloads: 0,
      likes: 0,
      tags: [],
      siblings,
    };
    sendHfJson(c, 200, body, rev.sha);
  }

  private async listing(
    c: RequestContext,
    r: Extract<HfRequest, { kind: 'tree' }>,
    rev: HfRevision,
    tree: ServedTree,
  ): Promise<void> {
    const recursive = /^(1|true)$/i.test(c.url.searchParams.get('recursive') ?? '');
    const base = r.path === '' ? '' : `${r.path}/`;
    const entries: { type: 'file' | 'directory'; path: string; file?: ServedFile }[] = [];
    const dirs = new Set<string>();
    for (const f of tree.files) {
      if (!f.path.startsWith(base)) continue;
      const rel = f.path.slice(base.length);
      const parts = rel.split('/');
      for (let i = 1; i < parts.length; i++) {
        if (!recursive && i > 1) break;
        const d = base + parts.slice(0, i).join('/');
        if (!dirs.has(d)) {
          dirs.add(d);
          entries.push({ type: 'directory', path: d });
        }
      }
      if (recursive || parts.length === 1) entries.push({ type: 'file', path: f.path, file: f });
    }
    if (entries.length === 0 && r.path !== '') {
      throw new TensorFSError('not_found', `${r.repo} has no folder ${JSON.stringify(r.path)} at ${rev.sha}`, {
        details: { rule: 'hf.entry_not_found' },
      });
    }
    const size = this.options.pageSize ?? 1000;
    const cursor = Number(c.url.searchParams.get('cursor') ?? '0');
    if (!Number.isSafeInteger(cursor) || cursor < 0) throw badRequest('hf.bad_cursor', 'bad cursor');
    const page = entries.slice(cursor, cursor + size);
    const out = [];
    for (const e of page) {
      if (e.type === 'directory') {
        out.push({ type: 'directory', oid: '0'.repeat(40), size: 0, path: e.path });
        continue;
      }
      const sha = await this.digests.of(tree, e.file!, c.signal);
      out.push({ type: 'file', oid: sha.slice(0, 40), size: e.file!.size, path: e.path, lfs: lfsOf(e.file!, sha) });
    }
    const headers: Record<string, string> = {};
    if (cursor + size < entries.length) {
      const next = new URL(c.url.pathname + c.url.search, publicOrigin(c.req));
      next.searchParams.set('cursor', String(cursor + size));
      headers.link = `<${next.href}>; rel="next"`;
    }
    sendHfJson(c, 200, out, rev.sha, headers);
  }

  /**
   * Answers `HEAD`/`GET` of one file: its objects streamed in order (a range reads only the
   * objects it overlaps, each from its first byte), every object hashed while it streams; the
   * answer's last piece is held back until the last object matched, and a mismatch cuts the
   * connection (the object is quarantined, and is `corrupt` afterwards).
   */
  private async sendFile(c: RequestContext, rev: HfRevision, tree: ServedTree, file: ServedFile): Promise<void> {
    const { req, res, signal } = c;
    const head = c.method === 'HEAD';
    for (const rec of file.records) this.quarantine.refuse(rec.digest);
    const sha = await this.digests.of(tree, file, signal);
    const size = file.size;
    const range = parseRange(req.headers.range, size);
    const headers: Record<string, string | number> = {
      'content-type': 'application/octet-stream',
      'accept-ranges': 'bytes',
      etag: `"${sha}"`,
      'x-linked-etag': `"${sha}"`,
      'x-linked-size': size,
      'x-repo-commit': rev.sha,
      'cache-control': 'no-cache',
      'content-disposition': `inline; filename*=UTF-8''${encodeURIComponent(file.path.split('/').pop()!)}`,
    };
    const { start, end, length } = rangeHeaders(res, headers, range, size);
    if (head || length === 0) {
      res.writeHead(range ? 206 : 200, headers);
      res.end();
      return;
    }
    // The objects the range overlaps, with their offsets in the file.
    const parts: { id: ObjectId; at: number; length: number }[] = [];
    let at = 0;
    for (const rec of file.records) {
      if (at + rec.length > start && at <= end) parts.push({ id: rec.digest, at, length: rec.length });
      at += rec.length;
    }
    // The first object is opened before the head: storage that cannot be read is an error answer.
    let current = await openObject(this.store, tree, parts[0]!.id, signal);
    res.writeHead(range ? 206 : 200, headers);
    res.flushHeaders();
    let held: { piece: Uint8Array; chunk: Uint8Array; recycle?: (c: Uint8Array) => void } | undefined;
    const send = async (h: NonNullable<typeof held>) => {
      const back = h.recycle;
      if (!res.write(h.piece, back && (() => back(h.chunk)))) await drained(res);
    };
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      if (i > 0) {
        try {
          current = await openObject(this.store, tree, part.id, signal);
        } catch {
          res.destroy();
          return;
        }
      }
      const r = current;
      const digest = new Digest(part.id, part.length);
      let fits = r.size === part.length;
      let pos = part.at;
      try {
        for await (const chunk of r.body) {
          if (res.destroyed) break;
          if (!fits || !digest.update(chunk)) {
            fits = false;
            break;
          }
          const from = Math.max(start, pos);
          const to = Math.min(end + 1, pos + chunk.length);
          const chunkAt = pos;
          pos += chunk.length;
          if (to > from) {
            if (held) await send(held);
            held = {
              piece: chunk.subarray(from - chunkAt, to - chunkAt),
              chunk,
              ...(r.recycle ? { recycle: r.recycle } : {}),
            };
          } else r.recycle?.(chunk);
        }
      } catch {
        res.destroy();
        return;
      } finally {
        r.cancel();
      }
      if (res.destroyed) return;
      if (!fits || !digest.matches()) {
        // Damage: the answer never completes (its last piece is still held).
        res.destroy();
        await this.quarantine.add(part.id);
        return;
      }
    }
    if (held) await send(held);
    res.end();
  }

  private sendError(c: RequestContext, r: HfRequest, err: TensorFSError, commit: string | undefined): void {
    const rule = String(err.details.rule ?? '');
    let status: number;
    let code: string | undefined;
    if (err.code === 'denied') {
      const anonymous = c.principal.anonymous || rule === 'hub.unknown_token' || rule === 'hub.bad_authorization';
      status = anonymous ? 401 : 403;
      code =
        rule === 'hub.unknown_token' || rule === 'hub.bad_authorization'
          ? undefined
          : anonymous
            ? 'RepoNotFound'
            : 'GatedRepo';
    } else if (err.code === 'not_found' && (rule === 'repo.no_such_repo' || rule === 'hf.repo_not_found')) {
      status = 404;
      code = 'RepoNotFound';
    } else if (err.code === 'not_found' && (rule === 'repo.no_such_revision' || rule === 'hf.revision_not_found')) {
      status = 404;
      code = 'RevisionNotFound';
    } else if (err.code === 'not_found' && (rule === 'hf.entry_not_found' || r.kind === 'resolve')) {
      status = 404;
      code = 'EntryNotFound';
    } else if (err.code === 'invalid_argument' && rule === 'hf.bad_path') {
      status = 400;
      code = 'EntryNotFound';
    } else if (err.code === 'invalid_argument' && (rule.startsWith('repo.') || rule === 'store.ref_name')) {
      status = 400;
      code = 'RevisionNotFound';
    } else {
      status = rule === 'hub.range_unsatisfiable' ? 416 : statusOf(err);
    }
    const message =
      rule === 'hub.unknown_token' || rule === 'hub.bad_authorization'
        ? 'Invalid credentials in Authorization header'
        : err.code === 'internal' || err.code === 'io'
          ? 'internal error'
          : err.message;
    const headers: Record<string, string> = {};
    if (code) headers['x-error-code'] = code;
    headers['x-error-message'] = message.replace(/[^\x20-\x7e]/g, '?').slice(0, 500);
    if (commit && code !== 'RepoNotFound' && code !== 'RevisionNotFound') headers['x-repo-commit'] = commit;
    if (status === 401) headers['www-authenticate'] = 'Bearer realm="tensorfs"';
    sendHfJson(c, status, { error: message, code: err.code, rule }, undefined, headers);
  }
}

/** The `lfs` object of a tree entry: every served file is announced by its SHA-256. */
function lfsOf(f: ServedFile, sha: string): { oid: string; size: number; pointerSize: number } {
  return { oid: sha, size: f.size, pointerSize: 134 };
}

/** The origin clients reach this hub at (for absolute `Link` URLs). */
function publicOrigin(req: http.IncomingMessage): string {
  const proto = String(req.headers['x-forwarded-proto'] ?? 'http')
    .split(',')[0]!
    .trim();
  const host = req.headers.host ?? '127.0.0.1';
  return `${proto === 'https' ? 'https' : 'http'}://${host}`;
}

function sendHfJson(
  c: RequestContext,
  status: number,
  value: unknown,
  commit: string | undefined,
  extra: Record<string, string> = {},
): void {
  const body = c.method === 'HEAD' ? '' : `${JSON.stringify(value)}\n`;
  const headers: Record<string, string | number> = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': c.method === 'HEAD' ? 0 : Buffer.byteLength(body),
    'cache-control': 'no-cache',
    ...extra,
  };
  if (commit) headers['x-repo-commit'] = commit;
  c.res.writeHead(status, headers);
  c.res.end(body);
}
