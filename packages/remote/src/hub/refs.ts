/** The ref routes: the listing, one ref, and moving a ref by compare-and-swap once its closure is held. */
import { type ObjectId, TensorFSError, isObjectId, isTensorFSError } from '@tensorfs/format';
import { referencesOf } from '../references.js';
import { sha256Id } from '../verify-stream.js';
import { deny } from './auth.js';
import type { RequestContext } from './context.js';
import { decodeRefPath, methodNotAllowed, readJson, sendJson } from './respond.js';
import type { HubStore } from './types.js';

/** `GET /v1/refs`: every readable ref, and the readable names the store could not read. */
export async function listRefs(c: RequestContext): Promise<void> {
  const p = c.principal;
  const backend = c.hub.store;
  if (!p.read) throw deny(p, 'list refs');
  // One ref the backend cannot read is named in `problems`, never fails the listing.
  const listing = await backend.scanRefs({ signal: c.signal });
  const readable = p.read;
  return sendJson(c.res, 200, {
    refs: listing.refs.filter((r) => readable(r.name)),
    problems: listing.problems.filter((r) => readable(r.name)).map(({ name, code, rule }) => ({ name, code, rule })),
  });
}

/** `/v1/refs/<name>`: GET/HEAD reads it, PUT moves it. */
export async function ref(c: RequestContext, path: string): Promise<void> {
  const p = c.principal;
  const backend = c.hub.store;
  const signal = c.signal;
  const name = decodeRefPath(path);
  if (c.method === 'GET' || c.method === 'HEAD') {
    if (!p.read?.(name)) throw deny(p, 'read this ref');
    const id = await backend.getRef(name, { signal });
    if (id === null)
      throw new TensorFSError('not_found', 'no such ref', { details: { rule: 'remote.no_ref', ref: name } });
    c.res.setHeader('cache-control', 'no-cache');
    return sendJson(c.res, 200, { name, id });
  }
  if (c.method === 'PUT') {
    if (!p.write?.(name)) throw deny(p, 'move this ref');
    const body = (await readJson(c.req, c.hub.maxJson)) as { id?: unknown; expected?: unknown };
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
    return sendJson(c.res, 200, { name, id: body.id });
  }
  throw methodNotAllowed();
}

/** Before a ref names `id`, the backend must hold it and everything it references. */
export async function checkClosure(backend: HubStore, id: ObjectId, signal: AbortSignal): Promise<void> {
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
