/**
 * The Hub's REST API of one repository, as the importer and the pull-through hub ask it: the
 * commit a revision names, the file listing at a commit, what `HEAD` announces for a file, and
 * byte ranges of a file (see the steps in `./import.ts`).
 */
import { comparePaths, TensorFSError, throwIfAborted, validatePath, cancelledError } from '@tensorfs/format';
import type { Credential } from '../credentials.js';
import { displayUrl, HttpClient, type HttpOptions, type HttpResponse, offlineFromEnv, readText } from '../http.js';
import { HF_DEFAULT_ENDPOINT, type HfRepoSpec } from './url.js';

/** One file of a repository at a commit, as the tree API lists it. */
export interface HfFile {
  path: string;
  size: number;
  /** The git blob id (40 hex digits). */
  oid: string;
  /** For a file stored with LFS: the SHA-256 (64 hex digits) of its bytes. */
  sha256?: string;
}

/** Options of {@link HuggingFaceRepo} and {@link importHuggingFace}. */
export interface HfOptions {
  /** The Hub's base URL. @default {@link HF_DEFAULT_ENDPOINT} */
  endpoint?: string;
  /** `HF_TOKEN`: sent as `Authorization: Bearer` to the Hub, never to another origin. */
  token?: Credential;
  /** Retries, timeouts, redirects (the credential comes from `token`). */
  http?: Omit<HttpOptions, 'credential'>;
  signal?: AbortSignal;
}

const TREE_PAGE_LIMIT = 64 * 1024 * 1024;
const MAX_FILES = 1_000_000;

/** The Hub API of one model (or, with `spec.type` `dataset`, dataset) repository. */
export class HuggingFaceRepo {
  readonly endpoint: string;
  private readonly origin: string;
  private readonly http: HttpClient;
  private readonly hasToken: boolean;

