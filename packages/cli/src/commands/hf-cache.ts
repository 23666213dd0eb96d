/**
 * The Hugging Face cache in the CLI: `tfs import <cache>` (recognised by its layout) and
 * `tfs export <repo>[@<rev>] <dir> --hf-cache`. The layout logic lives in `@tensorfs/cas`.
 */
import { exportHfCache, importHfCache, type LocalStore } from '@tensorfs/cas';
import { openCheckpoint, safetensorsExportTree } from '@tensorfs/tensors';
import { parseRepoSpec, TensorFSError } from '@tensorfs/format';
import type { CommandContext } from '../context.js';
import { formatBytes } from '../progress.js';

/** `tfs import <cache>`: every repository and commit it holds; prints the dedup against the cache's own bytes. */
export async function runHfCacheImport(
  ctx: CommandContext,
  store: LocalStore,
  path: string,
  options: { name?: string; expected?: string; threads?: number },
): Promise<void> {
  if (options.name !== undefined || options.expected !== undefined) {
    throw new TensorFSError(
      'invalid_argument',
      'a Hugging Face cache names its own repositories (models--owner--name): drop --name and --expected',
      { details: { rule: 'cli.hf_cache_name' } },
    );
  }
  const bar = ctx.progress('import');
  const r = await importHfCache(store, path, {
    signal: ctx.signal,
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    onProgress: bar.update,
  }).finally(() => bar.done());
  const ratio = r.bytesWritten > 0 ? r.cacheBytes / r.bytesWritten : null;
  ctx.result({ ...r, dedupRatio: ratio }, () => {
    const lines: string[] = [];
    for (const repo of r.repos) {
      for (const c of repo.commits) {
        const names = [
          ...repo.branches.filter((b) => b.commit === c.commit).map((b) => b.name),
          ...repo.tags.filter((t) => t.commit === c.commit).map((t) => `tag ${t.name}`),
        ];
        lines.push(
          `${repo.repo}${repo.type === 'dataset' ? ' (dataset)' : ''} ${c.commit} -> ${c.snapshot} [${names.join(', ')}]: ${c.files} files, ${formatBytes(c.bytes)}`,
        );
        if (c.missing.length > 0) {
          lines.push(
            `  partial snapshot: imported what is there; ${c.missing.length} file(s) missing: ${c.missing.slice(0, 5).join(', ')}${c.missing.length > 5 ? ', …' : ''}`,
          );
        }
      }
      for (const s of repo.skippedRefs) lines.push(`  refs/${s.name} skipped: ${s.reason}`);
    }
    for (const s of r.skipped) lines.push(`not imported: ${s}`);
    lines.push(
      `Hugging Face cache: ${formatBytes(r.cacheBytes)} of blobs on disk; the store added ${formatBytes(r.bytesWritten)} (${r.objectsWritten} new objects)${ratio !== null ? `, ${ratio.toFixed(2)}x smaller` : ''}`,
    );
    return lines;
  });
}

/** `tfs export <repo>[@<rev>] <dir> --hf-cache`. */
export async function runHfCacheExport(
  ctx: CommandContext,
  store: LocalStore,
  spec: string,
  dir: string,
  options: { verify: boolean },
): Promise<void> {
  const { repo, revision } = parseRepoSpec(spec);
  const bar = ctx.progress('export');
  const r = await exportHfCache(store, repo, revision, dir, {
    verify: options.verify,
    // A checkpoint revision: the files its `--safetensors` export writes (what the hub serves).
    checkpointTree: async (s, id) => safetensorsExportTree(s, await openCheckpoint(s, id)),
    signal: ctx.signal,
    onProgress: bar.update,
  }).finally(() => bar.done());
  ctx.result(r, () => [
    `${r.repo}${r.ref !== null ? `@${r.ref}` : ''} -> ${dir}/${r.folder}/snapshots/${r.commit}`,
    `${r.files} files, ${formatBytes(r.bytes)}; ${r.blobsWritten} blobs written, ${r.blobsKept} already there (checked)`,
  ]);
}
