import {
  checkCheckpoint,
  checkObject,
  checkObjects,
  checkOptions,
  checkStore,
  checkString,
  checkTensorSet,
} from './args.js';
import type { Store } from '@tensorfs/format/store';
import {
  comparePaths,
  encodeManifest,
  jsonInteger,
  type ManifestEntry,
  type ObjectId,
  type RecordRef,
  TensorFSError,
  throwIfAborted,
} from '@tensorfs/format';
import { type Checkpoint, openCheckpoint } from './checkpoint.js';
import { INDEX_SUFFIX, openTensors, type TensorSet } from './open.js';
import { modelKind } from './model.js';
import type { TensorView } from './tensor.js';
import { componentOfPath } from './view.js';

/** One tensor as a diff lists it: where it is, what it is, which objects hold it. */
export interface DiffTensor {
  /** The tensor file, or the shard index for a tensor of a sharded model (so re-sharding is no change). */
  readonly file: string;
  readonly name: string;
  readonly dtype: string;
  /** Row-major shape (integers above 2^53 − 1 as decimal strings). */
  readonly shape: readonly (number | string)[];
  /** The tensor's length in bytes. */
  readonly bytes: number;
  /** Its objects, in order (empty for an empty tensor or one stored inside a whole-file object). */
  readonly objects: readonly ObjectId[];
}

/** A tensor present under the same component and name on both sides, with different bytes. */
export interface ChangedTensor {
  readonly file: string;
  readonly name: string;
  readonly before: DiffTensor;
  readonly after: DiffTensor;
  /** The dtype differs. */
  readonly dtypeChanged: boolean;
  /** The shape differs. */
  readonly shapeChanged: boolean;
}

/** A tensor whose bytes are the same objects (same dtype and shape) under a new name. */
export interface RenamedTensor {
  readonly from: DiffTensor;
  readonly to: DiffTensor;
}

/** The tensor-level difference of two opened tensor sets (see {@link diffTensors}). */
export interface TensorDiff {
  /** In B only (not paired by name, and not the one unambiguous rename of a tensor of A). */
  readonly added: DiffTensor[];
  /** In A only (not paired by name, and not the one unambiguous rename to a tensor of B). */
  readonly removed: DiffTensor[];
  /** Same component and name, different bytes (or dtype or shape). */
  readonly changed: ChangedTensor[];
  /** Same bytes, dtype and shape under another name: the only such pair (see {@link diffTensorLists}). */
  readonly renamed: RenamedTensor[];
  /** Same component, name, dtype, shape and objects on both sides (whatever file or shard holds them). */
  readonly unchanged: number;
}

/**
 * One tensor as {@link diffTensorLists} compares it: its {@link DiffTensor} facts and what its
 * bytes are (`identity`: equal identities mean equal bytes, from object ids alone).
 */
export interface DiffInput extends DiffTensor {
  readonly identity: string;
  /**
   * The component the tensor belongs to (see {@link TensorView.component}): tensors pair by
   * (component, name) across files and shards. Without it, by (file, name).
   */
  readonly component?: string;
}

/** Where a tensor sits for a diff: its shard index if it came through one, else its file. */
function placeOf(set: TensorSet, view: TensorView): string {
  return set.files.find((f) => f.path === view.file)?.index ?? view.file;
}

/**
 * What a tensor's bytes are, from object ids alone: its objects when it is record-aligned; the
 * whole file's records plus its byte range when it is not (same file objects and range, same
 * bytes); nothing for an empty tensor. Never reads a tensor byte.
 */
function bytesIdentity(set: TensorSet, view: TensorView): string {
  if (view.byteLength === 0) return 'empty';
  if (view.aligned) return `objects:${view.digests.join(',')}`;
  const records = set.entry(view.file).records.map((r) => r.digest);
  return `range:${records.join(',')}@${view.byteOffset}+${view.byteLength}`;
}

