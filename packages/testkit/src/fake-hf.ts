/**
 * A fake Hugging Face Hub on loopback, for tests: only the routes `@tensorfs/remote`'s `hf://`
 * source uses, over in-memory repositories, plus a second server on another origin standing in
 * for the CDN the Hub redirects LFS downloads to. Every request to either is logged.
 *
 * Routes (as the Hub answers them):
 * - `GET /api/models/{repo}/revision/{rev}` → `{id, sha, siblings}`; 404 with `X-Error-Code:
 *   RepoNotFound` / `RevisionNotFound`.
 * - `GET /api/models/{repo}/tree/{rev}?recursive=true[&cursor=N]` → a page of entries
 *   (`{type, oid, size, path, lfs?}`, directories included), `Link: <…>; rel="next"` while more.
 * - `HEAD|GET /{repo}/resolve/{rev}/{path}`: a git file is answered here (`ETag` = its git blob
 *   id, `X-Repo-Commit`, `Range`); an LFS file is a 302 to the CDN with `X-Linked-Etag` (its
 *   SHA-256), `X-Linked-Size` and `X-Repo-Commit`.
 * - CDN `GET /blobs/{sha256}` with `Range`.
 * A gated repository answers 401 without `Authorization: Bearer <token>` and 403 with another one.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { sha256Hex } from './bytes.js';
import { fixturesOf, SAMPLES } from './files.js';

/** One commit of a fake repository: path → bytes; `lfs` paths are served through the CDN. */
export interface FakeCommit {
  files: Record<string, Uint8Array | string>;
}

/** A fake repository. */
export interface FakeRepo {
  /** Commits by sha (40 hex digits). */
  commits: Record<string, FakeCommit>;
  /** Branch and tag names → commit sha. */
  refs: Record<string, string>;
  /** Paths stored with LFS (default: `*.safetensors`, `*.gguf`, `*.bin`). */
  isLfs?: (path: string) => boolean;
  /** Requires `Authorization: Bearer <gated>` for everything. */
  gated?: string;
}

/** A logged request. */
export interface FakeRequest {
  server: 'hub' | 'cdn';
  method: string;
  /** Path without the query string, percent-decoded. */
  path: string;
  query: string;
  range?: string;
  authorization?: string;
}

/** Options of {@link startFakeHub}. */
export interface FakeHubOptions {
  /** Tree entries per page (default 1000). */
  pageSize?: number;
  /** sha256 hex → bytes the CDN serves instead (a lying Hub: wrong bytes, or another length than the tree and `X-Linked-Size` announce). */
  cdnOverride?: Record<string, Uint8Array>;
  /** Called for every CDN request before it is answered; return a promise to hold the answer. */
  onCdnRequest?: (r: FakeRequest) => void | Promise<void>;
  /** Extra headers on HEAD answers of resolve (e.g. a lying `X-Linked-Etag`). */
  headOverride?: (path: string) => Record<string, string> | undefined;
  /**
   * sha256 hex → bytes after which the first open-ended CDN answer (`Range: bytes=N-` or none) for
   * that blob is cut (socket destroyed).
   */
  cdnCutOnce?: Record<string, number>;
  /** path → bytes the Hub serves instead for a git (non-LFS) file (right length, wrong bytes). */
  gitOverride?: Record<string, Uint8Array>;
  /** The CDN ignores `Range` (answers 200 with the whole blob). */
  cdnIgnoresRange?: boolean;
  /** Answers a Hub request with this status (and headers) instead, when it returns one. */
  hubFault?: (r: FakeRequest) => { status: number; headers?: Record<string, string> } | undefined;
  /** Base URL of the tree's `Link: rel="next"` (default the Hub itself). */
  nextLinkBase?: string;
}

/** A running fake Hub. */
export interface FakeHub {
  /** `http://127.0.0.1:<port>` of the Hub (what `HF_ENDPOINT` is set to). */
  endpoint: string;
  cdn: string;
  log: FakeRequest[];
  close(): Promise<void>;
}

/** `sha1("blob <size>\0" + bytes)`: the git blob id. */
export function gitBlobId(bytes: Uint8Array): string {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}

