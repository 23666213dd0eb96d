/**
 * `@tensorfs/lanes/apply` (Node only): performs a derivation in a store. T1 renames are a
 * composition (one new header object per changed file, every tensor object shared); T2 seams
 * reference the fused tensor's objects (zero new tensor bytes when the import cut it at the seams,
 * see `laneSeams`; else only the boundary pieces); T3 permutations write only the permuted tensors;
 * T4 casts and (re)quantization stream through the encoders of `@tensorfs/format/encodings`,
 * gated when lossy. Convention relayouts are not applied (`unsupported`, `lanes.apply_unsupported`).
 * @packageDocumentation
 */
import {
  type ObjectId,
  type Progress,
  progressEvent,
  type RecordRef,
  TensorFSError,
  throwIfAborted,
} from '@tensorfs/format';
import {
  type ComposeResult,
  commit,
  compose,
  openTensors,
  readSliceOf,
  type SliceRange,
  TensorWriter,
  type TensorView,
} from '@tensorfs/tensors';
import { type BindOptions, type BindResult, type BindStep, bind, type CandidateHeaders } from './bind.js';
import type { Catalog, LaneRef } from './catalog.js';
import type { DocRef } from './documents.js';
import { isBlockType } from './dtypes.js';
import type { LayoutComponent, LayoutEntry, LayoutPart } from './layout.js';
import { candidateFromTensors } from './candidates.js';
import { rotaryRowOrder } from './morphism.js';
import {
  convertT4,
  DEFAULT_BATCH_BYTES,
  plainReadGap,
  plainWriteGap,
  relayoutNvfp4,
  ruleDecodeGap,
  ruleEncodeGap,
  type T4Source,
  type T4Target,
} from './t4.js';

/** The store type the tensor layer opens (the storage contract of `@tensorfs/format/store`). */
type Store = Parameters<typeof openTensors>[0];
type Lease = Awaited<ReturnType<Store['lease']>>;

/** Options of {@link applyLane}. */
export interface ApplyOptions extends BindOptions {
  /** The ref to create for the result (it must not exist). */
  name: string;
  /**
   * Perform lossy steps (narrowing casts, quantization, dequantization below F32). Without it a
   * derivation with a lossy step is refused (`denied`, `lanes.lossy_not_allowed`) before anything
   * is written. Widening casts never need it.
   * @default false
   */
  allowLossy?: boolean;
  /** Float32 bytes per batch of rows a T4 step holds (at least one row). @default 4 MiB */
  batchBytes?: number;
  /** Cancels between batches and tensors (`cancelled`); nothing is referenced by a ref then. */
  signal?: AbortSignal;
  /**
   * Called after each tensor a step wrote or inherited, per file written: phase `structural` or
   * `T4`, unit `tensors`, `tensors` done of the file's `tensorsTotal`, `tensor` (the source name
   * just written or inherited) and `path` (the file).
   */
  onProgress?: (p: Progress) => void;
}

/** What {@link applyLane} did. */
export interface ApplyResult {
  /** The answer the steps came from (re-binding the result answers `admit`). */
  bind: BindResult;
  /** The new snapshot. */
  snapshot: ObjectId;
  /** The entries (files) written: for a T1-only derivation, just the new header(s). */
  entries: number;
  /**
   * What T2 seams cost: zero when the fused tensor's objects were cut at the seams on import
   * (`laneSeams` → `importPath({seams})`), else the boundary pieces written.
   */
  seams: SeamCost;
}

type Row = BindStep['tensors'][number];
type Action = { kind: 'rename'; to: string } | { kind: 'step'; step: BindStep; row: Row } | { kind: 'skip' };
type Set_ = Awaited<ReturnType<typeof openTensors>>;

function unsupported(why: string, details: Record<string, unknown> = {}): never {
  throw new TensorFSError('unsupported', why, { details: { rule: 'lanes.apply_unsupported', ...details } });
}

function rows(view: TensorView): { n: number; rowBytes: number } {
  const n = Number(view.shape[0] ?? 1n);
  if (view.shape.length === 0 || n === 0 || view.byteLength % n !== 0)
    unsupported(`${view.name}: not divisible into rows`, { tensor: view.name });
  return { n, rowBytes: view.byteLength / n };
}

function candidateOf(set: Set_, component: string): CandidateHeaders {
  return candidateFromTensors(set, component);
}

