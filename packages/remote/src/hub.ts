/**
 * The TensorFS hub: the `/v1/` HTTP API of spec/v1/remote.md over any writable store (a local
 * store, or an S3 bucket — then the hub holds no state and several hubs can share one bucket).
 * Tokens carry read/write scopes per ref glob; without a tokens file the hub is anonymous and
 * read-only. Bodies and concurrency are bounded, requests time out, and {@link Hub.close} drains
 * in-flight requests.
 *
 * This file composes the parts under `hub/`: tokens (`auth`), the route table (`router`) and its
 * handlers (`refs`, `objects`, `uploads` over the `sessions`), answers (`respond`), the concurrency
 * bound (`limits`), the connections kept within the open-file limit (`connections`) and listening
 * and shutdown (`shutdown`).
 */
import * as fsp from 'node:fs/promises';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import type { Duplex } from 'node:stream';
import { join } from 'node:path';
import { TensorFSError, toTensorFSError } from '@tensorfs/format';
import type { Store } from '@tensorfs/format/store';
import { Auth } from './hub/auth.js';
import type { HubState, RequestContext } from './hub/context.js';
import { boundConnections, connectionBudget, openFileLimit, retryableWhenOutOfDescriptors } from './hub/connections.js';
import { Concurrency } from './hub/limits.js';
import { finishEarly, rawErrorAnswer, sendError } from './hub/respond.js';
import { route } from './hub/router.js';
import { UploadSessions } from './hub/sessions.js';
import { closer, listen, trackUnused } from './hub/shutdown.js';
import type { Hub, HubOptions, HubStore } from './hub/types.js';
import { Quarantine } from './hub/verify.js';
import { HfApi } from './hub/hf-api.js';
import { checkpointLayout } from './hub/hf-layout.js';
import { PullThrough } from './hub/upstream.js';
import { originOf } from './store-origin.js';
import { gcBacking } from './gc.js';

export { parseTokensConfig, type TokenGrant, type TokensConfig } from './hub/auth.js';
export { BATCH_ABSENT, BATCH_MAX_IDS } from './hub/objects.js';
export { errorBody } from './hub/respond.js';
export type { Hub, HubOptions, HubStore, QuarantiningStore, UpstreamOptions } from './hub/types.js';

/** Starts a hub serving `store`: any implementation of the storage contract (an origin, or a store). */
export async function serveHub(store: Store, options: HubOptions = {}): Promise<Hub> {
  const backend: HubStore = originOf(store);
  const auth = new Auth(options.tokens);
  const load = new Concurrency(options.maxConcurrent ?? 64);
  const ownUploads = options.uploadsDir === undefined;
  const uploads = new UploadSessions(
    options.uploadsDir ?? (await fsp.mkdtemp(join(tmpdir(), 'tensorfs-hub-uploads-'))),
    { sessions: options.maxUploadSessions ?? 16, bytes: options.maxUploadBytes ?? 256 * 1024 ** 3 },
  );
  const state: HubState = {
    store: backend,
    uploads,
    quarantine: new Quarantine(backend),
    writable: auth.writable,
    maxJson: options.maxJsonBytes ?? 4 << 20,
    maxObject: options.maxObjectBytes ?? 64 * 1024 ** 3,
    gc: options.gc ?? ((o) => gcBacking(store, o)),
  };
  let hf: HfApi | undefined;
  if (options.huggingFace !== false) {
    const upstream = options.huggingFace?.upstream;
    state.hf = hf = new HfApi(backend, state.quarantine, {
      layout: checkpointLayout,
      ...(options.huggingFace?.pageSize !== undefined ? { pageSize: options.huggingFace.pageSize } : {}),
      ...(upstream ? { source: new PullThrough({ ...(options.log ? { log: options.log } : {}), ...upstream }) } : {}),
    });
  }

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, signal: AbortSignal): Promise<void> => {
    if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) {
      throw new TensorFSError('invalid_argument', 'an HTTP/1.1 request needs a Host header', {
        details: { rule: 'hub.no_host' },
      });
    }
    const url = new URL(req.url ?? '/', 'http://hub');
    const path = url.pathname;
    const principal = auth.principalOf(req);
    const c: RequestContext = { req, res, url, method: req.method ?? 'GET', principal, signal, hub: state };
    const outside = path !== '/v1' && !path.startsWith('/v1/');
    if (outside && state.hf && (await state.hf.route(c))) return;
    if (options.pages && outside && (await options.pages(req, res, principal.read))) return;
    return route(c);
  };

  // Host is checked here, so a request without it gets the error body rather than Node's empty 400.
  const server = http.createServer({ requireHostHeader: false }, (req, res) => {
    if (refused(req.socket)) return void req.socket.destroy();
    const started = Date.now();
    const ctl = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) ctl.abort();
    });
    if (!load.enter()) {
      res.setHeader('retry-after', '1');
      sendError(res, new TensorFSError('unavailable', 'the hub is busy', { details: { rule: 'hub.busy' } }), 503);
      finishEarly(req, res);
      return;
    }
    handle(req, res, ctl.signal)
      .catch((err) => {
        // An answer before the body was read: say the connection closes, drain a bounded rest, close.
        const early = !req.complete;
        if (!res.headersSent) {
          if (early) res.setHeader('connection', 'close');
          sendError(res, retryableWhenOutOfDescriptors(toTensorFSError(err)));
        } else res.destroy();
        finishEarly(req, res);
      })
      .finally(() => {
        options.log?.(
          `${req.method} ${new URL(req.url ?? '/', 'http://hub').pathname} ${res.statusCode} ${Date.now() - started}ms`,
        );
        load.leave();
      });
  });
  const refused = boundConnections(server, options.maxConnections ?? connectionBudget(openFileLimit(), load.max));
  server.on('clientError', answerClientError);
  const unused = trackUnused(server);
  server.requestTimeout = options.requestTimeoutMs ?? 30 * 60_000;
  server.headersTimeout = 66_000;
  // Longer than clients' idle pools (undici keeps sockets 4 s), so a reused socket is not closed under it.
  server.keepAliveTimeout = 65_000;
  server.timeout = options.idleTimeoutMs ?? 60_000;
  const addr = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1', (err) =>
    options.log?.(`accept failed: ${err.code ?? err.message}`),
  );
  // Over a writable store the digests computed now are kept, so files are known before their first HEAD.
  if (hf && backend.capabilities.has('objects.write') && backend.capabilities.has('refs.write')) void hf.warmAll();
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    close: closer(server, unused, load, async () => {
      hf?.stop();
      if (ownUploads) await fsp.rm(uploads.dir, { recursive: true, force: true });
    }),
  };
}

/**
 * A request Node could not parse (or that timed out before its head arrived): answered with the
 * error body too, then the socket is closed — never Node's empty `400`.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (!socket.writable || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const answer =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? rawErrorAnswer(
          431,
          'Request Header Fields Too Large',
          new TensorFSError('limit_exceeded', 'the request head is too large', {
            details: { rule: 'hub.head_too_large' },
          }),
        )
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? rawErrorAnswer(
            408,
            'Request Timeout',
            new TensorFSError('unavailable', 'the request took too long', { details: { rule: 'hub.timeout' } }),
          )
        : rawErrorAnswer(
            400,
            'Bad Request',
            new TensorFSError('invalid_argument', 'the request is not valid HTTP', {
              details: { rule: 'hub.bad_request' },
            }),
          );
  socket.end(answer);
}
