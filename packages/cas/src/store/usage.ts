/**
 * `tfs du`: a local store's logical vs stored bytes, overall, per ref and per repository, with
 * what only each ref or repository keeps.
 */
import { type ObjectId, isTensorFSError, parseRepoRefName } from '@tensorfs/format';
import { reach } from './graph.js';
import { leasedObjects } from './leases.js';
import type { StoreParts } from './parts.js';
import { type Head, type RefProblem, byName, readHead, refHeads, targetProblem } from './ref-read.js';
import { listRoots, rootIds } from './roots.js';
import { listObjects } from './walk.js';

/** Storage figures of {@link LocalStore.usage}. */
export interface Usage {
  /** Sum of the sizes of the files of every distinct snapshot named by a ref or root. */
  logicalBytes: number;
  /** Bytes of every object file in the store. */
  storedBytes: number;
  /** Object files in the store. */
  objects: number;
  /** logicalBytes / bytes of the objects those snapshots reach (1 when nothing is stored). */
  dedupRatio: number;
  /**
   * Bytes of the objects no ref, root or live lease reaches and the cache does not hold (what a
   * GC past the grace period would take): `storedBytes` minus the bytes of every kept object.
   */
  unreferencedBytes: number;
  /** Per ref: see {@link RefUsage}. */
  refs: RefUsage[];
  /**
   * Per repository (its branches and tags together, `parseRepoRefName`): see
   * {@link RepositoryUsage}. Refs outside the repository layout are in no repository.
   */
  repositories: RepositoryUsage[];
  /**
   * Refs left out of every figure: their file cannot be read, or what they name (or a snapshot a
   * checkpoint names) is missing or does not decode. See {@link RefProblem}.
   */
  problems: RefProblem[];
}

/** One ref's figures in {@link Usage}. */
export interface RefUsage {
  name: string;
  id: ObjectId;
  /** Its snapshot's file sizes (a checkpoint: its tensors, parts and assets). */
  logicalBytes: number;
  /** Bytes of the distinct stored objects it reaches. */
  storedBytes: number;
  /** Those objects. */
  objects: number;
  /**
   * Bytes of the objects only it reaches (no other ref, no root, no live lease): what removing
   * just it would free (`tfs rm`, once they are older than the grace period).
   */
  exclusiveBytes: number;
  /** `storedBytes - exclusiveBytes`: its bytes that something else also keeps. */
  sharedBytes: number;
}

/** One repository's figures in {@link Usage}: its branch and tag refs taken together. */
export interface RepositoryUsage {
  repo: string;
  /** Its refs (branches and tags), by name. */
  refs: string[];
  /** Sum of the logical bytes of the distinct heads its refs name. */
  logicalBytes: number;
  /** Bytes of the distinct stored objects its refs reach. */
  storedBytes: number;
  /** Those objects. */
  objects: number;
  /** Bytes only its refs reach (no other repository's ref, no root, no live lease): what `tfs rm <repo> --all --tags` frees. */
  exclusiveBytes: number;
  /** `storedBytes - exclusiveBytes`. */
  sharedBytes: number;
}

