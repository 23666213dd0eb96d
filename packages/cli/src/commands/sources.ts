/**
 * Sources beyond the Hub for `tfs import` and `tfs convert`: `https://…` (and `http://…`) URLs to a
 * file, `civitai://<model-version-id>` and Civitai model pages (`CIVITAI_TOKEN`, base URL
 * `TENSORFS_CIVITAI_ENDPOINT`), all through the one import pipeline of `@tensorfs/remote`; and
 * portable folders (`tfs export --portable`), imported as the checkpoint they hold. Partial
 * downloads are kept in the store's `tmp/sources/` so a later attempt resumes; where each import
 * came from is recorded in `sources/<hex>.json` as for `hf://`.
 */
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import type { LocalStore } from '@tensorfs/cas';
import { type ObjectId, TensorFSError } from '@tensorfs/format';
import type { CivitaiProvenance, HttpsProvenance, ImportSourcesResult } from '@tensorfs/remote';
import type { CommandContext } from '../context.js';
import { formatBytes } from '../progress.js';
import { recordSource } from './hf.js';
import { loadRemote } from './remote.js';

/** True if `src` is an `https://`/`http://` URL or a `civitai://` source (not `hf://`). */
export function isWebSource(src: string): boolean {
  return /^https?:\/\//i.test(src) || src.startsWith('civitai://');
}

/** What {@link importFromWeb} made. */
export type WebImportResult = ImportSourcesResult<HttpsProvenance | CivitaiProvenance> & {
  source: HttpsProvenance | CivitaiProvenance;
};

/** `civitai/<version id>` or `web/<file name>`: the default ref of an import from the web. */
export async function defaultWebRef(src: string): Promise<string> {
  const { isCivitaiSource, parseCivitaiUrl } = await loadRemote();
  if (isCivitaiSource(src)) {
    const spec = parseCivitaiUrl(src);
    return spec.versionId !== undefined ? `civitai/${spec.versionId}` : `civitai/model-${spec.modelId}`;
  }
  let base = 'download';
  try {
    base = path.posix.basename(new URL(src).pathname) || 'download';
  } catch {
    // the source refuses the URL with its own error
  }
  const safe = base.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[.-]+/, '');
  return `web/${(safe.replace(/\.(lock|tmp)$/, '_$1') || 'download').slice(0, 150)}`;
}

/** Imports `src` (https:// or civitai://) into `store` with progress, then records where it came from. */
export async function importFromWeb(
  ctx: CommandContext,
  store: LocalStore,
  src: string,
  options: { name?: string; expected?: ObjectId | null; include?: string[]; sha256?: string; threads?: number },
): Promise<WebImportResult> {
  const env = ctx.io.env;
  const remote = await loadRemote();
  const spoolDir = path.join(store.root, 'tmp', 'sources');
  const include = options.include !== undefined && options.include.length > 0 ? options.include : undefined;
  let source: import('@tensorfs/remote').Source<HttpsProvenance | CivitaiProvenance>;
  if (remote.isCivitaiSource(src)) {
    if (options.sha256 !== undefined) {
      throw new TensorFSError('invalid_argument', '--sha256 is for https:// files; Civitai announces each SHA-256', {
        details: { rule: 'cli.sha256_https_only' },
      });
    }
    const token = env.CIVITAI_TOKEN && env.CIVITAI_TOKEN.length > 0 ? env.CIVITAI_TOKEN : undefined;
    const endpoint =
      env.TENSORFS_CIVITAI_ENDPOINT && env.TENSORFS_CIVITAI_ENDPOINT.length > 0
        ? env.TENSORFS_CIVITAI_ENDPOINT
        : undefined;
    source = remote.civitaiSource(src, {
      ...(endpoint !== undefined ? { endpoint } : {}),
      ...(token !== undefined ? { token } : {}),
      ...(include !== undefined ? { include } : {}),
      spoolDir,
    });
  } else {
    if (include !== undefined) {
      throw new TensorFSError('invalid_argument', '--include selects files of an hf:// or civitai:// source', {
        details: { rule: 'cli.include_hf_only' },
      });
    }
    source = remote.httpsSource(src, { ...(options.sha256 !== undefined ? { sha256: options.sha256 } : {}), spoolDir });
  }
  const bar = ctx.progress('download');
  try {
    const r = await remote.importSources(store, source, {
      ...(options.name !== undefined ? { name: options.name } : {}),
      ...(options.expected !== undefined ? { expected: options.expected } : {}),
      ...(options.threads !== undefined ? { threads: options.threads } : {}),
      signal: ctx.signal,
      onProgress: bar.update,
    });
    const recorded = r.sources[0]!;
    await recordSource(store.root, r.snapshot, recorded);
    return { ...r, source: recorded };
  } finally {
    bar.done();
  }
}

/** The human line saying what was fetched. */
export function webSourceLine(src: string, r: WebImportResult): string {
  const s = r.source;
  if (s.kind === 'civitai') {
    const what = [s.modelName, s.versionName].filter((x) => x !== null).join(' ');
    return `${src} = Civitai model version ${s.versionId}${what ? ` (${what})` : ''}, ${s.files.length} files, SHA-256 checked; fetched ${formatBytes(r.bytesFetched)}`;
  }
  const validator =
    s.etag !== undefined ? `ETag ${s.etag}` : s.lastModified !== undefined ? s.lastModified : 'no validator';
  return `${s.url} (${validator}) sha256:${s.sha256}; fetched ${formatBytes(r.bytesFetched)}`;
}

/** A portable folder's header file, if `dir` is one (`chunks/` and a `.cozytensors` file). */
export async function portableFolder(dir: string): Promise<{ variant: string; refs: string[] } | null> {
  const st = await fsp.stat(dir).catch(() => null);
  if (!st?.isDirectory()) return null;
  const chunks = await fsp.stat(path.join(dir, 'chunks')).catch(() => null);
  if (!chunks?.isDirectory()) return null;
  const headers = (await fsp.readdir(dir))
    .filter((n) => n.endsWith('.cozytensors'))
    .map((n) => n.slice(0, -'.cozytensors'.length))
    .sort();
  if (headers.length === 0) return null;
  const variant = headers.includes('model') ? 'model' : headers.length === 1 ? headers[0]! : undefined;
  if (variant === undefined) {
    throw new TensorFSError('invalid_argument', `the portable folder holds several headers: ${headers.join(', ')}`, {
      details: { rule: 'cli.portable_variant', variants: headers },
    });
  }
  return { variant, refs: await refNames(path.join(dir, 'refs')) };
}

/** Every ref file under `refs/` (its name), sorted. */
async function refNames(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string, prefix: string) => {
    const ents = await fsp.readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of ents) {
      if (e.name.endsWith('.lock') || e.name.includes('.tmp')) continue;
      if (e.isDirectory()) await walk(path.join(d, e.name), `${prefix}${e.name}/`);
      else if (e.isFile()) out.push(`${prefix}${e.name}`);
    }
  };
  await walk(root, '');
  return out.sort();
}
