/**
 * The cache's budget, `TENSORFS_CACHE_MAX`, applied after every command that adds cached bytes
 * (`tfs pull --cache`, `tfs cat --from`). Apart from the cache commands so the commands that move
 * bytes load it without them.
 */
import { type LocalStore, type PruneResult, parseSize } from '@tensorfs/cas';
import type { CommandContext } from '../context.js';
import { formatBytes } from '../progress.js';

/** The budget of `TENSORFS_CACHE_MAX` (`50G`, `800M`…), or null when unset. */
export function cacheBudget(ctx: CommandContext): number | null {
  const v = ctx.io.env.TENSORFS_CACHE_MAX;
  if (v === undefined || v.trim() === '') return null;
  return parseSize(v, 'TENSORFS_CACHE_MAX');
}

/**
 * After a command added cached bytes: evicts least recently used cached refs and objects until
 * the store is within `TENSORFS_CACHE_MAX` (nothing when it is unset). Warns when what is saved,
 * leased or being read alone exceeds it.
 */
export async function applyCacheBudget(ctx: CommandContext, store: LocalStore): Promise<PruneResult | null> {
  const maxBytes = cacheBudget(ctx);
  if (maxBytes === null) return null;
  const r = await store.prune({ maxBytes, signal: ctx.signal });
  if (!r.withinBudget) {
    ctx.warn(
      `the store holds ${formatBytes(r.storedAfter)}, over TENSORFS_CACHE_MAX (${formatBytes(maxBytes)}): the rest is saved, leased or in use`,
    );
  }
  return r;
}
