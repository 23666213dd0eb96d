import { checkObject, checkOptions, checkStore, checkString } from './args.js';
import type { Lease, Store } from '@tensorfs/format/store';
import {
  type ManifestFileEntry,
  type ObjectId,
  sortManifestEntries,
  TensorFSError,
  writeShardIndex,
} from '@tensorfs/format';
import { type CommitResult, commit } from './commit.js';
import { INDEX_SUFFIX, openTensors, type TensorSet } from './open.js';
import { dirname, joinPath, SnapshotTree } from './snapshot.js';
import type { TensorView } from './view.js';
import { TensorWriter } from './writer.js';

/** Options of {@link rekey} and {@link trim}. */
export interface ComposeOptions {
  /** A ref to move to the new snapshot, by compare-and-swap. */
  ref?: string;
  /**
   * The id the ref must hold (`null`: must not exist).
   * @default the opened snapshot's id when `ref` is the ref it was opened from, else the ref's value when the commit starts
   */
  expected?: ObjectId | null;
  /**
   * The lease holding the new header object and manifest. Without one, the composition's own lease
   * is released once `ref` points at the result, and kept (until it expires) when there is no `ref`.
   */
  lease?: Lease;
  /** Cancels the composition before its manifest is written (`cancelled`). */
  signal?: AbortSignal;
}

/** What a composition made. */
export interface ComposeResult extends CommitResult {
  /**
   * The entries written, in path order: each changed file (its first record is its new header
   * object) and, for a sharded model, the rewritten shard index. Unchanged files are not rewritten.
   */
  readonly entries: readonly ManifestFileEntry[];
  /** Shards left without tensors, removed from the snapshot (and from the index). */
  readonly removed: readonly string[];
}

/** A selection of tensors: exact names (each must exist), a pattern, or a predicate. */
export type TensorSelection = readonly string[] | RegExp | ((name: string) => boolean);

/** What a composition changes in one file: tensors to drop, then tensors to rename. */
export interface ComposeChanges {
  /** The tensors to drop: exact names (each must exist), a pattern, or a predicate. */
  drop?: TensorSelection;
  /** Old name to new name (each old name must exist); names not in the map keep theirs. */
  rename?: ReadonlyMap<string, string> | Readonly<Record<string, string>>;
}

/**
 * Drops and renames tensors of one `.safetensors` or `.gguf` file of a committed snapshot, or of a
 * whole sharded model (`file` is its `*.safetensors.index.json`). Each file keeps its layout and
 * metadata: the result costs one new header object per changed file (plus the rewritten shard index
 * of a sharded model, when a shard or the index is composed) and one manifest; every kept tensor
 * keeps its objects. A shard left without tensors is removed. Every check runs before anything is
 * written.
 *
 * @param snapshot - a ref name or snapshot id.
 * @param file - a `.safetensors` or `.gguf` file, a shard of a sharded model, or its index.
 * @throws {TensorFSError} `not_found` (snapshot, file, or a listed name not in the target),
 *   `invalid_argument` (two tensors of the file or model would share a name, a name the format
 *   refuses, a sharded model left without tensors), `conflict` (the ref moved).
 */
export async function compose(
  store: Store,
  snapshot: string,
  file: string,
  changes: ComposeChanges,
  options: ComposeOptions = {},
): Promise<ComposeResult> {
  checkStore(store);
  checkString(snapshot, 'snapshot');
  checkString(file, 'file');
  checkObject(changes, 'changes');
  checkOptions(options);
  return composeWith(store, snapshot, file, options, (views) => {
    const present = new Set(views.map((v) => v.name));
    const drop = selector(changes.drop, present, file);
    const renames = renameMap(changes.rename);
    for (const from of renames.keys()) {
      if (!present.has(from)) {
        throw new TensorFSError('not_found', 'a tensor to rename is not in the file', {
          details: { rule: 'tensors.compose_missing', tensor: from, path: file },
        });
      }
    }
    const from = new Map<string, string>();
    return views
      .filter((view) => !drop(view.name))
      .map((view) => {
        const name = renames.get(view.name) ?? view.name;
        const earlier = from.get(name);
        if (earlier !== undefined) {
          throw new TensorFSError('invalid_argument', 'two tensors would have the same name', {
            details: { rule: 'tensors.compose_duplicate', tensor: name, from: [earlier, view.name], path: file },
          });
        }
        from.set(name, view.name);
        return { view, name };
      });
  });
}

/**
 * Renames tensors of one file of a committed snapshot ({@link compose} with `rename`): one new
 * header object and one manifest; every tensor object is shared with the source.
 */
