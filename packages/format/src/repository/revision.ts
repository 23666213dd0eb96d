/**
 * The revision document: a branch head (spec/v1/repository.md). Bytes = ASCII `TFR1` + one
 * canonical CBOR map:
 *
 * ```
 * { "author": tstr, "branch": tstr, "history": [move...], "message": tstr,
 *   "parent": bstr(32) / null, "repo": tstr, "target": bstr(32), "time": uint,
 *   "upstream": null / { "revision": tstr, "source": tstr }, "version": 1 }
 * move: { "author": tstr, "commit": bstr(32), "message": tstr, "previous": bstr(32) / null,
 *         "target": bstr(32), "time": uint }
 * ```
 *
 * `target` is a tree (TFM1) or a checkpoint header; `parent` the head the branch held before
 * (a revision document, or a bare tree or header of a ref written before repositories); `history`
 * the earlier moves, newest first, at most {@link MAX_HISTORY}. The history is embedded so a
 * branch's log is one object on any origin, and GC need not walk parents: only `target` is a
 * reference.
 */
import { requireBytes, requireObject } from '../args.js';
import { TensorFSError } from '../errors.js';
import { digestFromObjectId, type ObjectId, objectIdFromDigest } from '../ids.js';
import { type CborValue, decodeCbor, encodeCbor } from '../manifest/cbor.js';
import { validateRepoId, validateRevisionName } from './names.js';

/** The four magic bytes that open every revision document: ASCII `TFR1`. */
export const REVISION_MAGIC: Uint8Array = /* @__PURE__ */ new Uint8Array([0x54, 0x46, 0x52, 0x31]);
/** The schema version inside the CBOR map. */
export const REVISION_VERSION = 1;
/** Earlier moves kept in a head (older ones are dropped). */
export const MAX_HISTORY = 1000;
/** Longest message, in UTF-8 bytes. */
export const MAX_MESSAGE_BYTES = 1024;
/** Longest author, in UTF-8 bytes. */
export const MAX_AUTHOR_BYTES = 128;
/** Longest upstream source or revision, in UTF-8 bytes. */
export const MAX_UPSTREAM_BYTES = 512;

/** Where a revision came from, when it was imported (e.g. `{ source: 'hf', revision: '<40 hex>' }`). */
export interface RevisionUpstream {
  source: string;
  revision: string;
}

/** One earlier move of a branch. */
export interface RevisionMove {
  /** The head the branch held after this move (a revision document id, or a bare tree/header). */
  commit: ObjectId;
  /** The head before it (null: the branch was created). */
  previous: ObjectId | null;
  target: ObjectId;
  time: number;
  author: string;
  message: string;
}

/** A branch head. */
export interface RevisionDocument {
  repo: string;
  branch: string;
  target: ObjectId;
  parent: ObjectId | null;
  /** Milliseconds since the Unix epoch. */
  time: number;
  /** Who moved the branch (on a hub: the token's owner id, checked by the hub). */
  author: string;
  message: string;
  upstream: RevisionUpstream | null;
  /** Earlier moves, newest first. */
  history: RevisionMove[];
}

const utf8 = new TextEncoder();
const TOP_KEYS = ['author', 'branch', 'history', 'message', 'parent', 'repo', 'target', 'time', 'upstream', 'version'];
const MOVE_KEYS = ['author', 'commit', 'message', 'previous', 'target', 'time'];
const UPSTREAM_KEYS = ['revision', 'source'];

function bad(code: 'invalid_argument' | 'malformed', why: string, field?: string): TensorFSError {
  return new TensorFSError(code, `revision document: ${why}`, {
    details: { rule: 'repo.bad_revision', ...(field === undefined ? {} : { field }) },
  });
}

function text(code: 'invalid_argument' | 'malformed', v: unknown, field: string, max: number): string {
  if (typeof v !== 'string') throw bad(code, `${field} must be a string`, field);
  if (utf8.encode(v).length > max) throw bad(code, `${field} longer than ${max} bytes`, field);
  return v;
}

function time(code: 'invalid_argument' | 'malformed', v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw bad(code, `${field} must be a non-negative integer (ms)`, field);
  }
  return v;
}

function idOf(code: 'invalid_argument' | 'malformed', v: unknown, field: string): ObjectId {
  if (code === 'malformed') {
    if (!(v instanceof Uint8Array) || v.length !== 32) throw bad(code, `${field} must be 32 bytes`, field);
    return objectIdFromDigest(v);
  }
  try {
    digestFromObjectId(v as string);
  } catch {
    throw bad(code, `${field} must be an object id`, field);
  }
  return v as ObjectId;
}

