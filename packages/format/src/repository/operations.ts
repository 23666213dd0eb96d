/**
 * Repository operations over any {@link Store}: one implementation of the rules for the local
 * store, folders, hubs and buckets, since all a repository needs is objects and refs moved by
 * compare-and-swap.
 */
import { requireObject, requireString } from '../args.js';
import { requireStore } from './check.js';
import { COZYTENSORS_MAGIC } from '../cozytensors/header.js';
import { isTensorFSError, TensorFSError, throwIfAborted } from '../errors.js';
import { type ObjectId, parseObjectId } from '../ids.js';
import { TFM1_MAGIC } from '../manifest/manifest.js';
import type { Store } from '../store/contract.js';
import {
  branchRefName,
  DEFAULT_BRANCH,
  parseRepoRefName,
  tagRefName,
  validateRepoId,
  validateRevisionName,
} from './names.js';
import {
  decodeRevision,
  MAX_HISTORY,
  REVISION_MAGIC,
  type RevisionDocument,
  type RevisionMove,
  type RevisionUpstream,
  encodeRevision,
} from './revision.js';

/** What an object is, to a repository. */
export type HeadKind = 'revision' | 'tree' | 'checkpoint';

const HEX40 = /^[0-9a-f]{40}$/;

function requireOptionsObject(options: unknown): void {
  requireObject(options, 'options', 'repo');
}

function startsWith(head: Uint8Array, magic: Uint8Array): boolean {
  return head.length >= magic.length && magic.every((b, i) => head[i] === b);
}

/** Classifies a stored object by its leading bytes; null when it is none of the three. */
export async function headKindOf(store: Store, id: ObjectId, signal?: AbortSignal): Promise<HeadKind | null> {
  requireStore(store);
  let head: Uint8Array;
  try {
    head = await store.readObjectRange(id, 0, 4, { signal });
  } catch (err) {
    // Shorter than four bytes: a leaf.
    if (isTensorFSError(err) && err.code === 'invalid_argument') return null;
    throw err;
  }
  if (startsWith(head, REVISION_MAGIC)) return 'revision';
  if (startsWith(head, TFM1_MAGIC)) return 'tree';
  if (startsWith(head, COZYTENSORS_MAGIC)) return 'checkpoint';
  return null;
}

/** A revision, resolved. */
export interface ResolvedRevision {
  repo: string;
  /** The revision as asked (`main` for none). */
  revision: string;
  /** How it was named. */
  kind: 'branch' | 'tag' | 'id';
  /** The ref that named it (null for an id). */
  ref: string | null;
  /** What the ref (or id) names: a revision document, or a bare tree or header. */
  head: ObjectId;
  /** The revision document, when `head` is one (null for a ref written before repositories). */
  commit: ObjectId | null;
  document: RevisionDocument | null;
  /** The tree or checkpoint header this revision reads. */
  target: ObjectId;
  targetKind: 'tree' | 'checkpoint';
}

async function readDocument(store: Store, id: ObjectId, signal?: AbortSignal): Promise<RevisionDocument> {
  return decodeRevision(await store.readObject(id, { signal }));
}

async function resolveHead(
  store: Store,
  base: Omit<ResolvedRevision, 'commit' | 'document' | 'target' | 'targetKind'>,
  signal?: AbortSignal,
): Promise<ResolvedRevision> {
  const kind = await headKindOf(store, base.head, signal);
  if (kind === 'revision') {
    const document = await readDocument(store, base.head, signal);
    if (document.repo !== base.repo) {
      throw new TensorFSError('not_found', `revision ${base.revision} belongs to ${document.repo}, not ${base.repo}`, {
        details: { rule: 'repo.no_such_revision', repo: base.repo, revision: base.revision },
      });
    }
    const targetKind = await headKindOf(store, document.target, signal);
    if (targetKind !== 'tree' && targetKind !== 'checkpoint') {
      throw new TensorFSError('malformed', 'a revision document names something that is neither a tree nor a header', {
        details: { rule: 'repo.bad_target', id: document.target },
      });
    }
    return { ...base, commit: base.head, document, target: document.target, targetKind };
  }
  if (kind === 'tree' || kind === 'checkpoint') {
    return { ...base, commit: null, document: null, target: base.head, targetKind: kind };
  }
  throw new TensorFSError('invalid_argument', `${base.revision} is not a revision, a tree or a checkpoint header`, {
    details: { rule: 'repo.not_a_revision', repo: base.repo, revision: base.revision },
  });
}

