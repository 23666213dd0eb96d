/**
 * Writing a local store's refs: compare-and-swap under the lock, with the target and everything
 * it reaches checked present, and the ref marked saved or cached in the same transaction.
 */
import { type ObjectId, TensorFSError, parseObjectId } from '@tensorfs/format';
import type { SetRefOptions } from '@tensorfs/format/store';
import { markRefWrite } from './cache.js';
import { childrenOf } from './graph.js';
import { assertLeaseLive } from './leases.js';
import type { Objects } from './objects.js';
import type { StoreParts } from './parts.js';
import { readRefSync, writeRef } from './refs.js';

/** Options of {@link LocalStore.setRef}: the contract's, and whether the ref is cached. */
export interface LocalSetRefOptions extends SetRefOptions {
  /**
   * Cached (evictable under the budget) rather than saved. A new ref, or one already cached,
   * becomes cached; a saved ref stays saved (only {@link LocalStore.unpin} makes it evictable).
   * Omitted or false: the ref is saved.
   */
  cached?: boolean;
}

/**
 * Sets ref `name` to `id` with compare-and-swap (see {@link LocalStore.setRef}): under the lock,
 * the target and everything it reaches must be stored (`not_found`) and the lease (if given) live.
 */
export async function setRefChecked(
  parts: StoreParts,
  name: string,
  id: ObjectId,
  options: LocalSetRefOptions,
): Promise<void> {
  parseObjectId(id);
  if (options.expected !== undefined && options.expected !== null) parseObjectId(options.expected);
  const children = await closureOf(parts.objects, id);
  writeRef(parts.db, parts.layout, name, id, options.expected, () => {
    if (options.lease) assertLeaseLive(parts.db, options.lease.id);
    assertPresentSync(parts.objects, id, children);
    // Saved or cached, in the ref write's own transaction.
    let previous: ObjectId | null = null;
    try {
      previous = readRefSync(parts.layout, name);
    } catch {
      // A damaged ref being replaced: it was nothing, so the new one is as asked.
    }
    markRefWrite(parts.db, name, id, previous, options.cached === true);
  });
}

/** What `id` references (read and decoded now, outside the lock). */
export async function closureOf(objects: Objects, id: ObjectId): Promise<ObjectId[]> {
  const out: ObjectId[] = [];
  for (const c of await childrenOf(objects, id)) {
    out.push(c.id);
    // A followed child (a checkpoint's source snapshot) must be whole too.
    if (c.follow) for (const g of await childrenOf(objects, c.id)) out.push(g.id);
  }
  return out;
}

/** Under the lock: `id` and `children` must all be stored, else `not_found`. */
export function assertPresentSync(objects: Objects, id: ObjectId, children: readonly ObjectId[]): void {
  const absent = objects.absentSync([id, ...children]);
  if (absent.length > 0) {
    throw new TensorFSError('not_found', 'objects referenced by this snapshot are missing from the store', {
      details: { rule: 'store.missing_objects', missing: absent.slice(0, 20), count: absent.length },
    });
  }
}
