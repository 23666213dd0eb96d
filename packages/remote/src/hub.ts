/**
 * The TensorFS hub: the `/v1/` HTTP API of spec/v1/remote.md over any writable {@link Origin}
 * (a local store, or an S3 bucket — then the hub holds no state and several hubs can share one
 * bucket). Tokens carry read/write scopes per ref glob; without a tokens file the hub is
 * anonymous and read-only. Bodies and concurrency are bounded, requests time out, and
 * {@link Hub.close} drains in-flight requests.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo, Socket } from 'node:net';
import {
  type ErrorCode,
  HTTP_STATUS,
  type ObjectId,
  TensorFSError,
  isObjectId,
  isTensorFSError,
  toTensorFSError,
} from '@tensorfs/format';
import picomatch from 'picomatch';
import type { Store } from '@tensorfs/format/store';
import type { Origin } from './origin.js';
import { originOf } from './store-origin.js';
import { referencesOf } from './references.js';
import { sha256Id } from './verify-stream.js';

/** One token of a tokens file. */
export interface TokenGrant {
  token: string;
  /** Ref globs this token may read (`*` alone: every ref). */
  read?: string[];
  /** Ref globs this token may move (`*` alone: every ref). */
  write?: string[];
}

/** The tokens file: `{"tokens":[{"token","read":["*"],"write":["team/*"]}], "anonymous":{"read":[…]}}`. */
export interface TokensConfig {
  tokens: TokenGrant[];
  /** What requests without a token may read (default: nothing when a tokens file is given). */
  anonymous?: { read?: string[] };
}

/** Options of {@link serveHub}. */
export interface HubOptions {
  /** Interface to bind (default `127.0.0.1`). */
  host?: string;
  /** Port (0: any free port). */
  port?: number;
  /** Tokens; without them the hub is anonymous and read-only. */
  tokens?: TokensConfig;
  /** Largest JSON body (default 4 MiB). */
  maxJsonBytes?: number;
  /** Largest object upload (default 64 GiB). */
  maxObjectBytes?: number;
  /**
   * Folder for upload sessions (`/v1/uploads/`, resumable uploads of large objects): one file per
   * object being received, kept across hub restarts when the folder is. Default: a private temp
   * folder removed on close. `tfs serve --store` uses the store's `tmp/`.
   */
  uploadsDir?: string;
  /** Requests served at once; more get 503 + Retry-After (default 64). */
  maxConcurrent?: number;
  /** Whole-request timeout (default 30 min) and idle-socket timeout (default 60 s). */
  requestTimeoutMs?: number;
  idleTimeoutMs?: number;
  /** Access log line per request (method, path, status, ms) — never headers or tokens. */
  log?: (line: string) => void;
  /**
   * Read-only routes outside `/v1/` (the web page): called for every other path with what the
   * request's token may read (`null`: nothing); resolves true when it answered. Same tokens as the API.
   */
  pages?: (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    read: ((ref: string) => boolean) | null,
  ) => Promise<boolean>;
}