/** True when the repository has any ref in `store` (main, another branch or a tag). */
async function repoExists(store: Store, repo: string, signal?: AbortSignal): Promise<boolean> {
  if ((await store.getRef(repo, { signal })) !== null) return true;
  if (!store.capabilities.has('refs.list')) return false;
  const { refs } = await store.scanRefs({ signal });
  return refs.some((r) => parseRepoRefName(r.name)?.repo === repo);
}

function notFound(rule: 'no_such_repo' | 'no_such_revision', repo: string, revision: string): TensorFSError {
  return new TensorFSError(
    'not_found',
    rule === 'no_such_repo' ? `no repository ${repo}` : `no revision ${revision} in ${repo}`,
    { details: { rule: `repo.${rule}`, repo, revision } },
  );
}

/**
 * Resolves `<repo>@<revision>`: a branch (main when `revision` is omitted), a tag, `sha256:<hex>`
 * (a revision document of this repository, a tree or a header, published or not) or 40 hex digits
 * (the leading digits of a revision document or target named by one of the repository's branches,
 * tags or their histories — the Hugging Face protocol's commit).
 * @throws {TensorFSError} `not_found` `repo.no_such_repo` / `repo.no_such_revision`;
 * `invalid_argument` `repo.not_a_revision` for an id of another kind of object.
 */
export async function resolveRevision(
  store: Store,
  repo: string,
  revision?: string | null,
  options: { signal?: AbortSignal } = {},
): Promise<ResolvedRevision> {
  requireStore(store);
  requireOptionsObject(options);
  const { signal } = options;
  validateRepoId(repo);
  if (revision !== undefined && revision !== null) requireString(revision, 'revision', 'repo');
  const rev = revision ?? DEFAULT_BRANCH;
  throwIfAborted(signal);
  if (rev.startsWith('sha256:')) {
    const id = parseObjectId(rev);
    if (!(await store.has(id, { signal }))) throw notFound('no_such_revision', repo, rev);
    return resolveHead(store, { repo, revision: rev, kind: 'id', ref: null, head: id }, signal);
  }
  if (HEX40.test(rev)) {
    const id = await findByPrefix(store, repo, rev, signal);
    return resolveHead(store, { repo, revision: rev, kind: 'id', ref: null, head: id }, signal);
  }
  validateRevisionName(rev);
  const branchRef = branchRefName(repo, rev);
  const branchHead = await store.getRef(branchRef, { signal });
  if (branchHead !== null) {
    return resolveHead(store, { repo, revision: rev, kind: 'branch', ref: branchRef, head: branchHead }, signal);
  }
  const tagRef = tagRefName(repo, rev);
  const tagHead = await store.getRef(tagRef, { signal });
  if (tagHead !== null) {
    return resolveHead(store, { repo, revision: rev, kind: 'tag', ref: tagRef, head: tagHead }, signal);
  }
  throw notFound((await repoExists(store, repo, signal)) ? 'no_such_revision' : 'no_such_repo', repo, rev);
}

async function findByPrefix(store: Store, repo: string, hex: string, signal?: AbortSignal): Promise<ObjectId> {
  const found = new Set<ObjectId>();
  const consider = (id: ObjectId | null) => {
    if (id?.startsWith(`sha256:${hex}`)) found.add(id);
  };
  const listing = await listRepository(store, repo, signal);
  for (const head of [...listing.branches, ...listing.tags].map((b) => b.head)) {
    consider(head);
    if ((await headKindOf(store, head, signal)) !== 'revision') continue;
    const doc = await readDocument(store, head, signal);
    consider(doc.target);
    for (const m of doc.history) {
      consider(m.commit);
      consider(m.target);
    }
  }
  if (found.size === 1) return [...found][0]!;
  // None, or several ids sharing the digits: no one revision is named.
  throw notFound('no_such_revision', repo, hex);
}

/** A repository's branches and tags. */
export interface RepositoryListing {
  repo: string;
  branches: { name: string; head: ObjectId }[];
  tags: { name: string; head: ObjectId }[];
}