/** sha256 hex of bytes. */
const defaultLfs = (p: string) => /\.(safetensors|gguf|bin)$/.test(p);

function bytesOfFile(v: Uint8Array | string): Uint8Array {
  return typeof v === 'string' ? new TextEncoder().encode(v) : v;
}

function lfsPointer(bytes: Uint8Array): Uint8Array {
  return new TextEncoder().encode(
    `version https://git-lfs.github.com/spec/v1\noid sha256:${sha256Hex(bytes)}\nsize ${bytes.length}\n`,
  );
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

function stop(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

/** Answers `bytes` with `Range` support (one range). */
function sendBytes(
  req: IncomingMessage,
  res: ServerResponse,
  bytes: Uint8Array,
  headers: Record<string, string>,
): void {
  const range = req.headers.range;
  const m = range ? /^bytes=(\d+)-(\d*)$/.exec(range) : null;
  if (range && m) {
    const start = Number(m[1]);
    const end = m[2] === '' ? bytes.length - 1 : Math.min(Number(m[2]), bytes.length - 1);
    if (start >= bytes.length || end < start) {
      res.writeHead(416, { 'content-range': `bytes */${bytes.length}` });
      res.end();
      return;
    }
    res.writeHead(206, {
      ...headers,
      'content-range': `bytes ${start}-${end}/${bytes.length}`,
      'content-length': String(end - start + 1),
    });
    res.end(req.method === 'HEAD' ? undefined : Buffer.from(bytes.subarray(start, end + 1)));
    return;
  }
  res.writeHead(200, { ...headers, 'content-length': String(bytes.length) });
  res.end(req.method === 'HEAD' ? undefined : Buffer.from(bytes));
}

function errorAnswer(res: ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'x-error-code': code });
  res.end(JSON.stringify({ error: message }));
}

