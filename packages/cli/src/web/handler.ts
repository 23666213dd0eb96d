/**
 * The web page's request handler: the page itself (`/`, `/app.js`) and its JSON (`/api/...`),
 * read-only, mountable in any Node HTTP server (the hub mounts it beside its `/v1/` API).
 */
import * as fsp from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import {
  HTTP_STATUS,
  isObjectId,
  isTensorFSError,
  parseRepoRefName,
  resolveRevision,
  TensorFSError,
  treeVariants,
} from '@tensorfs/format';
import { toJson } from '../context.js';
import { webDiff, webRef, webRefs, webRepos, type WebStore } from './api.js';
import { WEB_INDEX_HTML } from './page.js';

/** Options of {@link webHandler}. */
export interface WebHandlerOptions {
  /**
   * Decides what a request may read (the hub passes its token check): `false` refuses the JSON
   * (401), `true` allows every ref, a predicate allows the refs it accepts (others are left out of
   * the refs list, and asking for them is `denied`; an id is readable when a readable ref names it).
   * The page and its script hold no data and are served to anyone. Default: every ref.
   */
  authorize?: (req: IncomingMessage) => ReadGrant | Promise<ReadGrant>;
}

/** What a request may read: nothing, everything, or the refs a predicate accepts. */
export type ReadGrant = boolean | ((ref: string) => boolean);

/**
 * A request handler: resolves true when it answered, false for a path it does not serve. A server
 * that has already checked the request's token passes its `grant` (it then overrides `authorize`).
 */
export type WebHandler = (req: IncomingMessage, res: ServerResponse, grant?: ReadGrant) => Promise<boolean>;

/** Where the bundled page script is: beside the built module, or in `dist/` when run from source. */
const SCRIPT_CANDIDATES = [new URL('./web/app.js', import.meta.url), new URL('../../dist/web/app.js', import.meta.url)];

let script: Promise<Uint8Array> | undefined;
async function loadScript(): Promise<Uint8Array> {
  for (const url of SCRIPT_CANDIDATES) {
    try {
      return new Uint8Array(await fsp.readFile(fileURLToPath(url)));
    } catch {}
  }
  throw new TensorFSError('not_found', 'the web page script is not built (run pnpm build)', {
    details: { rule: 'web.script' },
  });
}

function send(res: ServerResponse, status: number, type: string, body: string | Uint8Array, head: boolean): void {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  res.writeHead(status, {
    'content-type': type,
    'content-length': bytes.length,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    // Everything is same-origin: no CDN, no external fonts, nothing inline but styles.
    'content-security-policy':
      "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:",
  });
  res.end(head ? undefined : bytes);
}

function sendJson(res: ServerResponse, status: number, value: unknown, head: boolean): void {
  // As the hub's API: a 503 (`unavailable`, `cancelled`) says when to try again.
  if (status === 503) res.setHeader('retry-after', '1');
  send(res, status, 'application/json; charset=utf-8', toJson(value), head);
}

/** True when a revision of these (readable) refs resolves to `id`: its tree, or a variant header of the tree. */
async function reachable(store: WebStore, refs: readonly { name: string }[], id: string): Promise<boolean> {
  for (const r of refs) {
    const parsed = parseRepoRefName(r.name);
    if (parsed === null) continue;
    try {
      const res = await resolveRevision(store, parsed.repo, parsed.name);
      if (res.target === id) return true;
      if (res.targetKind !== 'tree') continue;
      const manifest = await store.getManifest(res.target);
      const paths = new Set(treeVariants(manifest).map((v) => v.path));
      for (const e of manifest.entries)
        if (e.kind === 'file' && paths.has(e.path) && e.records.some((x) => x.digest === id)) return true;
    } catch (error) {
      if (!isTensorFSError(error) || error.code === 'cancelled') throw error;
    }
  }
  return false;
}

/**
 * The store as a request limited to some refs sees it: only those refs (and problems of those
 * refs) are listed, and a name or id resolves only through them (`denied` otherwise). Objects are
 * read through the store as is.
 */
