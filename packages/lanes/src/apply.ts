/**
 * `@tensorfs/lanes/apply` (Node only): performs a derivation in a store. T1 renames are a
 * composition (one new header object per changed file, every tensor object shared); T2 seams and T3
 * permutations go through the tensor writer, which writes only the tensors they produce and
 * inherits every other tensor's objects. T4 (casts, quantization) and convention relayouts are
 * not applied here yet (`unsupported`, `lanes.apply_unsupported`).
 * @packageDocumentation
 */
import { type ObjectId, TensorFSError } from '@tensorfs/format';
import { type ComposeResult, commit, compose, openTensors, TensorWriter, type TensorView } from '@tensorfs/tensors';
import { type BindOptions, type BindResult, type BindStep, bind, type CandidateHeaders } from './bind.js';
import type { Catalog } from './catalog.js';
import { rotaryRowOrder } from './morphism.js';

/** The store type the tensor layer opens (from `@tensorfs/cas`). */
type Store = Parameters<typeof openTensors>[0];

/** Options of {@link applyLane}. */
export interface ApplyOptions extends BindOptions {
  /** The ref to create for the result (it must not exist). */
  name: string;
  /** Cancels before the result's manifest is written (`cancelled`). */
  signal?: AbortSignal;
}

/** What {@link applyLane} did. */
export interface ApplyResult {
  /** The answer the steps came from (re-binding the result answers `admit`). */
  bind: BindResult;
  /** The new snapshot. */
  snapshot: ObjectId;
  /** The entries (files) written: for a T1-only derivation, just the new header(s). */
  entries: number;
}

type Row = BindStep['tensors'][number];
type Action = { kind: 'rename'; to: string } | { kind: 'step'; step: BindStep; row: Row } | { kind: 'skip' };

function unsupported(why: string, details: Record<string, unknown> = {}): never {
  throw new TensorFSError('unsupported', why, { details: { rule: 'lanes.apply_unsupported', ...details } });
}

function rows(view: TensorView): { n: number; rowBytes: number } {
  const n = Number(view.shape[0] ?? 1n);
  if (view.shape.length === 0 || n === 0 || view.byteLength % n !== 0)
    unsupported(`${view.name}: not divisible into rows`, { tensor: view.name });
  return { n, rowBytes: view.byteLength / n };
}

/**
 * Binds the snapshot `ref` to `lane` and, if it is derivable, performs the steps and creates ref
 * `options.name` for the result. `admit` creates the ref on the same content; `refuse` throws
 * `conflict` with the refusal. One tensor file per snapshot (sharded checkpoints: T1 only).
 */
export async function applyLane(
  store: Store,
  ref: string,
  lane: string,
  catalog: Catalog,
  options: ApplyOptions,
): Promise<ApplyResult> {
  const set = await openTensors(store, ref, options.signal ? { signal: options.signal } : {});
  const laneRef = catalog.lane(lane);
  const component = options.component ?? (Object.keys(catalog.topology(laneRef.topology).components)[0] as string);
  const candidate: CandidateHeaders = {
    [component]: [...set].map((v) => ({ name: v.name, dtype: v.dtype, shape: v.shape.map(Number) })),
  };
  const r = bind(candidate, laneRef, catalog, options);
  if (r.verdict === 'refuse' && r.refuse)
    throw new TensorFSError('conflict', `does not bind to ${r.lane}: ${r.refuse.message}`, {
      details: { ...r.refuse, lane: r.lane },
    });
  const commitOpts = { ref: options.name, expected: null, ...(options.signal ? { signal: options.signal } : {}) };
  if (r.verdict === 'admit') {
    const c = await commit(store, { base: set.snapshot, ...commitOpts });
    return { bind: r, snapshot: c.snapshot, entries: 0 };
  }
  for (const s of r.steps)
    if (s.tier === 'T4' || s.op === 'relayout')
      unsupported(`applying ${s.op} steps (${s.tier}) is not implemented yet`, { step: s.op, tier: s.tier });
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
    return { bind: r, snapshot: c.snapshot, entries: c.entries.length };
  }
  if (files.length !== 1)
    unsupported('seams and permutations are applied to single-file checkpoints only', { files: files.length });
  const file = files[0] as (typeof files)[number];
  const actions = new Map<string, Action>();
  for (const s of r.steps)
    for (const row of s.tensors) {
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
  const header = set.header(file.path);
  const writer = new TensorWriter(store, file.path, {
    ...(header.format === 'gguf'
      ? { ggufHeader: set.ggufHeader(file.path) }
      : header.header.metadata
        ? { metadata: header.header.metadata }
        : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  try {
    for (const name of file.tensors) {
      const view = set.get(name, file.path);
      const a = actions.get(name);
      if (!a) await writer.inherit(view);
      else if (a.kind === 'rename') await writer.inherit(view, { name: a.to });
      else if (a.kind === 'step') await perform(set, file.path, a.step, a.row, writer);
    }
    const entry = await writer.finish();
    const c = await commit(store, { base: set.snapshot, put: [entry], ...commitOpts });
    return { bind: r, snapshot: c.snapshot, entries: 1 };
  } finally {
    await writer.close();
  }
}

async function perform(
  set: Awaited<ReturnType<typeof openTensors>>,
  file: string,
  step: BindStep,
  row: Row,
  writer: TensorWriter,
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
    const src = await v.read();
    let at = 0;
    for (const [i, size] of seam.sizes.entries()) {
      const shape = [BigInt(size), ...v.shape.slice(1)];
      await writer.add(row.to[i] as string, v.dtype, shape, src.subarray(at * rowBytes, (at + size) * rowBytes));
      at += size;
    }
    return;
  }
  // fuse: concatenate rows in the order of the map
  const first = views[0] as TensorView;
  const total = seam.sizes.reduce((a, b) => a + b, 0);
  const parts: Uint8Array[] = [];
  for (const v of views) parts.push(await v.read());
  await writer.add(row.to[0] as string, first.dtype, [BigInt(total), ...first.shape.slice(1)], parts);
}
