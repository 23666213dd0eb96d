/**
 * Reading a local store's refs: resolving a ref or id, listing `refs/` with the entries that are not
 * readable refs named, and checking every ref's head object (what `tfs ls` and `tfs du` show).
 */
import {
  type ErrorCode,
  type ObjectId,
  TensorFSError,
  decodeCheckpoint,
  decodeManifest,
  decodeRevision,
  isCheckpointHeader,
  isObjectId,
  isRevisionDocument,
  isTensorFSError,
  parseObjectId,
  throwIfAborted,
} from '@tensorfs/format';
import type { UseTracker } from './cache.js';
import { ioError } from './fsutil.js';
import type { Layout } from './layout.js';
import type { Objects } from './objects.js';
import type { StoreParts } from './parts.js';
import { type RefEntry, readRef, scanRefs } from './refs.js';
import { isSideRef } from './file-sha256.js';

/**
 * A ref that a listing could not show or measure, and why. The listing goes on with the other refs.
 */
export interface RefProblem {
  /** The ref's name (its path under `refs/`). */
  name: string;
  /** The id the ref names, when its file could be read. */
  id?: ObjectId;
  /**
   * `corrupt` (not a regular file, not one id and a newline, names an object that is missing or
   * does not decode), or the code of a failed read (`io`, `denied`).
   */
  code: ErrorCode;
  /**
   * `details.rule` of the failure: `ref.not_regular`, `ref.content`, `ref.target_missing`,
   * `ref.target_malformed`, `store.digest`, ... (`ref.unreadable` for a read that failed otherwise).
   */
  rule: string;
  /** What went wrong, without local paths. */
  message: string;
}

/** What {@link LocalStore.scanRefs} found: every ref whose file reads, and every entry of `refs/` that is not one. */
export interface RefFileListing {
  /** The refs whose file holds one id and a newline, sorted by name (their targets unchecked). */
  refs: RefEntry[];
  /** Entries of `refs/` that are not readable refs (`ref.not_regular`, `ref.content`, ...), sorted by name. */
  problems: RefProblem[];
}

/** What {@link LocalStore.checkRefs} found: every readable ref, and every ref that is not. */
export interface RefListing {
  /** The refs whose file and target object read and decode, sorted by name. */
  refs: (RefEntry & { kind: 'snapshot' | 'checkpoint' })[];
  /** The others, sorted by name. */
  problems: RefProblem[];
}

/** A ref's head object, read and decoded once: what {@link checkRefs} and `usage` share. */
export interface Head {
  /** The verified bytes. */
  bytes: Uint8Array;
  kind: 'snapshot' | 'checkpoint';
  /** Sum of a snapshot's file sizes; bytes of a checkpoint's tensors, parts and assets. */
  logical: number;
}

/** Orders by `name` (code units). */
export const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * An object id passes through if stored; otherwise a ref name is read (its use recorded).
 * `not_found` if neither.
 */
export async function resolveRefOrId(
  parts: StoreParts,
  use: UseTracker | undefined,
  refOrId: string,
): Promise<ObjectId> {
  if (isObjectId(refOrId)) {
    if (await parts.objects.has(refOrId)) return refOrId;
    throw new TensorFSError('not_found', 'object not in the store', {
      details: { rule: 'store.not_found', digest: refOrId },
    });
  }
  const id = await readRef(parts.layout, refOrId);
  if (id === null)
    throw new TensorFSError('not_found', 'no such ref', { details: { rule: 'store.no_ref', ref: refOrId } });
  use?.ref(refOrId, id);
  return id;
}

/** Every ref whose file reads, and every entry of `refs/` that is not a readable ref as a {@link RefProblem}. */
export async function scanRefFiles(layout: Layout): Promise<RefFileListing> {
  const scan = await scanRefs(layout);
  return { refs: scan.refs, problems: scan.bad.map((b) => refProblem(b.name, undefined, b.error)) };
}

