/**
 * What a pull selects of a snapshot: some components (paths or folders), or the tensors whose
 * names match globs (each tensor file trimmed with tensors' compose, read through a
 * {@link FetchingStore} so only headers are fetched).
 */
import { globMatcher, type Manifest, type ObjectId, TensorFSError } from '@tensorfs/format';
import type { Lease, Store } from '@tensorfs/format/store';
import { compose, openTensors } from '@tensorfs/tensors';
import { FetchingStore } from './fetching-store.js';
import type { Origin } from './origin.js';
import type { FetchOptions } from './transfer.js';

/**
 * A snapshot of `snapshot` with only the tensors matching `globs`: each tensor file (or sharded
 * model) is trimmed with tensors' `compose`, reading its header through a {@link FetchingStore};
 * tensor files with no match are left out. `not_found` when nothing matches. The ids the reads
 * fetched are added to `fetched` (a pull counts them as fetched, not as already present).
 */
export async function selectTensors(
  store: Store,
  origin: Origin,
  lease: Lease,
  snapshot: ObjectId,
  globs: readonly string[],
  options: FetchOptions,
  fetched?: Set<ObjectId>,
): Promise<ObjectId> {
  const fs = new RecordingStore(store, origin, { ...options, lease }, fetched ?? new Set());
  const match = globMatcher(globs);
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

/** A {@link FetchingStore} that notes the ids it was asked for and the local store lacked. */
class RecordingStore extends FetchingStore {
  constructor(
    local: Store,
    origin: Origin,
    options: ConstructorParameters<typeof FetchingStore>[2],
    private readonly noted: Set<ObjectId>,
  ) {
    super(local, origin, options);
  }

  override async ensure(ids: ReadonlyMap<ObjectId, number | undefined>): Promise<void> {
    for (const id of ids.keys()) if (!this.noted.has(id) && !(await this.local.has(id))) this.noted.add(id);
    return super.ensure(ids);
  }
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