/** The tensors of an opened set as diff inputs, in the set's order. */
export function diffInputs(set: TensorSet): DiffInput[] {
  checkTensorSet(set, 'set');
  return [...set].map((view) => ({
    component: view.component,
    file: placeOf(set, view),
    name: view.name,
    dtype: view.dtype,
    shape: view.shape.map(jsonInteger),
    bytes: view.byteLength,
    objects: [...view.digests],
    identity: bytesIdentity(set, view),
  }));
}

/**
 * The tensors of an opened checkpoint as diff inputs: each in its component (the place), in
 * construction order. A plain tensor's identity is its objects, as for a planned file, so a
 * checkpoint and the snapshot it was converted from line up; an encoded tensor's is its scheme,
 * params and parts.
 */
export function checkpointDiffInputs(checkpoint: Checkpoint, component?: string): DiffInput[] {
  checkCheckpoint(checkpoint);
  if (component !== undefined) checkString(component, 'component');
  const components = component === undefined ? [...checkpoint.components.values()] : [checkpoint.component(component)];
  const out: DiffInput[] = [];
  for (const c of components) {
    for (const t of c.tensors.values()) {
      const objects = t.allRecords.map((r) => r.digest);
      const bytes = t.allRecords.reduce((n, r) => n + r.length, 0);
      let id: string;
      let dtype = t.dtype;
      const ggml = ggmlBlocks(t);
      if (ggml !== undefined) {
        // A ggml encoding is the GGUF blocks as they were: the same objects as the GGUF file's
        // tensor, under its ggml type, so a GGUF snapshot and its conversion line up.
        id = `objects:${objects.join(',')}`;
        dtype = ggml;
      } else if (t.encoding !== null) {
        const parts = Object.entries(t.encoding.parts).map(([role, p]) => `${role}:${p.dtype}:${p.shape.join('x')}`);
        id = `encoded:${t.encoding.scheme}:${JSON.stringify(t.encoding.params)}:${parts.join(';')}:${objects.join(',')}`;
        dtype = `${t.dtype} (${t.encoding.scheme})`;
      } else id = bytes === 0 ? 'empty' : `objects:${objects.join(',')}`;
      out.push({
        component: c.name,
        file: c.name,
        name: t.name,
        dtype,
        shape: t.shape.map(jsonInteger),
        bytes,
        objects,
        identity: id,
      });
    }
  }
  return out;
}

/** The ggml type of a `ggml`-encoded tensor stored as its one `blocks` part, else `undefined`. */
function ggmlBlocks(t: TensorView): string | undefined {
  if (t.encoding?.scheme !== 'ggml') return undefined;
  const roles = Object.keys(t.encoding.parts);
  const type = (t.encoding.params as { type?: unknown } | null)?.type;
  return roles.length === 1 && roles[0] === 'blocks' && typeof type === 'string' ? type : undefined;
}

/** Identity for matching: bytes plus dtype and shape (a reinterpretation is not a rename). */
function identity(t: DiffInput): string {
  return `${t.identity}|${t.dtype}|${t.shape.join('x')}`;
}

function facts(t: DiffInput): DiffTensor {
  return { file: t.file, name: t.name, dtype: t.dtype, shape: t.shape, bytes: t.bytes, objects: t.objects };
}

/**
 * The tensor-level difference of two opened tensor sets, from their headers and object ids only
 * (no tensor byte is read). Tensors are paired by the model's names: (component, name), across
 * files and shards, so renaming a file or re-sharding is no change. Of the rest, a tensor of A
 * and one of B are a rename only when they are the only unpaired ones with the same objects,
 * dtype and shape (so a GGUF and a safetensors file of the same tensors line up even though every
 * name differs, and tensors of identical bytes are never chained into renames); others are
 * removed and added.
 */
export function diffTensors(a: TensorSet, b: TensorSet): TensorDiff {
  checkTensorSet(a, 'a');
  checkTensorSet(b, 'b');
  return diffTensorLists(diffInputs(a), diffInputs(b));
}

