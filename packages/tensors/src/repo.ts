/**
 * Repositories as the model front door: {@link openRepo} opens `owner/name` at a revision
 * (branch, tag or `sha256:` id of a revision document, tree or header) and, in a tree with
 * `.cozytensors` variants, the variant asked for (the only one when there is one).
 */
import { DEFAULT_BRANCH, throwIfAborted, validateRepoId } from '@tensorfs/format';
import type { Store } from '@tensorfs/format/store';
import { checkOptions, checkStore, checkString } from './args.js';
import { type Model, openModel } from './model.js';

/** Options of {@link openRepo}. */
export interface OpenRepoOptions {
  /** A branch, a tag or `sha256:<hex>` (a revision document, a tree or a header); default `main`. */
  revision?: string;
  /** The variant of a tree with several (`model.NAME.cozytensors`; `''` is `model.cozytensors`). */
  variant?: string;
  /** Cancels opening (`cancelled`). */
  signal?: AbortSignal;
}

/**
 * Opens a repository's model: `openRepo(store, 'owner/name', { revision, variant })` is
 * `openModel` of the revision's tree (its variant) or checkpoint header.
 * @throws {TensorFSError} `invalid_argument` (a bad repository id, or several variants and none
 *   named: `repo.variant_required` listing them), `not_found` (`repo.no_such_repo`,
 *   `repo.no_such_revision`, `repo.no_such_variant`), and what `openModel` throws.
 */
export async function openRepo(store: Store, repo: string, options: OpenRepoOptions = {}): Promise<Model> {
  checkStore(store);
  checkString(repo, 'repo');
  checkOptions(options);
  validateRepoId(repo);
  throwIfAborted(options.signal);
  const revision = options.revision;
  if (revision !== undefined) checkString(revision, 'options.revision');
  const spec = `${repo}@${revision ?? DEFAULT_BRANCH}`;
  return openModel(store, spec, {
    ...(options.variant !== undefined ? { variant: options.variant } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}