  constructor(
    readonly spec: HfRepoSpec,
    private readonly options: HfOptions = {},
  ) {
    const endpoint = (options.endpoint ?? HF_DEFAULT_ENDPOINT).replace(/\/+$/, '');
    let u: URL;
    try {
      u = new URL(endpoint);
    } catch {
      throw new TensorFSError('invalid_argument', 'the Hugging Face endpoint is not a URL', {
        details: { rule: 'hf.endpoint' },
      });
    }
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.username || u.password || u.search || u.hash) {
      throw new TensorFSError(
        'invalid_argument',
        'the Hugging Face endpoint must be an http(s) URL without credentials or query',
        {
          details: { rule: 'hf.endpoint' },
        },
      );
    }
    this.endpoint = endpoint;
    this.origin = u.origin;
    this.hasToken = options.token !== undefined && options.token !== '';
    this.http = new HttpClient({
      ...(options.http ?? {}),
      // The Hub is offline with HF_HUB_OFFLINE=1 too, as huggingface_hub is.
      offline: options.http?.offline ?? offlineFromEnv(process.env, true),
      ...(options.token !== undefined ? { credential: options.token } : {}),
    });
  }

  private repoPath(): string {
    return this.spec.repo.split('/').map(encodeURIComponent).join('/');
  }

  /** `{endpoint}/api/models/{repo}` (`/api/datasets/…` for a dataset). */
  private apiPath(): string {
    return `${this.endpoint}/api/${this.spec.type === 'dataset' ? 'datasets' : 'models'}/${this.repoPath()}`;
  }

  /** `{endpoint}/{repo}/resolve/{commit}/{path}` (`{endpoint}/datasets/{repo}/…` for a dataset). */
  resolveUrl(commit: string, path: string): string {
    return `${this.endpoint}/${this.spec.type === 'dataset' ? 'datasets/' : ''}${this.repoPath()}/resolve/${encodeURIComponent(commit)}/${path.split('/').map(encodeURIComponent).join('/')}`;
  }

  /** Sends a request to the Hub; 401/403/404 become `denied` / `not_found` saying what to do. */
  private async send(
    req: Parameters<HttpClient['send']>[0],
    what: { path?: string; revision?: string },
  ): Promise<HttpResponse> {
    const res = await this.http
      .send({ ...req, accept: [401, 403, 404, 410, ...(req.accept ?? [])], signal: this.options.signal })
      .catch((err) => {
        if (this.options.signal?.aborted) throw cancelledError();
        throw err;
      });
    if (res.status === 401 || res.status === 403 || res.status === 404 || res.status === 410) {
      await res.body.dump().catch(() => {});
      throw this.refusal(res, what);
    }
    return res;
  }

  private refusal(res: HttpResponse, what: { path?: string; revision?: string }): TensorFSError {
    const header = res.headers['x-error-code'];
    const code = (Array.isArray(header) ? header[0] : header) ?? '';
    const repo = this.spec.repo;
    const details = {
      status: res.status,
      url: displayUrl(res.url),
      repo,
      ...(code ? { hubCode: code.slice(0, 40) } : {}),
    };
    if (res.status === 401 || res.status === 403) {
      const hint = this.hasToken
        ? 'the token in HF_TOKEN has no access to it (for a gated repository, accept its conditions on the Hub with that account)'
        : 'set HF_TOKEN to a token of an account with access (the repository may be gated, private or missing)';
      return new TensorFSError('denied', `the Hugging Face Hub refused access to ${repo}: ${hint}`, {
        details: { rule: code === 'GatedRepo' ? 'hf.gated' : 'hf.denied', ...details },
      });
    }
    if (code === 'RevisionNotFound' || (what.revision !== undefined && code !== 'RepoNotFound' && code !== '')) {
      return new TensorFSError('not_found', `${repo} has no revision ${JSON.stringify(what.revision ?? '')}`, {
        details: { rule: 'hf.revision_not_found', ...details },
      });
    }
    if (code === 'EntryNotFound' || (what.path !== undefined && code !== 'RepoNotFound')) {
      return new TensorFSError('not_found', `${repo} has no file ${JSON.stringify(what.path ?? '')} at this commit`, {
        details: { rule: 'hf.entry_not_found', ...details },
      });
    }
    return new TensorFSError(
      'not_found',
      `no ${this.spec.type === 'dataset' ? 'dataset' : 'model'} repository ${repo} on the Hub`,
      {
        details: { rule: 'hf.repo_not_found', ...details },
      },
    );
  }

  private async getJson<T>(
    url: string,
    what: { path?: string; revision?: string },
  ): Promise<{ value: T; res: HttpResponse }> {
    const res = await this.send({ method: 'GET', url, headers: { accept: 'application/json' } }, what);
    const text = await readText(res.body, TREE_PAGE_LIMIT);
    try {
      return { value: JSON.parse(text) as T, res };
    } catch {
      throw new TensorFSError('malformed', 'the Hub answered with invalid JSON', {
        details: { rule: 'hf.bad_json', url: displayUrl(url) },
      });
    }
  }

  /**
   * The commit (40 hex digits) the revision names now.
   * @throws {TensorFSError} `not_found`, `denied`, `malformed` (no commit in the answer), `corrupt`
   *   (asked for a commit, answered another).
   */
  async resolveRevision(revision = this.spec.revision): Promise<string> {
    const url = `${this.apiPath()}/revision/${encodeURIComponent(revision)}`;
    const { value } = await this.getJson<{ sha?: unknown }>(url, { revision });
    const sha = value?.sha;
    if (typeof sha !== 'string' || !/^[0-9a-f]{40}$/.test(sha)) {
      throw new TensorFSError('malformed', 'the Hub did not answer with a commit for this revision', {
        details: { rule: 'hf.bad_revision_answer', url: displayUrl(url) },
      });
    }
    if (/^[0-9a-f]{40}$/.test(revision) && sha !== revision) {
      throw new TensorFSError('corrupt', 'the Hub answered another commit than the one asked for', {
        details: { rule: 'hf.commit_mismatch', expected: revision, actual: sha },
      });
    }
    return sha;
  }

  /**
   * Every file of the repository at `commit` (all pages), sorted by path.
   * @throws {TensorFSError} `malformed` (an entry without path/size/oid, a path a snapshot cannot
   *   hold, a next page on another origin), `limit_exceeded` (over 1,000,000 files).
   */
  async listFiles(commit: string): Promise<HfFile[]> {
    const out: HfFile[] = [];
    const seen = new Set<string>();
    let url: string | undefined = `${this.apiPath()}/tree/${encodeURIComponent(commit)}?recursive=true`;
    let pages = 0;
    while (url !== undefined) {
      throwIfAborted(this.options.signal);
      if (++pages > 100_000) throw treeError('hf.tree_pages', url, 'too many tree pages');
      const { value, res } = await this.getJson<unknown>(url, { revision: commit });
      if (!Array.isArray(value)) throw treeError('hf.bad_tree', url, 'a tree page is not a JSON array');
      for (const item of value as Record<string, unknown>[]) {
        if (item === null || typeof item !== 'object')
          throw treeError('hf.bad_tree', url, 'a tree entry is not an object');
        if (item.type === 'directory') continue;
        if (item.type !== 'file') throw treeError('hf.bad_tree', url, 'a tree entry is neither a file nor a directory');
        const file = treeFile(item, url);
        if (seen.has(file.path)) throw treeError('hf.bad_tree', url, 'the tree lists a path twice');
        seen.add(file.path);
        out.push(file);
        if (out.length > MAX_FILES) {
          throw new TensorFSError('limit_exceeded', 'the repository has more files than a snapshot holds', {
            details: { rule: 'hf.too_many_files', limit: MAX_FILES },
          });
        }
      }
      url = nextLink(res.headers.link, res.url);
      if (url !== undefined && new URL(url).origin !== this.origin) {
        // The token goes with every request to the Hub; a page elsewhere would receive it.
        throw treeError('hf.tree_next_origin', res.url, 'the next tree page is on another origin');
      }
    }
    return out.sort((a, b) => comparePaths(a.path, b.path));
  }

  /**
   * What the Hub announces for one file at `commit` (`HEAD`, redirects to the Hub itself followed,
   * a redirect elsewhere — the CDN — not).
   */
  async head(commit: string, path: string): Promise<{ commit?: string; etag?: string; size?: number }> {
    let url = this.resolveUrl(commit, path);
    for (let hops = 0; ; hops++) {
      const res = await this.send({ method: 'HEAD', url, redirect: 'manual' }, { path });
      await res.body.dump().catch(() => {});
      const h = (name: string) => {
        const v = res.headers[name];
        return Array.isArray(v) ? v[0] : v;
      };
      const location = h('location');
      if (res.status >= 300 && res.status < 400 && location !== undefined) {
        const next = new URL(location, url);
        if (next.origin === this.origin && !h('x-linked-etag') && hops < 5) {
          url = next.href; // a renamed repository: the Hub points at itself
          continue;
        }
      }
      // X-Linked-Etag is the Hub's word on an LFS file's SHA-256; a plain ETag counts only when it
      // has a digest's shape (a mirror or proxy may put its own validator there).
      const linked = h('x-linked-etag');
      const plain = h('etag');
      const etag =
        linked ??
        (plain !== undefined && /^([0-9a-f]{40}|[0-9a-f]{64})$/.test(normalizeEtag(plain)) ? plain : undefined);
      const size = h('x-linked-size');
      const repoCommit = h('x-repo-commit');
      return {
        ...(repoCommit !== undefined ? { commit: repoCommit.trim() } : {}),
        ...(etag !== undefined ? { etag: normalizeEtag(etag) } : {}),
        ...(size !== undefined && /^\d+$/.test(size.trim()) ? { size: Number(size.trim()) } : {}),
      };
    }
  }

  /** A body stream of `[start, end)` of a file (`end` omitted: to its end). */
  async openRange(
    commit: string,
    file: HfFile,
    start: number,
    end: number | undefined,
  ): Promise<{ body: AsyncIterable<Uint8Array> & { destroy?: () => void }; skip: number }> {
    const range = `bytes=${start}-${end === undefined ? '' : end - 1}`;
    const res = await this.send(
      { method: 'GET', url: this.resolveUrl(commit, file.path), headers: { range } },
      { path: file.path },
    );
    if (res.status === 206) {
      const cr = res.headers['content-range'];
      const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec((Array.isArray(cr) ? cr[0] : cr) ?? '');
      if (m && Number(m[1]) === start && m[3] !== '*' && Number(m[3]) !== file.size) {
        discard(res.body);
        throw new TensorFSError(
          'corrupt',
          `${file.path}: the Hub announced ${file.size} bytes, but the download has ${m[3]}`,
          { details: { rule: 'hf.size_mismatch', path: file.path, expected: file.size, actual: Number(m[3]) } },
        );
      }
      if (!m || Number(m[1]) !== start || (m[3] !== '*' && Number(m[3]) !== file.size)) {
        discard(res.body);
        throw new TensorFSError('corrupt', 'the Hub answered another byte range than the one asked for', {
          details: { rule: 'hf.bad_range', path: file.path, expected: range, actual: String(cr ?? '') },
        });
      }
      return { body: res.body, skip: 0 };
    }
    if (res.status === 200) return { body: res.body, skip: start }; // Range ignored: skip to `start`
    discard(res.body);
    throw new TensorFSError('unavailable', `the Hub answered ${res.status} to a file read`, {
      details: { rule: `http.${res.status}`, path: file.path },
    });
  }
}

