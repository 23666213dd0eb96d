/**
 * The HTTP client every HTTP origin uses: credentials asked afresh per request and dropped on a
 * redirect to another origin, bounded redirects, retries of 5xx/429 (honouring `Retry-After`)
 * and of network failures, a read timeout, and errors mapped to the twelve families with no
 * token, query string or local path in them.
 */
import type { Dispatcher } from 'undici';
import { cancelledError, type ErrorCode, TensorFSError, isErrorCode, isTensorFSError } from '@tensorfs/format';
import { type Credential, credentialHeaders, credentialRetry } from './credentials.js';
import { RawFramingError, rawGet } from './raw.js';

/** undici, loaded by the first request (importing it costs some 80 ms that a command with no HTTP need not pay). */
let undiciModule: Promise<typeof import('undici')> | undefined;
const undici = (): Promise<typeof import('undici')> => (undiciModule ??= import('undici'));

/** Options shared by every request of one client. */
export interface HttpOptions {
  /** Presented on every request to the first origin (never after a cross-origin redirect). */
  credential?: Credential;
  /** Milliseconds without progress (headers or body bytes) before an attempt fails (default 30 s). */
  readTimeoutMs?: number;
  /** Further attempts after a network failure, 5xx or 429 (default 4). */
  retries?: number;
  /** Redirects followed per request (default 5); more is `unavailable` (`http.redirect_loop`). */
  maxRedirects?: number;
  /** First backoff delay; doubles each attempt (default 200 ms). */
  baseDelayMs?: number;
  /** Longest `Retry-After` honoured; a longer one fails at once (default 30 s). */
  maxRetryAfterMs?: number;
  /** undici dispatcher (connection pool) to use. */
  dispatcher?: Dispatcher;
  /**
   * Large object reads (requests marked `large`) over plain `http:` go through TensorFS's raw
   * reader, which reads the socket straight into 4 MiB buffers (see raw.ts; about a fifth of
   * undici's CPU per byte). Default true; false sends them through undici like everything else.
   * Not used with a custom `dispatcher` (a proxy, a mock) here or installed globally, nor over
   * `https:`. A global `Agent` with connect options (a `socketPath`, `lookup`, a CA) is not seen:
   * set this false there.
   */
  rawReads?: boolean;
  /** Called before each retry (for tests and progress). */
  onRetry?: (info: { url: string; status?: number; attempt: number; delayMs: number }) => void;
  /**
   * Open no socket: every request fails `unavailable` (`details.offline: true`) before undici or
   * the raw reader is reached. Default: `TENSORFS_OFFLINE=1` in the environment.
   */
  offline?: boolean;
}

/** One request. */
export interface HttpRequest {
  method: 'GET' | 'HEAD' | 'PUT' | 'POST' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  /** Bytes, or a factory called once per attempt (so a retry can resend a stream). */
  body?: Uint8Array | string | (() => AsyncIterable<Uint8Array>);
  /** `sha256:<hex>` of the body when known (passed to a {@link TokenProvider}). */
  payloadDigest?: string;
  signal?: AbortSignal;
  /** Non-2xx statuses returned to the caller instead of thrown (e.g. 404 for "absent"). */
  accept?: readonly number[];
  /** Set false to fail at once on 5xx/429/network errors (default true). */
  retry?: boolean;
  /**
   * `manual`: a redirect is returned to the caller (its body dumped) instead of followed, so its
   * headers can be read (the Hugging Face Hub's `X-Linked-Etag` on a 302). Default `follow`.
   */
  redirect?: 'follow' | 'manual';
  /** A large body is expected (a pull's large object): a plain-HTTP GET may use the raw reader. */
  large?: boolean;
}

/** A response body: iterated, or dumped/destroyed by the caller. */
export interface HttpBody extends AsyncIterable<Uint8Array> {
  destroy(): void;
  dump(): Promise<unknown>;
  /** The raw reader's: the consumer is done with a chunk (see {@link ObjectRead.recycle}). */
  recycle?(chunk: Uint8Array): void;
}

/** A response whose body the caller must consume or dump. */
export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: HttpBody;
  /** The URL finally answered (after redirects), for resolving relative links. */
  url: string;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** `https://host/path` of a URL: no user info, no query string, no fragment. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '<invalid url>';
  }
}

/** The family of an HTTP status. */
export function codeOfStatus(status: number): ErrorCode {
  if (status === 400 || status === 416 || status === 405) return 'invalid_argument';
  if (status === 401 || status === 403) return 'denied';
  if (status === 404 || status === 410) return 'not_found';
  if (status === 409 || status === 412) return 'conflict';
  if (status === 413 || status === 429) return 'limit_exceeded';
  if (status === 501) return 'unsupported';
  if (status === 422) return 'corrupt';
  if (status >= 500) return 'unavailable';
  return 'internal';
}