/**
 * Every ref whose file reads and whose target object is present, intact (rehashed) and decodes
 * as a snapshot manifest or a checkpoint header, with its kind; every other ref as a
 * {@link RefProblem}. Abort `signal` to stop (`cancelled`).
 */
export async function checkRefs(parts: StoreParts, signal: AbortSignal | undefined): Promise<RefListing> {
  const out: RefListing = { refs: [], problems: [] };
  for await (const r of refHeads(parts, signal)) {
    if ('problem' in r) out.problems.push(r.problem);
    else out.refs.push({ ...r.ref, kind: r.head.kind });
  }
  out.problems.sort(byName);
  return out;
}

/**
 * Every entry of refs/: the bad ones first (as problems), then each readable ref in name order
 * with its head object read, verified and decoded once, or the problem that read found. One
 * head is held at a time: `usage` walks from it without reading it again.
 */
export async function* refHeads(
  parts: StoreParts,
  signal: AbortSignal | undefined,
): AsyncGenerator<{ ref: RefEntry; head: Head } | { problem: RefProblem }> {
  const scan = await scanRefFiles(parts.layout);
  for (const problem of scan.problems) yield { problem };
  for (const r of scan.refs) {
    throwIfAborted(signal);
    if (isSideRef(r.name)) continue; // names a server's note (`_hf/…`), not a snapshot
    let head: Head;
    try {
      head = await readHead(parts.objects, r.id);
    } catch (err) {
      yield { problem: refProblem(r.name, r.id, err) };
      continue;
    }
    yield { ref: r, head };
  }
}

/** A head object (a snapshot manifest or a checkpoint header): read, rehashed and decoded. */
export async function readHead(objects: Objects, id: ObjectId, depth = 0): Promise<Head> {
  const bytes = await objects.read(parseObjectId(id), true);
  if (isRevisionDocument(bytes) && depth === 0) {
    // A branch head (a revision document): its kind and logical size are its target's.
    const target = await readHead(objects, decodeRevision(bytes).target, 1);
    return { bytes, kind: target.kind, logical: target.logical };
  }
  if (isCheckpointHeader(bytes)) {
    // A checkpoint's logical size: the bytes of its tensors, parts and assets.
    let logical = 0;
    for (const c of decodeCheckpoint(bytes).components) {
      for (const t of c.tensors) {
        const parts = t.records !== undefined ? [t.records] : Object.values(t.encoding.parts).map((p) => p.records);
        for (const records of parts) for (const r of records) logical += r.length;
      }
      for (const a of c.assets) for (const r of a.records) logical += r.length;
    }
    return { bytes, kind: 'checkpoint', logical };
  }
  const logical = decodeManifest(bytes).entries.reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0);
  return { bytes, kind: 'snapshot', logical };
}

/**
 * A ref's failure as a {@link RefProblem}. Its target being absent is `corrupt`
 * (`ref.target_missing`): the store never sets a ref to an object it does not hold. A target that
 * does not decode as a manifest or checkpoint header is `corrupt` (`ref.target_malformed`).
 */
function refProblem(name: string, id: ObjectId | undefined, err: unknown): RefProblem {
  const e = isTensorFSError(err) ? err : ioError(err, 'read ref');
  if (e.code === 'cancelled') throw e;
  if (id !== undefined && e.code === 'not_found') {
    return targetProblem(name, id, 'missing', `the object this ref names is missing (${id})`);
  }
  if (id !== undefined && e.code === 'malformed') {
    return targetProblem(
      name,
      id,
      'malformed',
      `the object this ref names is not a snapshot or checkpoint: ${e.message}`,
    );
  }
  const at = id === undefined ? {} : { id };
  const rule = typeof e.details.rule === 'string' ? e.details.rule : 'ref.unreadable';
  return { name, ...at, code: e.code, rule, message: e.message };
}

/** `corrupt`: what a ref names (or reaches) is missing (`ref.target_missing`) or does not decode. */
export function targetProblem(name: string, id: ObjectId, kind: 'missing' | 'malformed', message: string): RefProblem {
  return { name, id, code: 'corrupt', rule: `ref.target_${kind}`, message };
}