/** `left->right` of a T4 step's `via`: each side a dtype or a rule (`name@v`). */
function sides(via: string): [string, string] {
  const i = via.lastIndexOf('->');
  return [via.slice(0, i), via.slice(i + 2)];
}
const isRule = (side: string) => side.includes('@');

/**
 * Checks before anything is written that every T4 step has an encoder and a decoder here, and
 * that lossy steps are allowed. Throws `unsupported` naming the missing encoder, or `denied`.
 */
function preflight(r: BindResult, catalog: Catalog, options: ApplyOptions, format: string): void {
  const lossy = r.steps.filter((s) => s.lossy);
  if (lossy.length && !options.allowLossy) {
    const names = lossy.flatMap((s) => s.tensors.map((t) => t.from.join('+')));
    throw new TensorFSError(
      'denied',
      `${names.length} tensor(s) would be changed lossily (${lossy.map((s) => `${s.op} ${s.via}`).join(', ')}): ${names.slice(0, 8).join(', ')}${names.length > 8 ? ', …' : ''}; allow lossy steps explicitly (--allow-lossy)`,
      { details: { rule: 'lanes.lossy_not_allowed', tensors: names, steps: lossy.map((s) => `${s.op} ${s.via}`) } },
    );
  }
  for (const s of r.steps) {
    if (s.op === 'relayout') {
      const [a, b] = sides(s.via);
      if (
        catalog.rule(a as DocRef).encoding?.scheme !== 'nvfp4' ||
        catalog.rule(b as DocRef).encoding?.scheme !== 'nvfp4'
      )
        unsupported(`applying a convention relayout (${s.via}) is implemented for NVFP4 only`, {
          step: s.op,
          via: s.via,
        });
    }
    if (s.tier !== 'T4') continue;
    const [from, to] = sides(s.via);
    const tensors = s.tensors.map((t) => t.from.join('+'));
    const gapFrom = isRule(from) ? ruleDecodeGap(catalog.rule(from as DocRef)) : plainReadGap(from);
    if (gapFrom)
      unsupported(`${s.op} ${s.via}: no decoder here for ${gapFrom}`, {
        step: s.op,
        via: s.via,
        missing: gapFrom,
        tensors,
      });
    const gapTo = isRule(to) ? ruleEncodeGap(catalog.rule(to as DocRef)) : plainWriteGap(to);
    if (gapTo)
      unsupported(`${s.op} ${s.via}: no encoder for ${gapTo}`, {
        step: s.op,
        via: s.via,
        encoder: gapTo,
        tensors,
      });
    const emits = isRule(to) ? catalog.rule(to as DocRef).emit.map((e) => e.dtype) : [to];
    if (format !== 'gguf' && emits.some((d) => isBlockType(d)))
      unsupported(`${s.op} ${s.via}: GGML block types are written into a GGUF file only`, { step: s.op, via: s.via });
  }
}

/**
 * Binds the snapshot `ref` to `lane` and, if it is derivable, performs the steps and creates ref
 * `options.name` for the result. `admit` creates the ref on the same content; `refuse` throws
 * `conflict` with the refusal. Structural steps (T1 renames, T2 seams, T3 permutations) run
 * first; T4 steps (casts, quantization) then run on that result, streamed through the encoders.
 * One tensor file per snapshot for T2-T4 (sharded checkpoints: T1 only).
 *
 * @throws {TensorFSError} `conflict` (refuse, or the ref exists), `denied` (a lossy step without
 *   `allowLossy`), `unsupported` (no encoder for a rule, e.g. GGML Q4_K; a relayout), `cancelled`.
 */
