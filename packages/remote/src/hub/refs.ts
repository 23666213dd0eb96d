/** The ref routes: the listing, one ref, and moving a ref by compare-and-swap once its closure is held. */
import {
  decodeRevision,
  isObjectId,
  isRevisionDocument,
  isTensorFSError,
  type ObjectId,
  parseRepoRefName,
  TensorFSError,
} from '@tensorfs/format';
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
    const repoRef = repoRefOf(name);
    let cas = expected as ObjectId | null | undefined;
    if (repoRef?.kind === 'tag' && !p.admin) cas = await tagCreation(backend, name, cas, signal);
    if (repoRef?.kind === 'branch') await checkAuthor(c, name, repoRef, body.id);
    await checkClosure(backend, body.id, signal);
    try {
      await backend.setRef(name, body.id, { expected: cas, signal });
    } catch (err) {
      if (repoRef?.kind === 'tag' && !p.admin && isTensorFSError(err) && err.code === 'conflict') throw tagExists(name);
      throw err;
    }
    return sendJson(c.res, 200, { name, id: body.id });
  }
  throw methodNotAllowed();
}

/** `GET /v1/whoami`: who this request is (the `author` its branch moves must name) and whether it is an administrator. */
export async function whoami(c: RequestContext): Promise<void> {
  const p = c.principal;
  c.res.setHeader('cache-control', 'no-store');
  return sendJson(c.res, 200, { owner: p.owner, anonymous: p.anonymous, admin: p.admin });
}

type RepoRef = NonNullable<ReturnType<typeof parseRepoRefName>>;

function repoRefOf(name: string): RepoRef | null {
  try {
    return parseRepoRefName(name);
  } catch {
    return null;
  }
}

function tagExists(name: string): TensorFSError {
  return new TensorFSError('conflict', 'a tag never moves: this tag exists already', {
    details: { rule: 'repo.tag_exists', ref: name },
  });
}

/** A tag, for a token that is no administrator: created once (compare-and-swap against absent), never moved. */
async function tagCreation(
  backend: HubStore,
  name: string,
  expected: ObjectId | null | undefined,
  signal: AbortSignal,
): Promise<null> {
  if (expected !== undefined && expected !== null) throw tagExists(name);
  if ((await backend.getRef(name, { signal })) !== null) throw tagExists(name);
  return null;
}

/** Largest revision document the hub decodes to check its author. */
const MAX_REVISION_BYTES = 16 << 20;

/**
 * A branch moves to a revision document this token authored (`author` is its owner id, so `log`
 * says truthfully who moved it) for this repository and branch. A move straight to a tree or
 * checkpoint id (the pre-repository protocol, `tfs push`) is left to tokens whose scope for the
 * ref is of the pre-repository form (a plain glob): they never said who moved a ref.
 */
async function checkAuthor(c: RequestContext, name: string, r: RepoRef, id: ObjectId): Promise<void> {
  const p = c.principal;
  const bytes = await readHead(c.hub.store, id, c.signal);
  if (bytes === null) return; // missing: the closure check names it
  if (!isRevisionDocument(bytes)) {
    if (p.legacy?.(name)) return;
    throw new TensorFSError('denied', 'a branch moves to a revision document this token authored', {
      details: { rule: 'hub.author_mismatch', ref: name, owner: p.owner },
    });
  }
  const doc = decodeRevision(bytes);
  if (doc.repo !== r.repo || doc.branch !== r.name) {
    throw new TensorFSError('invalid_argument', 'the revision document is for another repository or branch', {
      details: { rule: 'hub.revision_mismatch', ref: name, repo: doc.repo, branch: doc.branch },
    });
  }
  if (doc.author !== p.owner) {
    throw new TensorFSError('denied', "the revision document's author is not this token's owner id (GET /v1/whoami)", {
      details: { rule: 'hub.author_mismatch', ref: name, owner: p.owner, author: doc.author },
    });
  }
}

/** The bytes of `id` when it is small enough to be a revision document (null: not stored). */
async function readHead(backend: HubStore, id: ObjectId, signal: AbortSignal): Promise<Uint8Array | null> {
  const r = await backend.read(id, 0, { signal }).catch((err) => {
    if (isTensorFSError(err) && err.code === 'not_found') return null;
    throw err;
  });
  if (r === null) return null;
  const head: Uint8Array[] = [];
  let n = 0;
  try {
    for await (const chunk of r.body) {
      head.push(chunk);
      n += chunk.length;
      // Only the magic matters past the bound: a large object is no revision document.
      if (n > MAX_REVISION_BYTES) break;
    }
  } finally {
    r.cancel();
  }
  const bytes = Buffer.concat(head);
  if (n > MAX_REVISION_BYTES) return bytes.subarray(0, 4);
  if (sha256Id(bytes) !== id) {
    throw new TensorFSError('corrupt', 'a stored object does not match its id', {
      details: { rule: 'hub.corrupt_object', digest: id },
    });
  }
  return bytes;
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