async function listRepository(store: Store, repo: string, signal?: AbortSignal): Promise<RepositoryListing> {
  if (!store.capabilities.has('refs.list')) {
    const main = await store.getRef(repo, { signal });
    if (main === null) throw notFound('no_such_repo', repo, DEFAULT_BRANCH);
    return { repo, branches: [{ name: DEFAULT_BRANCH, head: main }], tags: [] };
  }
  const found = (await listRepositories(store, { signal })).find((r) => r.repo === repo);
  if (found === undefined) throw notFound('no_such_repo', repo, DEFAULT_BRANCH);
  return found;
}

/**
 * Every repository of a store, by id, with branches and tags sorted by name. Refs outside the
 * layout are left out. `unsupported` without the `refs.list` capability.
 */
export async function listRepositories(
  store: Store,
  options: { signal?: AbortSignal } = {},
): Promise<RepositoryListing[]> {
  requireStore(store);
  requireOptionsObject(options);
  const { refs } = await store.scanRefs({ signal: options.signal });
  const byRepo = new Map<string, RepositoryListing>();
  for (const r of refs) {
    const p = parseRepoRefName(r.name);
    if (p === null) continue;
    let entry = byRepo.get(p.repo);
    if (entry === undefined) byRepo.set(p.repo, (entry = { repo: p.repo, branches: [], tags: [] }));
    (p.kind === 'branch' ? entry.branches : entry.tags).push({ name: p.name, head: r.id });
  }
  const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const out = [...byRepo.values()].sort((a, b) => (a.repo < b.repo ? -1 : a.repo > b.repo ? 1 : 0));
  for (const r of out) {
    r.branches.sort(byName);
    r.tags.sort(byName);
  }
  return out;
}

/** Options of {@link moveBranch}. */
export interface MoveBranchOptions {
  repo: string;
  /** Default `main`. */
  branch?: string;
  /** The tree or checkpoint header the branch will read. */
  target: ObjectId;
  /** Compare-and-swap: the head the branch must hold (`null`: it must not exist); omitted: whatever it holds now. */
  expected?: ObjectId | null;
  author: string;
  message?: string;
  upstream?: RevisionUpstream | null;
  /** Milliseconds since the epoch (default now). */
  time?: number;
  /** Mark the branch ref cached (evictable) where the store keeps such marks (`SetRefOptions.cached`). */
  cached?: boolean;
  signal?: AbortSignal;
}

/**
 * Moves a branch to a new revision document naming `target`, carrying the branch's history; the
 * ref moves by compare-and-swap, so of concurrent moves from one head exactly one wins
 * (`conflict` for the others) and a failure leaves the branch where it was.
 * @throws {TensorFSError} `not_found` `repo.no_such_target` (target not stored), `invalid_argument`
 * `repo.bad_target` (neither a tree nor a header), `conflict` (the branch moved, or a new branch
 * would take a tag's name: `repo.name_taken`).
 */
export async function moveBranch(
  store: Store,
  options: MoveBranchOptions,
): Promise<{ commit: ObjectId; previous: ObjectId | null; document: RevisionDocument }> {
  requireStore(store);
  requireOptionsObject(options);
  const { repo, target, signal } = options;
  const branch = options.branch ?? DEFAULT_BRANCH;
  const ref = branchRefName(repo, branch);
  parseObjectId(target);
  if (!(await store.has(target, { signal }))) {
    throw new TensorFSError('not_found', `the target ${target} is not stored`, {
      details: { rule: 'repo.no_such_target', id: target },
    });
  }
  const kind = await headKindOf(store, target, signal);
  if (kind !== 'tree' && kind !== 'checkpoint') {
    throw new TensorFSError('invalid_argument', 'a branch names a tree (TFM1) or a checkpoint header', {
      details: { rule: 'repo.bad_target', id: target },
    });
  }
  const current = options.expected !== undefined ? options.expected : await store.getRef(ref, { signal });
  let history: RevisionMove[] = [];
  if (current !== null && (await headKindOf(store, current, signal)) === 'revision') {
    const prev = await readDocument(store, current, signal);
    const move: RevisionMove = {
      commit: current,
      previous: prev.parent,
      target: prev.target,
      time: prev.time,
      author: prev.author,
      message: prev.message,
    };
    history = [move, ...prev.history].slice(0, MAX_HISTORY);
  } else if (current === null && (await store.getRef(tagRefName(repo, branch), { signal })) !== null) {
    throw new TensorFSError('conflict', `${repo} has a tag named ${branch}; a branch may not take its name`, {
      details: { rule: 'repo.name_taken', repo, name: branch },
    });
  }
  const document: RevisionDocument = {
    repo,
    branch,
    target,
    parent: current,
    time: options.time ?? Date.now(),
    author: options.author,
    message: options.message ?? '',
    upstream: options.upstream ?? null,
    history,
  };
  const { id } = await store.put(encodeRevision(document), { signal });
  await store.setRef(ref, id, { expected: current, signal, ...(options.cached ? { cached: true } : {}) });
  return { commit: id, previous: current, document };
}

