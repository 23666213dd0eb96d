import type { Store } from '@tensorfs/cas';
import {
  comparePaths,
  encodeManifest,
  jsonInteger,
  type Manifest,
  type ManifestEntry,
  type ObjectId,
  TensorFSError,
  throwIfAborted,
} from '@tensorfs/format';
import { INDEX_SUFFIX, openTensors, type TensorSet } from './open.js';
import type { TensorView } from './view.js';

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

/** A tensor present under the same file and name on both sides, with different bytes. */
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

/** A tensor whose bytes are the same objects (same dtype and shape) under a new file or name. */
export interface RenamedTensor {
  readonly from: DiffTensor;
  readonly to: DiffTensor;
}

/** The tensor-level difference of two opened tensor sets (see {@link diffTensors}). */
export interface TensorDiff {
  /** In B only (no tensor of A has its bytes). */
  readonly added: DiffTensor[];
  /** In A only (no tensor of B has its bytes). */
  readonly removed: DiffTensor[];
  /** Same file and name, different bytes (or dtype or shape). */
  readonly changed: ChangedTensor[];
  /** Same bytes, dtype and shape, different file or name. */
  readonly renamed: RenamedTensor[];
  /** Same file, name, dtype, shape and objects on both sides. */
  readonly unchanged: number;
}

/**
 * One tensor as {@link diffTensorLists} compares it: its {@link DiffTensor} facts and what its
 * bytes are (`identity`: equal identities mean equal bytes, from object ids alone).
 */