/** {@link diffTensors} over lists of tensors (from snapshots, checkpoints, or both). */
export function diffTensorLists(a: readonly DiffInput[], b: readonly DiffInput[]): TensorDiff {
  checkObjects(a, 'a');
  checkObjects(b, 'b');
  for (const [list, what] of [
    [a, 'a[]'],
    [b, 'b[]'],
  ] as const) {
    for (const t of list) {
      // The shape diffInputs / checkpointDiffInputs give: a wrong one is the caller's bug, said once here.
      if (
        typeof t.file !== 'string' ||
        typeof t.name !== 'string' ||
        typeof t.dtype !== 'string' ||
        typeof t.identity !== 'string' ||
        !Array.isArray(t.shape) ||
        !Array.isArray(t.objects) ||
        !Number.isSafeInteger(t.bytes)
      ) {
        checkObject(null, what, 'a DiffInput { file, name, dtype, shape, bytes, objects, identity }');
      }
    }
  }
  // Pair by (component, name): the model's names, whatever file or shard holds them. Where one
  // side has a name twice in a component (two files of one folder), same-file tensors pair first.
  const key = (t: DiffInput) => `${t.component ?? t.file}\u0000${t.name}`;
  const groupsB = groupBy(b, key);
  const pairs = new Map<DiffInput, DiffInput>();
  for (const [k, listA] of groupBy(a, key)) {
    const listB = groupsB.get(k);
    if (listB === undefined) continue;
    const leftA: DiffInput[] = [];
    const leftB = [...listB];
    for (const ta of listA) {
      const at = leftB.findIndex((tb) => tb.file === ta.file);
      if (at < 0) leftA.push(ta);
      else pairs.set(ta, leftB.splice(at, 1)[0]!);
    }
    if (leftA.length === 1 && leftB.length === 1) pairs.set(leftA[0]!, leftB[0]!);
  }
  const pairedB = new Set(pairs.values());
  const changed: ChangedTensor[] = [];
  const onlyA: DiffInput[] = [];
  let unchanged = 0;
  for (const ta of a) {
    const tb = pairs.get(ta);
    if (tb === undefined) {
      onlyA.push(ta);
      continue;
    }
    if (identity(ta) === identity(tb)) {
      unchanged++;
      continue;
    }
    changed.push({
      file: ta.file,
      name: ta.name,
      before: facts(ta),
      after: facts(tb),
      dtypeChanged: ta.dtype !== tb.dtype,
      shapeChanged: ta.shape.join(',') !== tb.shape.join(','),
    });
  }
  const onlyB = b.filter((t) => !pairedB.has(t));
  // A rename only where it is unambiguous: exactly one unpaired tensor on each side with these
  // bytes, dtype and shape. Tensors of identical bytes (all-ones norms) never chain into renames.
  const idsA = groupBy(onlyA, identity);
  const idsB = groupBy(onlyB, identity);
  const renamedTo = new Map<DiffInput, DiffInput>();
  for (const [id, listA] of idsA) {
    const listB = idsB.get(id);
    if (listA.length === 1 && listB?.length === 1) renamedTo.set(listA[0]!, listB[0]!);
  }
  const renamedB = new Set(renamedTo.values());
  const renamed: RenamedTensor[] = [];
  const removed: DiffTensor[] = [];
  for (const ta of onlyA) {
    const match = renamedTo.get(ta);
    if (match === undefined) removed.push(facts(ta));
    else renamed.push({ from: facts(ta), to: facts(match) });
  }
  const added = onlyB.filter((t) => !renamedB.has(t)).map(facts);
  return { added, removed, changed, renamed, unchanged };
}

/** `items` grouped by `key`, in first-seen order, each group in order. */
function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list === undefined) out.set(k, [item]);
    else list.push(item);
  }
  return out;
}