export async function applyLane(
  store: Store,
  ref: string,
  lane: string,
  catalog: Catalog,
  options: ApplyOptions,
): Promise<ApplyResult> {
  const sig = options.signal ? { signal: options.signal } : {};
  let set = await openTensors(store, ref, sig);
  const laneRef = catalog.lane(lane);
  const component = options.component ?? (Object.keys(catalog.topology(laneRef.topology).components)[0] as string);
  const r = bind(candidateOf(set, component), laneRef, catalog, options);
  if (r.verdict === 'refuse' && r.refuse)
    throw new TensorFSError('conflict', `does not bind to ${r.lane}: ${r.refuse.message}`, {
      details: { ...r.refuse, lane: r.lane },
    });
  const commitOpts = { ref: options.name, expected: null, ...sig };
  if (r.verdict === 'admit') {
    const c = await commit(store, { base: set.snapshot, ...commitOpts });
    return { bind: r, snapshot: c.snapshot, entries: 0, seams: noCost() };
  }
  const files = set.files.filter((f) => f.tensors.length > 0);
  const hasT4 = r.steps.some((s) => s.tier === 'T4');
  preflight(
    r,
    catalog,
    options,
    hasT4 && files.length === 1 ? set.header((files[0] as { path: string }).path).format : 'gguf',
  );
  if (hasT4 && files.length !== 1)
    unsupported('casts and quantization are applied to single-file checkpoints only', { files: files.length });
  const lease = await store.lease({ purpose: `apply ${lane}` });
  try {
    let entries = 0;
    const seams = noCost();
    const structural = r.steps.filter((s) => s.tier !== 'T4');
    if (structural.length) {
      const done = await applyStructural(
        store,
        set,
        r,
        hasT4 ? { lease, ...sig } : { ...commitOpts, lease },
        seams,
        { catalog, lane: laneRef, component },
        options.onProgress,
      );
      if (!hasT4) return { bind: r, snapshot: done.snapshot, entries: done.entries, seams };
      entries = done.entries;
      set = await openTensors(store, done.snapshot, sig);
    }
    // T4 on the lane's topology: bind again (only casts and (re)quantization are left).
    const again = structural.length ? bind(candidateOf(set, component), laneRef, catalog, options) : r;
    if (again.steps.some((s) => s.tier !== 'T4'))
      throw new TensorFSError('internal', 'structural steps remain after applying them', {
        details: { rule: 'lanes.apply_incomplete', steps: again.steps.map((s) => `${s.tier} ${s.op}`) },
      });
    const c = await applyT4(store, set, again, catalog, laneRef, component, options, lease);
    return { bind: r, snapshot: c, entries: entries + 1, seams };
  } finally {
    await lease.release();
  }
}

/** T1-T3 steps; commits with `ref` when given, else holds the snapshot with `lease`. */
async function applyStructural(
  store: Store,
  set: Set_,
  r: BindResult,
  commitOpts: { ref?: string; expected?: null; signal?: AbortSignal; lease: Lease },
  cost: SeamCost,
  ctx: RelayoutContext,
  onProgress?: (p: Progress) => void,
): Promise<{ snapshot: ObjectId; entries: number }> {
  const files = set.files.filter((f) => f.tensors.length > 0);
  if (r.steps.every((s) => s.tier === 'T1')) {
    const rename: Record<string, string> = {};
    for (const s of r.steps)
      for (const row of s.tensors) for (const [i, f] of row.from.entries()) rename[f] = row.to[i] as string;
    const target =
      set.indexes.length === 1
        ? (set.indexes[0] as string)
        : files.length === 1
          ? (files[0] as { path: string }).path
          : null;
    if (target === null)
      unsupported('renaming across several unindexed tensor files is not implemented', { files: files.length });
    const c: ComposeResult = await compose(store, set.snapshot, target, { rename }, commitOpts);
    return { snapshot: c.snapshot, entries: c.entries.length };
  }
  if (files.length !== 1)
    unsupported('seams and permutations are applied to single-file checkpoints only', { files: files.length });
  const file = files[0] as (typeof files)[number];
  const actions = new Map<string, Action>();
  for (const s of r.steps)
    for (const row of s.tensors) {
      if (s.tier === 'T4') continue;
      if (s.op === 'rekey') {
        for (const [i, f] of row.from.entries()) actions.set(f, { kind: 'rename', to: row.to[i] as string });
        continue;
      }
      // A quantized tensor travels with its scales: a seam through several parts is not applied yet.
      if (s.op === 'split' ? row.from.length !== 1 : s.op === 'fuse' ? row.to.length !== 1 : false)
        unsupported(`${s.op} of a quantized tensor is not implemented`, { tensor: row.from[0] });
      for (const [i, f] of row.from.entries())
        actions.set(f, i === 0 ? { kind: 'step', step: s, row } : { kind: 'skip' });
    }
  const writer = writerFor(store, set, file.path, commitOpts.lease, commitOpts.signal);
  try {
    for (const [i, name] of file.tensors.entries()) {
      throwIfAborted(commitOpts.signal);
      const view = set.get(name, file.path);
      const a = actions.get(name);
      if (!a) await writer.inherit(view);
      else if (a.kind === 'rename') await writer.inherit(view, { name: a.to });
      else if (a.kind === 'step' && a.step.op === 'relayout')
        await relayout(set, file.path, a.step, a.row, writer, ctx, commitOpts.signal);
      else if (a.kind === 'step') await perform(store, set, file.path, a.step, a.row, writer, commitOpts.lease, cost);
      onProgress?.(
        progressEvent('structural', 'tensors', {
          tensors: i + 1,
          tensorsTotal: file.tensors.length,
          tensor: name,
          path: file.path,
        }),
      );
    }
    const entry = await writer.finish();
    const c = await commit(store, { base: set.snapshot, put: [entry], ...commitOpts });
    return { snapshot: c.snapshot, entries: 1 };
  } finally {
    await writer.close();
  }
}