/**
 * Drops a response body unread. undici's body reports `destroy()` as an `error` event (its
 * `RequestAbortedError`); unread, nothing listens, so that event was an uncaught exception that
 * killed the process (exit 1) after the `corrupt` answer was already on its way. `dump()` handles it.
 */
function discard(body: HttpResponse['body']): void {
  body.dump().catch(() => {});
}

function treeError(
  rule: 'hf.tree_pages' | 'hf.bad_tree' | 'hf.tree_next_origin',
  url: string,
  message: string,
): TensorFSError {
  return new TensorFSError('malformed', message, { details: { rule, url: displayUrl(url) } });
}

function treeFile(item: Record<string, unknown>, url: string): HfFile {
  const { path, size, oid, lfs } = item;
  if (typeof path !== 'string' || typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
    throw treeError('hf.bad_tree', url, 'a tree entry has no path or size');
  }
  if (typeof oid !== 'string' || !/^[0-9a-f]{40}$/.test(oid))
    throw treeError('hf.bad_tree', url, 'a tree entry has no git oid');
  try {
    validatePath(path);
  } catch (err) {
    throw new TensorFSError('malformed', 'the repository holds a path a snapshot cannot hold', {
      details: { rule: 'hf.bad_path', path: path.slice(0, 200) },
      cause: err,
    });
  }
  const out: HfFile = { path, size, oid };
  if (lfs !== undefined && lfs !== null) {
    const l = lfs as { oid?: unknown; size?: unknown };
    if (typeof l.oid !== 'string' || !/^[0-9a-f]{64}$/.test(l.oid) || l.size !== size) {
      throw treeError('hf.bad_tree', url, 'an LFS tree entry has no sha256 or a size that differs');
    }
    out.sha256 = l.oid;
  }
  return out;
}

/** The `rel="next"` target of a `Link` header, resolved against `base`. */
export function nextLink(header: string | string[] | undefined, base: string): string | undefined {
  const values = Array.isArray(header) ? header : header === undefined ? [] : [header];
  for (const v of values) {
    for (const part of v.split(/,(?=\s*<)/)) {
      const m = /^\s*<([^>]*)>\s*;(.*)$/.exec(part);
      if (m && /(^|;)\s*rel\s*=\s*"?next"?\s*(;|$)/i.test(m[2]!)) {
        try {
          return new URL(m[1]!, base).href;
        } catch {
          return undefined;
        }
      }
    }
  }
  return undefined;
}

/** An ETag without `W/` and quotes. */
function normalizeEtag(v: string): string {
  return v
    .trim()
    .replace(/^W\//, '')
    .replace(/^"(.*)"$/, '$1');
}
