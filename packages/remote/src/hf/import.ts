/**
 * Hugging Face Hub sources: `hf://owner/repo[@revision]` imported as a snapshot.
 *
 * What is asked of the Hub, in order (`endpoint` is `HF_ENDPOINT` in the CLI, by default the
 * public Hub):
 * 1. `GET /api/models/{repo}/revision/{revision}`: the commit the revision (branch, tag or commit)
 *    names now. Everything after is asked at that commit, so a branch moving meanwhile changes
 *    nothing, and the commit is recorded with the result.
 * 2. `GET /api/models/{repo}/tree/{commit}?recursive=true`, following `Link: <…>; rel="next"`
 *    (same origin only): every file with its size, git blob id and, for LFS files, its SHA-256.
 * 3. For each file the include globs select: `HEAD /{repo}/resolve/{commit}/{path}` without
 *    following the redirect, for what the Hub announces (`X-Repo-Commit`, `X-Linked-Etag` /
 *    `ETag`, `X-Linked-Size`); then `GET` with `Range` on the same URL, following redirects (the
 *    Hub sends LFS files to a CDN on another origin; the token is not sent there). A
 *    safetensors/GGUF header is read by bounded ranges first; the rest of the file in one stream.
 * 4. Each file is planned and hashed as a local import plans it (same records, same objects),
 *    and its whole bytes are checked against what the Hub announced (SHA-256 for LFS files, the
 *    git blob id for the others) before the snapshot is written: a mismatch is `corrupt` and
 *    nothing is referenced.
 */
import { importSources, type Store, validateRefName } from '@tensorfs/cas';
import type { ObjectId, Progress } from '@tensorfs/format';
import type { HfOptions } from './client.js';
import { type HfProvenance, huggingFaceSource } from './source.js';
import type { HfRepoSpec } from './url.js';

/** Options of {@link importHuggingFace}. */
export interface HfImportOptions extends HfOptions {
  /** Import only files whose repository path matches one of these globs (picomatch, `dot: true`). */
  include?: string | readonly string[];
  /** A ref to point at the snapshot. */
  name?: string;
  /** Compare-and-swap for `name` (`null`: must not exist). */
  expected?: ObjectId | null;
  /** Hashing threads (default one per core). */
  threads?: number;
  /** The import pipeline's progress ({@link importSources}): phase `import`, unit `bytes`. */
  onProgress?: (p: Progress) => void;
}

/** What {@link importHuggingFace} made. */
export interface HfImportResult {
  snapshot: ObjectId;
  source: HfProvenance;
  files: number;
  /** Bytes of the imported files. */
  bytes: number;
  /** Body bytes received over HTTP. */
  bytesFetched: number;
  bytesWritten: number;
  objectsWritten: number;
}

/**
 * Imports `hf://owner/repo[@revision]` (or a parsed spec, which may name a dataset; files
 * selected by `include`) into `store` as a snapshot whose objects are exactly those a local import of the same files makes, through the one import
 * pipeline ({@link importSources}). The revision is resolved to a commit first and every file read
 * at that commit; each file's bytes are checked against the Hub's SHA-256 (LFS) or git blob id
 * before the snapshot is written, and the ref (with `name`) is set last. Objects of a failed
 * import are left unreferenced (GC takes them).
 * @throws {TensorFSError} `invalid_argument` (URL, globs), `denied` (401/403: set `HF_TOKEN`),
 *   `not_found` (repository, revision or file), `corrupt` (bytes, sizes or commits that differ
 *   from what the Hub announced), `malformed` (API answers), `unavailable` (network, 5xx after
 *   retries), `conflict` (`expected`), `cancelled`.
 */
export async function importHuggingFace(
  store: Store,
  url: string | HfRepoSpec,
  options: HfImportOptions = {},
): Promise<HfImportResult> {
  const source = huggingFaceSource(url, options);
  if (options.name !== undefined) validateRefName(options.name);
  const r = await importSources(store, source, {
    ...(options.name !== undefined ? { name: options.name } : {}),
    ...(options.expected !== undefined ? { expected: options.expected } : {}),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  return {
    snapshot: r.snapshot,
    source: r.sources[0]!,
    files: r.files,
    bytes: r.bytes,
    bytesFetched: r.bytesFetched,
    bytesWritten: r.bytesWritten,
    objectsWritten: r.objectsWritten,
  };
}