export interface DiffInput extends DiffTensor {
  readonly identity: string;
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
  return [...set].map((view) => ({
    file: placeOf(set, view),
    name: view.name,
    dtype: view.dtype,
    shape: view.shape.map(jsonInteger),
    bytes: view.byteLength,
    objects: [...view.digests],
    identity: bytesIdentity(set, view),
  }));
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
 * (no tensor byte is read). Tensors are matched by (file or shard index, name); the rest are
 * paired by identity (same objects, dtype and shape), in order, as renames; so a GGUF and a
 * safetensors file of the same tensors line up even though every name differs.
 */
export function diffTensors(a: TensorSet, b: TensorSet): TensorDiff {
  return diffTensorLists(diffInputs(a), diffInputs(b));
}

/** {@link diffTensors} over lists of tensors (from snapshots, checkpoints, or both). */
export function diffTensorLists(a: readonly DiffInput[], b: readonly DiffInput[]): TensorDiff {
  const key = (t: DiffInput) => `${t.file}\u0000${t.name}`;
  const inB = new Map<string, DiffInput>();
  for (const t of b) inB.set(key(t), t);
  const seenInA = new Set<string>();
  const changed: ChangedTensor[] = [];
  const onlyA: DiffInput[] = [];
  let unchanged = 0;
  for (const ta of a) {
    const k = key(ta);
    seenInA.add(k);
    const tb = inB.get(k);
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
  const onlyB = b.filter((t) => !seenInA.has(key(t)));
  // Pair what is left by identity, in order: an A tensor whose bytes reappear under another name.
  const byIdentity = new Map<string, DiffInput[]>();
  for (const tb of onlyB) {
    const id = identity(tb);
    const list = byIdentity.get(id);
    if (list === undefined) byIdentity.set(id, [tb]);
    else list.push(tb);
  }
  const renamed: RenamedTensor[] = [];
  const removed: DiffTensor[] = [];
  const paired = new Set<DiffInput>();
  for (const ta of onlyA) {
    const match = byIdentity.get(identity(ta))?.shift();
    if (match === undefined) removed.push(facts(ta));
    else {
      paired.add(match);
      renamed.push({ from: facts(ta), to: facts(match) });
    }
  }
  const added = onlyB.filter((t) => !paired.has(t)).map(facts);
  return { added, removed, changed, renamed, unchanged };
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
  readonly tensors: TensorDiff;
  /** Files and symlinks added, removed or changed, in path order. */
  readonly files: FileChange[];
  /** JSON diffs of the `.json` files (not shard indexes) changed on both sides. */
  readonly configs: ConfigChange[];
  readonly pull: PullCost;
}

/** Options of {@link diffSnapshots}. */
export interface DiffOptions {
  /** Compare one tensor file (or shard index) only: the same path on both sides. */
  file?: string;
  /** Cancels (`cancelled`). */
  signal?: AbortSignal;
}

/** The largest config file compared as JSON. */
export const MAX_CONFIG_DIFF_BYTES = 4 * 1024 * 1024;

/**
 * The difference of two snapshots: the tensor diff of their tensor files ({@link diffTensors}),
 * the files and symlinks that changed, JSON diffs of changed `.json` configs, and what pulling B
 * costs a store that already has A. Reads manifests, tensor headers and changed configs only.
 * @throws {TensorFSError} what `openTensors` throws; `cancelled`.
 */
export async function diffSnapshots(
  store: Store,
  refA: string,
  refB: string,
  options: DiffOptions = {},
): Promise<SnapshotDiff> {
  const open = {
    ...(options.file !== undefined ? { file: options.file } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  };
  const [setA, setB] = [await openTensors(store, refA, open), await openTensors(store, refB, open)];
  const [ma, mb] = [await store.getManifest(setA.snapshot), await store.getManifest(setB.snapshot)];
  throwIfAborted(options.signal);
  const files = diffEntries(ma, mb);
  const configs: ConfigChange[] = [];
  const byPathA = new Map(ma.entries.map((e) => [e.path, e]));
  const byPathB = new Map(mb.entries.map((e) => [e.path, e]));
  for (const change of files) {
    if (change.status !== 'changed' || !change.path.endsWith('.json') || change.path.endsWith(INDEX_SUFFIX)) continue;
    const ea = byPathA.get(change.path);
    const eb = byPathB.get(change.path);
    if (ea?.kind !== 'file' || eb?.kind !== 'file') continue;
    throwIfAborted(options.signal);
    configs.push(await diffConfig(store, change.path, ea.records, eb.records, ea.size, eb.size));
  }
  return {
    a: setA.snapshot,
    b: setB.snapshot,
    tensors: diffTensors(setA, setB),
    files,
    configs,
    pull: pullCost(setA.snapshot, ma, setB.snapshot, mb),
  };
}

function entryKey(e: ManifestEntry): string {
  return e.kind === 'file' ? `f:${e.mode}:${e.records.map((r) => r.digest).join(',')}` : `l:${e.target}`;
}

function diffEntries(a: Manifest, b: Manifest): FileChange[] {
  const inB = new Map(b.entries.map((e) => [e.path, e]));
  const inA = new Map(a.entries.map((e) => [e.path, e]));
  const size = (e: ManifestEntry | undefined) => (e?.kind === 'file' ? e.size : undefined);
  const out: FileChange[] = [];
  for (const ea of a.entries) {
    const eb = inB.get(ea.path);
    if (eb === undefined) out.push(withSizes({ path: ea.path, status: 'removed' }, size(ea), undefined));
    else if (entryKey(ea) !== entryKey(eb))
      out.push(withSizes({ path: ea.path, status: 'changed' }, size(ea), size(eb)));
  }
  for (const eb of b.entries) {
    if (!inA.has(eb.path)) out.push(withSizes({ path: eb.path, status: 'added' }, undefined, size(eb)));
  }
  return out.sort((x, y) => comparePaths(x.path, y.path));
}

function withSizes(change: FileChange, before: number | undefined, after: number | undefined): FileChange {
  return { ...change, ...(before !== undefined ? { before } : {}), ...(after !== undefined ? { after } : {}) };
}

async function diffConfig(
  store: Store,
  path: string,
  ra: readonly { digest: ObjectId; length: number }[],
  rb: readonly { digest: ObjectId; length: number }[],
  sa: number,
  sb: number,
): Promise<ConfigChange> {
  if (sa > MAX_CONFIG_DIFF_BYTES || sb > MAX_CONFIG_DIFF_BYTES) {
    return { path, changes: [], error: `larger than ${MAX_CONFIG_DIFF_BYTES} bytes, not compared` };
  }
  const read = async (records: readonly { digest: ObjectId; length: number }[], size: number) => {
    const source = store.recordsSource(records, { verify: true });
    return new TextDecoder('utf-8', { fatal: true }).decode(await source.read(0, size));
  };
  let before: unknown;
  let after: unknown;
  try {
    before = JSON.parse(await read(ra, sa));
    after = JSON.parse(await read(rb, sb));
  } catch (error) {
    // A store failure is the caller's; only text that is not JSON is reported in the diff.
    if (error instanceof TensorFSError) throw error;
    return { path, changes: [], error: 'not JSON on one side' };
  }
  return { path, changes: diffJson(before, after) };
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
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [{ pointer, status: 'changed', before, after }];
}

/** Objects of B's closure (its manifest and every record) that A's closure lacks, and their bytes. */
function pullCost(idA: ObjectId, a: Manifest, idB: ObjectId, b: Manifest): PullCost {
  const have = new Set<ObjectId>([idA]);
  for (const e of a.entries) if (e.kind === 'file') for (const r of e.records) have.add(r.digest);
  const need = new Map<ObjectId, number>();
  if (!have.has(idB)) need.set(idB, encodeManifest(b).length);
  for (const e of b.entries) {
    if (e.kind !== 'file') continue;
    for (const r of e.records) if (!have.has(r.digest)) need.set(r.digest, r.length);
  }
  let bytes = 0;
  for (const n of need.values()) bytes += n;
  return { objects: need.size, bytes };
}
