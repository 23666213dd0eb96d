/**
 * `tfs cache ls`: what a local store's cache holds (cached refs with the bytes evicting each would
 * free, cached objects no ref reaches), and recording objects fetched on read as cached.
 */
import { type ObjectId, parseObjectId } from '@tensorfs/format';
import { addCacheEntries, cacheEntryRows, cachedRefRows } from './cache.js';
import { reach } from './graph.js';
import { leasedObjects } from './leases.js';
import type { StoreParts } from './parts.js';
import { scanRefFiles } from './ref-read.js';
import { rootIds } from './roots.js';
import { listObjects } from './walk.js';

/** One cached ref in {@link CacheListing}. */
export interface CachedRefInfo {
  name: string;
  id: ObjectId;
  /** Bytes of the distinct stored objects it reaches. */
  storedBytes: number;
  /** Bytes only it reaches (no saved ref, root, lease or other cached ref): what evicting it frees. */
  exclusiveBytes: number;
  /** Objects it reaches. */
  objects: number;
  /** Last use (ms since the epoch; a read, a pull, a serve). */
  lastUseMs: number;
  addedMs: number;
}

/** One cached object (fetched on read) that no ref reaches, in {@link CacheListing}. */
export interface CachedObjectInfo {
  id: ObjectId;
  size: number;
  /** Where it was fetched from (an origin's display name). */
  origin: string;
  lastUseMs: number;
}

/** What {@link LocalStore.cacheList} found. */
export interface CacheListing {
  /** Cached refs, least recently used first. */
  refs: CachedRefInfo[];
  /** Cached objects no ref reaches, least recently used first. */
  objects: CachedObjectInfo[];
  /** Bytes evicting every cached unit would free. */
  evictableBytes: number;
  /** Bytes of every object file (as `tfs du`). */
  storedBytes: number;
}

/** Records the stored ones of `ids` as cached objects fetched from `origin` (absent ones are skipped). */
export async function addCachedObjects(parts: StoreParts, ids: readonly ObjectId[], origin: string): Promise<void> {
  const items: { id: ObjectId; size: number }[] = [];
  for (const id of ids) {
    parseObjectId(id);
    const size = await parts.objects.rawSize(id);
    if (size !== null) items.push({ id, size });
  }
  addCacheEntries(parts.db, items, origin);
}

/** Cached refs (with stored and exclusive bytes) and cached objects no ref reaches, least recently used first. */
export async function listCache(parts: StoreParts, signal: AbortSignal | undefined): Promise<CacheListing> {
  const { db, layout, objects: store } = parts;
  const sizes = new Map<ObjectId, number>();
  let storedBytes = 0;
  for await (const o of listObjects(layout, signal)) {
    sizes.set(o.id, o.size);
    storedBytes += o.size;
  }
  const rows = cachedRefRows(db, layout);
  const cachedIds = new Map(rows.map((r) => [r.name, r.id]));
  const keepTops = new Set<ObjectId>(rootIds(db));
  const leased = leasedObjects(db);
  for (const id of leased) keepTops.add(id);
  for (const r of (await scanRefFiles(layout)).refs) if (cachedIds.get(r.name) !== r.id) keepTops.add(r.id);
  const kept = new Set((await reach(store, keepTops, signal)).objects.keys());
  for (const id of leased) kept.add(id);
  // The only cached ref reaching each object beyond the kept set, or -1 once two do.
  const holder = new Map<ObjectId, number>();
  const refs: CachedRefInfo[] = [];
  const reached = new Set<ObjectId>();
  for (const row of rows) {
    const r = await reach(store, [row.id], signal);
    let stored = 0;
    for (const o of r.objects.keys()) {
      stored += sizes.get(o) ?? 0;
      reached.add(o);
      if (kept.has(o)) continue;
      const prev = holder.get(o);
      holder.set(o, prev === undefined || prev === refs.length ? refs.length : -1);
    }
    refs.push({
      name: row.name,
      id: row.id,
      storedBytes: stored,
      exclusiveBytes: 0,
      objects: r.objects.size,
      lastUseMs: row.lastUseMs,
      addedMs: row.addedMs,
    });
  }
  let evictableBytes = 0;
  for (const [o, who] of holder) {
    const size = sizes.get(o) ?? 0;
    evictableBytes += size;
    if (who >= 0) refs[who]!.exclusiveBytes += size;
  }
  const objects: CachedObjectInfo[] = [];
  for (const e of cacheEntryRows(db)) {
    const size = sizes.get(e.id);
    if (size === undefined || reached.has(e.id) || kept.has(e.id)) continue;
    objects.push({ id: e.id, size, origin: e.origin, lastUseMs: e.lastUseMs });
    evictableBytes += size;
  }
  refs.sort((a, b) => a.lastUseMs - b.lastUseMs || (a.name < b.name ? -1 : 1));
  return { refs, objects, evictableBytes, storedBytes };
}