/** Logical vs stored bytes, overall and per ref (see {@link LocalStore.usage}). Abort `signal` to stop (`cancelled`). */
export async function measureUsage(parts: StoreParts, signal: AbortSignal | undefined): Promise<Usage> {
  const { db, layout, objects: store } = parts;
  let storedBytes = 0;
  let objects = 0;
  const sizes = new Map<ObjectId, number>();
  for await (const o of listObjects(layout, signal)) {
    storedBytes += o.size;
    objects++;
    sizes.set(o.id, o.size);
  }
  const refs: Usage['refs'] = [];
  const logical = new Map<ObjectId, number>();
  // Who keeps each reached object: the index of the only ref that reaches it, or SHARED (two
  // refs, a root, a live lease). One entry per object and one visit per (ref, object it
  // reaches): linear in what the refs reach, never in pairs of refs.
  const SHARED = -1;
  /** Held by a live lease alone (kept, but not reached by a ref or root). */
  const LEASED = -2;
  const holder = new Map<ObjectId, number>();
  const hold = (o: ObjectId, who: number) => {
    const prev = holder.get(o);
    holder.set(o, prev === undefined || prev === who ? who : SHARED);
  };
  for (const o of leasedObjects(db)) holder.set(o, LEASED);
  const problems: RefProblem[] = [];
  // The same bookkeeping per repository (its refs together).
  interface RepoAcc {
    index: number;
    repo: string;
    refs: string[];
    heads: Set<ObjectId>;
    objects: Set<ObjectId>;
  }
  const repos = new Map<string, RepoAcc>();
  const repoHolder = new Map<ObjectId, number>();
  const repoHold = (o: ObjectId, who: number) => {
    const prev = repoHolder.get(o);
    repoHolder.set(o, prev === undefined || prev === who ? who : SHARED);
  };
  for (const o of leasedObjects(db)) repoHolder.set(o, LEASED);
  // A ref whose id is also a root: its objects are held by the root too (no repository has
  // them alone); known before the walk so no head is read twice.
  const rooted = new Set(rootIds(db));
  // Each head object is read once: the check, the walk from it and its logical size share it.
  const measure = async (name: string, id: ObjectId, head: Head | undefined, isRef: boolean): Promise<void> => {
    const r = await reach(store, [id], signal, head && new Map([[id, head.bytes]]));
    // A checkpoint whose source snapshot is missing or does not decode: its figures would be wrong.
    const broken = r.missing[0] ?? r.corrupt[0];
    if (isRef && broken !== undefined) {
      const missing = r.missing.length > 0;
      const what = `an object this ref reaches ${missing ? 'is missing' : 'does not decode'} (${broken})`;
      problems.push(targetProblem(name, id, missing ? 'missing' : 'malformed', what));
      return;
    }
    const who = isRef ? refs.length : SHARED;
    const repoName = isRef ? (parseRepoRefName(name)?.repo ?? null) : null;
    let acc: RepoAcc | undefined;
    if (repoName !== null) {
      acc = repos.get(repoName);
      if (acc === undefined) {
        acc = { index: repos.size, repo: repoName, refs: [], heads: new Set(), objects: new Set() };
        repos.set(repoName, acc);
      }
      acc.refs.push(name);
      acc.heads.add(id);
    }
    let own = 0;
    for (const o of r.objects.keys()) {
      own += sizes.get(o) ?? 0;
      hold(o, who);
      if (acc !== undefined) {
        acc.objects.add(o);
        repoHold(o, rooted.has(id) ? SHARED : acc.index);
      } else repoHold(o, SHARED);
    }
    if (!logical.has(id)) {
      // A root that is not a snapshot or checkpoint counts its raw size.
      logical.set(id, head?.logical ?? (await store.rawSize(id)) ?? 0);
    }
    const lb = logical.get(id)!;
    if (isRef) {
      refs.push({
        name,
        id,
        logicalBytes: lb,
        storedBytes: own,
        objects: r.objects.size,
        exclusiveBytes: 0,
        sharedBytes: 0,
      });
    }
  };
  for await (const r of refHeads(parts, signal)) {
    if ('problem' in r) problems.push(r.problem);
    else await measure(r.ref.name, r.ref.id, r.head, true);
  }
  // A root a ref names reaches exactly what that ref does: not walked again (its head was read
  // once), its ref's objects just count as shared below.
  const rootedRefIds = new Set<ObjectId>();
  for (const root of listRoots(db)) {
    if (logical.has(root.id)) {
      rootedRefIds.add(root.id);
      continue;
    }
    let head: Head | undefined;
    try {
      head = await readHead(store, root.id);
    } catch (err) {
      if (isTensorFSError(err) && err.code === 'cancelled') throw err;
    }
    await measure(`root:${root.reason}`, root.id, head, false);
  }
  problems.sort(byName);
  // Cached objects no ref reaches are kept (GC leaves them to the cache's budget): not unreferenced.
  for (const o of db.prepare('SELECT id FROM cache_entries').pluck().all() as ObjectId[]) {
    if (!holder.has(o)) holder.set(o, LEASED);
  }
  const logicalBytes = [...logical.values()].reduce((a, b) => a + b, 0);
  let reachedBytes = 0;
  let keptBytes = 0;
  for (const [o, who] of holder) {
    const size = sizes.get(o) ?? 0;
    keptBytes += size;
    if (who !== LEASED) reachedBytes += size;
    if (who >= 0 && !rootedRefIds.has(refs[who]!.id)) refs[who]!.exclusiveBytes += size;
  }
  for (const r of refs) r.sharedBytes = r.storedBytes - r.exclusiveBytes;
  const repositories: RepositoryUsage[] = [...repos.values()]
    .sort((a, b) => (a.repo < b.repo ? -1 : a.repo > b.repo ? 1 : 0))
    .map((a) => {
      let storedBytes = 0;
      let exclusiveBytes = 0;
      for (const o of a.objects) {
        const size = sizes.get(o) ?? 0;
        storedBytes += size;
        if (repoHolder.get(o) === a.index) exclusiveBytes += size;
      }
      const logicalBytes = [...a.heads].reduce((n, h) => n + (logical.get(h) ?? 0), 0);
      return {
        repo: a.repo,
        refs: [...a.refs].sort(),
        logicalBytes,
        storedBytes,
        objects: a.objects.size,
        exclusiveBytes,
        sharedBytes: storedBytes - exclusiveBytes,
      };
    });
  const dedupRatio = reachedBytes > 0 ? logicalBytes / reachedBytes : 1;
  const unreferencedBytes = storedBytes - keptBytes;
  return { logicalBytes, storedBytes, objects, dedupRatio, unreferencedBytes, refs, repositories, problems };
}
