/**
 * What a pull selects of a snapshot: some components (paths or folders), or the tensors whose
 * names match globs (each tensor file trimmed with tensors' compose, read through a
 * {@link FetchingStore} so only headers are fetched).
 */
import { type Manifest, type ObjectId, TensorFSError } from '@tensorfs/format';
import type { Lease, Store } from '@tensorfs/format/store';
import { compose, openTensors } from '@tensorfs/tensors';
import picomatch from 'picomatch';
import { FetchingStore } from './fetching-store.js';
import type { Origin } from './origin.js';
import type { FetchOptions } from './transfer.js';

/**
 * A snapshot of `snapshot` with only the tensors matching `globs`: each tensor file (or sharded
 * model) is trimmed with tensors' `compose`, reading its header through a {@link FetchingStore};
 * tensor files with no match are left out. `not_found` when nothing matches.
 */
export async function selectTensors(
  store: Store,
  origin: Origin,
  lease: Lease,
  snapshot: ObjectId,
  globs: readonly string[],
  options: FetchOptions,
): Promise<ObjectId> {
  const fs = new FetchingStore(store, origin, { ...options, lease });
  const match = picomatch(globs as string[], { dot: true });
  const set = await openTensors(fs, snapshot, { signal: options.signal });
  const byTarget = new Map<string, { names: string[]; paths: string[] }>();
  for (const f of set.files) {
    const target = f.index ?? f.path;
    const t = byTarget.get(target) ?? { names: [], paths: target === f.path ? [] : [target] };
    t.names.push(...f.tensors);
    t.paths.push(f.path);
    byTarget.set(target, t);
  }
  let cur = snapshot;
  let matched = 0;
  const leaveOut = new Set<string>();
  for (const [target, t] of byTarget) {
    const keep = t.names.filter((n) => match(n)).length;
    matched += keep;
    if (keep === 0) for (const p of t.paths) leaveOut.add(p);
    else if (keep < t.names.length) {
      cur = (await compose(fs, cur, target, { drop: (n) => !match(n) }, { lease, signal: options.signal })).snapshot;
    }
  }
  if (matched === 0) {
    throw new TensorFSError('not_found', 'no tensor matches', {
      details: { rule: 'pull.no_tensor', globs: globs.slice(0, 10) },
    });
  }
  if (leaveOut.size > 0) {
    const m = await store.getManifest(cur);
    cur = await store.putManifest({ ...m, entries: m.entries.filter((e) => !leaveOut.has(e.path)) }, { lease });
  }
  return cur;
}

/** The entries of `m` at or under any of `components` (`not_found` for one that matches nothing). */
export function selectComponents(m: Manifest, components: readonly string[]): Manifest {
  const wanted = components.map((c) => c.replace(/^\/+|\/+$/g, ''));
  for (const c of wanted) {
    if (!m.entries.some((e) => e.path === c || e.path.startsWith(`${c}/`))) {
      throw new TensorFSError('not_found', 'no such component in the snapshot', {
        details: { rule: 'pull.no_component', component: c },
      });
    }
  }
  return { ...m, entries: m.entries.filter((e) => wanted.some((c) => e.path === c || e.path.startsWith(`${c}/`))) };
}
