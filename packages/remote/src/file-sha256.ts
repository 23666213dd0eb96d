/**
 * A tree's whole-file SHA-256 list (`@tensorfs/cas` `file-sha256`: what a Hugging Face `ETag` is)
 * carried along when the tree moves: a pull copies the origin's list into the store, a push or an
 * upload the store's list to the origin. Asked for only when the tree has a file of several
 * records (no extra request otherwise); best effort: without a list, a server computes the
 * SHA-256s once.
 */
import { copyFileSha256, mayHaveFileSha256 } from '@tensorfs/cas';
import { type ObjectId, decodeRevision, isRevisionDocument } from '@tensorfs/format';
import type { Lease, Store } from '@tensorfs/format/store';
import type { Origin } from './origin.js';

/**
 * Copies the list of the tree `top` names (a tree, or a revision document naming one) from `from`
 * to `to`. `local` is the side holding the tree's bytes already (`to` for a pull, `from` for a
 * push); `as` names the list for another local tree (a selection of `top`'s files).
 */
export async function carryFileSha256(
  from: Store | Origin,
  to: Store | Origin,
  local: Store,
  top: ObjectId,
  options: { as?: ObjectId; lease?: Lease; signal?: AbortSignal } = {},
): Promise<void> {
  let tree = top;
  let bytes: Uint8Array;
  try {
    bytes = await local.readObject(top);
    if (isRevisionDocument(bytes)) {
      tree = decodeRevision(bytes).target;
      bytes = await local.readObject(tree);
    }
  } catch {
    return;
  }
  if (!mayHaveFileSha256(bytes)) return;
  const as = options.as !== undefined && options.as !== top ? { as: options.as } : {};
  await copyFileSha256(from, to, tree, {
    ...as,
    ...(options.lease ? { lease: options.lease } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}