export function rekey(
  store: Store,
  snapshot: string,
  file: string,
  map: ReadonlyMap<string, string> | Readonly<Record<string, string>>,
  options: ComposeOptions = {},
): Promise<ComposeResult> {
  checkStore(store);
  checkString(snapshot, 'snapshot');
  checkString(file, 'file');
  checkObject(map, 'map');
  checkOptions(options);
  return compose(store, snapshot, file, { rename: map }, options);
}

/**
 * Drops tensors from one file of a committed snapshot ({@link compose} with `drop`): one new
 * header object and one manifest; every kept tensor keeps its objects.
 */
export function trim(
  store: Store,
  snapshot: string,
  file: string,
  select: TensorSelection,
  options: ComposeOptions = {},
): Promise<ComposeResult> {
  checkStore(store);
  checkString(snapshot, 'snapshot');
  checkString(file, 'file');
  if (typeof select !== 'function') checkObject(select, 'select', 'a TensorSelection');
  checkOptions(options);
  return compose(store, snapshot, file, { drop: select }, options);
}

/** A compose's renames as a map, whether given as a `Map` or as a record. */
export function renameMap(rename: ComposeChanges['rename']): ReadonlyMap<string, string> {
  if (rename === undefined) return new Map();
  return rename instanceof Map ? rename : new Map(Object.entries(rename));
}

/** A predicate for a selection; listed names must all be present. @internal */
export function selector(
  select: TensorSelection | undefined,
  present: ReadonlySet<string>,
  file: string,
): (name: string) => boolean {
  if (select === undefined) return () => false;
  if (select instanceof RegExp) {
    return (name) => {
      select.lastIndex = 0;
      return select.test(name);
    };
  }
  if (typeof select === 'function') return select;
  const names = new Set<string>(select);
  for (const name of names) {
    if (!present.has(name)) {
      throw new TensorFSError('not_found', 'a tensor to drop is not in the file', {
        details: { rule: 'tensors.compose_missing', tensor: name, path: file },
      });
    }
  }
  return (name) => names.has(name);
}

/** One tensor of a composed file: a source view and its new name. */
interface Placement {
  readonly view: TensorView;
  readonly name: string;
}

/**
 * Opens the target (a file, a shard of an index, or an index and all its shards), plans the new
 * tensor lists (validating everything before a byte is written), writes one header per changed
 * file (and the shard index when there is one), and commits.
 */
async function composeWith(
  store: Store,
  snapshot: string,
  file: string,
  options: ComposeOptions,
  plan: (views: readonly TensorView[]) => Placement[],
): Promise<ComposeResult> {
  const signal = options.signal ? { signal: options.signal } : {};
  const tree = await SnapshotTree.load(store, snapshot);
  const isIndex = file.endsWith(INDEX_SUFFIX);
  const path = isIndex ? file : tree.file(file).path;
  const index = isIndex ? file : await indexNaming(store, tree, path, options.signal);
  const set = await openTensors(store, tree.id, { file: index ?? path, ...signal });
  const targets = isIndex ? set.files.map((f) => f.path) : [path];
  const views = [...set];
  const placements = plan(views.filter((v) => targets.includes(v.file)));
  if (index !== null) checkAcrossShards(views, targets, placements, index);

  const lease = options.lease ?? (await store.lease({ purpose: `compose ${file}`, keepAlive: false }));
  // Without a ref, only the lease keeps the new snapshot: leave it to expire rather than release it.
  let keepLease = options.lease !== undefined;
  try {
    const put: ManifestFileEntry[] = [];
    const remove: string[] = [];
    for (const target of targets) {
      const mine = placements.filter((p) => p.view.file === target);
      const before = views.filter((v) => v.file === target);
      if (mine.length === before.length && mine.every((p, i) => p.name === before[i]!.name)) continue;
      if (mine.length === 0 && index !== null) remove.push(target);
      else put.push(await rewriteFile(store, set, target, mine, lease, options.signal));
    }
    if (index !== null && (put.length > 0 || remove.length > 0)) {
      put.push(await rewriteIndex(store, set, tree.file(index), views, targets, placements, lease));
    }
    const result = await commit(store, {
      base: tree.id,
      put,
      remove,
      lease,
      ...(options.ref !== undefined ? { ref: options.ref } : {}),
      ...(options.expected !== undefined
        ? { expected: options.expected }
        : options.ref !== undefined && options.ref === snapshot
          ? { expected: tree.id }
          : {}),
      ...signal,
    });
    keepLease ||= options.ref === undefined;
    return { ...result, entries: sortManifestEntries(put), removed: remove };
  } finally {
    if (!keepLease) await lease.release();
  }
}