/** A file or symlink that differs between two snapshots. */
export interface FileChange {
  readonly path: string;
  readonly status: 'added' | 'removed' | 'changed';
  /** Its size in A (absent when added, or for a symlink). */
  readonly before?: number;
  /** Its size in B (absent when removed, or for a symlink). */
  readonly after?: number;
}

/** One difference inside a JSON config: a JSON Pointer and the values on each side. */
export interface JsonChange {
  /** RFC 6901 pointer (`/text_config/hidden_size`). */
  readonly pointer: string;
  readonly status: 'added' | 'removed' | 'changed';
  readonly before?: unknown;
  readonly after?: unknown;
}

/** The JSON diff of a config file present on both sides. */
export interface ConfigChange {
  readonly path: string;
  /** The differences, or none when a side is not JSON (see `error`). */
  readonly changes: JsonChange[];
  /** Set when a side did not parse as JSON or was too large to compare. */
  readonly error?: string;
}

/** What a pull of B costs a store that has A: objects of B's closure not in A's. */
export interface PullCost {
  readonly objects: number;
  readonly bytes: number;
}

/** The difference of two snapshots (see {@link diffSnapshots}). */
export interface SnapshotDiff {
  readonly a: ObjectId;
  readonly b: ObjectId;
  /** What each side is. */
  readonly kinds: readonly ['snapshot' | 'checkpoint', 'snapshot' | 'checkpoint'];
  readonly tensors: TensorDiff;
  /** Files and symlinks (snapshots) or assets (`component/name`, checkpoints) added, removed or changed, in path order. */
  readonly files: FileChange[];
  /** JSON diffs of the changed configs: `.json` files (not shard indexes) of snapshots; `pipeline` and `<component>/config` of checkpoints. */
  readonly configs: ConfigChange[];
  readonly pull: PullCost;
}

/** Options of {@link diffSnapshots}. */
export interface DiffOptions {
  /** Compare one tensor file (or shard index) only: the same path on both sides (snapshots). */
  file?: string;
  /**
   * Compare one component only: a checkpoint's component of that name, or a snapshot's folder of
   * that name (a Diffusers component), whose tensors then sit in the component as in a checkpoint.
   */
  component?: string;
  /** Cancels (`cancelled`). */
  signal?: AbortSignal;
}

/** The largest config file compared as JSON. */
export const MAX_CONFIG_DIFF_BYTES = 4 * 1024 * 1024;

/** One side of a diff: its tensors, entries (files or assets), configs and closure. */
interface Side {
  readonly id: ObjectId;
  readonly kind: 'snapshot' | 'checkpoint';
  readonly tensors: DiffInput[];
  /** Path → (identity key, size). */
  readonly entries: Map<string, { key: string; size: number | undefined }>;
  /** Config path → its parsed value, read on demand. */
  readonly configs: Map<string, () => Promise<ConfigValue>>;
  /** Every object it reaches and its length. */
  readonly closure: Map<ObjectId, number>;
}

type ConfigValue = { value: unknown } | { error: string };