/** Sleeps `ms`, or throws `cancelled` when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(cancelledError());
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(cancelledError());
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** True when `env` asks for no network (`TENSORFS_OFFLINE=1`; with `hf`, `HF_HUB_OFFLINE=1` too). */
export function offlineFromEnv(env: NodeJS.ProcessEnv = process.env, hf = false): boolean {
  const on = (v: string | undefined) => v !== undefined && /^(1|true|yes|on)$/i.test(v.trim());
  return on(env.TENSORFS_OFFLINE) || (hf && on(env.HF_HUB_OFFLINE));
}

/** `unavailable` with `details.offline: true`: what a network path answers when offline. */
export function offlineError(what: string): TensorFSError {
  return new TensorFSError('unavailable', `offline (TENSORFS_OFFLINE, --offline): ${what} needs the network`, {
    details: { rule: 'remote.offline', offline: true },
  });
}

/** `Retry-After` in ms (delta seconds or an HTTP date), if present and sane. */
export function retryAfterMs(value: string | string[] | undefined): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === '') return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - Date.now());
}

/** A client bound to one set of {@link HttpOptions}. */
export class HttpClient {
  /** False once an origin answered a raw read in a framing only undici handles. */
  private raw: boolean;

  constructor(readonly options: HttpOptions = {}) {
    this.raw = options.rawReads !== false && options.dispatcher === undefined;
  }

  /**
   * Sends one request, following redirects (credentials only to the first origin), retrying
   * network failures, 5xx and 429 with backoff. Returns 2xx and `accept`ed statuses; throws a
   * TensorFSError for everything else (the body's `{error:{code,message}}` when it has one).
   */
  async send(req: HttpRequest): Promise<HttpResponse> {
    const o = this.options;
    // The one gate every HTTP request passes (undici and the raw reader alike): offline, no socket.
    if (o.offline ?? offlineFromEnv()) throw offlineError(`${req.method} ${displayUrl(req.url)}`);
    const retries = req.retry === false ? 0 : (o.retries ?? 4);
    const maxRedirects = o.maxRedirects ?? 5;
    const timeout = o.readTimeoutMs ?? 30_000;
    const first = new URL(req.url).origin;
    let url = req.url;
    let method = req.method;
    let hops = 0;
    let attempt = 0;
    let authTries = 0;
    for (;;) {
      if (req.signal?.aborted) throw cancelledError();
      const sameOrigin = new URL(url).origin === first;
      const base = { 'user-agent': 'tensorfs-remote/0.1', ...(req.headers ?? {}) };
      const auth = sameOrigin
        ? await credentialHeaders(o.credential, method, url, base, req.payloadDigest).catch((err) => {
            throw new TensorFSError('denied', 'the credential provider failed', {
              details: { rule: 'remote.credential_failed', cause: isTensorFSError(err) ? err.code : 'error' },
            });
          })
        : {};
      const body = typeof req.body === 'function' ? req.body() : req.body;
      const { getGlobalDispatcher, request } = await undici();
      const raw =
        this.raw &&
        req.large === true &&
        method === 'GET' &&
        body === undefined &&
        url.startsWith('http:') &&
        plainGlobalDispatcher(getGlobalDispatcher);
      let res: { statusCode: number; headers: HttpResponse['headers']; body: HttpBody };
      try {
        res = raw
          ? await rawGet(url, { ...base, ...auth }, { signal: req.signal, timeoutMs: timeout })
          : await request(url, {
              method,
              headers: { ...base, ...auth },
              body: body as Dispatcher.DispatchOptions['body'],
              signal: req.signal,
              headersTimeout: timeout,
              bodyTimeout: timeout,
              dispatcher: o.dispatcher,
            });
      } catch (err) {
        if (req.signal?.aborted) throw cancelledError();
        if (err instanceof RawFramingError) {
          // Chunked or interim answers: undici reads this origin from now on (asked again at once).
          this.raw = false;
          continue;
        }
        // A request that is not valid HTTP (a header with CR, LF or NUL) fails the same way again.
        if (isTensorFSError(err) && err.code === 'invalid_argument') throw err;
        if ((err as { code?: unknown })?.code === 'UND_ERR_INVALID_ARG') {
          throw new TensorFSError('invalid_argument', 'the request is not valid HTTP (a header undici refuses)', {
            details: { rule: 'http.bad_request' },
          });
        }
        if (attempt < retries) {
          const delayMs = (o.baseDelayMs ?? 200) * 2 ** attempt;
          attempt++;
          o.onRetry?.({ url: displayUrl(url), attempt, delayMs });
          await sleep(delayMs, req.signal);
          continue;
        }
        throw new TensorFSError('unavailable', 'the origin could not be reached', {
          details: { rule: 'http.network', url: displayUrl(url), cause: networkCause(err), attempts: attempt + 1 },
        });
      }
      const status = res.statusCode;
      if (REDIRECTS.has(status) && res.headers.location !== undefined) {
        await res.body.dump().catch(() => {});
        if (req.redirect === 'manual') return { status, headers: res.headers, body: res.body, url };
        if (typeof req.body === 'function' || (req.body !== undefined && status !== 303)) {
          throw new TensorFSError('unsupported', 'the origin redirected an upload', {
            details: { rule: 'http.redirect_upload', url: displayUrl(url) },
          });
        }
        hops++;
        if (hops > maxRedirects) {
          throw new TensorFSError('unavailable', 'too many redirects', {
            details: { rule: 'http.redirect_loop', url: displayUrl(req.url), limit: maxRedirects },
          });
        }
        const loc = Array.isArray(res.headers.location) ? res.headers.location[0]! : res.headers.location;
        url = new URL(loc, url).href;
        if (status === 303) method = method === 'HEAD' ? 'HEAD' : 'GET';
        continue;
      }
      if ((status === 401 || status === 403) && sameOrigin && authTries < 2) {
        if (await credentialRetry(o.credential, status, displayUrl(url), authTries + 1)) {
          await res.body.dump().catch(() => {});
          authTries++;
          continue;
        }
      }
      if ((status === 429 || (status >= 500 && status !== 501)) && !req.accept?.includes(status)) {
        const errBody = await readText(res.body, 64 * 1024).catch(() => '');
        if (attempt < retries) {
          const after = retryAfterMs(res.headers['retry-after']);
          const delayMs = after ?? (o.baseDelayMs ?? 200) * 2 ** attempt;
          if (delayMs <= (o.maxRetryAfterMs ?? 30_000)) {
            attempt++;
            o.onRetry?.({ url: displayUrl(url), status, attempt, delayMs });
            await sleep(delayMs, req.signal);
            continue;
          }
        }
        throw errorFromBody(status, errBody, url, attempt + 1, secretsOf(auth));
      }
      if ((status >= 200 && status < 300) || req.accept?.includes(status)) {
        return { status, headers: res.headers, body: res.body, url };
      }
      const text = method === 'HEAD' ? '' : await readText(res.body, 64 * 1024).catch(() => '');
      if (method === 'HEAD') await res.body.dump().catch(() => {});
      throw errorFromBody(status, text, url, attempt + 1, secretsOf(auth));
    }
  }