/** A running hub. */
export interface Hub {
  /** `http://host:port`. */
  readonly url: string;
  readonly port: number;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`, default 10 s), then closes. */
  close(graceMs?: number): Promise<void>;
}

/** Rules of a request that brought no usable token: `401` with `WWW-Authenticate`, not `403`. */
const TOKEN_RULES: ReadonlySet<unknown> = new Set(['hub.token_required', 'hub.unknown_token', 'hub.bad_authorization']);

/** Details that may leave the hub (never paths, stacks or tokens). */
const SAFE_DETAILS = ['rule', 'digest', 'ref', 'expected', 'actual', 'limit', 'count', 'missing', 'component'];

interface Principal {
  read: ((ref: string) => boolean) | null;
  write: ((ref: string) => boolean) | null;
  anonymous: boolean;
}

function matcher(globs: readonly string[] | undefined): ((ref: string) => boolean) | null {
  if (!globs || globs.length === 0) return null;
  if (globs.includes('*') || globs.includes('**')) return () => true;
  return picomatch(globs as string[], { dot: true });
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Validates a parsed tokens file; `invalid_argument` otherwise. */
export function parseTokensConfig(value: unknown): TokensConfig {
  const bad = (why: string) =>
    new TensorFSError('invalid_argument', `tokens file: ${why}`, { details: { rule: 'hub.bad_tokens_file' } });
  if (typeof value !== 'object' || value === null || !Array.isArray((value as TokensConfig).tokens))
    throw bad('needs a "tokens" list');
  const v = value as TokensConfig;
  for (const t of v.tokens) {
    if (typeof t?.token !== 'string' || t.token.length < 8)
      throw bad('each token needs a "token" string of at least 8 characters');
    for (const k of ['read', 'write'] as const) {
      if (t[k] !== undefined && (!Array.isArray(t[k]) || t[k]!.some((g) => typeof g !== 'string')))
        throw bad(`"${k}" must be a list of globs`);
    }
  }
  return v;
}

/** Starts a hub serving `store`: any implementation of the storage contract (an origin, or a store). */
export async function serveHub(store: Store, options: HubOptions = {}): Promise<Hub> {
  const backend: Origin = originOf(store);
  const grants = (options.tokens?.tokens ?? []).map((t) => ({
    hash: digest(t.token),
    read: matcher(t.read),
    write: matcher(t.write),
  }));
  const anonymous: Principal = options.tokens
    ? { read: matcher(options.tokens.anonymous?.read), write: null, anonymous: true }
    : { read: () => true, write: null, anonymous: true };
  const maxJson = options.maxJsonBytes ?? 4 << 20;
  const maxObject = options.maxObjectBytes ?? 64 * 1024 ** 3;
  const maxConcurrent = options.maxConcurrent ?? 64;
  let inFlight = 0;
  const idle: (() => void)[] = [];
  const ownUploads = options.uploadsDir === undefined;
  const uploads = new UploadSessions(
    options.uploadsDir ?? (await fsp.mkdtemp(join(tmpdir(), 'tensorfs-hub-uploads-'))),
  );

  const principalOf = (req: http.IncomingMessage): Principal => {
    const h = req.headers.authorization;
    // Without a tokens file every request is anonymous, whatever it presents.
    if (h === undefined || !options.tokens) return anonymous;
    const m = /^Bearer (.+)$/.exec(h);
    if (!m)
      throw new TensorFSError('denied', 'unrecognised authorization', { details: { rule: 'hub.bad_authorization' } });
    const d = digest(m[1]!);
    let found: Principal | undefined;
    for (const g of grants) if (timingSafeEqual(g.hash, d)) found = { read: g.read, write: g.write, anonymous: false };
    if (!found) throw new TensorFSError('denied', 'unknown token', { details: { rule: 'hub.unknown_token' } });
    return found;
  };

  const deny = (p: Principal, what: string) =>
    new TensorFSError('denied', p.anonymous ? `${what} needs a token` : `this token may not ${what}`, {
      details: { rule: p.anonymous ? 'hub.token_required' : 'hub.scope' },
    });

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, signal: AbortSignal): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://hub');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const p = principalOf(req);
    if (options.pages && path !== '/v1' && !path.startsWith('/v1/') && (await options.pages(req, res, p.read))) return;
    if (path === '/v1' || path === '/v1/') {
      return sendJson(res, 200, { api: 'tensorfs-hub', version: 1, writable: grants.length > 0 });
    }
    if (path === '/v1/refs' && method === 'GET') {
      if (!p.read) throw deny(p, 'list refs');
      // One ref the backend cannot read is named in `problems`, never fails the listing.
      const listing = await backend.scanRefs({ signal });
      const readable = p.read;
      return sendJson(res, 200, {
        refs: listing.refs.filter((r) => readable(r.name)),
        problems: listing.problems
          .filter((r) => readable(r.name))
          .map(({ name, code, rule }) => ({ name, code, rule })),
      });
    }
    if (path.startsWith('/v1/refs/')) {
      const name = decodeRefPath(path.slice('/v1/refs/'.length));
      if (method === 'GET' || method === 'HEAD') {
        if (!p.read?.(name)) throw deny(p, 'read this ref');
        const id = await backend.getRef(name, { signal });
        if (id === null)
          throw new TensorFSError('not_found', 'no such ref', { details: { rule: 'remote.no_ref', ref: name } });
        res.setHeader('cache-control', 'no-cache');
        return sendJson(res, 200, { name, id });
      }
      if (method === 'PUT') {
        if (!p.write?.(name)) throw deny(p, 'move this ref');
        const body = (await readJson(req, maxJson)) as { id?: unknown; expected?: unknown };
        if (!isObjectId(body?.id))
          throw new TensorFSError('invalid_argument', 'the body needs an "id"', { details: { rule: 'hub.bad_body' } });
        const expected = body.expected === undefined ? undefined : body.expected === null ? null : body.expected;
        if (expected !== undefined && expected !== null && !isObjectId(expected)) {
          throw new TensorFSError('invalid_argument', '"expected" must be an id or null', {
            details: { rule: 'hub.bad_body' },
          });
        }
        await checkClosure(backend, body.id, signal);
        await backend.setRef(name, body.id, { expected: expected as ObjectId | null | undefined, signal });
        return sendJson(res, 200, { name, id: body.id });
      }
      throw methodNotAllowed();
    }
    if (path === '/v1/objects/lacks' && method === 'POST') {
      if (!p.read && !p.write) throw deny(p, 'query objects');
      const body = (await readJson(req, maxJson)) as { ids?: unknown };
      if (!Array.isArray(body?.ids) || body.ids.length > 10_000 || !body.ids.every(isObjectId)) {
        throw new TensorFSError('invalid_argument', '"ids" must be a list of at most 10000 ids', {
          details: { rule: 'hub.bad_body' },
        });
      }
      return sendJson(res, 200, { lacks: await backend.lacks(body.ids as ObjectId[], { signal }) });
    }
    if (path === '/v1/objects/batch' && method === 'POST') {
      if (!p.read) throw deny(p, 'read objects');
      const body = (await readJson(req, maxJson)) as { ids?: unknown };
      if (!Array.isArray(body?.ids) || body.ids.length > BATCH_MAX_IDS || !body.ids.every(isObjectId)) {
        throw new TensorFSError('invalid_argument', `"ids" must be a list of at most ${BATCH_MAX_IDS} ids`, {
          details: { rule: 'hub.bad_body', limit: BATCH_MAX_IDS },
        });
      }
      return sendBatch(backend, body.ids as ObjectId[], res, signal);
    }
    const u = /^\/v1\/uploads\/([0-9a-f]{64})(\/complete)?$/.exec(path);
    if (u) {
      if (!p.write) throw deny(p, 'upload objects');
      const id = `sha256:${u[1]}` as ObjectId;
      if (u[2] && method === 'POST') {
        await uploads.complete(id, backend, signal);
        return sendJson(res, 201, { id });
      }
      if (u[2]) throw methodNotAllowed();
      if (method === 'POST') {
        const body = (await readJson(req, maxJson)) as { length?: unknown };
        const length = body?.length;
        if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0) {
          throw new TensorFSError('invalid_argument', 'the body needs a "length"', {
            details: { rule: 'hub.bad_body' },
          });
        }
        if (length > maxObject) {
          throw new TensorFSError('limit_exceeded', 'the object is larger than this hub accepts', {
            details: { rule: 'hub.object_too_large', limit: maxObject },
          });
        }
        // Already stored: nothing to send.
        if ((await backend.lacks([id], { signal })).length === 0)
          return sendJson(res, 200, { id, length, offset: length, stored: true });
        return sendJson(res, 200, { id, length, offset: await uploads.open(id, length), stored: false });
      }
      if (method === 'PUT') {
        const offset = Number(url.searchParams.get('offset'));
        const len = Number(req.headers['content-length']);
        if (
          !Number.isSafeInteger(offset) ||
          offset < 0 ||
          req.headers['content-length'] === undefined ||
          !Number.isSafeInteger(len)
        ) {
          throw new TensorFSError('invalid_argument', 'a part needs ?offset= and a Content-Length', {
            details: { rule: 'hub.bad_part' },
          });
        }
        const at = await uploads.append(id, offset, len, req, signal);
        return sendJson(res, 200, { id, offset: at });
      }
      if (method === 'DELETE') {
        await uploads.abort(id);
        return sendJson(res, 200, { id });
      }
      throw methodNotAllowed();
    }
    const m = /^\/v1\/objects\/([0-9a-f]{64})$/.exec(path);
    if (m) {
      const id = `sha256:${m[1]}` as ObjectId;
      if (method === 'GET' || method === 'HEAD') {
        if (!p.read) throw deny(p, 'read objects');
        return sendObject(backend, id, req, res, method === 'HEAD', signal);
      }
      if (method === 'PUT') {
        if (!p.write) throw deny(p, 'upload objects');
        const len = Number(req.headers['content-length']);
        if (req.headers['content-length'] === undefined || !Number.isSafeInteger(len) || len < 0) {
          throw new TensorFSError('invalid_argument', 'an upload needs a Content-Length', {
            details: { rule: 'hub.length_required' },
          });
        }
        if (len > maxObject) {
          throw new TensorFSError('limit_exceeded', 'the object is larger than this hub accepts', {
            details: { rule: 'hub.object_too_large', limit: maxObject },
          });
        }
        let used = false;
        await backend.write(
          id,
          len,
          () => {
            if (used)
              throw new TensorFSError('unavailable', 'the upload cannot be replayed', {
                details: { rule: 'hub.replay' },
              });
            used = true;
            return req;
          },
          { signal },
        );
        return sendJson(res, 201, { id });
      }
      throw methodNotAllowed();
    }
    throw new TensorFSError('not_found', 'no such route', { details: { rule: 'hub.no_route' } });
  };

  // Connections that have not started a request yet (a browser opens some in advance): Node does
  // not count them as idle, so a graceful close would wait its whole grace behind them.
  const unused = new Set<Socket>();
  const server = http.createServer((req, res) => {
    unused.delete(req.socket);
    const started = Date.now();
    const ctl = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) ctl.abort();
    });
    if (inFlight >= maxConcurrent) {
      res.setHeader('retry-after', '1');
      sendError(res, new TensorFSError('unavailable', 'the hub is busy', { details: { rule: 'hub.busy' } }), 503);
      req.resume();
      return;
    }
    inFlight++;
    handle(req, res, ctl.signal)
      .catch((err) => {
        if (!res.headersSent) sendError(res, toTensorFSError(err));
        else res.destroy();
        // Drain what the client is still sending so it reads the answer.
        req.resume();
      })
      .finally(() => {
        inFlight--;
        options.log?.(
          `${req.method} ${new URL(req.url ?? '/', 'http://hub').pathname} ${res.statusCode} ${Date.now() - started}ms`,
        );
        if (inFlight === 0) for (const f of idle.splice(0)) f();
      });
  });
  server.on('connection', (socket: Socket) => {
    unused.add(socket);
    socket.once('close', () => unused.delete(socket));
  });
  server.requestTimeout = options.requestTimeoutMs ?? 30 * 60_000;
  server.headersTimeout = 66_000;
  // Longer than clients' idle pools (undici keeps sockets 4 s), so a reused socket is not closed under it.
  server.keepAliveTimeout = 65_000;
  server.timeout = options.idleTimeoutMs ?? 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(
        new TensorFSError('unavailable', 'the hub cannot listen', {
          details: { rule: 'hub.listen', errno: (err as { code?: string }).code },
        }),
      ),
    );
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    close(graceMs = 10_000) {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => {
          if (ownUploads) void fsp.rm(uploads.dir, { recursive: true, force: true }).finally(resolve);
          else resolve();
        });
        server.closeIdleConnections();
        for (const socket of unused) socket.destroy();
        const force = setTimeout(() => server.closeAllConnections(), graceMs);
        force.unref();
        if (inFlight === 0) server.closeIdleConnections();
        else idle.push(() => server.closeIdleConnections());
      });
      return closing;
    },
  };
}

/**
 * Upload sessions (spec/v1/remote.md "Resumable uploads"): one file per object being received,
 * `<hex>-<length>.upload`, whose size is the offset the next part must start at. Parts of one
 * object are appended one at a time; `complete` hands the whole file to the backend, which
 * verifies length and digest before the object is visible, then the session is gone.
 */
class UploadSessions {
  private readonly locks = new Map<string, Promise<unknown>>();
  constructor(readonly dir: string) {}

  private file(id: ObjectId, length: number): string {
    return join(this.dir, `${id.slice(7)}-${length}.upload`);
  }

  /** The session's length, or null when there is none. */
  private async find(id: ObjectId): Promise<{ path: string; length: number; size: number } | null> {
    const hex = id.slice(7);
    let names: string[];
    try {
      names = await fsp.readdir(this.dir);
    } catch {
      return null;
    }
    for (const n of names) {
      const m = /^([0-9a-f]{64})-(\d+)\.upload$/.exec(n);
      if (m && m[1] === hex) {
        const path = join(this.dir, n);
        const size = await fsp.stat(path).then(
          (st) => st.size,
          () => -1,
        );
        if (size >= 0) return { path, length: Number(m[2]), size };
      }
    }
    return null;
  }

  /** Runs `fn` after every earlier call for the same object. */
  private serial<T>(id: ObjectId, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(id) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => {});
    this.locks.set(id, tail);
    void tail.then(() => {
      if (this.locks.get(id) === tail) this.locks.delete(id);
    });
    return next;
  }

  /** Creates (or finds) the session; returns the offset to send from. */
  open(id: ObjectId, length: number): Promise<number> {
    return this.serial(id, async () => {
      const cur = await this.find(id);
      if (cur && cur.length === length && cur.size <= length) return cur.size;
      if (cur) await fsp.rm(cur.path, { force: true });
      await fsp.mkdir(this.dir, { recursive: true });
      await (await fsp.open(this.file(id, length), 'w')).close();
      return 0;
    });
  }

  /** Appends a part that starts at `offset`; `conflict` (with the session's offset) otherwise. */
  append(
    id: ObjectId,
    offset: number,
    len: number,
    body: AsyncIterable<Uint8Array>,
    signal: AbortSignal,
  ): Promise<number> {
    return this.serial(id, async () => {
      const cur = await this.find(id);
      if (!cur) {
        throw new TensorFSError('not_found', 'no upload session for this object', {
          details: { rule: 'hub.no_upload', digest: id },
        });
      }
      if (offset !== cur.size) {
        throw new TensorFSError('conflict', 'the part does not start where the upload stands', {
          details: { rule: 'hub.upload_offset', expected: cur.size, actual: offset },
        });
      }
      if (offset + len > cur.length) {
        throw new TensorFSError('invalid_argument', 'the part runs past the object', {
          details: { rule: 'hub.part_too_long', limit: cur.length },
        });
      }
      const fh = await fsp.open(cur.path, 'a');
      let n = 0;
      try {
        for await (const c of body) {
          if (signal.aborted) break;
          n += c.length;
          if (n > len) break;
          await fh.write(c);
        }
      } finally {
        await fh.close();
      }
      // A part cut short stays as far as it got: the client asks the offset and goes on from there.
      if (n > len) {
        await fsp.truncate(cur.path, offset + len);
        throw new TensorFSError('invalid_argument', 'the part is longer than its Content-Length', {
          details: { rule: 'hub.bad_part' },
        });
      }
      return offset + n;
    });
  }

  /** Hands the whole session to the backend (verified there), then ends the session. */
  complete(id: ObjectId, backend: Origin, signal: AbortSignal): Promise<void> {
    return this.serial(id, async () => {
      const cur = await this.find(id);
      if (!cur) {
        throw new TensorFSError('not_found', 'no upload session for this object', {
          details: { rule: 'hub.no_upload', digest: id },
        });
      }
      if (cur.size !== cur.length) {
        throw new TensorFSError('conflict', 'the upload is not complete', {
          details: { rule: 'hub.upload_incomplete', expected: cur.length, actual: cur.size },
        });
      }
      try {
        await backend.write(id, cur.length, () => fs.createReadStream(cur.path, { highWaterMark: 1 << 20 }), {
          signal,
        });
      } catch (err) {
        // Bytes that do not hash to the id are never kept; anything else may be retried.
        if (isTensorFSError(err) && err.code === 'corrupt') await fsp.rm(cur.path, { force: true });
        throw err;
      }
      await fsp.rm(cur.path, { force: true });
    });
  }

  abort(id: ObjectId): Promise<void> {
    return this.serial(id, async () => {
      const cur = await this.find(id);
      if (cur) await fsp.rm(cur.path, { force: true });
    });
  }
}

/** Most ids in one `POST /v1/objects/batch`. */
export const BATCH_MAX_IDS = 1000;

/** The frame length that says "not held" in a batch answer. */
export const BATCH_ABSENT = 0xffff_ffff_ffff_ffffn;

/**
 * Answers a batch (spec/v1/remote.md "Batched reads"): for each id in the order asked, a 40-byte
 * frame head (32 raw digest bytes, u64 big-endian length, all ones when the hub does not hold it)
 * and then the object's bytes. A backend failure mid-answer cuts the response (the client
 * fetches the rest one by one).
 */
async function sendBatch(
  backend: Origin,
  ids: readonly ObjectId[],
  res: http.ServerResponse,
  signal: AbortSignal,
): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/vnd.tensorfs.batch', 'cache-control': 'no-store' });
  const write = async (b: Uint8Array) => {
    if (!res.write(b)) await drained(res);
  };
  try {
    for (const id of ids) {
      if (res.destroyed || signal.aborted) return;
      const head = Buffer.alloc(40);
      Buffer.from(id.slice(7), 'hex').copy(head, 0);
      const r = await backend.read(id, 0, { signal }).catch((err) => {
        if (isTensorFSError(err) && err.code === 'not_found') return null;
        throw err;
      });
      if (r === null || r.size === undefined) {
        r?.cancel();
        head.writeBigUInt64BE(BATCH_ABSENT, 32);
        await write(head);
        continue;
      }
      head.writeBigUInt64BE(BigInt(r.size), 32);
      await write(head);
      let left = r.size;
      try {
        for await (const c of r.body) {
          const piece = c.length > left ? c.subarray(0, left) : c;
          left -= piece.length;
          await write(piece);
          if (left === 0 || res.destroyed) break;
        }
      } finally {
        r.cancel();
      }
      if (left > 0) {
        res.destroy();
        return;
      }
    }
    res.end();
  } catch {
    res.destroy();
  }
}

/** Before a ref names `id`, the backend must hold it and everything it references. */
async function checkClosure(backend: Origin, id: ObjectId, signal: AbortSignal): Promise<void> {
  const seen = new Set<ObjectId>();
  const queue: ObjectId[] = [id];
  const missing: ObjectId[] = [];
  while (queue.length > 0) {
    const cur = queue.pop()!;
    if (seen.has(cur)) continue;
    seen.add(cur);
    const r = await backend.read(cur, 0, { signal }).catch((err) => {
      if (isTensorFSError(err) && err.code === 'not_found') return null;
      throw err;
    });
    if (r === null) {
      missing.push(cur);
      continue;
    }
    const head: Uint8Array[] = [];
    let n = 0;
    for await (const c of r.body) {
      head.push(c);
      n += c.length;
      if (n > 1 << 30) break;
    }
    r.cancel();
    const bytes = Buffer.concat(head);
    if (sha256Id(bytes) !== cur) {
      throw new TensorFSError('corrupt', 'a stored object does not match its id', {
        details: { rule: 'hub.corrupt_object', digest: cur },
      });
    }
    const refs = referencesOf(bytes);
    const leaves = refs.filter((x) => !x.follow).map((x) => x.id);
    missing.push(...(await backend.lacks(leaves, { signal })));
    for (const x of refs) if (x.follow) queue.push(x.id);
  }
  if (missing.length > 0) {
    throw new TensorFSError('not_found', 'objects this ref would reach are missing from the hub', {
      details: { rule: 'hub.missing_objects', missing: missing.slice(0, 20), count: missing.length },
    });
  }
}

function methodNotAllowed(): TensorFSError {
  return new TensorFSError('invalid_argument', 'method not allowed here', { details: { rule: 'hub.method' } });
}

function decodeRefPath(p: string): string {
  try {
    return p.split('/').map(decodeURIComponent).join('/');
  } catch {
    throw new TensorFSError('invalid_argument', 'bad ref path', { details: { rule: 'hub.bad_ref_path' } });
  }
}

async function readJson(req: http.IncomingMessage, limit: number): Promise<unknown> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > limit)
      throw new TensorFSError('limit_exceeded', 'the request body is too large', {
        details: { rule: 'hub.body_too_large', limit },
      });
    parts.push(c);
  }
  try {
    return JSON.parse(Buffer.concat(parts).toString('utf8'));
  } catch {
    throw new TensorFSError('malformed', 'the request body is not JSON', { details: { rule: 'hub.bad_json' } });
  }
}

function sendJson(res: http.ServerResponse, status: number, value: unknown): void {
  const body = `${JSON.stringify(value)}\n`;
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** The error body: code, message and only safe details. Unknown failures say nothing more. */
export function errorBody(err: TensorFSError): {
  error: { code: ErrorCode; message: string; details: Record<string, unknown> };
} {
  if (err.code === 'internal' || err.code === 'io') {
    return {
      error: {
        code: err.code,
        message: err.code === 'io' ? 'storage error' : 'internal error',
        details: { rule: String(err.details.rule ?? 'hub.internal') },
      },
    };
  }
  const details: Record<string, unknown> = {};
  for (const k of SAFE_DETAILS) if (err.details[k] !== undefined) details[k] = err.details[k];
  return { error: { code: err.code, message: err.message, details } };
}

function sendError(res: http.ServerResponse, err: TensorFSError, status?: number): void {
  let st = status ?? HTTP_STATUS[err.code];
  if (err.code === 'denied' && TOKEN_RULES.has(err.details.rule)) st = 401;
  const body = `${JSON.stringify(errorBody(err))}\n`;
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  };
  if (st === 401) headers['www-authenticate'] = 'Bearer realm="tensorfs"';
  if (st === 503) headers['retry-after'] = '1';
  res.writeHead(st, headers);
  res.end(body);
}

function parseRange(h: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  if (!h) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(h.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start: number;
  let end: number;
  if (m[1] === '') {
    start = Math.max(0, size - Number(m[2]));
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return 'unsatisfiable';
  return { start, end };
}

async function sendObject(
  backend: Origin,
  id: ObjectId,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  head: boolean,
  signal: AbortSignal,
): Promise<void> {
  const probe = await backend.read(id, 0, { signal });
  const size = probe.size;
  if (size === undefined) {
    probe.cancel();
    throw new TensorFSError('internal', 'the backend did not report a size', { details: { rule: 'hub.no_size' } });
  }
  const range = parseRange(req.headers.range, size);
  const headers: Record<string, string | number> = {
    'content-type': 'application/octet-stream',
    'accept-ranges': 'bytes',
    etag: `"${id.slice(7)}"`,
    'cache-control': 'public, max-age=31536000, immutable',
  };
  if (range === 'unsatisfiable') {
    probe.cancel();
    res.writeHead(416, { ...headers, 'content-range': `bytes */${size}` });
    res.end();
    return;
  }
  const start = range?.start ?? 0;
  const end = range?.end ?? size - 1;
  const length = size === 0 ? 0 : end - start + 1;
  if (range) headers['content-range'] = `bytes ${start}-${end}/${size}`;
  headers['content-length'] = length;
  res.writeHead(range ? 206 : 200, headers);
  if (head || length === 0) {
    probe.cancel();
    res.end();
    return;
  }
  let r = probe;
  if (start > 0) {
    probe.cancel();
    r = await backend.read(id, start, { signal });
  }
  let left = length;
  try {
    for await (const c of r.body) {
      const piece = c.length > left ? c.subarray(0, left) : c;
      left -= piece.length;
      // The chunk's memory goes back to the backend once the socket has taken it.
      if (!res.write(piece, r.recycle && (() => r.recycle!(c)))) await drained(res);
      if (left === 0 || res.destroyed) break;
    }
  } finally {
    r.cancel();
  }
  if (left > 0) res.destroy();
  else res.end();
}

/** Resolves on `drain` or `close`, removing both listeners either way. */
function drained(res: http.ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
