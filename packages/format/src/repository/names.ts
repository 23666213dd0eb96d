/**
 * Repository names and their ref layout (spec/v1/repository.md). Every store and origin keeps a
 * repository in ordinary refs, so the one compare-and-swap rule of the storage contract covers it:
 *
 * - branch `main` of repository `R` is the ref `R` itself (every existing ref is a repository's
 *   `main`, with no step by the user);
 * - another branch `B` is the ref `_branches/R/B`;
 * - a tag `T` is the ref `_tags/R/T`.
 *
 * Branch and tag names are one segment, so `_branches/a/b/c` can only be branch `c` of `a/b`.
 */
import { requireString } from '../args.js';
import { TensorFSError } from '../errors.js';
import { validateRefName } from '../store/names.js';

/** The branch a bare repository id names. */
export const DEFAULT_BRANCH = 'main';
/** First segment of the refs of branches other than `main`. */
export const BRANCHES_PREFIX = '_branches/';
/** First segment of the refs of tags. */
export const TAGS_PREFIX = '_tags/';

const HEX40 = /^[0-9a-f]{40}$/;

function refused(rule: string, message: string, actual: unknown): TensorFSError {
  return new TensorFSError('invalid_argument', message, {
    details: { rule: `repo.${rule}`, actual: typeof actual === 'string' ? actual.slice(0, 256) : String(actual) },
  });
}

/**
 * Validates a repository id: a valid ref name whose first segment does not start with `_`
 * (`owner/name`, or one segment such as `gpt2`). `invalid_argument` (`repo.bad_id`) otherwise;
 * returns the id.
 */
export function validateRepoId(repo: string): string {
  if (typeof repo !== 'string' || repo.startsWith('_')) {
    throw refused('bad_id', 'a repository id may not start with "_" (reserved for branches and tags)', repo);
  }
  try {
    validateRefName(repo);
  } catch {
    throw refused('bad_id', `invalid repository id ${JSON.stringify(repo.slice(0, 80))}`, repo);
  }
  // Room for `_branches/` + `/` + a name: the branch and tag refs must be valid ref names too.
  if (repo.length > 160) throw refused('bad_id', 'repository id longer than 160 characters', repo);
  return repo;
}

/**
 * Validates a branch or tag name: one ref segment, not 40 hex digits (that is a commit in the
 * Hugging Face protocol), at most 32 characters. `invalid_argument` (`repo.bad_name`) otherwise.
 */
export function validateRevisionName(name: string): string {
  if (typeof name !== 'string' || name.includes('/') || HEX40.test(name) || name.length > 32) {
    throw refused('bad_name', 'a branch or tag name is one segment of at most 32 characters, not 40 hex digits', name);
  }
  try {
    validateRefName(name);
  } catch {
    throw refused('bad_name', `invalid branch or tag name ${JSON.stringify(name)}`, name);
  }
  return name;
}

/** The ref that holds branch `branch` of `repo` (`main` is the bare repository ref). */
export function branchRefName(repo: string, branch: string = DEFAULT_BRANCH): string {
  validateRepoId(repo);
  validateRevisionName(branch);
  return branch === DEFAULT_BRANCH ? repo : `${BRANCHES_PREFIX}${repo}/${branch}`;
}

/** The ref that holds tag `tag` of `repo`. */
export function tagRefName(repo: string, tag: string): string {
  validateRepoId(repo);
  validateRevisionName(tag);
  return `${TAGS_PREFIX}${repo}/${tag}`;
}

/** What a ref is in the repository layout. */
export interface RepoRefName {
  repo: string;
  kind: 'branch' | 'tag';
  name: string;
}

/**
 * The repository, kind and name a ref holds; null for a ref outside the layout (an `_`-prefixed
 * name other than a branch or tag ref, or one whose parts are not valid).
 */
export function parseRepoRefName(ref: string): RepoRefName | null {
  requireString(ref, 'ref', 'repo');
  const nested = (prefix: string, kind: RepoRefName['kind']): RepoRefName | null => {
    const rest = ref.slice(prefix.length);
    const cut = rest.lastIndexOf('/');
    if (cut <= 0) return null;
    const repo = rest.slice(0, cut);
    const name = rest.slice(cut + 1);
    try {
      validateRepoId(repo);
      validateRevisionName(name);
    } catch {
      return null;
    }
    if (kind === 'branch' && name === DEFAULT_BRANCH) return null;
    return { repo, kind, name };
  };
  if (ref.startsWith(BRANCHES_PREFIX)) return nested(BRANCHES_PREFIX, 'branch');
  if (ref.startsWith(TAGS_PREFIX)) return nested(TAGS_PREFIX, 'tag');
  try {
    validateRepoId(ref);
  } catch {
    return null;
  }
  return { repo: ref, kind: 'branch', name: DEFAULT_BRANCH };
}

/** `<repo>[@<revision>]` split. */
export interface RepoSpec {
  repo: string;
  /** A branch, a tag, `sha256:<hex>` or 40 hex digits; null for the default (`main`). */
  revision: string | null;
}

/**
 * Splits `<repo>[@<revision>]` (a repository id never holds `@`). The repository id is checked;
 * the revision only for being non-empty (resolution decides what it names).
 */
export function parseRepoSpec(text: string): RepoSpec {
  if (typeof text !== 'string') throw refused('bad_spec', 'expected <repo>[@<revision>]', text);
  const at = text.indexOf('@');
  const repo = at < 0 ? text : text.slice(0, at);
  const revision = at < 0 ? null : text.slice(at + 1);
  validateRepoId(repo);
  if (revision !== null && revision.length === 0) {
    throw refused('bad_spec', `empty revision after "@" in ${JSON.stringify(text)}`, text);
  }
  return { repo, revision };
}