function readableStore(store: WebStore, readable: (ref: string) => boolean): WebStore {
  const only = <L extends { refs: readonly { name: string }[]; problems: readonly { name: string }[] }>(l: L): L => ({
    ...l,
    refs: l.refs.filter((r) => readable(r.name)),
    problems: l.problems.filter((p) => readable(p.name)),
  });
  const listRefs = async () => (await store.listRefs()).filter((r) => readable(r.name));
  const scanRefs = store.scanRefs && (async () => only(await store.scanRefs!()));
  const checkRefs = store.checkRefs && (async () => only(await store.checkRefs!()));
  const denied = (ref: string) =>
    new TensorFSError('denied', 'this token may not read that ref', { details: { rule: 'web.read', ref } });
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'listRefs') return listRefs;
      if (prop === 'scanRefs') return scanRefs;
      if (prop === 'checkRefs') return checkRefs;
      if (prop === 'resolve') {
        return async (refOrId: string) => {
          // A name the grant covers resolves as usual (not_found if there is no such ref).
          if (readable(refOrId)) return store.resolve(refOrId);
          // An id is readable when a readable ref names it, or a readable branch or tag
          // resolves to it (its tree, a variant of the tree); one bad ref does not hide the others.
          if (isObjectId(refOrId)) {
            const listed = scanRefs ? (await scanRefs()).refs : await listRefs();
            if (listed.some((r) => r.id === refOrId)) return refOrId;
            if (await reachable(store, listed, refOrId)) return refOrId;
          }
          throw denied(refOrId);
        };
      }
      if (prop === 'getRef') {
        return async (name: string) => (readable(name) ? store.getRef(name) : null);
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * The web page of a store: `GET /` (the page), `/app.js` (its script), `/api/refs`,
 * `/api/repos` (repositories, branches, tags and each tree's variants), `/api/ref?name=`, `/api/diff?a=&b=[&file=]`. Anything else resolves false (not handled), so a
 * server can try its own routes next. Errors are `{error: {code, message, details}}` with the
 * HTTP status of their family ({@link HTTP_STATUS}, the hub's table); messages carry no local paths.
 */
export function webHandler(store: WebStore, options: WebHandlerOptions = {}): WebHandler {
  return async (req, res, given) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const head = req.method === 'HEAD';
    const route = url.pathname;
    const isPage = route === '/' || route === '/index.html';
    const isApi = route.startsWith('/api/');
    if (!isPage && route !== '/app.js' && !isApi) return false;
    if (req.method !== 'GET' && !head) {
      res.setHeader('allow', 'GET, HEAD');
      sendJson(res, 405, { error: { code: 'invalid_argument', message: 'read-only: GET and HEAD only' } }, head);
      return true;
    }
    try {
      if (isPage) {
        send(res, 200, 'text/html; charset=utf-8', WEB_INDEX_HTML, head);
        return true;
      }
      if (route === '/app.js') {
        script ??= loadScript().catch((e) => {
          script = undefined;
          throw e;
        });
        send(res, 200, 'text/javascript; charset=utf-8', await script, head);
        return true;
      }
      const grant = given ?? (options.authorize ? await options.authorize(req) : true);
      if (grant === false) {
        sendJson(res, 401, { error: { code: 'denied', message: 'a valid token is required' } }, head);
        return true;
      }
      const view = grant === true ? store : readableStore(store, grant);
      const q = url.searchParams;
      if (route === '/api/refs') sendJson(res, 200, await webRefs(view), head);
      else if (route === '/api/repos') sendJson(res, 200, await webRepos(view), head);
      else if (route === '/api/ref') sendJson(res, 200, await webRef(view, q.get('name') ?? ''), head);
      else if (route === '/api/diff') {
        sendJson(res, 200, await webDiff(view, q.get('a') ?? '', q.get('b') ?? '', q.get('file') ?? undefined), head);
      } else sendJson(res, 404, { error: { code: 'not_found', message: 'no such API route' } }, head);
    } catch (error) {
      const e = isTensorFSError(error)
        ? error
        : new TensorFSError('internal', 'the request failed', { details: { rule: 'web.internal' } });
      sendJson(res, HTTP_STATUS[e.code], { error: { code: e.code, message: e.message, details: e.details } }, head);
    }
    return true;
  };
}
