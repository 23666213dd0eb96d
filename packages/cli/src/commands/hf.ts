/**
 * `hf://owner/repo[@revision]` for `tfs import` and `tfs convert`: the Hub is `HF_ENDPOINT`
 * (default the public Hub), the token `HF_TOKEN` (never printed). The commit a revision named is
 * printed and recorded in `sources/<snapshot hex>.json` in the store folder: neither a snapshot
 * nor a checkpoint has room for it without changing its id, and a snapshot imported from the
 * Hub must be the very snapshot a local import of the same files makes.
 */
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { type LocalStore, siblingTemp } from '@tensorfs/cas';
import { type ObjectId, TensorFSError } from '@tensorfs/format';
import type { HfImportResult, HfProvenance } from '@tensorfs/remote';
import type { CommandContext } from '../context.js';
import { formatBytes } from '../progress.js';
import { loadRemote } from './remote.js';

/** True if `src` names a Hugging Face source. */
export function isHfSource(src: string): boolean {
  return src.startsWith('hf://');
}

/** `hf/<owner>/<repo>`: the default ref of an import from the Hub. */
export async function defaultHfRef(src: string): Promise<string> {
  const { parseHfUrl } = await loadRemote();
  return `hf/${parseHfUrl(src).repo}`;
}

/** Imports `src` from the Hub into `store` (progress on a terminal), then records where it came from. */
export async function importFromHub(
  ctx: CommandContext,
  store: LocalStore,
  src: string,
  options: { name?: string; expected?: ObjectId | null; include?: string[]; threads?: number },
): Promise<HfImportResult> {
  const env = ctx.io.env;
  const token = env.HF_TOKEN && env.HF_TOKEN.length > 0 ? env.HF_TOKEN : undefined;
  const endpoint = env.HF_ENDPOINT && env.HF_ENDPOINT.length > 0 ? env.HF_ENDPOINT : undefined;
  const offline = ctx.offline || /^(1|true|yes|on)$/i.test(env.HF_HUB_OFFLINE?.trim() ?? '');
  const { importHuggingFace } = await loadRemote();
  const bar = ctx.progress('download');
  try {
    const r = await importHuggingFace(store, src, {
      ...(endpoint !== undefined ? { endpoint } : {}),
      ...(token !== undefined ? { token } : {}),
      ...(options.name !== undefined ? { name: options.name } : {}),
      ...(options.expected !== undefined ? { expected: options.expected } : {}),
      ...(options.include !== undefined && options.include.length > 0 ? { include: options.include } : {}),
      ...(options.threads !== undefined ? { threads: options.threads } : {}),
      http: { offline },
      signal: ctx.signal,
      onProgress: bar.update,
    });
    await recordSource(store.root, r.snapshot, r.source);
    return r;
  } finally {
    bar.done();
  }
}

/** Any recorded source: the Hub's, or another source's (`kind` says which). */
export type RecordedSource =
  | HfProvenance
  | { readonly kind: string; readonly [key: string]: unknown }
  | { readonly kind: string };

/** What makes two records of one snapshot the same source (the Hub: repository and commit). */
function sourceKey(s: RecordedSource): string {
  if (s.kind === 'huggingface') {
    const h = s as HfProvenance;
    return JSON.stringify([h.kind, h.endpoint, h.repo, h.commit]);
  }
  const { fetchedAt: _time, ...rest } = s as unknown as Record<string, unknown>;
  return JSON.stringify(rest);
}

/**
 * Adds `source` to `sources/<hex>.json` (`{"snapshot", "sources": [...]}`; one entry per distinct
 * source: for the Hub, per repository and commit), replaced atomically.
 */
export async function recordSource(root: string, snapshot: ObjectId, source: RecordedSource): Promise<void> {
  const dir = path.join(root, 'sources');
  const file = path.join(dir, `${snapshot.slice(7)}.json`);
  try {
    await fsp.mkdir(dir, { recursive: true });
    let sources: RecordedSource[] = [];
    try {
      const v = JSON.parse(await fsp.readFile(file, 'utf8')) as { sources?: RecordedSource[] };
      if (Array.isArray(v.sources)) sources = v.sources;
    } catch {
      // absent or unreadable: start afresh (the record is informative, the snapshot is what counts)
    }
    const key = sourceKey(source);
    sources = [...sources.filter((s) => sourceKey(s) !== key), source];
    const tmp = siblingTemp(file);
    await fsp.writeFile(tmp, `${JSON.stringify({ snapshot, sources }, null, 2)}\n`);
    await fsp.rename(tmp, file);
  } catch (err) {
    throw new TensorFSError('io', 'cannot record where the snapshot came from (sources/ in the store folder)', {
      details: { rule: 'cli.sources_io', op: 'write' },
      cause: err,
    });
  }
}

/** The human line saying which commit was imported. */
export function sourceLine(src: string, r: HfImportResult): string {
  const s = r.source;
  return `${src.includes('@') ? src : `${src}@${s.revision}`} = commit ${s.commit} (${s.endpoint}); fetched ${formatBytes(r.bytesFetched)}`;
}
