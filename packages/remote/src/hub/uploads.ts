/** The upload routes (`/v1/uploads/<hex>`): open a session, append parts, complete or abort it. */
import { type ObjectId, TensorFSError } from '@tensorfs/format';
import { deny } from './auth.js';
import type { RequestContext } from './context.js';
import { methodNotAllowed, readJson, sendJson } from './respond.js';

/** `/v1/uploads/<hex>` (POST opens, PUT appends a part, DELETE aborts) and `…/complete` (POST). */
export async function upload(c: RequestContext, hex: string, complete: boolean): Promise<void> {
  const p = c.principal;
  const { store, uploads } = c.hub;
  const signal = c.signal;
  if (!p.write) throw deny(p, 'upload objects');
  const id = `sha256:${hex}` as ObjectId;
  if (complete && c.method === 'POST') {
    await uploads.complete(id, p.owner, store, signal);
    c.hub.quarantine.clear(id);
    return sendJson(c.res, 201, { id });
  }
  if (complete) throw methodNotAllowed();
  if (c.method === 'POST') {
    const body = (await readJson(c.req, c.hub.maxJson)) as { length?: unknown };
    const length = body?.length;
    if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0) {
      throw new TensorFSError('invalid_argument', 'the body needs a "length"', {
        details: { rule: 'hub.bad_body' },
      });
    }
    if (length > c.hub.maxObject) {
      throw new TensorFSError('limit_exceeded', 'the object is larger than this hub accepts', {
        details: { rule: 'hub.object_too_large', limit: c.hub.maxObject },
      });
    }
    // Already stored: nothing to send.
    if ((await store.lacks([id], { signal })).length === 0)
      return sendJson(c.res, 200, { id, length, offset: length, stored: true });
    const offset = await uploads.open(id, length, p.owner, store, signal);
    if (offset === null) return sendJson(c.res, 200, { id, length, offset: length, stored: true });
    return sendJson(c.res, 200, { id, length, offset, stored: false });
  }
  if (c.method === 'PUT') {
    const req = c.req;
    // Plain decimal only: no `?offset=` is not 0, and `0x1f4`, `1e3` or `+5` are not offsets.
    const offset = decimal(c.url.searchParams.get('offset'));
    const len = decimal(req.headers['content-length']);
    if (offset === undefined || len === undefined) {
      throw new TensorFSError('invalid_argument', 'a part needs ?offset= and a Content-Length', {
        details: { rule: 'hub.bad_part' },
      });
    }
    const at = await uploads.append(id, p.owner, offset, len, req, store, signal);
    return sendJson(c.res, 200, { id, offset: at });
  }
  if (c.method === 'DELETE') {
    await uploads.abort(id, p.owner);
    return sendJson(c.res, 200, { id });
  }
  throw methodNotAllowed();
}

/** A non-negative safe integer written in plain decimal digits, or undefined. */
function decimal(text: string | null | undefined): number | undefined {
  if (text == null || !/^(0|[1-9][0-9]*)$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}
