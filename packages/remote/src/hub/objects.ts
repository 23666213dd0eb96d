/** The object routes: reads (whole, ranges, HEAD), batched reads, existence, and single-request uploads. */
import type * as http from 'node:http';
import { type ObjectId, TensorFSError, isObjectId, isTensorFSError } from '@tensorfs/format';
import { deny } from './auth.js';
import type { RequestContext } from './context.js';
import { drained, methodNotAllowed, readJson, sendJson } from './respond.js';
import type { HubStore } from './types.js';

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
  backend: HubStore,
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

export async function sendObject(
  backend: HubStore,
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
  // The first piece is read before any header: storage that cannot be read at all (an object
  // file replaced by a folder) is an error answer, not a 200 cut short.
  const it = probe.body[Symbol.asyncIterator]();
  let first: Uint8Array | undefined;
  if (size > 0) {
    try {
      const n = await it.next();
      first = n.done ? undefined : n.value;
    } catch (err) {
      probe.cancel();
      throw err;
    }
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
    // The error body like every other refusal, with the size the client can ask within.
    res.setHeader('content-range', `bytes */${size}`);
    throw new TensorFSError('invalid_argument', 'the range is not satisfiable', {
      details: { rule: 'hub.range_unsatisfiable', limit: size },
    });
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
  let body: AsyncIterable<Uint8Array> = (async function* () {
    if (first) yield first;
    for (;;) {
      const n = await it.next();
      if (n.done) return;
      yield n.value;
    }
  })();
  if (start > 0) {
    probe.cancel();
    r = await backend.read(id, start, { signal });
    body = r.body;
  }
  let left = length;
  try {
    for await (const c of body) {
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

/** `POST /v1/objects/lacks`: which of the ids the hub does not hold. */
export async function postLacks(c: RequestContext): Promise<void> {
  const p = c.principal;
  if (!p.read && !p.write) throw deny(p, 'query objects');
  const body = (await readJson(c.req, c.hub.maxJson)) as { ids?: unknown };
  if (!Array.isArray(body?.ids) || body.ids.length > 10_000 || !body.ids.every(isObjectId)) {
    throw new TensorFSError('invalid_argument', '"ids" must be a list of at most 10000 ids', {
      details: { rule: 'hub.bad_body' },
    });
  }
  return sendJson(c.res, 200, { lacks: await c.hub.store.lacks(body.ids as ObjectId[], { signal: c.signal }) });
}

/** `POST /v1/objects/batch`: many small objects in one framed answer. */
export async function postBatch(c: RequestContext): Promise<void> {
  const p = c.principal;
  if (!p.read) throw deny(p, 'read objects');
  const body = (await readJson(c.req, c.hub.maxJson)) as { ids?: unknown };
  if (!Array.isArray(body?.ids) || body.ids.length > BATCH_MAX_IDS || !body.ids.every(isObjectId)) {
    throw new TensorFSError('invalid_argument', `"ids" must be a list of at most ${BATCH_MAX_IDS} ids`, {
      details: { rule: 'hub.bad_body', limit: BATCH_MAX_IDS },
    });
  }
  return sendBatch(c.hub.store, body.ids as ObjectId[], c.res, c.signal);
}

/** `/v1/objects/<hex>`: GET and HEAD read it, PUT uploads it in one request. */
export async function object(c: RequestContext, hex: string): Promise<void> {
  const id = `sha256:${hex}` as ObjectId;
  const p = c.principal;
  if (c.method === 'GET' || c.method === 'HEAD') {
    if (!p.read) throw deny(p, 'read objects');
    return sendObject(c.hub.store, id, c.req, c.res, c.method === 'HEAD', c.signal);
  }
  if (c.method === 'PUT') {
    if (!p.write) throw deny(p, 'upload objects');
    const req = c.req;
    const len = Number(req.headers['content-length']);
    if (req.headers['content-length'] === undefined || !Number.isSafeInteger(len) || len < 0) {
      throw new TensorFSError('invalid_argument', 'an upload needs a Content-Length', {
        details: { rule: 'hub.length_required' },
      });
    }
    if (len > c.hub.maxObject) {
      throw new TensorFSError('limit_exceeded', 'the object is larger than this hub accepts', {
        details: { rule: 'hub.object_too_large', limit: c.hub.maxObject },
      });
    }
    let used = false;
    await c.hub.store.write(
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
      { signal: c.signal },
    );
    return sendJson(c.res, 201, { id });
  }
  throw methodNotAllowed();
}
