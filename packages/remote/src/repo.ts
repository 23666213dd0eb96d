/**
 * Repositories over origins: pulling a revision (`owner/name[@branch|tag|sha256:id]`) with the
 * selection of a variant, a file, components or tensors, and naming it locally as it was named
 * remotely; publishing a local tree to a branch of an origin (only the missing objects, then one
 * compare-and-swap). The rules (ref layout, resolution, branch moves) are format's store-generic
 * ones, run here against an origin and a store alike.
 */
import {
  globMatcher,
  type Manifest,
  type ManifestEntry,
  type ObjectId,
  type ResolvedRevision,
  TensorFSError,
  branchRefName,
  decodeCheckpoint,
  decodeManifest,
  encodeCheckpoint,
  isObjectId,
  moveBranch,
  parseRepoSpec,
  resolveRevision,
  selectVariant,
  tagRefName,
  treeVariants,
} from '@tensorfs/format';
import type { Lease, Store } from '@tensorfs/format/store';
import { selectCheckpoint } from '@tensorfs/tensors';
import { carryFileSha256 } from './file-sha256.js';
import type { Origin } from './origin.js';
import { type PullOptions, type SelectionResult, fetchSelection } from './pull.js';
import { type PushOptions, type SendResult, sendClosure } from './push.js';

/** Options of {@link pullRevision}. */
export interface PullRevisionOptions extends PullOptions {
  /** The variant of a tree with several `.cozytensors` files (`model.NAME.cozytensors`; `''` the unnamed one). */
  variant?: string;
  /** One file of the tree only (the seed's `download_file`). */
  file?: string;
  /** Who the local branch move records when a selection makes a new local tree (default `tfs`). */
  author?: string;
  /** The origin's display name, recorded as the upstream of a local branch move. */
  source?: string;
}

/** What {@link pullRevision} did. */
export interface PullRevisionResult extends SelectionResult {
  /** The spec asked for. */
  ref: string;
  /** The repository. */
  repo: string;
  /** How the revision resolved on the origin. */
  revision: string;
  kind: ResolvedRevision['kind'];
  /** The local ref set. */
  name: string;
  /** What the remote ref (or id) named: a revision document, or a tree or header for legacy refs and ids. */
  remoteId: ObjectId;
  /** The tree or checkpoint header the revision names on the origin. */
  target: ObjectId;
  /** The variant chosen, when one was. */
  variant: string | null;
}

/** `true` when `spec` is for {@link pullRevision} (a repository id with or without a revision). */
export function isRepoSpec(spec: string): boolean {
  if (isObjectId(spec)) return false;
  try {
    parseRepoSpec(spec);
    return true;
  } catch {
    return false;
  }
}

/**
 * Pulls a revision of a repository from `origin` into `store`. Without a selection the remote
 * head itself (its revision document, so its history) is pulled and named locally under the
 * same name: a branch as the same branch, a tag as the same tag (an existing local tag naming
 * something else is `conflict` `repo.tag_exists`). With `variant`, `file`, `components` or
 * `tensors` a smaller local tree is made and the local branch moves to it (recording the origin
 * as its upstream). Nothing is named when any step fails.
 */
export async function pullRevision(
  store: Store,
  origin: Origin,
  spec: string,
  options: PullRevisionOptions = {},
): Promise<PullRevisionResult> {
  const { repo, revision } = parseRepoSpec(spec);
  const res = await resolveRevision(origin, repo, revision, { signal: options.signal });
  const selecting =
    options.variant !== undefined ||
    options.file !== undefined ||
    (options.components?.length ?? 0) > 0 ||
    (options.tensors?.length ?? 0) > 0;
  let localName = options.name;
  if (localName === undefined) {
    if (res.kind === 'branch') localName = branchRefName(repo, res.revision);
    else if (res.kind === 'tag') localName = tagRefName(repo, res.revision);
    else {
      throw new TensorFSError('invalid_argument', 'pulling a revision by id needs a local name (--name)', {
        details: { rule: 'pull.name_required' },
      });
    }
  }
  const name = localName;
  // `pull --cache`: whatever local ref this names is cached (evictable), not saved.
  const cached = options.cached ? { cached: true } : {};
  const lease = await store.lease({ purpose: `pull ${spec}` });
  try {
    let variant: string | null = null;
    let from: ObjectId = selecting ? res.target : res.head;
    let transfer: Omit<PullOptions, 'name' | 'expected'> = options;
    if (selecting && res.targetKind === 'tree') {
      const m = decodeManifest(await origin.readObject(res.target, { signal: options.signal }));
      if (treeVariants(m).length > 0 || options.variant !== undefined || options.file !== undefined) {
        const picked = await selectTree(store, origin, lease, m, options);
        variant = picked.variant;
        from = picked.tree;
        // The selection is made: the transfer fetches the local tree's closure.
        transfer = { ...options, components: [], tensors: [] };
      }
      // A tree without variants: its paths (`components`) and tensors are selected as a snapshot's.
    } else if (selecting && (options.variant !== undefined || options.file !== undefined)) {
      throw new TensorFSError(
        'invalid_argument',
        'the revision names a checkpoint, not a tree: it has no variants or files',
        {
          details: { rule: 'repo.not_a_tree', target: res.target },
        },
      );
    }
    const r = await fetchSelection(store, origin, from, transfer, `pull ${spec}`, async (id, l) => {
      if (!selecting || options.name !== undefined || res.kind !== 'branch') {
        const target = !selecting ? res.head : id;
        if (options.name === undefined && res.kind === 'tag') {
          const held = await store.getRef(name);
          if (held !== null && held !== target) {
            throw new TensorFSError('conflict', 'a local tag of that name names something else; tags never move', {
              details: { rule: 'repo.tag_exists', tag: res.revision, expected: target, actual: held },
            });
          }
          if (held === target) return;
          await store.setRef(name, target, { expected: null, lease: l, ...cached });
          return;
        }
        await store.setRef(name, target, { expected: options.expected, lease: l, ...cached });
        return;
      }
      await moveBranch(store, {
        repo,
        branch: res.revision,
        target: id,
        ...(options.expected !== undefined ? { expected: options.expected } : {}),
        author: options.author ?? 'tfs',
        message: `pull ${spec}`,
        upstream: { source: options.source ?? '', revision: res.commit ?? res.head },
        ...cached,
      });
    });
    return {
      ...r,
      ref: spec,
      repo,
      revision: res.revision,
      kind: res.kind,
      name,
      remoteId: res.head,
      target: res.target,
      variant,
    };
  } finally {
    await lease.release().catch(() => {});
  }
}