/**
 * Creates a tag naming what `revision` resolves to (its revision document, or its bare tree or
 * header). A tag never moves.
 * @throws {TensorFSError} `conflict` `repo.tag_exists` (the tag exists, even at the same head),
 * `conflict` `repo.name_taken` (a branch has the name).
 */
export async function createTag(
  store: Store,
  options: { repo: string; tag: string; revision?: string | null; signal?: AbortSignal },
): Promise<{ ref: string; head: ObjectId }> {
  requireStore(store);
  requireOptionsObject(options);
  const { repo, tag, signal } = options;
  const ref = tagRefName(repo, tag);
  if ((await store.getRef(branchRefName(repo, tag), { signal })) !== null) {
    throw new TensorFSError('conflict', `${repo} has a branch named ${tag}; a tag may not take its name`, {
      details: { rule: 'repo.name_taken', repo, name: tag },
    });
  }
  const resolved = await resolveRevision(store, repo, options.revision, { signal });
  const tagExists = () =>
    new TensorFSError('conflict', `tag ${tag} of ${repo} exists; a tag never moves`, {
      details: { rule: 'repo.tag_exists', repo, tag },
    });
  if ((await store.getRef(ref, { signal })) !== null) throw tagExists();
  try {
    await store.setRef(ref, resolved.head, { expected: null, signal });
  } catch (err) {
    if (isTensorFSError(err) && err.code === 'conflict') throw tagExists();
    throw err;
  }
  return { ref, head: resolved.head };
}

/** One move of a branch, as {@link branchLog} lists it. */
export interface LogEntry {
  /** The head after the move: a revision document, or (the oldest entry of a ref written before repositories) a bare tree or header. */
  commit: ObjectId;
  previous: ObjectId | null;
  target: ObjectId;
  /** Null for a head written before repositories (no record of when or by whom). */
  time: number | null;
  author: string | null;
  message: string | null;
  upstream: RevisionUpstream | null;
}

/**
 * The moves of a branch, newest first: its head, then the embedded history (at most
 * {@link MAX_HISTORY} earlier moves), then, when the oldest move started from a bare tree or header
 * (a ref written before repositories), that head.
 * @throws {TensorFSError} `not_found` `repo.no_such_revision` / `repo.no_such_repo`.
 */
export async function branchLog(
  store: Store,
  repo: string,
  branch: string = DEFAULT_BRANCH,
  options: { signal?: AbortSignal } = {},
): Promise<LogEntry[]> {
  requireStore(store);
  requireOptionsObject(options);
  const { signal } = options;
  const ref = branchRefName(repo, branch);
  const head = await store.getRef(ref, { signal });
  if (head === null) {
    throw notFound((await repoExists(store, repo, signal)) ? 'no_such_revision' : 'no_such_repo', repo, branch);
  }
  const bare = (id: ObjectId): LogEntry => ({
    commit: id,
    previous: null,
    target: id,
    time: null,
    author: null,
    message: null,
    upstream: null,
  });
  if ((await headKindOf(store, head, signal)) !== 'revision') return [bare(head)];
  const doc = await readDocument(store, head, signal);
  const out: LogEntry[] = [
    {
      commit: head,
      previous: doc.parent,
      target: doc.target,
      time: doc.time,
      author: doc.author,
      message: doc.message,
      upstream: doc.upstream,
    },
    ...doc.history.map((m) => ({ ...m, upstream: null })),
  ];
  const oldest = out[out.length - 1]!;
  if (oldest.previous !== null && doc.history.length < MAX_HISTORY) {
    const kind = await headKindOf(store, oldest.previous, signal).catch(() => null);
    if (kind === 'tree' || kind === 'checkpoint') out.push(bare(oldest.previous));
  }
  return out;
}
