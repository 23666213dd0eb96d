/** A local store's roots: objects kept forever (with what they reach) until removed. */
import { type ObjectId, TensorFSError, parseObjectId } from '@tensorfs/format';
import { type Db, bumpEpoch, durably } from './db.js';
import type { Layout } from './layout.js';
import type { StoreParts } from './parts.js';
import { assertPresentSync, closureOf } from './ref-write.js';
import { listRefs } from './refs.js';

/** A root: an object kept forever (with what it reaches) until removed. */
export interface RootEntry {
  id: ObjectId;
  reason: string;
  createdMs: number;
}

/** Keeps `id` (and what it reaches) as a root; it must be stored with its closure (`not_found`). */
export async function addRoot(parts: StoreParts, id: ObjectId, reason: string): Promise<void> {
  parseObjectId(id);
  if (typeof reason !== 'string' || reason.length === 0 || reason.length > 500) {
    throw new TensorFSError('invalid_argument', 'a root needs a reason of 1..500 characters', {
      details: { rule: 'store.root_reason', actual: typeof reason === 'string' ? reason.length : typeof reason },
    });
  }
  const children = await closureOf(parts.objects, id);
  durably(parts.db, () => {
    assertPresentSync(parts.objects, id, children);
    parts.db
      .prepare(
        'INSERT INTO roots(id, reason, created_ms) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET reason = excluded.reason',
      )
      .run(id, reason, Date.now());
    bumpEpoch(parts.db, id);
  });
}

/** Stops keeping `id` as a root; `not_found` if it is not one. */
export function removeRoot(db: Db, id: ObjectId): void {
  parseObjectId(id);
  const changes = durably(db, () => db.prepare('DELETE FROM roots WHERE id = ?').run(id).changes);
  if (changes === 0)
    throw new TensorFSError('not_found', 'not a root', { details: { rule: 'store.not_a_root', digest: id } });
}

/** Every root, oldest first. */
export function listRoots(db: Db): RootEntry[] {
  return (
    db.prepare('SELECT id, reason, created_ms FROM roots ORDER BY created_ms, id').all() as {
      id: ObjectId;
      reason: string;
      created_ms: number;
    }[]
  ).map((r) => ({ id: r.id, reason: r.reason, createdMs: r.created_ms }));
}

/** The ids of every root. */
export function rootIds(db: Db): ObjectId[] {
  return db.prepare('SELECT id FROM roots').pluck().all() as ObjectId[];
}

/** Ids named by refs and roots (GC and verify start there). */
export async function tops(db: Db, layout: Layout): Promise<ObjectId[]> {
  const ids = new Set<ObjectId>((await listRefs(layout)).map((r) => r.id));
  for (const r of rootIds(db)) ids.add(r);
  return [...ids];
}
