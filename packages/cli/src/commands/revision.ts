/**
 * What a ref argument of a `tfs` verb names: `owner/name[@branch|tag|sha256:<id>]` (bare: the
 * `main` branch, which for every older ref is the ref itself), any ref name, or an object id.
 * One resolver for every verb: format's `resolveSpec` (the tree or header a revision names) and
 * tensors' `resolveModelRef` (in a tree with variants, the variant).
 */
import { type ObjectId, resolveSpec } from '@tensorfs/format';
import type { Store } from '@tensorfs/format/store';

/** The `--variant` option of the verbs that read a model. */
export const VARIANT_OPTION = {
  type: 'string',
  describe: 'of a repository tree with several .cozytensors files: this one (model.NAME.cozytensors)',
} as const;

/** The tree, snapshot or checkpoint header `spec` names. */
export async function resolveTarget(store: Store, spec: string): Promise<ObjectId> {
  return (await resolveSpec(store, spec)).target;
}

/** What a model reader opens for `spec`: its tree or snapshot, or (in a tree with variants) the variant's header. */
export async function resolveModelId(store: Store, spec: string, variant?: string): Promise<ObjectId> {
  // Loaded here: the verbs that only resolve a ref (import, ls, export of a snapshot) do without it.
  const { resolveModelRef } = await import('@tensorfs/tensors');
  return (await resolveModelRef(store, spec, variant !== undefined ? { variant } : {})).id;
}