function validate(doc: RevisionDocument, code: 'invalid_argument' | 'malformed'): void {
  requireObject(doc, 'document', 'repo');
  const name = (v: unknown, field: string, check: (s: string) => string) => {
    try {
      check(v as string);
    } catch {
      throw bad(code, `${field} is not valid`, field);
    }
  };
  name(doc.repo, 'repo', validateRepoId);
  name(doc.branch, 'branch', validateRevisionName);
  text(code, doc.author, 'author', MAX_AUTHOR_BYTES);
  text(code, doc.message, 'message', MAX_MESSAGE_BYTES);
  time(code, doc.time, 'time');
  if (doc.upstream !== null) {
    if (typeof doc.upstream !== 'object') throw bad(code, 'upstream must be null or { source, revision }', 'upstream');
    text(code, doc.upstream.source, 'upstream.source', MAX_UPSTREAM_BYTES);
    text(code, doc.upstream.revision, 'upstream.revision', MAX_UPSTREAM_BYTES);
  }
  if (!Array.isArray(doc.history) || doc.history.length > MAX_HISTORY) {
    throw bad(code, `history must be a list of at most ${MAX_HISTORY} moves`, 'history');
  }
  for (const [i, m] of doc.history.entries()) {
    if (typeof m !== 'object' || m === null) throw bad(code, `history[${i}] must be a move`, `history[${i}]`);
    text(code, m.author, `history[${i}].author`, MAX_AUTHOR_BYTES);
    text(code, m.message, `history[${i}].message`, MAX_MESSAGE_BYTES);
    time(code, m.time, `history[${i}].time`);
  }
}

/**
 * Encodes a revision document (magic + canonical CBOR), after validating it.
 * @throws {TensorFSError} `invalid_argument` (`repo.bad_revision`, details `field`).
 */
export function encodeRevision(doc: RevisionDocument): Uint8Array {
  validate(doc, 'invalid_argument');
  const digest = (v: ObjectId, field: string) => digestFromObjectId(idOf('invalid_argument', v, field));
  const nullable = (v: ObjectId | null, field: string) => (v === null ? null : digest(v, field));
  const body: Record<string, CborValue> = {
    author: doc.author,
    branch: doc.branch,
    history: doc.history.map((m, i) => ({
      author: m.author,
      commit: digest(m.commit, `history[${i}].commit`),
      message: m.message,
      previous: nullable(m.previous, `history[${i}].previous`),
      target: digest(m.target, `history[${i}].target`),
      time: m.time,
    })),
    message: doc.message,
    parent: nullable(doc.parent, 'parent'),
    repo: doc.repo,
    target: digest(doc.target, 'target'),
    time: doc.time,
    upstream: doc.upstream === null ? null : { revision: doc.upstream.revision, source: doc.upstream.source },
    version: REVISION_VERSION,
  };
  const cbor = encodeCbor(body);
  const out = new Uint8Array(REVISION_MAGIC.length + cbor.length);
  out.set(REVISION_MAGIC);
  out.set(cbor, REVISION_MAGIC.length);
  return out;
}

/** True when `bytes` open with the revision document magic. */
export function isRevisionDocument(bytes: Uint8Array): boolean {
  requireBytes(bytes, 'bytes', 'repo');
  return bytes.length >= 4 && REVISION_MAGIC.every((b, i) => bytes[i] === b);
}

function mapOf(v: unknown, keys: readonly string[], field: string): ReadonlyMap<unknown, unknown> {
  if (!(v instanceof Map)) throw bad('malformed', `${field} must be a map`, field);
  if (v.size !== keys.length || keys.some((k) => !v.has(k))) {
    throw bad('malformed', `${field} must have exactly the keys ${keys.join(', ')}`, field);
  }
  return v;
}

/**
 * Decodes and validates a revision document. Canonical form is required: the bytes must be what
 * {@link encodeRevision} writes for the decoded value, so one document has one id.
 * @throws {TensorFSError} `malformed` (`repo.bad_revision`).
 */
export function decodeRevision(bytes: Uint8Array): RevisionDocument {
  requireBytes(bytes, 'bytes', 'repo');
  if (!isRevisionDocument(bytes)) throw bad('malformed', 'missing TFR1 magic');
  let value: CborValue;
  try {
    value = decodeCbor(bytes.subarray(REVISION_MAGIC.length));
  } catch (err) {
    throw bad('malformed', `CBOR: ${(err as Error).message}`);
  }
  const top = mapOf(value, TOP_KEYS, 'document');
  if (top.get('version') !== REVISION_VERSION) throw bad('malformed', 'unsupported version', 'version');
  const nullableId = (v: unknown, field: string) => (v === null ? null : idOf('malformed', v, field));
  const history = top.get('history');
  if (!Array.isArray(history)) throw bad('malformed', 'history must be a list', 'history');
  const upstream = top.get('upstream');
  let up: RevisionUpstream | null = null;
  if (upstream !== null) {
    const u = mapOf(upstream, UPSTREAM_KEYS, 'upstream');
    up = { source: u.get('source') as string, revision: u.get('revision') as string };
  }
  const doc: RevisionDocument = {
    repo: top.get('repo') as string,
    branch: top.get('branch') as string,
    target: idOf('malformed', top.get('target'), 'target'),
    parent: nullableId(top.get('parent'), 'parent'),
    time: top.get('time') as number,
    author: top.get('author') as string,
    message: top.get('message') as string,
    upstream: up,
    history: history.map((h, i) => {
      const m = mapOf(h, MOVE_KEYS, `history[${i}]`);
      return {
        commit: idOf('malformed', m.get('commit'), `history[${i}].commit`),
        previous: nullableId(m.get('previous'), `history[${i}].previous`),
        target: idOf('malformed', m.get('target'), `history[${i}].target`),
        time: m.get('time') as number,
        author: m.get('author') as string,
        message: m.get('message') as string,
      };
    }),
  };
  validate(doc, 'malformed');
  const again = encodeRevision(doc);
  if (again.length !== bytes.length || again.some((b, i) => b !== bytes[i])) {
    throw bad('malformed', 'not in canonical form');
  }
  return doc;
}
