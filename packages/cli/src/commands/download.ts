/**
 * `tfs download <repo>[@<rev>] <dir>`: a revision's tree as a plain folder (the seed's
 * `materialize`; with `--file`, its `download_file`). Every file of the tree is written
 * byte-exact and atomically; each `.cozytensors` variant is its header file plus its objects as
 * `chunks/<sha256-hex>` (a portable export, so the folder opens, and re-uploads, with no
 * store). Every variant unless one is named. With `--from` the objects come from an origin
 * (only those the local store lacks, each verified) and are kept in the local store unnamed.
 */
import path from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import {
  type Manifest,
  type ObjectId,
  TensorFSError,
  decodeManifest,
  parseRepoSpec,
  resolveRevision,
  selectVariant,
  treeVariants,
} from '@tensorfs/format';
import type { Lease, Store } from '@tensorfs/format/store';
import { exportCheckpoint, openCheckpoint } from '@tensorfs/tensors';
import type { Argv } from 'yargs';
import { defineCommand } from '../command.js';
import type { GlobalArgs } from '../context.js';
import { formatBytes } from '../progress.js';
import { type TokenArgs, loadRemote, originOf, tokenOption } from './remote.js';
import { SPECS } from './specs.js';

interface DownloadArgs extends TokenArgs {
  repo: string;
  dir: string;
  variant?: string;
  file?: string;
  from?: string;
  concurrency: number;
}

/**
 * The part of tree `m` a download writes: one file (`file`), or every ordinary file with every
 * variant (or just `variant`). Returns the entries and the variants kept (name and path).
 */
export function downloadSelection(
  m: Manifest,
  options: { variant?: string; file?: string },
): { manifest: Manifest; variants: { name: string; path: string }[] } {
  const variants = treeVariants(m);
  if (options.file !== undefined) {
    const e = m.entries.find((x) => x.path === options.file);
    if (e === undefined) {
      throw new TensorFSError('not_found', 'no such file in the tree', {
        details: { rule: 'repo.no_such_file', path: options.file },
      });
    }
    return { manifest: { ...m, entries: [e] }, variants: [] };
  }
  if (options.variant === undefined) return { manifest: m, variants: [...variants] };
  const chosen = selectVariant(m, options.variant)!;
  const others = new Set(variants.filter((v) => v.path !== chosen.path).map((v) => v.path));
  return { manifest: { ...m, entries: m.entries.filter((e) => !others.has(e.path)) }, variants: [chosen] };
}

export const downloadCommand = defineCommand<DownloadArgs>({
  ...SPECS.download,
  builder: (y) =>
    tokenOption(
      y
        .positional('repo', {
          type: 'string',
          demandOption: true,
          describe: 'owner/name[@branch|tag|sha256:<id>] (bare: @main)',
        })
        .positional('dir', { type: 'string', demandOption: true, describe: 'destination folder (created if missing)' })
        .option('variant', {
          type: 'string',
          describe: 'only this variant (model.NAME.cozytensors); default: every one',
        })
        .option('file', { type: 'string', describe: 'only this file of the tree' })
        .option('from', {
          type: 'string',
          describe: 'origin to download from (remote name, URL or folder); default: the local store',
        })
        .option('concurrency', { type: 'number', default: 4, describe: 'objects fetched at once' }),
    ) as unknown as Argv<DownloadArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    if (args.variant !== undefined && args.file !== undefined) {
      throw new TensorFSError('invalid_argument', 'choose one of --variant and --file', {
        details: { rule: 'cli.variant_or_file' },
      });
    }
    const spec = parseRepoSpec(args.repo);
    const origin = args.from !== undefined ? await originOf(ctx, args.from, args) : undefined;
    const store = await LocalStore.open(origin !== undefined ? ctx.storeDir : ctx.existingStoreDir());
    const source: Store = origin ?? store;
    const bar = ctx.progress('download');
    let lease: Lease | undefined;
    try {
      const res = await resolveRevision(source, spec.repo, spec.revision ?? undefined);
      if (res.targetKind !== 'tree') {
        throw new TensorFSError('invalid_argument', 'the revision names a checkpoint, not a tree; use tfs export', {
          details: { rule: 'repo.not_a_tree', target: res.target },
        });
      }
      const m = decodeManifest(await source.readObject(res.target, { verify: true }));
      const picked = downloadSelection(m, args);
      lease = await store.lease({ purpose: `download ${args.repo}` });
      const tree = await store.putManifest(picked.manifest, { lease });
      if (origin !== undefined) {
        const { fetchSelection } = await loadRemote();
        await fetchSelection(
          store,
          origin,
          tree,
          {
            concurrency: args.concurrency,
            partsDir: path.join(store.root, 'tmp'),
            signal: ctx.signal,
            onProgress: bar.update,
          },
          `download ${args.repo}`,
          async (_id, l) => {
            lease?.add([tree]);
            void l;
          },
        );
      }
      const out = await store.exportSnapshot(tree, args.dir, { signal: ctx.signal });
      let chunks = 0;
      for (const v of picked.variants) {
        const entry = picked.manifest.entries.find((e) => e.path === v.path);
        if (entry?.kind !== 'file' || entry.records.length !== 1) continue;
        const header: ObjectId = entry.records[0]!.digest;
        const cp = await openCheckpoint(store, header);
        const stem = v.path.slice(0, -'.cozytensors'.length);
        const r = await exportCheckpoint(store, cp, path.join(args.dir, path.dirname(v.path)), {
          format: 'portable',
          variant: path.basename(stem),
          signal: ctx.signal,
        });
        chunks += (r as { objects?: number }).objects ?? 0;
      }
      bar.done();
      const result = {
        repo: spec.repo,
        revision: res.revision,
        tree: res.target,
        files: out.files,
        bytes: out.bytes,
        variants: picked.variants.map((v) => v.name),
        ...(picked.variants.length ? { chunks } : {}),
      };
      ctx.result(result, () => `${out.files} files, ${formatBytes(out.bytes)} -> ${args.dir}`);
    } finally {
      bar.done();
      await lease?.release().catch(() => {});
      await store.close();
      await origin?.close();
    }
  },
});
