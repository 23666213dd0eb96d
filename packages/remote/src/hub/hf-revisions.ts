/**
 * Revisions as the Hugging Face API names them: every revision answers a 40-hex `sha`, and a
 * 40-hex revision resolves back to exactly one tree.
 *
 * The `sha` of a revision:
 * - a branch head or a tag naming a revision document: the upstream commit recorded in that
 *   document (a pull-through import keeps the upstream's commit, so clients pinned to it and
 *   chained hubs agree), else the first 40 hex digits of the document's id;
 * - a legacy ref (naming a tree or a checkpoint header directly) or a bare id: the first 40 hex
 *   digits of the target's id.
 *
 * A 40-hex revision is looked up among what the repository's branches, tags and the branches'
 * histories name (and the shas this hub already answered); several different trees for one sha
 * (a truncated-id collision) or none is `repo.no_such_revision`. Several revisions with the same
 * upstream commit (a pull-through revision completed by later imports) resolve to the newest.
 */
import {
  type ObjectId,
  type RevisionDocument,
  TensorFSError,
  branchLog,
  branchRefName,
  decodeRevision,
  headKindOf,
  listRepositories,
  resolveRevision,
} from '@tensorfs/format';
import type { HubStore } from './types.js';

/** A resolved revision, with its `sha`. */
export interface HfRevision {
  repo: string;
  /** The 40-hex commit this revision answers. */
  sha: string;
  target: ObjectId;
  targetKind: 'tree' | 'checkpoint';
  /** The revision document's id (null: a legacy ref or a bare id). */
  commit: ObjectId | null;
  document: RevisionDocument | null;
  /** The ref it came from (null for a 40-hex or bare id). */
  ref: string | null;
  /** `branch`, `tag` or `id` (the last also for a 40-hex). */
  kind: 'branch' | 'tag' | 'id';
  /** The branch or tag name (null otherwise). */
  name: string | null;
}

/** A 40-hex commit, as `huggingface_hub` recognises one. */
export const COMMIT_RE = /^[0-9a-f]{40}$/;

/** The `sha` of a revision (see the module comment). */
export function shaOf(r: { commit: ObjectId | null; target: ObjectId; document: RevisionDocument | null }): string {
  const up = r.document?.upstream?.revision;
  if (typeof up === 'string' && COMMIT_RE.test(up)) return up;
  return (r.commit ?? r.target).slice(7, 47);
}

function noRevision(repo: string, revision: string): TensorFSError {
  return new TensorFSError('not_found', `${repo} has no revision ${JSON.stringify(revision)}`, {
    details: { rule: 'repo.no_such_revision', ref: repo },
  });
}

const MAX_REMEMBERED = 100_000;

/** Resolves revisions of one hub's store, remembering which sha names which tree. */
export class HfRevisions {
  private readonly bySha = new Map<string, HfRevision>();

  constructor(private readonly store: HubStore) {}

  /** Forgets what `repo`'s shas named (a branch moved here): they are looked up again. */
  forget(repo: string): void {
    for (const k of [...this.bySha.keys()]) if (k.startsWith(`${repo}\0`)) this.bySha.delete(k);
  }

  /**
   * `revision` (a branch, a tag, `sha256:<id>`, or a 40-hex sha) of `repo`.
   * @throws {TensorFSError} `not_found` (`repo.no_such_repo`, `repo.no_such_revision`).
   */
  async resolve(repo: string, revision: string): Promise<HfRevision> {
    if (COMMIT_RE.test(revision)) {
      const hit = this.bySha.get(`${repo}\0${revision}`);
      if (hit) return hit;
      const found = await this.scan(repo, revision);
      if (found) return this.remember(found);
    }
    const r = await resolveRevision(this.store, repo, revision);
    const out: HfRevision = {
      repo,
      sha: '',
      target: r.target,
      targetKind: r.targetKind,
      commit: r.commit,
      document: r.document,
      ref: r.ref,
      kind: r.kind,
      name: r.kind === 'id' ? null : revision,
    };
    out.sha = shaOf(out);
    return this.remember(out);
  }

  private remember(r: HfRevision): HfRevision {
    if (this.bySha.size >= MAX_REMEMBERED) this.bySha.delete(this.bySha.keys().next().value as string);
    this.bySha.set(`${r.repo}\0${r.sha}`, r);
    return r;
  }

  /** The one revision of `repo` whose sha is `sha`, among its branches, tags and histories. */
  private async scan(repo: string, sha: string): Promise<HfRevision | undefined> {
    const listing = (await listRepositories(this.store)).find((x) => x.repo === repo);
    if (listing === undefined) {
      throw new TensorFSError('not_found', `no repository ${repo}`, {
        details: { rule: 'repo.no_such_repo', ref: repo },
      });
    }
    const found: HfRevision[] = [];
    // Heads first, then the branches' histories (newest first): the first match is the newest.
    for (const b of listing.branches) {
      const log = await branchLog(this.store, repo, b.name);
      for (const [i, e] of log.entries()) {
        const document = e.commit !== e.target ? await this.document(e.commit) : null;
        const r: Omit<HfRevision, 'sha'> = {
          repo,
          target: e.target,
          targetKind: (await headKindOf(this.store, e.target)) === 'checkpoint' ? 'checkpoint' : 'tree',
          commit: document ? e.commit : null,
          document,
          ref: i === 0 ? branchRefName(repo, b.name) : null,
          kind: i === 0 ? 'branch' : 'id',
          name: i === 0 ? b.name : null,
        };
        if (shaOf(r) === sha) found.push({ ...r, sha });
      }
    }
    for (const t of listing.tags) {
      const r = await resolveRevision(this.store, repo, t.name);
      const out = { repo, target: r.target, targetKind: r.targetKind, commit: r.commit, document: r.document };
      if (shaOf(out) === sha) found.push({ ...out, sha, ref: r.ref, kind: 'tag', name: t.name });
    }
    if (found.length === 0) return undefined;
    const targets = new Set(found.map((f) => f.target));
    // Different trees under one sha: a truncated-id collision names no one revision. One upstream
    // commit completed file by file is the exception: the newest is served.
    if (targets.size > 1 && found.some((f) => f.document?.upstream?.revision !== sha)) throw noRevision(repo, sha);
    return found[0];
  }

  private async document(id: ObjectId): Promise<RevisionDocument | null> {
    if ((await headKindOf(this.store, id)) !== 'revision') return null;
    return decodeRevision(await this.store.readObject(id, { verify: true }));
  }
}
