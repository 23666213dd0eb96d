/**
 * A tree's whole-file SHA-256 list (`@tensorfs/cas` `file-sha256`: what a Hugging Face `ETag` is)
 * carried along when the tree moves: a pull copies the origin's list into the store, a push or an
 * upload the store's list to the origin. A checkpoint's list (of its `--safetensors` export,
 * recorded by its writer) moves with the checkpoint, and with a tree holding it as a variant. Asked for only when the tree has a file of several
 * records (no extra request otherwise); best effort: without a list, a server computes the
 * SHA-256s once.
 */
import { copyFileSha256, mayHaveFileSha256 } from '@tensorfs/cas';
import {
  type ObjectId,
  decodeManifest,
  decodeRevision,
  isCheckpointHeader,
  isRevisionDocument,
  objectReferences,
} from '@tensorfs/format';
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
  const call = {
    ...(options.lease ? { lease: options.lease } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  };
  const as = options.as !== undefined && options.as !== top ? { as: options.as } : {};
  // A checkpoint header: the list of its export (recorded by its writer).
  if (isCheckpointHeader(bytes)) {
    await copyFileSha256(from, to, tree, { ...as, ...call });
    return;
  }
  if (objectReferences(bytes)?.kind !== 'manifest') return;
  if (mayHaveFileSha256(bytes)) await copyFileSha256(from, to, tree, { ...as, ...call });
  // A tree holding checkpoint variants (`model[.VARIANT].cozytensors`): the list of each one's
  // export, which a Hugging Face server serves in its place.
  let variants: ObjectId[];
  try {
    variants = decodeManifest(bytes)
      .entries.filter((e) => e.kind === 'file' && e.path.endsWith('.cozytensors') && e.records.length === 1)
      .map((e) => (e.kind === 'file' ? e.records[0]!.digest : top));
  } catch {
    return;
  }
  for (const id of new Set(variants)) await copyFileSha256(from, to, id, call);
}
