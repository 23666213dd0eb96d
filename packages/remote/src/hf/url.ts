/**
 * The `hf://` URL grammar: `hf://owner/repo[@revision]` names a repository of the Hub (or of any
 * endpoint speaking its API) at a revision.
 */
import { TensorFSError } from '@tensorfs/format';

/** The public Hub. */
export const HF_DEFAULT_ENDPOINT = 'https://huggingface.co';

/** A parsed `hf://` URL. */
export interface HfRepoSpec {
  /** `owner/name` (or a legacy one-segment name such as `gpt2`). */
  repo: string;
  /** A branch, tag or commit as given (default `main`). */
  revision: string;
  /**
   * The repository type (default `model`). `hf://` URLs name models only; the pull-through hub
   * asks its upstream for datasets too (`/api/datasets/…`, `/datasets/{repo}/resolve/…`).
   */
  type?: 'model' | 'dataset';
}

const SEGMENT = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$/;

/**
 * Parses `hf://owner/repo[@revision]`. Only model repositories are supported (`hf://datasets/…`
 * and `hf://spaces/…` are `unsupported`); a revision may hold `/` (`refs/pr/1`).
 * @throws {TensorFSError} `invalid_argument` (`hf.url`), `unsupported` (`hf.repo_type`).
 */
export function parseHfUrl(url: string): HfRepoSpec {
  const bad = (why: string) =>
    new TensorFSError('invalid_argument', `not a Hugging Face source (${why}): hf://owner/repo[@revision]`, {
      details: { rule: 'hf.url' },
    });
  if (typeof url !== 'string' || !url.startsWith('hf://')) throw bad('scheme');
  const rest = url.slice(5);
  const at = rest.indexOf('@');
  const repoPart = at < 0 ? rest : rest.slice(0, at);
  const revision = at < 0 ? 'main' : rest.slice(at + 1);
  const segments = repoPart.split('/');
  if (segments.length === 3 && ['datasets', 'spaces'].includes(segments[0]!)) {
    throw new TensorFSError('unsupported', `only model repositories can be imported, not ${segments[0]}`, {
      details: { rule: 'hf.repo_type', actual: segments[0] },
    });
  }
  if (segments.length < 1 || segments.length > 2 || !segments.every((s) => SEGMENT.test(s) && !s.includes('..'))) {
    throw bad('repository name');
  }
  if (revision.length === 0 || revision.length > 256 || /[\u0000-\u001f\u007f]/.test(revision)) {
    throw bad('revision');
  }
  return { repo: segments.join('/'), revision };
}
