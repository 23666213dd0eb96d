/**
 * The store's cache (docs/store.md "Cache"): `tfs cache ls`, `tfs cache prune`, `tfs pin`,
 * `tfs unpin`, and the budget `TENSORFS_CACHE_MAX` applied after every command that adds cached
 * bytes (`tfs pull --cache`, `tfs cat --from`).
 */
import { parseDuration, parseSize } from '@tensorfs/cas';
import { TensorFSError } from '@tensorfs/format';
import type { Argv } from 'yargs';
import { defineCommand } from '../command.js';
import type { GlobalArgs } from '../context.js';
import { formatBytes } from '../progress.js';
import { cacheBudget } from './cache-budget.js';
import { SPECS } from './specs.js';
import { withStore } from './store.js';

const when = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');

interface CacheArgs {
  action: 'ls' | 'prune';
  maxSize?: string;
  olderThan?: string;
  dryRun: boolean;
}

export const cacheCommand = defineCommand<CacheArgs>({
  ...SPECS.cache,
  builder: (y) =>
    y
      .positional('action', {
        choices: ['ls', 'prune'] as const,
        demandOption: true,
        describe: 'ls: cached refs and objects; prune: evict least recently used first',
      })
      .option('max-size', {
        type: 'string',
        describe: 'prune: evict until the store holds at most this (50G, 800M, 4096); default $TENSORFS_CACHE_MAX',
      })
      .option('older-than', {
        type: 'string',
        describe: 'prune: evict what was not used for this long (30m, 12h, 7d, 2w)',
      })
      .option('dry-run', {
        type: 'boolean',
        default: false,
        describe: 'prune: report what would go, remove nothing',
      }) as unknown as Argv<CacheArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    if (args.action === 'ls') {
      if (args.maxSize !== undefined || args.olderThan !== undefined || args.dryRun) {
        throw new TensorFSError('invalid_argument', '--max-size, --older-than and --dry-run are for cache prune', {
          details: { rule: 'cli.cache_prune_only' },
        });
      }
      const l = await withStore(ctx, true, (s) => s.cacheList({ signal: ctx.signal }));
      ctx.result(l, () => [
        `${l.refs.length} cached refs, ${l.objects.length} cached objects; ${formatBytes(l.evictableBytes)} evictable of ${formatBytes(l.storedBytes)} stored; stored, exclusive, last use`,
        ...l.refs.map((r) => [
          formatBytes(r.storedBytes).padStart(10),
          formatBytes(r.exclusiveBytes).padStart(10),
          when(r.lastUseMs),
          r.name,
        ]),
        ...l.objects.map((o) => [
          formatBytes(o.size).padStart(10),
          formatBytes(o.size).padStart(10),
          when(o.lastUseMs),
          `${o.id} (from ${o.origin})`,
        ]),
      ]);
      return;
    }
    const maxBytes = args.maxSize !== undefined ? parseSize(args.maxSize, '--max-size') : cacheBudget(ctx);
    const olderThanMs = args.olderThan !== undefined ? parseDuration(args.olderThan, '--older-than') : undefined;
    if (maxBytes === null && olderThanMs === undefined) {
      throw new TensorFSError(
        'invalid_argument',
        'cache prune needs --max-size, --older-than or TENSORFS_CACHE_MAX (--max-size 0 evicts every cached ref)',
        { details: { rule: 'cache.no_limit' } },
      );
    }
    const r = await withStore(ctx, args.dryRun, (s) =>
      s.prune({
        ...(maxBytes !== null ? { maxBytes } : {}),
        ...(olderThanMs !== undefined ? { olderThanMs } : {}),
        dryRun: args.dryRun,
        signal: ctx.signal,
      }),
    );
    ctx.result(r, () => [
      `${r.dryRun ? 'would evict' : 'evicted'} ${r.evicted.length} (${formatBytes(r.dryRun ? r.storedBefore - r.storedAfter : r.bytes)}); stored ${formatBytes(r.storedBefore)} -> ${formatBytes(r.storedAfter)}${r.maxBytes !== null ? ` (budget ${formatBytes(r.maxBytes)}${r.withinBudget ? '' : ', still over: the rest is saved, leased or in use'})` : ''}`,
      ...r.evicted.map((e) => [formatBytes(e.bytes).padStart(10), when(e.lastUseMs), e.name]),
    ]);
  },
});

/** `tfs pin` / `tfs unpin`. */
function pinning(cached: boolean) {
  return defineCommand<{ ref: string }>({
    ...(cached ? SPECS.unpin : SPECS.pin),
    builder: (y) =>
      y.positional('ref', { type: 'string', demandOption: true, describe: 'ref name, e.g. hf/owner/model' }) as Argv<
        { ref: string } & GlobalArgs
      >,
    handler: async (args, ctx) => {
      const was = await withStore(ctx, false, (s) => (cached ? s.unpin(args.ref) : s.pin(args.ref)));
      const changed = cached ? !was : was;
      ctx.result({ ref: args.ref, cached, changed }, () =>
        changed
          ? `${args.ref} is now ${cached ? 'cached (evictable)' : 'saved'}`
          : `${args.ref} was already ${cached ? 'cached' : 'saved'}`,
      );
    },
  });
}

export const pinCommand = pinning(false);
export const unpinCommand = pinning(true);
