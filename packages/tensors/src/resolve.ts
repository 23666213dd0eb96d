/**
 * What any ref argument names, down to what a model reader opens: {@link resolveModelRef}, one
 * resolver for `openModel`, `openCheckpoint`, `openRepo` and the CLI, over format's `resolveSpec`.
 */
import {
  type Manifest,
  type ObjectId,
  TensorFSError,
  type ResolvedRevision,
  resolveSpec,
  selectVariant,
  treeVariants,
} from '@tensorfs/format';
import type { Store } from '@tensorfs/format/store';

/** What a ref argument names, resolved down to what a model reader opens. */
export interface ResolvedModelRef {
  /** What to open: a tree or snapshot (no variants), or a checkpoint header. */
  id: ObjectId;
  /** The tree the revision names, when it names one. */
  tree: ObjectId | null;
  /** The variant chosen in the tree, if it has variants. */
  variant: string | null;
  /** How the repository revision resolved, when the argument named one (null for a bare id). */
  revision: ResolvedRevision | null;
}

/**
 * Resolves `refOrId` (`owner/name[@revision]`, a ref name of any kind, or an object id) with
 * format's one resolver, then picks the variant of a tree that has `.cozytensors` variants: the
 * one named, the only one, or `invalid_argument` (`repo.variant_required`) listing them.
 * @throws {TensorFSError} `not_found` (`repo.no_such_repo`, `repo.no_such_revision`,
 *   `repo.no_such_variant`), `invalid_argument`.
 */
export async function resolveModelRef(
  store: Store,
  refOrId: string,
  options: { variant?: string } = {},
): Promise<ResolvedModelRef> {
  const r = await resolveSpec(store, refOrId);
  if (r.targetKind !== 'tree') return { id: r.target, tree: null, variant: null, revision: r.resolution };
  let manifest: Manifest;
  try {
    manifest = await store.getManifest(r.target);
  } catch (err) {
    // Not a manifest: the snapshot reader says what it is, unless a variant was asked for.
    if (options.variant === undefined) return { id: r.target, tree: r.target, variant: null, revision: r.resolution };
    throw err;
  }
  if (treeVariants(manifest).length === 0 && options.variant === undefined) {
    return { id: r.target, tree: r.target, variant: null, revision: r.resolution };
  }
  const chosen = selectVariant(manifest, options.variant)!;
  const record = chosen.entry.records.length === 1 ? chosen.entry.records[0]! : null;
  if (record === null) {
    throw new TensorFSError('malformed', `the variant file ${chosen.path} is not one checkpoint header object`, {
      details: { rule: 'repo.bad_variant', path: chosen.path },
    });
  }
  return { id: record.digest, tree: r.target, variant: chosen.name, revision: r.resolution };
}