  /** GET/POST/PUT returning parsed JSON (bounded to `limit` bytes). */
  async json<T>(req: HttpRequest, limit = 16 * 1024 * 1024): Promise<{ status: number; value: T | undefined }> {
    const res = await this.send({ ...req, headers: { accept: 'application/json', ...(req.headers ?? {}) } });
    const text = await readText(res.body, limit);
    if (res.status < 200 || res.status >= 300) return { status: res.status, value: undefined };
    try {
      return { status: res.status, value: JSON.parse(text) as T };
    } catch {
      throw new TensorFSError('malformed', 'the origin answered with invalid JSON', {
        details: { rule: 'http.bad_json', url: displayUrl(res.url) },
      });
    }
  }
}

/**
 * True while undici's global dispatcher is a plain `Agent` (undici's or Node's own): a process
 * that installed a proxy, mock or retry agent globally gets every request through it, large
 * reads included.
 */
function plainGlobalDispatcher(getGlobalDispatcher: () => Dispatcher): boolean {
  return getGlobalDispatcher()?.constructor?.name === 'Agent';
}

function networkCause(err: unknown): string {
  if (isTensorFSError(err) && typeof err.details.rule === 'string') return err.details.rule;
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' ? code : 'network_error';
}

/** Reads a body as UTF-8 text, at most `limit` bytes (`limit_exceeded` beyond). */
export async function readText(body: AsyncIterable<Uint8Array>, limit: number): Promise<string> {
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const c of body) {
    n += c.length;
    if (n > limit) {
      throw new TensorFSError('limit_exceeded', 'the origin sent a larger body than expected', {
        details: { rule: 'http.body_limit', limit },
      });
    }
    parts.push(c);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** The TensorFSError a non-2xx answer stands for (the hub's error body when there is one). */
export function errorFromBody(
  status: number,
  text: string,
  url: string,
  attempts: number,
  secrets: readonly string[] = [],
): TensorFSError {
  let code = codeOfStatus(status);
  let message = `the origin answered ${status}`;
  // The rule the origin's error named, passed on; a bare status names `http.<status>`.
  const answer = { details: { rule: `http.${status}` } };
  try {
    const v = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: { rule?: unknown } } };
    if (v?.error && isErrorCode(v.error.code)) {
      code = v.error.code;
      if (typeof v.error.message === 'string') message = `origin: ${redact(v.error.message.slice(0, 300), secrets)}`;
      if (typeof v.error.details?.rule === 'string')
        answer.details.rule = redact(v.error.details.rule.slice(0, 100), secrets);
    }
  } catch {
    // not a hub error body: the status decides
  }
  return new TensorFSError(code, message, { details: { ...answer.details, status, url: displayUrl(url), attempts } });
}

/** The secret parts of the credential headers one request presented. */
function secretsOf(headers: Record<string, string>): string[] {
  const out: string[] = [];
  for (const v of Object.values(headers)) {
    if (v.length >= 4) out.push(v);
    const m = /^\S+\s+(\S{4,})$/.exec(v);
    if (m) out.push(m[1]!);
  }
  return out;
}

/** `text` with every secret replaced (an origin could echo what it was sent). */
function redact(text: string, secrets: readonly string[]): string {
  let t = text;
  for (const s of secrets) t = t.split(s).join('[redacted]');
  return t;
}