/**
 * The local tree a selection of `m` makes (put in `store` under `lease`): one file (`file`), or
 * the chosen variant beside every ordinary file (`variant`, or `components`/`tensors` of a tree
 * with variants: the chosen variant's header trimmed with `selectCheckpoint`).
 */
async function selectTree(
  store: Store,
  origin: Origin,
  lease: Lease,
  m: Manifest,
  options: PullRevisionOptions,
): Promise<{ tree: ObjectId; variant: string | null }> {
  if (options.file !== undefined) {
    const e = m.entries.find((x) => x.path === options.file);
    if (e === undefined) {
      throw new TensorFSError('not_found', 'no such file in the tree', {
        details: { rule: 'repo.no_such_file', path: options.file },
      });
    }
    return { tree: await store.putManifest({ ...m, entries: [e] }, { lease }), variant: null };
  }
  const variants = treeVariants(m);
  const components = options.components ?? [];
  const tensors = options.tensors ?? [];
  if (variants.length === 0) selectVariant(m, options.variant); // `not_found`: the tree has no variants
  const chosen = selectVariant(m, options.variant)!;
  const isVariant = new Set(variants.map((v) => v.path));
  const entries: ManifestEntry[] = [];
  for (const e of m.entries) {
    if (isVariant.has(e.path) && e.path !== chosen.path) continue;
    if (e.path === chosen.path && e.kind === 'file' && (components.length > 0 || tensors.length > 0)) {
      const header = await origin.readObject(e.records[0]!.digest, { verify: true });
      const selected = encodeCheckpoint(
        selectCheckpoint(decodeCheckpoint(header), {
          ...(components.length ? { components } : {}),
          ...(tensors.length ? { tensors: globMatcher(tensors) } : {}),
        }),
      );
      const { id } = await store.put([selected], { lease });
      entries.push({ ...e, size: selected.length, records: [{ digest: id, length: selected.length }] });
      continue;
    }
    entries.push(e);
  }
  return { tree: await store.putManifest({ ...m, entries }, { lease }), variant: chosen.name };
}

/** Options of {@link publishTree}. */
export interface PublishOptions extends Pick<PushOptions, 'concurrency' | 'pieceBytes' | 'signal' | 'onProgress'> {
  repo: string;
  branch: string;
  /** The head the branch must hold (a revision id), or null (must not exist). Default: what it holds now. */
  expected?: ObjectId | null;
  author: string;
  message: string;
}

/** What {@link publishTree} did. */
export interface PublishResult extends SendResult {
  /** The new head: the revision document's id. */
  commit: ObjectId;
  /** The head before the move, or null. */
  previous: ObjectId | null;
}

/**
 * Publishes local `tree` (a tree or a checkpoint header) to a branch of `origin`: sends only the
 * objects the origin lacks, then moves the branch by compare-and-swap (a new revision document
 * recording the move). Any failure before the move leaves the branch where it was.
 */
export async function publishTree(
  store: Store,
  origin: Origin,
  tree: ObjectId,
  options: PublishOptions,
): Promise<PublishResult> {
  if (!origin.writable) {
    throw new TensorFSError('unsupported', 'this origin is read-only', { details: { rule: 'remote.read_only' } });
  }
  const sent = await sendClosure(store, origin, tree, options);
  await carryFileSha256(store, origin, store, tree, options.signal ? { signal: options.signal } : {});
  const moved = await moveBranch(origin, {
    repo: options.repo,
    branch: options.branch,
    target: tree,
    ...(options.expected !== undefined ? { expected: options.expected } : {}),
    author: options.author,
    message: options.message,
  });
  return { ...sent, commit: moved.commit, previous: moved.previous };
}