/** Starts the fake Hub and its CDN on loopback. */
export async function startFakeHub(repos: Record<string, FakeRepo>, options: FakeHubOptions = {}): Promise<FakeHub> {
  const log: FakeRequest[] = [];
  const blobs = new Map<string, Uint8Array>();
  const pageSize = options.pageSize ?? 1000;
  const record = (server: 'hub' | 'cdn', req: IncomingMessage): FakeRequest => {
    const u = new URL(req.url ?? '/', 'http://x');
    const r: FakeRequest = {
      server,
      method: req.method ?? 'GET',
      path: decodeURIComponent(u.pathname),
      query: u.search,
      ...(req.headers.range ? { range: req.headers.range } : {}),
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    };
    log.push(r);
    return r;
  };
  for (const repo of Object.values(repos)) {
    const lfs = repo.isLfs ?? defaultLfs;
    for (const c of Object.values(repo.commits)) {
      for (const [p, v] of Object.entries(c.files)) if (lfs(p)) blobs.set(sha256Hex(bytesOfFile(v)), bytesOfFile(v));
    }
  }

  const cdnServer = createServer(async (req, res) => {
    const r = record('cdn', req);
    await options.onCdnRequest?.(r);
    const m = /^\/blobs\/([0-9a-f]{64})$/.exec(r.path);
    const bytes = m ? (options.cdnOverride?.[m[1]!] ?? blobs.get(m[1]!)) : undefined;
    if (!bytes) {
      res.writeHead(404);
      res.end();
      return;
    }
    const cut = options.cdnCutOnce?.[m![1]!];
    if (cut !== undefined && (req.headers.range === undefined || req.headers.range.endsWith('-'))) {
      delete options.cdnCutOnce![m![1]!];
      const range = req.headers.range ? /^bytes=(\d+)-/.exec(req.headers.range) : null;
      const start = range ? Number(range[1]) : 0;
      res.writeHead(range ? 206 : 200, {
        'content-range': `bytes ${start}-${bytes.length - 1}/${bytes.length}`,
        'content-length': String(bytes.length - start),
      });
      res.write(Buffer.from(bytes.subarray(start, start + cut)), () => res.socket?.destroy());
      return;
    }
    if (options.cdnIgnoresRange) delete req.headers.range;
    sendBytes(req, res, bytes, { 'content-type': 'application/octet-stream' });
  });
  const cdn = await listen(cdnServer);

  /** Finds the repo and the commit a revision names, or answers an error. */
  const locate = (res: ServerResponse, req: IncomingMessage, name: string, rev: string) => {
    const repo = repos[name];
    if (!repo) {
      errorAnswer(res, 404, 'RepoNotFound', 'Repository not found');
      return undefined;
    }
    if (repo.gated !== undefined) {
      const auth = req.headers.authorization;
      if (auth === undefined) {
        errorAnswer(res, 401, 'GatedRepo', 'Access to this model is restricted. You must be authenticated.');
        return undefined;
      }
      if (auth !== `Bearer ${repo.gated}`) {
        errorAnswer(
          res,
          403,
          'GatedRepo',
          'Access to this model is restricted and you are not in the authorized list.',
        );
        return undefined;
      }
    }
    const sha = repo.refs[rev] ?? (repo.commits[rev] ? rev : undefined);
    if (sha === undefined) {
      errorAnswer(res, 404, 'RevisionNotFound', 'Invalid rev id');
      return undefined;
    }
    return { repo, sha, commit: repo.commits[sha]! };
  };

  const hubServer = createServer((req, res) => {
    const r = record('hub', req);
    const base = options.nextLinkBase ?? `http://${req.headers.host}`;
    const fault = options.hubFault?.(r);
    if (fault) {
      res.writeHead(fault.status, fault.headers ?? {});
      res.end();
      return;
    }
    let m = /^\/api\/models\/([^/]+\/[^/]+)\/revision\/(.+)$/.exec(r.path);
    if (m && req.method === 'GET') {
      const found = locate(res, req, m[1]!, m[2]!);
      if (!found) return;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: m[1],
          sha: found.sha,
          siblings: Object.keys(found.commit.files).map((rfilename) => ({ rfilename })),
        }),
      );
      return;
    }
    m = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/(.+)$/.exec(r.path);
    if (m && req.method === 'GET') {
      const found = locate(res, req, m[1]!, m[2]!);
      if (!found) return;
      const lfs = found.repo.isLfs ?? defaultLfs;
      const dirs = new Set<string>();
      const entries: Record<string, unknown>[] = [];
      for (const p of Object.keys(found.commit.files)) {
        const parts = p.split('/');
        for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
      }
      for (const d of [...dirs].sort()) entries.push({ type: 'directory', oid: '0'.repeat(40), size: 0, path: d });
      for (const [p, v] of Object.entries(found.commit.files).sort(([a], [b]) => (a < b ? -1 : 1))) {
        const bytes = bytesOfFile(v);
        entries.push(
          lfs(p)
            ? {
                type: 'file',
                oid: gitBlobId(lfsPointer(bytes)),
                size: bytes.length,
                path: p,
                lfs: { oid: sha256Hex(bytes), size: bytes.length, pointerSize: lfsPointer(bytes).length },
              }
            : { type: 'file', oid: gitBlobId(bytes), size: bytes.length, path: p },
        );
      }
      const cursor = Number(new URLSearchParams(r.query).get('cursor') ?? '0');
      const page = entries.slice(cursor, cursor + pageSize);
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (cursor + pageSize < entries.length) {
        headers.link = `<${base}/api/models/${m[1]}/tree/${encodeURIComponent(m[2]!)}?recursive=true&cursor=${cursor + pageSize}>; rel="next"`;
      }
      res.writeHead(200, headers);
      res.end(JSON.stringify(page));
      return;
    }
    m = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(r.path);
    if (m && (req.method === 'GET' || req.method === 'HEAD')) {
      const found = locate(res, req, m[1]!, m[2]!);
      if (!found) return;
      const v = found.commit.files[m[3]!];
      if (v === undefined) {
        errorAnswer(res, 404, 'EntryNotFound', 'Entry not found');
        return;
      }
      const bytes = bytesOfFile(v);
      const lfs = (found.repo.isLfs ?? defaultLfs)(m[3]!);
      const extra = req.method === 'HEAD' ? (options.headOverride?.(m[3]!) ?? {}) : {};
      if (lfs) {
        const sha = sha256Hex(bytes);
        res.writeHead(302, {
          location: `${cdn}/blobs/${sha}?X-Amz-Signature=fake`,
          'x-repo-commit': found.sha,
          'x-linked-etag': `"${sha}"`,
          'x-linked-size': String(bytes.length),
          etag: `"${gitBlobId(lfsPointer(bytes))}"`,
          ...extra,
        });
        res.end();
        return;
      }
      sendBytes(req, res, options.gitOverride?.[m[3]!] ?? bytes, {
        etag: `"${gitBlobId(bytes)}"`,
        'x-repo-commit': found.sha,
        ...extra,
      });
      return;
    }
    res.writeHead(404);
    res.end();
  });
  const endpoint = await listen(hubServer);
  return {
    endpoint,
    cdn,
    log,
    close: async () => {
      await Promise.all([stop(hubServer), stop(cdnServer)]);
    },
  };
}

