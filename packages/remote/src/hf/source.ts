/**
 * `hf://` as a source of the import pipeline: a repository at a commit, the files the include
 * globs select, each with the digest the Hub announces and checked against its `HEAD` before its
 * bytes are read (resumable ranges, hashed as they arrive, by the pipeline).
 */
import { globMatcher, TensorFSError } from '@tensorfs/format';
import { displayUrl } from '../http.js';
import type { Source, SourceFile } from '@tensorfs/cas';
import { type HfFile, type HfOptions, HuggingFaceRepo } from './client.js';
import { type HfRepoSpec, parseHfUrl } from './url.js';

/** Where an import came from: recorded with the snapshot, and printed. */
export interface HfProvenance {
  kind: 'huggingface';
  /** The Hub (scheme, host and path only). */
  endpoint: string;
  repo: string;
  /** `dataset` for a dataset repository (absent: a model). */
  type?: 'dataset';
  /** The revision as asked. */
  revision: string;
  /** The commit it named (40 hex digits): every file was read at this commit. */
  commit: string;
  /** The include globs, if any. */
  include?: string[];
  /** The files imported, with what the Hub announced for each. */
  files: HfFile[];
}

/**
 * `hf://owner/repo[@revision]` (or a parsed spec, which may name a dataset) as a source of the
 * import pipeline: resolved to a commit, its files listed (those `include` selects) with the
 * SHA-256 (LFS) or git blob id the Hub announces, each file's `HEAD` checked against the listing
 * before its bytes are read.
 * @throws {TensorFSError} `invalid_argument` (URL, globs) at once; the rest when resolved.
 */
export function huggingFaceSource(
  url: string | HfRepoSpec,
  options: HfOptions & { include?: string | readonly string[] } = {},
): Source<HfProvenance> {
  const spec = specOf(url);
  const globs =
    options.include === undefined ? [] : typeof options.include === 'string' ? [options.include] : [...options.include];
  if (globs.some((g) => typeof g !== 'string' || g.length === 0)) {
    throw new TensorFSError('invalid_argument', 'an include glob is empty', { details: { rule: 'hf.include' } });
  }
  const match = globs.length > 0 ? globMatcher(globs) : () => true;
  return {
    async resolve(signal) {
      const repo = new HuggingFaceRepo(spec, { ...options, ...(signal ? { signal } : {}) });
      const commit = await repo.resolveRevision();
      const files = (await repo.listFiles(commit)).filter((f) => match(f.path));
      if (files.length === 0) {
        throw new TensorFSError(
          'not_found',
          `no file of ${spec.repo} at ${commit.slice(0, 12)} matches the include globs`,
          {
            details: { rule: 'hf.nothing_selected', repo: spec.repo, commit },
          },
        );
      }
      return {
        label: `hf ${spec.repo}`,
        voice: { rules: 'hf', who: 'the Hub' },
        files: files.map((f) => hubFile(repo, commit, f)),
        provenance: () => ({
          kind: 'huggingface',
          endpoint: displayUrl(repo.endpoint).replace(/\/$/, ''),
          repo: spec.repo,
          ...(spec.type === 'dataset' ? { type: 'dataset' as const } : {}),
          revision: spec.revision,
          commit,
          ...(globs.length > 0 ? { include: globs } : {}),
          files,
        }),
      };
    },
  };
}

/** A URL parsed, or a spec checked by the same grammar (its type kept). */
function specOf(url: string | HfRepoSpec): HfRepoSpec {
  if (typeof url === 'string') return parseHfUrl(url);
  const spec = parseHfUrl(`hf://${url?.repo}@${url?.revision}`);
  return url.type === 'dataset' ? { ...spec, type: 'dataset' } : spec;
}

/** One file of the repository at `commit` for the pipeline. */
function hubFile(repo: HuggingFaceRepo, commit: string, file: HfFile): SourceFile {
  return {
    path: file.path,
    size: file.size,
    digest:
      file.sha256 !== undefined ? { algorithm: 'sha256', hex: file.sha256 } : { algorithm: 'git-blob', hex: file.oid },
    check: () => checkAnnounced(repo, commit, file),
    open: (start, end) => repo.openRange(commit, file, start, end),
  };
}

/** What the Hub's `HEAD` announces for `file` must agree with its tree listing (`corrupt` otherwise). */
async function checkAnnounced(repo: HuggingFaceRepo, commit: string, file: HfFile): Promise<void> {
  const announced = await repo.head(commit, file.path);
  if (announced.commit !== undefined && announced.commit !== commit) {
    throw new TensorFSError('corrupt', `${file.path}: the Hub served another commit than the one resolved`, {
      details: { rule: 'hf.commit_mismatch', path: file.path, expected: commit, actual: announced.commit.slice(0, 64) },
    });
  }
  const expectedDigest = file.sha256 ?? file.oid;
  if (announced.etag !== undefined && announced.etag !== expectedDigest) {
    throw new TensorFSError('corrupt', `${file.path}: the Hub's ETag differs from its tree listing`, {
      details: {
        rule: 'hf.etag_mismatch',
        path: file.path,
        expected: expectedDigest,
        actual: announced.etag.slice(0, 80),
      },
    });
  }
  if (announced.size !== undefined && announced.size !== file.size) {
    throw new TensorFSError('corrupt', `${file.path}: the Hub announced another size than its tree listing`, {
      details: { rule: 'hf.size_mismatch', path: file.path, expected: file.size, actual: announced.size },
    });
  }
}