function writerFor(store: Store, set: Set_, path: string, lease: Lease, signal?: AbortSignal): TensorWriter {
  const header = set.header(path);
  return new TensorWriter(store, path, {
    ...(header.format === 'gguf'
      ? { ggufHeader: set.ggufHeader(path) }
      : header.header.metadata
        ? { metadata: header.header.metadata }
        : {}),
    lease,
    ...(signal ? { signal } : {}),
  });
}

/** T4 steps, streamed through the encoders; commits the result to `options.name`. */
async function applyT4(
  store: Store,
  set: Set_,
  r: BindResult,
  catalog: Catalog,
  lane: LaneRef,
  component: string,
  options: ApplyOptions,
  lease: Lease,
): Promise<ObjectId> {
  const files = set.files.filter((f) => f.tensors.length > 0);
  const file = files[0] as (typeof files)[number];
  const batch = options.batchBytes ?? DEFAULT_BATCH_BYTES;
  if (!Number.isSafeInteger(batch) || batch < 1)
    throw new TensorFSError('invalid_argument', 'batchBytes must be a positive integer', {
      details: { rule: 'lanes.apply_batch' },
    });
  const want = catalog.layout(lane).components[component] as LayoutComponent;
  const first = new Map<string, { src: T4Source; dst: T4Target }>();
  const skip = new Set<string>();
  for (const s of r.steps)
    for (const row of s.tensors) {
      const [from, to] = sides(s.via);
      const views = row.from.map((n) => set.get(n, file.path));
      let src: T4Source;
      if (isRule(from)) {
        const rule = catalog.rule(from as DocRef);
        const have = catalog.layout({ topology: lane.topology, rule: from as DocRef }).components[component];
        const parts = row.from.map((n, i) => ({
          part: have?.byName.get(n) as LayoutPart,
          view: views[i] as TensorView,
        }));
        const key = parts[0]?.part?.key as string;
        const entry = have?.entries.find((e) => e.key === key);
        if (!entry || parts.some((p) => !p.part)) throw internal(row.from[0] as string);
        src = { kind: 'rule', rule, shape: entry.shape, parts };
      } else src = { kind: 'plain', view: views[0] as TensorView };
      let dst: T4Target;
      const wp = want.byName.get(row.to[0] as string);
      if (!wp) throw internal(row.to[0] as string);
      const entry = want.entries.find((e) => e.key === wp.key) as LayoutEntry;
      if (isRule(to)) dst = { kind: 'rule', rule: catalog.rule(to as DocRef), shape: entry.shape, parts: entry.parts };
      else dst = { kind: 'plain', name: row.to[0] as string, dtype: to, shape: wp.shape };
      first.set(row.from[0] as string, { src, dst });
      for (const n of row.from.slice(1)) skip.add(n);
    }
  const writer = writerFor(store, set, file.path, lease, options.signal);
  try {
    for (const [i, name] of file.tensors.entries()) {
      throwIfAborted(options.signal);
      if (!skip.has(name)) {
        const job = first.get(name);
        if (job) await convertT4(job.src, job.dst, writer, batch, options.signal);
        else await writer.inherit(set.get(name, file.path));
      }
      options.onProgress?.(
        progressEvent('T4', 'tensors', {
          tensors: i + 1,
          tensorsTotal: file.tensors.length,
          tensor: name,
          path: file.path,
        }),
      );
    }
    const entry = await writer.finish();
    const c = await commit(store, {
      base: set.snapshot,
      put: [entry],
      ref: options.name,
      expected: null,
      lease,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return c.snapshot;
  } finally {
    await writer.close();
  }
}

interface RelayoutContext {
  catalog: Catalog;
  lane: LaneRef;
  component: string;
}

/** A T3 relayout row (NVFP4 conventions): parts mapped by role through the two layouts. */
async function relayout(
  set: Set_,
  file: string,
  step: BindStep,
  row: Row,
  writer: TensorWriter,
  ctx: RelayoutContext,
  signal?: AbortSignal,
): Promise<void> {
  const [a, b] = sides(step.via);
  const have = ctx.catalog.layout({ topology: ctx.lane.topology, rule: a as DocRef }).components[ctx.component];
  const want = ctx.catalog.layout({ topology: ctx.lane.topology, rule: b as DocRef }).components[ctx.component];
  const parts = row.from.map((n) => ({ part: have?.byName.get(n) as LayoutPart, view: set.get(n, file) }));
  if (!have || !want || parts.some((p) => !p.part)) throw internal(row.from[0] as string);
  const key = (parts[0] as { part: LayoutPart }).part.key;
  const src = have.entries.find((e) => e.key === key) as LayoutEntry;
  const dst = want.entries.find((e) => e.key === key) as LayoutEntry;
  await relayoutNvfp4(
    { rule: ctx.catalog.rule(a as DocRef), shape: src.shape, parts },
    { rule: ctx.catalog.rule(b as DocRef), parts: dst.parts },
    writer,
    signal,
  );
}

const noCost = (): SeamCost => ({ tensors: 0, objects: 0, bytes: 0 });

function internal(name: string): TensorFSError {
  return new TensorFSError('internal', `${name}: not in the layouts the answer names`, {
    details: { rule: 'lanes.apply_internal', tensor: name },
  });
}

/** Objects a T2 seam had to write because the fused tensor's objects did not fall on it. */
export interface SeamCost {
  /** Tensors (parts) whose first or last bytes lay inside a stored object. */
  tensors: number;
  /** Objects written for those pieces (only the boundary pieces; every whole object is shared). */
  objects: number;
  /** Bytes of those objects. */
  bytes: number;
}

async function perform(
  store: Store,
  set: Set_,
  file: string,
  step: BindStep,
  row: Row,
  writer: TensorWriter,
  lease: Lease,
  cost: SeamCost,
): Promise<void> {
  const views = row.from.map((n) => set.get(n, file));
  if (step.op === 'permute') {
    const p = row.permute as { kind: string; heads: number };
    const codes = views[0] as TensorView;
    const n = Number(codes.shape[0]);
    const order = rotaryRowOrder(n, p.heads, p.kind as 'rotary_halves_to_pairs' | 'rotary_pairs_to_halves');
    for (const [i, v] of views.entries()) {
      const to = row.to[i] as string;
      if (v.shape.length === 0 || Number(v.shape[0]) !== n) {
        await writer.inherit(v, { name: to });
        continue;
      }
      const { rowBytes } = rows(v);
      const src = await v.read();
      const out = new Uint8Array(src.length);
      for (let j = 0; j < n; j++)
        out.set(src.subarray((order[j] as number) * rowBytes, ((order[j] as number) + 1) * rowBytes), j * rowBytes);
      await writer.add(to, v.dtype, v.shape, out);
    }
    return;
  }
  const seam = row.seam as { axis: number; sizes: number[] };
  if (seam.axis !== 0) unsupported(`${step.op} along axis ${seam.axis} is not implemented`, { tensor: row.from[0] });
  if (step.op === 'split') {
    const v = views[0] as TensorView;
    const { rowBytes } = rows(v);
    let at = 0;
    for (const [i, size] of seam.sizes.entries()) {
      const shape = [BigInt(size), ...v.shape.slice(1)];
      const name = row.to[i] as string;
      const start = at * rowBytes;
      const length = size * rowBytes;
      at += size;
      if (!v.aligned) {
        // A tensor stored whole (blob-v1): copy the part's bytes.
        await writer.add(name, v.dtype, shape, (await v.read()).subarray(start, start + length));
        continue;
      }
      const records = await sliceRecords(store, v, start, length, lease, cost);
      await writer.inherit(new RecordsView(store, v, name, shape, length, records), { name });
    }
    return;
  }
  // fuse: the parts' objects, concatenated in the order of the map (no byte read when aligned)
  const first = views[0] as TensorView;
  const total = seam.sizes.reduce((a, b) => a + b, 0);
  const shape = [BigInt(total), ...first.shape.slice(1)];
  const name = row.to[0] as string;
  if (views.every((v) => v.aligned)) {
    const records = views.flatMap((v) => [...v.records]);
    const length = views.reduce((a, v) => a + v.byteLength, 0);
    await writer.inherit(new RecordsView(store, first, name, shape, length, records), { name });
    return;
  }
  const parts: Uint8Array[] = [];
  for (const v of views) parts.push(await v.read());
  await writer.add(name, first.dtype, shape, parts);
}

/**
 * The records of bytes `[start, start + length)` of an aligned tensor: every object wholly inside
 * is shared; a piece of an object the range starts or ends inside is written as an object of its
 * own (counted in `cost`). With seams cut at import, there is none.
 */
async function sliceRecords(
  store: Store,
  v: TensorView,
  start: number,
  length: number,
  lease: Lease,
  cost: SeamCost,
): Promise<RecordRef[]> {
  const out: RecordRef[] = [];
  const end = start + length;
  let off = 0;
  let partial = false;
  for (const r of v.records) {
    const a = Math.max(start, off);
    const b = Math.min(end, off + r.length);
    if (a < b) {
      if (a === off && b === off + r.length) out.push(r);
      else {
        const bytes = await store.readObjectRange(r.digest, a - off, b - a);
        const put = await store.put([bytes], { lease });
        if (put.written) {
          cost.objects++;
          cost.bytes += put.length;
        }
        partial = true;
        out.push({ digest: put.id, length: put.length });
      }
    }
    off += r.length;
  }
  if (partial) cost.tensors++;
  return out;
}

/**
 * A view over records of the store (a row range of a stored tensor, or stored parts in a row):
 * what {@link TensorWriter.inherit} takes to reference objects without reading them.
 */
class RecordsView implements TensorView {
  readonly file: string;
  readonly format: TensorView['format'];
  readonly byteOrder: 'little' | 'big';
  readonly dtype: string;
  readonly blockSize: number;
  readonly typeSize: number;
  readonly byteOffset = 0;
  readonly aligned = true;
  readonly digests: readonly ObjectId[];
  readonly storage = 'plain' as const;
  readonly encoding = null;
  readonly parts = {};
  readonly component: string;
  constructor(
    private readonly store: Store,
    like: TensorView,
    readonly name: string,
    readonly shape: readonly bigint[],
    readonly byteLength: number,
    readonly records: readonly RecordRef[],
  ) {
    this.file = like.file;
    this.format = like.format;
    this.byteOrder = like.byteOrder ?? 'little';
    this.dtype = like.dtype;
    this.blockSize = like.blockSize;
    this.typeSize = like.typeSize;
    this.digests = records.map((r) => r.digest);
    this.component = like.component;
  }
  part(role: string): TensorView {
    throw new TensorFSError('not_found', 'a plain tensor has no parts', {
      details: { rule: 'tensors.no_part', tensor: this.name, role },
    });
  }
  async *pieces(options: { signal?: AbortSignal } = {}): AsyncIterable<Uint8Array> {
    for (const r of this.records) {
      if (options.signal?.aborted)
        throw new TensorFSError('cancelled', 'the read was cancelled', { details: { rule: 'lanes.cancelled' } });
      yield await this.store.readObject(r.digest);
    }
  }
  async read(): Promise<Uint8Array> {
    return this.readInto(new Uint8Array(this.byteLength));
  }
  async readInto(buffer: Uint8Array, offset = 0): Promise<Uint8Array> {
    if (offset + this.byteLength > buffer.length)
      throw new TensorFSError('invalid_argument', 'the buffer is too small for the tensor', {
        details: { rule: 'tensors.buffer_size', tensor: this.name },
      });
    let at = offset;
    for await (const p of this.pieces()) {
      buffer.set(p, at);
      at += p.length;
    }
    return buffer.subarray(offset, at);
  }
  readSlice(ranges: readonly SliceRange[]): Promise<Uint8Array> {
    return readSliceOf(this, ranges);
  }
}