async function snapshotSide(store: Store, id: ObjectId, options: DiffOptions): Promise<Side> {
  const component = options.component;
  const open = {
    ...(options.file !== undefined ? { file: options.file } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  };
  const set = await openTensors(store, id, open);
  const manifest = await store.getManifest(id);
  let tensors = diffInputs(set);
  if (component !== undefined) tensors = tensors.filter((t) => t.component === component);
  const entries = new Map<string, { key: string; size: number | undefined }>();
  const configs = new Map<string, () => Promise<ConfigValue>>();
  for (const e of manifest.entries) {
    if (component !== undefined && componentOfPath(e.path) !== component) continue;
    entries.set(e.path, { key: entryKey(e), size: e.kind === 'file' ? e.size : undefined });
    if (e.kind === 'file' && e.path.endsWith('.json') && !e.path.endsWith(INDEX_SUFFIX)) {
      configs.set(e.path, () => readJson(store, e.records, e.size));
    }
  }
  const closure = new Map<ObjectId, number>([[id, encodeManifest(manifest).length]]);
  for (const e of manifest.entries) if (e.kind === 'file') for (const r of e.records) closure.set(r.digest, r.length);
  return { id, kind: 'snapshot', tensors, entries, configs, closure };
}

async function checkpointSide(store: Store, id: ObjectId, options: DiffOptions): Promise<Side> {
  if (options.file !== undefined) {
    throw new TensorFSError('invalid_argument', 'a checkpoint has components, not files: use component', {
      details: { rule: 'tensors.diff_file_of_checkpoint', id },
    });
  }
  const cp = await openCheckpoint(store, id, options.signal ? { signal: options.signal } : {});
  const tensors = checkpointDiffInputs(cp, options.component);
  const entries = new Map<string, { key: string; size: number | undefined }>();
  const configs = new Map<string, () => Promise<ConfigValue>>();
  if (cp.pipeline !== null && options.component === undefined) {
    const pipeline = cp.pipeline;
    configs.set('pipeline', async () => ({ value: { cls: pipeline.cls, config: pipeline.config } }));
  }
  for (const c of cp.header.components) {
    if (options.component !== undefined && c.name !== options.component) continue;
    configs.set(`${c.name}/config`, async () => ({ value: { cls: c.cls, config: c.config } }));
    for (const a of c.assets) {
      entries.set(`${c.name}/${a.name}`, {
        key: `a:${a.records.map((r) => r.digest).join(',')}`,
        size: a.records.reduce((n, r) => n + r.length, 0),
      });
    }
  }
  const closure = new Map<ObjectId, number>([[id, cp.bytes.length]]);
  for (const c of cp.header.components) {
    for (const a of c.assets) for (const r of a.records) closure.set(r.digest, r.length);
    for (const t of c.tensors) {
      if (t.encoding === undefined) for (const r of t.records) closure.set(r.digest, r.length);
      else for (const p of Object.values(t.encoding.parts)) for (const r of p.records) closure.set(r.digest, r.length);
    }
  }
  if (cp.source !== null && (await store.has(cp.source))) {
    const source = await store.getManifest(cp.source);
    closure.set(cp.source, encodeManifest(source).length);
    for (const e of source.entries) if (e.kind === 'file') for (const r of e.records) closure.set(r.digest, r.length);
  }
  return { id, kind: 'checkpoint', tensors, entries, configs, closure };
}

async function sideOf(store: Store, ref: string, options: DiffOptions): Promise<Side> {
  throwIfAborted(options.signal);
  const { id, kind } = await modelKind(store, ref);
  return kind === 'checkpoint' ? checkpointSide(store, id, options) : snapshotSide(store, id, options);
}

/**
 * The difference of two snapshots or checkpoints (or one of each): the tensor diff
 * ({@link diffTensorLists}; a checkpoint's tensors sit in their components), the files, symlinks
 * or assets that changed, JSON diffs of changed configs (`.json` files of a snapshot up to 4 MiB;
 * a checkpoint's pipeline and component configs), and what pulling B costs a store that already
 * has A. Reads manifests, tensor headers, checkpoint headers and changed configs only.
 * @throws {TensorFSError} what `openTensors` / `openCheckpoint` throw; `invalid_argument` for `file`
 *   on a checkpoint; `cancelled`.
 */
export async function diffSnapshots(
  store: Store,
  refA: string,
  refB: string,
  options: DiffOptions = {},
): Promise<SnapshotDiff> {
  checkStore(store);
  checkString(refA, 'refA');
  checkString(refB, 'refB');
  checkOptions(options);
  const a = await sideOf(store, refA, options);
  const b = await sideOf(store, refB, options);
  throwIfAborted(options.signal);
  const files: FileChange[] = [];
  for (const [path, ea] of a.entries) {
    const eb = b.entries.get(path);
    if (eb === undefined) files.push(withSizes({ path, status: 'removed' }, ea.size, undefined));
    else if (ea.key !== eb.key) files.push(withSizes({ path, status: 'changed' }, ea.size, eb.size));
  }
  for (const [path, eb] of b.entries) {
    if (!a.entries.has(path)) files.push(withSizes({ path, status: 'added' }, undefined, eb.size));
  }
  files.sort((x, y) => comparePaths(x.path, y.path));
  const changedPaths = new Set(files.filter((f) => f.status === 'changed').map((f) => f.path));
  const configs: ConfigChange[] = [];
  for (const [path, readA] of a.configs) {
    const readB = b.configs.get(path);
    // A snapshot's config is compared when its file changed; a checkpoint's always (it is in the header).
    if (readB === undefined || (a.kind === 'snapshot' && b.kind === 'snapshot' && !changedPaths.has(path))) continue;
    throwIfAborted(options.signal);
    const [va, vb] = [await readA(), await readB()];
    if ('error' in va || 'error' in vb) {
      configs.push({ path, changes: [], error: 'error' in va ? va.error : (vb as { error: string }).error });
      continue;
    }
    const changes = diffJson(va.value, vb.value);
    if (changes.length > 0) configs.push({ path, changes });
  }
  let objects = 0;
  let bytes = 0;
  for (const [id, n] of b.closure) {
    if (a.closure.has(id)) continue;
    objects++;
    bytes += n;
  }
  return {
    a: a.id,
    b: b.id,
    kinds: [a.kind, b.kind],
    tensors: diffTensorLists(a.tensors, b.tensors),
    files,
    configs,
    pull: { objects, bytes },
  };
}

function entryKey(e: ManifestEntry): string {
  return e.kind === 'file' ? `f:${e.mode}:${e.records.map((r) => r.digest).join(',')}` : `l:${e.target}`;
}

function withSizes(change: FileChange, before: number | undefined, after: number | undefined): FileChange {
  return { ...change, ...(before !== undefined ? { before } : {}), ...(after !== undefined ? { after } : {}) };
}

async function readJson(store: Store, records: readonly RecordRef[], size: number): Promise<ConfigValue> {
  if (size > MAX_CONFIG_DIFF_BYTES) return { error: `larger than ${MAX_CONFIG_DIFF_BYTES} bytes, not compared` };
  const bytes = await store.recordsSource(records, { verify: true }).read(0, size);
  try {
    return { value: JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) };
  } catch {
    return { error: 'not JSON' };
  }
}

