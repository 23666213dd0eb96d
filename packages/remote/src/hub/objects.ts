/** The object routes: reads (whole, ranges, HEAD), batched reads, existence, and single-request uploads. */
import type * as http from 'node:http';
import { type ObjectId, TensorFSError, isObjectId, isTensorFSError } from '@tensorfs/format';
import { deny } from './auth.js';
import type { Origin } from '../origin.js';
import type { RequestContext } from './context.js';
import { drained, methodNotAllowed, readJson, sendJson } from './respond.js';
import { Digest, corruptObject } from './verify.js';

/** Most ids in one `POST /v1/objects/batch`. */
export const BATCH_MAX_IDS = 1000;

/** The frame length that says "not held" in a batch answer. */
export const BATCH_ABSENT = 0xffff_ffff_ffff_ffffn;

/**
 * Answers a batch (spec/v1/remote.md "Batched reads"): for each id in the order asked, a 40-byte
 * frame head (32 raw digest bytes, u64 big-endian length, all ones when the hub does not hold it)
 * and then the object's bytes, each verified on the way: a frame whose bytes do not hash to its
 * id is cut before its last piece (the object quarantined), as is any backend failure
 * mid-answer (the client fetches the rest one by one).
 */
async function sendBatch(c: RequestContext, ids: readonly ObjectId[]): Promise<void> {
  const { res, signal } = c;
  const backend = c.hub.store;
  res.writeHead(200, { 'content-type': 'application/vnd.tensorfs.batch', 'cache-control': 'no-store' });
  const write = async (b: Uint8Array) => {
    if (!res.write(b)) await drained(res);
  };
  try {
    for (const id of ids) {
      if (res.destroyed || signal.aborted) return;
      const head = Buffer.alloc(40);
      Buffer.from(id.slice(7), 'hex').copy(head, 0);
      const r = c.hub.quarantine.has(id)
        ? null
        : await backend.read(id, 0, { signal }).catch((err) => {
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
      const digest = new Digest(id, r.size);
      let held: Uint8Array | undefined;
      let left = r.size;
      try {
        for await (const chunk of r.body) {
          const piece = chunk.length > left ? chunk.subarray(0, left) : chunk;
          left -= piece.length;
          digest.update(piece);
          if (held) await write(held);
          held = piece;
          if (left === 0 || res.destroyed) break;
        }
      } finally {
        r.cancel();
      }
      if (left > 0) {
        res.destroy();
        return;
      }
      if (!digest.matches()) {
        res.destroy();
        await c.hub.quarantine.add(id);
        return;
      }
      if (held) await write(held);
    }
    res.end();
  } catch {
    res.destroy();
  }
}

/**
 * The bounds a parsed range serves, with `content-range` / `content-length` set in `headers`;
 * an unsatisfiable range throws `invalid_argument` (`hub.range_unsatisfiable`) after setting
 * `content-range: bytes *\/size`, so the error answer tells the client what it can ask within.
 */
export function rangeHeaders(
  res: http.ServerResponse,
  headers: Record<string, string | number>,
  range: ReturnType<typeof parseRange>,
  size: number,
): { start: number; end: number; length: number } {
  if (range === 'unsatisfiable') {
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
  return { start, end, length };
}

/** A `Range: bytes=…` header against `size`: null (none or not understood), unsatisfiable, or the inclusive bounds. */
export function parseRange(
  h: string | undefined,
  size: number,
): { start: number; end: number } | 'unsatisfiable' | null {
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

/**
 * Answers `GET`/`HEAD` of an object. The object is read from its first byte whatever the range,
 * hashed as it streams, and the answer's last piece is held back until the whole object matched
 * its id: on a mismatch the connection is cut before that piece (the client sees fewer bytes than
 * `Content-Length`), the object is quarantined and later requests are `corrupt`. So only a `GET`
 * that completed was verified, and only `GET` says `immutable`; `HEAD` (which reads no bytes) says
 * `no-cache`. The first piece is read before any header: storage that cannot be read at all (an
 * object file replaced by a folder) is an error answer, not a 200 cut short.
 */
export async function sendObject(c: RequestContext, id: ObjectId, head: boolean): Promise<void> {
  const { req, res, signal } = c;
  const quarantine = c.hub.quarantine;
  quarantine.refuse(id);
  const r = await c.hub.store.read(id, 0, { signal });
  const size = r.size;
  if (size === undefined || r.offset !== 0) {
    r.cancel();
    throw new TensorFSError('internal', 'the backend did not report a size', { details: { rule: 'hub.no_size' } });
  }
  const it = r.body[Symbol.asyncIterator]();
  let first: Uint8Array | undefined;
  if (size > 0) {
    try {
      const n = await it.next();
      first = n.done ? undefined : n.value;
    } catch (err) {
      r.cancel();
      throw err;
    }
  } else if (!new Digest(id, 0).matches()) {
    await quarantine.add(id);
    throw corruptObject(id);
  }
  const range = parseRange(req.headers.range, size);
  const headers: Record<string, string | number> = {
    'content-type': 'application/octet-stream',
    'accept-ranges': 'bytes',
    etag: `"${id.slice(7)}"`,
    'cache-control': head ? 'no-cache' : 'public, max-age=31536000, immutable',
  };
  if (range === 'unsatisfiable') r.cancel();
  const { start, end, length } = rangeHeaders(res, headers, range, size);
  res.writeHead(range ? 206 : 200, headers);
  // The head goes out now, even though the body's last piece waits for the digest.
  res.flushHeaders();
  if (head || length === 0) {
    r.cancel();
    res.end();
    return;
  }
  const digest = new Digest(id, size);
  const recycle = r.recycle?.bind(r);
  // The piece of the answer not yet written, and the chunk whose memory it is.
  let held: { piece: Uint8Array; chunk: Uint8Array } | undefined;
  const send = async (h: { piece: Uint8Array; chunk: Uint8Array }) => {
    // The chunk's memory goes back to the backend once the socket has taken it.
    if (!res.write(h.piece, recycle && (() => recycle(h.chunk)))) await drained(res);
  };
  let pos = 0;
  let fits = true;
  try {
    let next = first;
    while (next !== undefined && !res.destroyed) {
      const chunk = next;
      if (!digest.update(chunk)) {
        fits = false;
        break;
      }
      const at = pos;
      pos += chunk.length;
      const from = Math.max(start, at);
      const to = Math.min(end + 1, pos);
      if (to > from) {
        if (held) await send(held);
        held = { piece: chunk.subarray(from - at, to - at), chunk };
      } else recycle?.(chunk);
      const n = await it.next();
      next = n.done ? undefined : n.value;
    }
  } catch {
    // A read failing mid-answer: the answer is cut (the client resumes with a range).
    res.destroy();
    return;
  } finally {
    r.cancel();
  }
  if (res.destroyed) return;
  // More bytes than the size, fewer, or other bytes: damage; the answer never completes.
  if (!fits || !digest.matches()) {
    res.destroy();
    await quarantine.add(id);
    return;
  }
  if (held) await send(held);
  res.end();
}

/** `POST /v1/objects/lacks`: which of the ids the hub does not hold. */
export async function postLacks(c: RequestContext): Promise<void> {
  const p = c.principal;
  if (!p.read && !p.write) throw deny(p, 'query objects');
  const body = (await readJson(c.req, c.hub.maxJson)) as { ids?: unknown; freshen?: unknown };
  if (!Array.isArray(body?.ids) || body.ids.length > 10_000 || !body.ids.every(isObjectId)) {
    throw new TensorFSError('invalid_argument', '"ids" must be a list of at most 10000 ids', {
      details: { rule: 'hub.bad_body' },
    });
  }
  const ids = body.ids as ObjectId[];
  // `"freshen": true` (a push's question, a writer's): what the hub holds gets its retention age
  // restarted, so a GC of the hub's store keeps what the push skips (docs/remote.md "Retention").
  const freshen = body.freshen === true;
  if (freshen && !p.write) throw deny(p, 'freshen objects');
  const store = c.hub.store as typeof c.hub.store & { freshen?: Origin['freshen'] };
  const lacks = new Set(
    freshen && typeof store.freshen === 'function'
      ? await store.freshen(ids, { signal: c.signal })
      : await store.lacks(ids, { signal: c.signal }),
  );
  // An object the hub found damaged is lacking, whatever the storage says: a client sends a good copy.
  for (const id of ids) if (c.hub.quarantine.has(id)) lacks.add(id);
  return sendJson(c.res, 200, { lacks: ids.filter((id) => lacks.has(id)) });
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
  return sendBatch(c, body.ids as ObjectId[]);
}

/** `/v1/objects/<hex>`: GET and HEAD read it, PUT uploads it in one request. */
export async function object(c: RequestContext, hex: string): Promise<void> {
  const id = `sha256:${hex}` as ObjectId;
  const p = c.principal;
  if (c.method === 'GET' || c.method === 'HEAD') {
    if (!p.read) throw deny(p, 'read objects');
    return sendObject(c, id, c.method === 'HEAD');
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
    c.hub.quarantine.clear(id);
    return sendJson(c.res, 201, { id });
  }
  throw methodNotAllowed();
}