/** The fixture repositories {@link fakeHubFixture} serves. */
export interface FakeHubFixture {
  repos: Record<string, FakeRepo>;
  /** `acme/tiny`: main = `c1` (all files), tag `v0.1` = `c0` (an older config, no GGUF). */
  c0: string;
  c1: string;
  /** The files of `acme/tiny` at `c1`. */
  tiny: Record<string, Uint8Array>;
  /** The files of `acme/tiny-pipe` (a Diffusers pipeline) at its main. */
  pipe: Record<string, Uint8Array>;
  /** The token `acme/gated` wants. */
  gatedToken: string;
}

/**
 * Repositories over committed fixtures: `acme/tiny` (Transformers-shaped: README, config.json, a
 * sharded safetensors with its index, a GGUF in a folder), `acme/tiny-pipe` (the sample Diffusers
 * pipeline) and `acme/gated` (a copy of tiny that wants a token).
 */
export function fakeHubFixture(): FakeHubFixture {
  const sharded = join(fixturesOf('format'), 'safetensors', 'sharded');
  const read = (p: string) => new Uint8Array(readFileSync(p));
  const text = (s: string) => new TextEncoder().encode(s);
  const tiny: Record<string, Uint8Array> = {
    '.gitattributes': text(
      '*.safetensors filter=lfs diff=lfs merge=lfs -text\n*.gguf filter=lfs diff=lfs merge=lfs -text\n',
    ),
    'README.md': text('# tiny\n\nA fixture repository.\n'),
    'config.json': text('{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "revision": 1}\n'),
    'model-00001-of-00002.safetensors': read(join(sharded, 'model-00001-of-00002.safetensors')),
    'model-00002-of-00002.safetensors': read(join(sharded, 'model-00002-of-00002.safetensors')),
    'model.safetensors.index.json': read(join(sharded, 'model.safetensors.index.json')),
    'gguf/model.gguf': read(join(SAMPLES, 'tiny-model', 'model.gguf')),
  };
  const older: Record<string, Uint8Array> = {
    ...tiny,
    'config.json': text('{"model_type": "llama", "revision": 0}\n'),
  };
  delete older['gguf/model.gguf'];
  const pipeDir = join(SAMPLES, 'tiny-model', 'diffusers');
  const pipe: Record<string, Uint8Array> = { 'README.md': text('# tiny pipeline\n') };
  const walk = (dir: string, prefix: string) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      if (d.isDirectory()) walk(join(dir, d.name), `${prefix}${d.name}/`);
      else pipe[`${prefix}${d.name}`] = read(join(dir, d.name));
    }
  };
  walk(pipeDir, '');
  const sha = (s: string) => createHash('sha1').update(s).digest('hex');
  const c0 = sha('tiny c0');
  const c1 = sha('tiny c1');
  const p1 = sha('pipe c1');
  const g1 = sha('gated c1');
  const gatedToken = 'hf_FAKEgatedTOKEN0123456789abcdef';
  return {
    repos: {
      'acme/tiny': { commits: { [c0]: { files: older }, [c1]: { files: tiny } }, refs: { main: c1, 'v0.1': c0 } },
      'acme/tiny-pipe': { commits: { [p1]: { files: pipe } }, refs: { main: p1 } },
      'acme/gated': { commits: { [g1]: { files: tiny } }, refs: { main: g1 }, gated: gatedToken },
    },
    c0,
    c1,
    tiny,
    pipe,
    gatedToken,
  };
}
