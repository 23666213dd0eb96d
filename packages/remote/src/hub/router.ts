/** The route table: a path (and method) to its handler; everything else is `hub.no_route`. */
import { TensorFSError } from '@tensorfs/format';
import { adminGc } from './admin.js';
import type { RequestContext } from './context.js';
import { object, postBatch, postLacks } from './objects.js';
import { listRefs, ref, whoami } from './refs.js';
import { sendJson } from './respond.js';
import { upload } from './uploads.js';

/** A route: a path pattern, the one method it takes (any when absent), and its handler. */
interface Route {
  pattern: RegExp;
  method?: string;
  handle(c: RequestContext, m: RegExpExecArray): Promise<void>;
}

const ROUTES: readonly Route[] = [
  {
    pattern: /^\/v1\/?$/,
    handle: async (c) => sendJson(c.res, 200, { api: 'tensorfs-hub', version: 1, writable: c.hub.writable }),
  },
  { pattern: /^\/v1\/whoami$/, method: 'GET', handle: whoami },
  { pattern: /^\/v1\/refs$/, method: 'GET', handle: listRefs },
  { pattern: /^\/v1\/admin\/gc$/, method: 'POST', handle: adminGc },
  { pattern: /^\/v1\/refs\/(.*)$/, handle: (c, m) => ref(c, m[1]!) },
  { pattern: /^\/v1\/objects\/lacks$/, method: 'POST', handle: postLacks },
  { pattern: /^\/v1\/objects\/batch$/, method: 'POST', handle: postBatch },
  { pattern: /^\/v1\/uploads\/([0-9a-f]{64})(\/complete)?$/, handle: (c, m) => upload(c, m[1]!, m[2] !== undefined) },
  { pattern: /^\/v1\/objects\/([0-9a-f]{64})$/, handle: (c, m) => object(c, m[1]!) },
];

/** Answers an API request by the first route whose pattern and method match. */
export async function route(c: RequestContext): Promise<void> {
  const path = c.url.pathname;
  for (const r of ROUTES) {
    if (r.method !== undefined && r.method !== c.method) continue;
    const m = r.pattern.exec(path);
    if (m) return r.handle(c, m);
  }
  throw new TensorFSError('not_found', 'no such route', { details: { rule: 'hub.no_route' } });
}
