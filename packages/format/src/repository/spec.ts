/**
 * One resolver for every argument that names something to read: `<repo>[@<revision>]`, any ref
 * name (an `_`-prefixed branch or tag ref too) or an object id, down to the tree or checkpoint
 * header it reads (spec/v1/repository.md, "Resolution"). Commands and readers take this, so no
 * verb parses revisions on its own.
 */
import { requireObject, requireString } from '../args.js';
import type { ObjectId } from '../ids.js';
import type { Store } from '../store/contract.js';
import { parseRepoSpec } from './names.js';
import { requireStore } from './check.js';
import { headKindOf, type ResolvedRevision, resolveRevision } from './operations.js';
import { decodeRevision, type RevisionDocument } from './revision.js';

/** What {@link resolveSpec} found. */
export interface ResolvedSpec {
  /** The tree (or, for an older ref, any manifest) or checkpoint header to read. */
  target: ObjectId;
  targetKind: 'tree' | 'checkpoint';
  /** The object the argument named before following a revision document. */
  head: ObjectId;
  /** The revision document read on the way, if any. */
  document: RevisionDocument | null;
  /** The repository resolution, when the argument was `<repo>@<revision>` (null for a ref name or an id). */
  resolution: ResolvedRevision | null;
}

/**
 * Resolves `spec` in `store`:
 *
 * - `sha256:<hex>`: that object; a revision document is followed to its target;
 * - `<repo>@<revision>`: {@link resolveRevision} (a branch, a tag or an id);
 * - a ref name (a repository id is its `main` branch, `_branches/R/B` and `_tags/R/T` are
 *   branches and tags, every older ref reads as before): the object it names, a revision
 *   document followed to its target.
 *
 * @throws {TensorFSError} `not_found` (`repo.no_such_repo`, `repo.no_such_revision`, or no such
 *   ref or object), `invalid_argument` (a malformed spec, or an object that is neither).
 */
export async function resolveSpec(
  store: Store,
  spec: string,
  options: { signal?: AbortSignal } = {},
): Promise<ResolvedSpec> {
  requireStore(store);
  requireString(spec, 'spec', 'repo');
  requireObject(options, 'options', 'repo');
  const { signal } = options;
  const fromResolution = (r: ResolvedRevision): ResolvedSpec => ({
    target: r.target,
    targetKind: r.targetKind,
    head: r.head,
    document: r.document,
    resolution: r,
  });
  if (spec.includes('@')) {
    const { repo, revision } = parseRepoSpec(spec);
    return fromResolution(await resolveRevision(store, repo, revision, { signal }));
  }
  // The store's own resolution (a fetching store reads the origin's refs on a miss).
  const head = await store.resolve(spec);
  const kind = await headKindOf(store, head, signal);
  if (kind === 'revision') {
    const document = decodeRevision(await store.readObject(head, { signal }));
    const targetKind = await headKindOf(store, document.target, signal);
    return {
      target: document.target,
      targetKind: targetKind === 'checkpoint' ? 'checkpoint' : 'tree',
      head,
      document,
      resolution: null,
    };
  }
  return {
    target: head,
    targetKind: kind === 'checkpoint' ? 'checkpoint' : 'tree',
    head,
    document: null,
    resolution: null,
  };
}