/** The shard index beside `path` that names it as a shard, if any. */
async function indexNaming(
  store: Store,
  tree: SnapshotTree,
  path: string,
  signal?: AbortSignal,
): Promise<string | null> {
  for (const entry of tree.files()) {
    if (!entry.path.endsWith(INDEX_SUFFIX) || dirname(entry.path) !== dirname(path)) continue;
    const set = await openTensors(store, tree.id, { file: entry.path, ...(signal ? { signal } : {}) });
    if (set.files.some((f) => f.path === path)) return entry.path;
  }
  return null;
}

/**
 * A new name must not be taken by a tensor of another shard of the same model, and the model must
 * keep at least one tensor (its index needs one).
 */
function checkAcrossShards(
  views: readonly TensorView[],
  targets: readonly string[],
  placements: readonly Placement[],
  index: string,
): void {
  const others = new Map(views.filter((v) => !targets.includes(v.file)).map((v) => [v.name, v.file]));
  if (others.size === 0 && placements.length === 0) {
    throw new TensorFSError('invalid_argument', 'a sharded model cannot lose all its tensors', {
      details: { rule: 'tensors.compose_empty', path: index },
    });
  }
  for (const p of placements) {
    const other = others.get(p.name);
    if (other !== undefined) {
      throw new TensorFSError('invalid_argument', 'another shard of the model already has a tensor of this name', {
        details: { rule: 'tensors.compose_duplicate', tensor: p.name, from: p.view.name, path: other, index },
      });
    }
  }
}

/** Writes one file's new header around its kept tensors' objects. */
async function rewriteFile(
  store: Store,
  set: TensorSet,
  path: string,
  placements: readonly Placement[],
  lease: Lease,
  signal: AbortSignal | undefined,
): Promise<ManifestFileEntry> {
  const writer = new TensorWriter(store, path, {
    lease,
    mode: set.entry(path).mode as 0o644 | 0o755,
    ...(signal ? { signal } : {}),
    template: set.template(path),
  });
  for (const { view, name } of placements) await writer.inherit(view, { name });
  return writer.finish();
}

/**
 * The shard index with the new names, without dropped tensors, `total_size` recomputed and
 * `total_parameters` recomputed (or dropped where the old value was not the tensors' element count).
 */
async function rewriteIndex(
  store: Store,
  set: TensorSet,
  entry: ManifestFileEntry,
  views: readonly TensorView[],
  targets: readonly string[],
  placements: readonly Placement[],
  lease: Lease,
): Promise<ManifestFileEntry> {
  const parsed = set.shardIndex(entry.path);
  const dir = dirname(entry.path);
  const renamed = new Map(placements.map((p) => [`${p.view.file}\0${p.view.name}`, p.name]));
  const sizes = new Map(views.map((v) => [`${v.file}\0${v.name}`, v.byteLength]));
  const elements = new Map(views.map((v) => [`${v.file}\0${v.name}`, v.shape.reduce((a, b) => a * BigInt(b), 1n)]));
  const weightMap = new Map<string, string>();
  let total = 0n;
  let paramsBefore = 0n;
  let paramsAfter = 0n;
  for (const [name, shard] of parsed.weightMap) {
    const key = `${joinPath(dir, shard)}\0${name}`;
    paramsBefore += elements.get(key) ?? 0n;
    const kept = targets.includes(joinPath(dir, shard)) ? renamed.get(key) : name;
    if (kept === undefined) continue;
    weightMap.set(kept, shard);
    total += BigInt(sizes.get(key) ?? 0);
    paramsAfter += elements.get(key) ?? 0n;
  }
  const metadata = parsed.metadata === null ? null : new Map<string, unknown>(parsed.metadata);
  if (metadata !== null && parsed.totalSize !== null) metadata.set('total_size', total);
  // transformers writes `total_parameters` (the model's parameter count). Where it is the sum of
  // the index's tensor elements it is recomputed for the kept tensors; where it is not (tied
  // weights, buffers) the new count cannot be known, so it is dropped rather than left stale.
  if (metadata?.has('total_parameters')) {
    const stated = metadata.get('total_parameters');
    if ((typeof stated === 'bigint' || typeof stated === 'number') && BigInt(stated) === paramsBefore)
      metadata.set('total_parameters', paramsAfter);
    else metadata.delete('total_parameters');
  }
  const bytes = writeShardIndex({ weightMap, metadata });
  const { id } = await store.put([bytes], { lease });
  return {
    path: entry.path,
    kind: 'file',
    mode: entry.mode,
    size: bytes.length,
    profile: 'blob-v1',
    records: [{ digest: id, length: bytes.length }],
  };
}