function escapePointer(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The differences between two JSON values as RFC 6901 pointers: objects compared key by key
 * (keys in sorted order), arrays of equal length element by element, anything else whole.
 */
export function diffJson(before: unknown, after: unknown, pointer = ''): JsonChange[] {
  checkString(pointer, 'pointer');
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    const out: JsonChange[] = [];
    for (const k of keys) {
      const p = `${pointer}/${escapePointer(k)}`;
      const hasA = Object.hasOwn(before, k);
      const hasB = Object.hasOwn(after, k);
      if (!hasB) out.push({ pointer: p, status: 'removed', before: before[k] });
      else if (!hasA) out.push({ pointer: p, status: 'added', after: after[k] });
      else out.push(...diffJson(before[k], after[k], p));
    }
    return out;
  }
  if (Array.isArray(before) && Array.isArray(after) && before.length === after.length) {
    return before.flatMap((v, i) => diffJson(v, after[i], `${pointer}/${i}`));
  }
  return jsonText(before) === jsonText(after) ? [] : [{ pointer, status: 'changed', before, after }];
}

/** `JSON.stringify`, with a value JSON cannot hold (a bigint, a cycle) as `invalid_argument`. */
function jsonText(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch (cause) {
    throw new TensorFSError('invalid_argument', 'diffJson compares JSON values; this one has no JSON form', {
      details: { rule: 'tensors.argument', argument: 'before/after' },
      cause,
    });
  }
}
