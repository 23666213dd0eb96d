/**
 * What an object references, and walks over it. A ref or root names a top object; its kind
 * (recognised by its first bytes) says which objects it reaches. The kinds and their decoding are
 * format facts (`objectReferences` / `REFERENCE_KINDS` in `@tensorfs/format`), not a registry of
 * this module, so every copy of this package agrees about what GC must keep.
 */
import * as fs from 'node:fs';
import {
  type ObjectId,
  type ObjectReference,
  REFERENCE_MAGIC_LENGTH,
  type ReferenceKind,
  isTensorFSError,
  objectReferences,
  throwIfAborted,
  referenceKindOf,
} from '@tensorfs/format';
import type { Objects } from './objects.js';

/** One reference from an object to another. */
export type Child = ObjectReference;

/** Outcome of walking from some top objects. */
export interface Reach {
  /** Every reachable object, with the length a referencing object declared (if any). */
  objects: Map<ObjectId, number | undefined>;
  /** Referenced but absent objects. */
  missing: ObjectId[];
  /** Top objects of a known kind whose bytes do not decode, or are quarantined. */
  corrupt: ObjectId[];
}

/**
 * Walks from `tops` (refs, roots): each top is sniffed, and walked if of a known kind; children
 * are leaves unless marked `follow`. Missing and corrupt objects are collected, not thrown.
 * `known` holds the verified bytes of objects the caller has already read (a ref's head object):
 * they are not read again.
 */
export async function reach(
  objects: Objects,
  tops: Iterable<ObjectId>,
  signal?: AbortSignal,
  known?: ReadonlyMap<ObjectId, Uint8Array>,
): Promise<Reach> {
  const out: Reach = { objects: new Map(), missing: [], corrupt: [] };
  const missing = new Set<ObjectId>();
  const queue: ObjectId[] = [];
  const seenTop = new Set<ObjectId>();
  for (const t of tops) {
    if (!seenTop.has(t)) {
      seenTop.add(t);
      queue.push(t);
    }
  }
  while (queue.length > 0) {
    throwIfAborted(signal);
    const id = queue.pop()!;
    if (!out.objects.has(id)) out.objects.set(id, undefined);
    let children: Child[];
    try {
      const bytes = known?.get(id);
      children = bytes === undefined ? await childrenOf(objects, id) : (objectReferences(bytes)?.children ?? []);
    } catch (err) {
      if (isTensorFSError(err) && err.code === 'not_found') missing.add(id);
      else if (isTensorFSError(err) && (err.code === 'malformed' || err.code === 'corrupt')) out.corrupt.push(id);
      else throw err;
      continue;
    }
    for (const c of children) {
      const prev = out.objects.get(c.id);
      if (prev === undefined) out.objects.set(c.id, c.length);
      if (c.follow && !seenTop.has(c.id)) {
        seenTop.add(c.id);
        queue.push(c.id);
      }
    }
  }
  for (const id of missing) out.missing.push(id);
  return out;
}

/**
 * Synchronous {@link childrenOf} for use under the write lock: an absent object has no children;
 * bytes of a known kind that do not decode throw (`malformed`), since what they keep is unknown.
 */
export function childrenOfSync(objects: Objects, id: ObjectId): Child[] {
  let bytes: Buffer;
  try {
    const fd = fs.openSync(objects.path(id), 'r');
    try {
      const head = Buffer.alloc(REFERENCE_MAGIC_LENGTH);
      const n = fs.readSync(fd, head, 0, head.length, 0);
      const kind = referenceKindOf(head.subarray(0, n));
      if (kind === undefined) return [];
      bytes = fs.readFileSync(objects.path(id));
      return kind.children(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return [];
    throw err;
  }
}

/** Children of one object: sniff its head; decode it only if a kind matches. */
export async function childrenOf(objects: Objects, id: ObjectId): Promise<Child[]> {
  const { fh, size } = await objects.open(id);
  let kind: ReferenceKind | undefined;
  try {
    const n = Math.min(size, REFERENCE_MAGIC_LENGTH);
    const head = new Uint8Array(n);
    if (n > 0) await fh.read(head, 0, n, 0);
    kind = referenceKindOf(head);
  } finally {
    await fh.close();
  }
  if (kind === undefined) return [];
  const bytes = await objects.read(id, true);
  return kind.children(bytes);
}
