/**
 * Slices: the bytes of a row-major sub-block of a stored tensor (`[start, end)` per leading axis,
 * the axes not given whole), read as the fewest reads that touch only the slice's bytes (gaps of
 * at most {@link SLICE_GAP_BYTES} between them are read through, which saves a read call and
 * never reaches an object the slice does not touch). Over the structural {@link SliceableTensor},
 * so any view with a byte-range reader can use it.
 */
import { type JsonValue, TensorFSError, throwIfAborted, wrongArgument } from '@tensorfs/format';
import type { Encoded, EncodedPart } from '@tensorfs/format/encodings';
import { checkOptions, checkView } from './args.js';
import { decodedDtypeOf } from './decoded.js';
import type { ReadOptions, SliceOptions, SliceRange, TensorView } from './tensor.js';

export type { SliceOptions, SliceRange } from './tensor.js';

/** What a slice needs of a tensor (a `TensorView` has it). */
export interface SliceableTensor {
  readonly name: string;
  readonly dtype: string;
  readonly shape: readonly bigint[];
  /** Elements per block (1 for plain dtypes). */
  readonly blockSize: number;
  /** Bytes per block (fractional for sub-byte dtypes). */
  readonly typeSize: number;
  readonly byteLength: number;
  /** The tensor's objects, when they hold exactly its bytes: reads stay inside the objects they touch. */
  readonly records?: readonly { readonly length: number }[];
}

/** Reads tensor bytes `[offset, offset + target.length)` into `target`. */
export type RangeReader = (offset: number, target: Uint8Array, signal?: AbortSignal) => Promise<void>;

/**
 * Options of `readSlice`: `verify` and `signal` as for reads; with `decode` (and `dtype`) the
 * whole tensor is read and decoded, then sliced (the cost of a whole decoded read).
 */

/** Gaps up to this many bytes between two runs of a slice are read through (one read, not two). */
export const SLICE_GAP_BYTES = 64 * 1024;
/** The largest merged read (runs and gaps, into a scratch buffer that stays in cache). */
const MAX_READ = 2 * 1024 * 1024;
/** A long run is read in pieces of this size, several at once. */
const READ_PIECE = 4 * 1024 * 1024;
/** Reads of one slice in flight at once (libuv's thread pool has 4 threads). */
const SLICE_CONCURRENCY = 4;
/** Scratch buffers of merged reads, reused across slices (they never leave this module). */
const spareScratch: Uint8Array[] = [];

/** How a slice is read: its shape and byte length, and the runs of the tensor's bytes it copies. */
export interface SlicePlan {
  /** The slice's shape (the ranges' lengths, then the axes not given). */
  readonly shape: readonly bigint[];
  /** The slice's length in bytes. */
  readonly byteLength: number;
  /** Contiguous runs of the tensor's bytes, in order: `[offset, length]`. */
  readonly runs: readonly (readonly [number, number])[];
}

/** `invalid_argument` (rule `tensors.argument`) unless `t` has what a slice reads of a tensor. */
function checkSliceable(t: unknown, what = 'tensor'): asserts t is SliceableTensor {
  const v = t as Partial<SliceableTensor> | null;
  if (typeof v !== 'object' || v === null) wrongArgument('tensors', what, 'a tensor view', t);
  if (!Array.isArray(v.shape) || !v.shape.every((d) => typeof d === 'bigint' && d >= 0n)) {
    wrongArgument('tensors', `${what}.shape`, 'an array of bigints ≥ 0', v.shape);
  }
  for (const k of ['blockSize', 'typeSize', 'byteLength'] as const) {
    if (typeof v[k] !== 'number' || !(v[k] >= 0)) wrongArgument('tensors', `${what}.${k}`, 'a number ≥ 0', v[k]);
  }
  if (!(v.blockSize! >= 1) || !Number.isInteger(v.blockSize) || !(v.typeSize! > 0)) {
    wrongArgument('tensors', `${what}.blockSize`, 'an integer ≥ 1 (with typeSize > 0)', v.blockSize);
  }
  if (typeof v.name !== 'string') wrongArgument('tensors', `${what}.name`, 'a string', v.name);
}

function bad(message: string, details: Record<string, unknown>): TensorFSError {
  return new TensorFSError('invalid_argument', message, { details: { rule: 'tensors.slice_range', ...details } });
}

function toInt(value: unknown, axis: number, what: string): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  throw bad(`axis ${axis}: the ${what} of a range must be an integer`, { axis, [what]: String(value) });
}

/** Elements and bytes of the smallest whole-byte unit along the last axis. */
function unitOf(t: SliceableTensor): { elements: number; bytes: number } {
  for (let k = 1; k <= 8; k++) {
    const bytes = t.typeSize * k;
    if (Number.isInteger(bytes)) return { elements: t.blockSize * k, bytes };
  }
  throw new TensorFSError('unsupported', 'this dtype does not pack into whole bytes', {
    details: { rule: 'tensors.slice_dtype', tensor: t.name, dtype: t.dtype },
  });
}

/**
 * Checks `ranges` against the tensor and plans the reads of the slice.
 * @throws {TensorFSError} `invalid_argument` (rule `tensors.slice_range`, `details.axis`): more
 *   ranges than axes, a range that is not two integers, or outside `0 ≤ start ≤ end ≤ dim`;
 *   `unsupported` (rule `tensors.slice_block`): a block-quantized (or sub-byte) tensor's last axis
 *   cut inside a block.
 */
export function planSlice(t: SliceableTensor, ranges: readonly SliceRange[]): SlicePlan {
  checkSliceable(t);
  if (!Array.isArray(ranges)) wrongArgument('tensors', 'ranges', 'an array of [start, end) pairs', ranges);
  const rank = t.shape.length;
  if (ranges.length > rank) {
    throw bad(`the tensor has ${rank} axes but ${ranges.length} ranges were given`, {
      axis: rank,
      rank,
      ranges: ranges.length,
    });
  }
  const lo: bigint[] = [];
  const hi: bigint[] = [];
  for (let axis = 0; axis < rank; axis++) {
    const dim = t.shape[axis]!;
    const r = ranges[axis];
    if (r === undefined) {
      lo.push(0n);
      hi.push(dim);
      continue;
    }
    if (!Array.isArray(r) || r.length !== 2) throw bad(`axis ${axis}: a range must be a [start, end) pair`, { axis });
    const s = toInt(r[0], axis, 'start');
    const e = toInt(r[1], axis, 'end');
    if (s < 0n || s > e || e > dim) {
      throw bad(`axis ${axis}: the range [${s}, ${e}) is not within 0 ≤ start ≤ end ≤ ${dim}`, {
        axis,
        start: s,
        end: e,
        dim,
      });
    }
    lo.push(s);
    hi.push(e);
  }
  const shape = lo.map((s, i) => hi[i]! - s);
  if (rank === 0) return { shape, byteLength: t.byteLength, runs: t.byteLength > 0 ? [[0, t.byteLength]] : [] };
  const unit = unitOf(t);
  const u = BigInt(unit.elements);
  const last = rank - 1;
  if (unit.elements > 1 && (lo[last]! % u !== 0n || hi[last]! % u !== 0n)) {
    const block = t.blockSize > 1;
    throw new TensorFSError(
      'unsupported',
      block
        ? `${t.dtype} is stored in blocks of ${t.blockSize} elements along the last axis: slice axis ${last} at multiples of ${unit.elements}`
        : `${t.dtype} packs ${unit.elements} elements a byte: slice axis ${last} at multiples of ${unit.elements}`,
      { details: { rule: 'tensors.slice_block', tensor: t.name, dtype: t.dtype, axis: last, block: unit.elements } },
    );
  }
  // Byte strides: the last axis in units, the others in whole rows of what follows.
  const stride: bigint[] = new Array(rank);
  stride[last] = BigInt(unit.bytes); // per unit
  let step = (t.shape[last]! / u) * BigInt(unit.bytes);
  for (let axis = last - 1; axis >= 0; axis--) {
    stride[axis] = step;
    step *= t.shape[axis]!;
  }
  const count = (axis: number): bigint => (axis === last ? (hi[axis]! - lo[axis]!) / u : hi[axis]! - lo[axis]!);
  const start = (axis: number): bigint => (axis === last ? lo[axis]! / u : lo[axis]!);
  // A slice's bytes: the product over axes of their counts × the unit's bytes.
  let byteLength = 1n;
  for (let axis = 0; axis < last; axis++) byteLength *= count(axis);
  byteLength *= count(last) * BigInt(unit.bytes);
  if (byteLength === 0n) return { shape, byteLength: 0, runs: [] };
  // The innermost axis that is cut: everything after it is whole, so one run per index of the
  // axes before it.
  let cut = last;
  while (cut > 0 && lo[cut] === 0n && hi[cut] === t.shape[cut]) cut--;
  const run = Number(count(cut) * stride[cut]!);
  const runs: Array<[number, number]> = [];
  const index = lo.slice(0, cut);
  const base = Number(start(cut) * stride[cut]!);
  for (;;) {
    let at = base;
    for (let axis = 0; axis < cut; axis++) at += Number(index[axis]! * stride[axis]!);
    runs.push([at, run]);
    let axis = cut - 1;
    while (axis >= 0) {
      index[axis]!++;
      if (index[axis]! < hi[axis]!) break;
      index[axis] = lo[axis]!;
      axis--;
    }
    if (axis < 0) break;
  }
  return { shape, byteLength: Number(byteLength), runs };
}

/** Record boundaries of the tensor (offsets where one object ends and the next starts). */
function boundaries(t: SliceableTensor): number[] {
  const out: number[] = [];
  if (!Array.isArray(t.records)) return out;
  let at = 0;
  for (const r of t.records) {
    at += r.length;
    out.push(at);
  }
  return out;
}

/** `options.gap` checked: an integer ≥ 0, or {@link SLICE_GAP_BYTES} when absent. */
function gapOf(options: SliceOptions): number {
  const { gap } = options;
  if (gap === undefined) return SLICE_GAP_BYTES;
  if (typeof gap !== 'number' || !Number.isSafeInteger(gap) || gap < 0) {
    wrongArgument('tensors', 'options.gap', 'an integer ≥ 0', gap);
  }
  return gap;
}

/**
 * Groups a plan's runs into reads: runs at most `gap` bytes apart share one read, unless the gap
 * holds a whole object of the tensor (so no object outside the slice is ever read) or the read
 * would pass 2 MiB. With `gap` 0 every run is its own read (only the slice's bytes are read).
 */
function groupRuns(
  t: SliceableTensor,
  runs: SlicePlan['runs'],
  gap = SLICE_GAP_BYTES,
): Array<{ at: number; end: number; first: number; last: number }> {
  const ends = boundaries(t);
  const groups: Array<{ at: number; end: number; first: number; last: number }> = [];
  let b = 0;
  for (let i = 0; i < runs.length; i++) {
    const [at, len] = runs[i]!;
    const g = groups[groups.length - 1];
    if (g !== undefined && at - g.end <= gap && at + len - g.at <= MAX_READ) {
      // Does an object lie wholly inside the gap [g.end, at)? Object k spans [ends[k-1], ends[k]).
      while (b < ends.length && ends[b]! <= g.end) b++;
      let inGap = false;
      for (let k = b; k < ends.length; k++) {
        const start = k === 0 ? 0 : ends[k - 1]!;
        if (start >= at) break;
        if (start >= g.end && ends[k]! <= at) {
          inGap = true;
          break;
        }
      }
      if (!inGap) {
        g.end = at + len;
        g.last = i;
        continue;
      }
    }
    groups.push({ at, end: at + len, first: i, last: i });
  }
  return groups;
}

/**
 * Reads a slice through `readRange` (tensor-relative byte ranges): the runs of {@link planSlice},
 * close ones merged into one read. Returns the slice's bytes, row-major.
 */
export async function readSliceWith(
  t: SliceableTensor,
  ranges: readonly SliceRange[],
  readRange: RangeReader,
  options: SliceOptions = {},
): Promise<Uint8Array> {
  if (typeof readRange !== 'function') wrongArgument('tensors', 'readRange', 'a function', readRange);
  checkOptions(options);
  const plan = planSlice(t, ranges);
  const gap = gapOf(options);
  const { signal, into } = options;
  if (into !== undefined && (!(into instanceof Uint8Array) || into.length < plan.byteLength)) {
    throw new TensorFSError('invalid_argument', 'the `into` buffer is too small for the slice', {
      details: {
        rule: 'tensors.slice_into',
        limit: into instanceof Uint8Array ? into.length : null,
        actual: plan.byteLength,
      },
    });
  }
  const { pool } = options;
  if (pool !== undefined && (typeof pool !== 'object' || pool === null || typeof pool.take !== 'function'))
    wrongArgument('tensors', 'options.pool', 'a TensorPool', pool);
  if (pool !== undefined && into !== undefined) {
    throw new TensorFSError('invalid_argument', '`pool` and `into` are not taken together', {
      details: { rule: 'tensors.slice_into' },
    });
  }
  const out =
    into !== undefined
      ? into.subarray(0, plan.byteLength)
      : (pool?.take(plan.byteLength) ?? new Uint8Array(plan.byteLength));
  const tasks: Array<() => Promise<void>> = [];
  let done = 0;
  for (const g of groupRuns(t, plan.runs, gap)) {
    const len = g.end - g.at;
    const dst = done;
    done += plan.runs.slice(g.first, g.last + 1).reduce((n, r) => n + r[1], 0);
    if (g.first === g.last) {
      // One run: straight into the result, long ones in pieces read at once.
      for (let o = 0; o < len; o += READ_PIECE) {
        const n = Math.min(READ_PIECE, len - o);
        tasks.push(() => readRange(g.at + o, out.subarray(dst + o, dst + o + n), signal));
      }
      continue;
    }
    tasks.push(async () => {
      const scratch = spareScratch.pop() ?? new Uint8Array(MAX_READ);
      try {
        const buf = scratch.subarray(0, len);
        await readRange(g.at, buf, signal);
        let at = dst;
        for (let i = g.first; i <= g.last; i++) {
          const [from, n] = plan.runs[i]!;
          out.set(buf.subarray(from - g.at, from - g.at + n), at);
          at += n;
        }
      } finally {
        if (spareScratch.length < SLICE_CONCURRENCY) spareScratch.push(scratch);
      }
    });
  }
  let next = 0;
  let failure: unknown;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < tasks.length) {
      const task = tasks[next++]!;
      try {
        throwIfAborted(signal);
        await task();
      } catch (error) {
        failure ??= error;
      }
    }
  };
  // Every read settles before the slice does.
  await Promise.all(Array.from({ length: Math.min(SLICE_CONCURRENCY, tasks.length) }, worker));
  if (failure !== undefined) {
    if (pool !== undefined && out.length > 0) pool.give(out);
    throw failure;
  }
  return out;
}

/**
 * The bytes a slice read touches (its reads, gaps read through included) and the number of reads,
 * with `options.gap` as `readSlice` takes it: for benches and tests.
 */
export function sliceReads(
  t: SliceableTensor,
  ranges: readonly SliceRange[],
  options: Pick<SliceOptions, 'gap'> = {},
): { bytes: number; reads: number } {
  checkOptions(options);
  const groups = groupRuns(t, planSlice(t, ranges).runs, gapOf(options));
  return { bytes: groups.reduce((n, g) => n + g.end - g.at, 0), reads: groups.length };
}

/** The bytes a slice read touches (its reads, gaps read through included): for benches and tests. */
export function sliceReadBytes(
  t: SliceableTensor,
  ranges: readonly SliceRange[],
  options: Pick<SliceOptions, 'gap'> = {},
): number {
  return sliceReads(t, ranges, options).bytes;
}

/** Slices bytes already in memory (row-major, `elementBytes` per element) by `ranges`. */
export function sliceBytes(
  bytes: Uint8Array,
  shape: readonly bigint[],
  elementBytes: number,
  ranges: readonly SliceRange[],
  name = '',
): { bytes: Uint8Array; shape: readonly bigint[] } {
  if (!(bytes instanceof Uint8Array)) wrongArgument('tensors', 'bytes', 'a Uint8Array', bytes);
  if (typeof elementBytes !== 'number' || !(elementBytes > 0)) {
    wrongArgument('tensors', 'elementBytes', 'a number > 0', elementBytes);
  }
  const t: SliceableTensor = {
    name,
    dtype: 'bytes',
    shape,
    blockSize: 1,
    typeSize: elementBytes,
    byteLength: bytes.length,
  };
  const plan = planSlice(t, ranges);
  const out = new Uint8Array(plan.byteLength);
  let done = 0;
  for (const [at, n] of plan.runs) {
    out.set(bytes.subarray(at, at + n), done);
    done += n;
  }
  return { bytes: out, shape: plan.shape };
}

/** A part of an encoded tensor, as `readEncodedSlice` needs it. */
interface PartView extends SliceableTensor {
  readSlice(ranges: readonly SliceRange[], options?: SliceOptions): Promise<Uint8Array>;
  read(options?: ReadOptions): Promise<Uint8Array>;
}

/** An encoded checkpoint tensor (structurally: its encoding and parts). */
export interface EncodedSliceable {
  readonly name: string;
  readonly shape: readonly bigint[];
  readonly encoding: {
    readonly scheme: string;
    readonly params: JsonValue;
    readonly parts: Readonly<Record<string, { readonly dtype: string; readonly shape: readonly bigint[] }>>;
  } | null;
  part(role: string): unknown;
}

type Encoding = NonNullable<EncodedSliceable['encoding']>;

function unsupportedSlice(t: EncodedSliceable & { encoding: Encoding }, why: string): TensorFSError {
  return new TensorFSError(
    'unsupported',
    `tensor ${JSON.stringify(t.name)} (${t.encoding.scheme}) cannot be sliced in its stored form: ${why}; read it with { decode: true } (decodes the whole tensor, then slices)`,
    { details: { rule: 'tensors.slice_encoded', tensor: t.name, scheme: t.encoding.scheme } },
  );
}

function withShape(params: JsonValue, shape: readonly bigint[]): JsonValue {
  return { ...(params as Record<string, JsonValue>), shape: shape.map(Number) };
}

function asPart(p: PartView, bytes: Uint8Array, shape: readonly bigint[]): EncodedPart {
  return { dtype: p.dtype, shape: shape.map(Number), bytes };
}

/**
 * A slice of an encoded checkpoint tensor in its stored form: the encoding with each part cut to
 * the slice (and `params.shape` the slice's shape), so it decodes (`@tensorfs/format/encodings`
 * `decode`) to the same values as slicing the decoded tensor. Reads only the parts' bytes the
 * slice needs. Supported: `int8` and `fp8_*` with `tensor`/`row`/`column`/`none` scales (any
 * ranges of a matrix), `bnb_nf4`/`bnb_fp4` rows whose elements start and end on whole blocks (not
 * nested). Other schemes and cuts are `unsupported` (rule `tensors.slice_encoded`).
 */
export async function readEncodedSlice(
  t: EncodedSliceable,
  ranges: readonly SliceRange[],
  options: SliceOptions = {},
): Promise<Encoded> {
  if (typeof t !== 'object' || t === null || typeof (t as { part?: unknown }).part !== 'function') {
    wrongArgument('tensors', 'view', 'an encoded checkpoint tensor view', t);
  }
  checkOptions(options);
  if (t.encoding === null || typeof t.encoding !== 'object') {
    throw new TensorFSError('invalid_argument', 'not an encoded tensor: read its slice with view.readSlice', {
      details: { rule: 'tensors.slice_encoded', tensor: t.name },
    });
  }
  const et = t as EncodedSliceable & { encoding: Encoding };
  const { scheme, params } = et.encoding;
  const p = params as Record<string, JsonValue>;
  const part = (role: string) => t.part(role) as PartView;
  const logical: SliceableTensor = {
    name: t.name,
    dtype: 'logical',
    shape: t.shape,
    blockSize: 1,
    typeSize: 1,
    byteLength: 0,
  };
  const plan = planSlice(logical, ranges);
  const rank = t.shape.length;
  const read = {
    ...(options.verify ? { verify: true } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.gap !== undefined ? { gap: options.gap } : {}),
  };
  if (scheme === 'int8' || scheme === 'fp8_e4m3fn' || scheme === 'fp8_e5m2') {
    const gran = p.granularity as string;
    if (rank > 2 && gran !== 'tensor' && gran !== 'none')
      throw unsupportedSlice(et, 'row or column scales of a tensor of more than 2 axes');
    if (gran === 'block') throw unsupportedSlice(et, '2-D block scales');
    const q = part('q');
    const parts: Record<string, EncodedPart> = { q: asPart(q, await q.readSlice(ranges, read), plan.shape) };
    if (gran !== 'none') {
      const s = part('scale');
      let cut: SliceRange[] = [];
      if (gran === 'row' && rank === 2) cut = [ranges[0] ?? [0, t.shape[0]!]];
      if (gran === 'column' && rank >= 1) cut = [ranges[rank - 1] ?? [0, t.shape[rank - 1]!]];
      // A scale stored [1, cols] for columns keeps its leading 1.
      if (gran === 'column' && s.shape.length === 2) cut = [[0, 1], ...cut];
      if (gran === 'row' && s.shape.length === 2) cut = [...cut, [0, 1]];
      const bytes = cut.length > 0 ? await s.readSlice(cut, read) : await s.read(read);
      const shape = cut.length > 0 ? planSlice(s, cut).shape : s.shape;
      parts.scale = asPart(s, bytes, shape);
    }
    return { scheme, params: withShape(params, plan.shape), parts };
  }
  if (scheme === 'bnb_nf4' || scheme === 'bnb_fp4') {
    if (p.nested === true) throw unsupportedSlice(et, 'nested (quantized) absmax');
    const bs = Number(p.blocksize);
    // Only a run of whole rows is one contiguous run of the flattened elements.
    for (let axis = 1; axis < rank; axis++) {
      const r = ranges[axis];
      if (r !== undefined && (BigInt(r[0]) !== 0n || BigInt(r[1]) !== t.shape[axis])) {
        throw unsupportedSlice(et, 'only leading-axis ranges (whole rows of the flattened elements)');
      }
    }
    const [first, end] = plan.runs.length === 0 ? [0, 0] : [plan.runs[0]![0], plan.runs[0]![0] + plan.runs[0]![1]];
    if (
      first % bs !== 0 ||
      (end % bs !== 0 && end !== Number(t.shape.reduce((a, b) => a * b, 1n))) ||
      first % 2 !== 0 ||
      end % 2 !== 0
    ) {
      throw unsupportedSlice(
        et,
        `the slice's elements [${first}, ${end}) do not start and end on whole ${bs}-element blocks`,
      );
    }
    const codes = part('codes');
    const absmax = part('absmax');
    const table = part('code_table');
    const nb = Math.ceil((end - first) / bs);
    const count = Number(t.shape.reduce((a, b) => a * b, 1n));
    // Codes in bytes [first/2, end/2) (to the part's end for the last block: storage may pad it),
    // as whole leading rows of the codes part, whatever its storage dtype and shape.
    const rows = Number(codes.shape[0] ?? 0n);
    const rowBytes = rows > 0 ? codes.byteLength / rows : 0;
    const a = first / 2;
    const b = end === count ? codes.byteLength : end / 2;
    if (!Number.isInteger(rowBytes) || rowBytes === 0 || a % rowBytes !== 0 || b % rowBytes !== 0) {
      throw unsupportedSlice(et, 'its codes part is not cut on whole storage elements');
    }
    const codeCut: SliceRange[] = [[a / rowBytes, b / rowBytes]];
    return {
      scheme,
      params: withShape(params, plan.shape),
      parts: {
        codes: asPart(codes, await codes.readSlice(codeCut, read), planSlice(codes, codeCut).shape),
        absmax: asPart(absmax, await absmax.readSlice([[first / bs, first / bs + nb]], read), [BigInt(nb)]),
        code_table: asPart(table, await table.read(read), table.shape),
      },
    };
  }
  throw unsupportedSlice(et, `no slicing rule for the ${scheme} scheme`);
}

const DECODED_WIDTH: Readonly<Record<string, number>> = { F32: 4, F16: 2, BF16: 2 };

/**
 * `view.readSlice`: the slice's bytes through `readRange` (a view's byte-range reader), or, for a
 * view without one, out of its whole bytes. With `decode`, the whole tensor decoded, then sliced.
 * An encoded checkpoint tensor's stored form is sliced by {@link readEncodedSlice} instead.
 * @internal
 */
export async function readViewSlice(
  view: TensorView,
  ranges: readonly SliceRange[],
  options: SliceOptions = {},
  readRange?: RangeReader,
): Promise<Uint8Array> {
  checkView(view);
  checkOptions(options);
  if (options.decode) {
    if (options.into !== undefined) {
      throw new TensorFSError('invalid_argument', '`into` is not taken with `decode`', {
        details: { rule: 'tensors.slice_into', tensor: view.name },
      });
    }
    const dtype = options.dtype ?? decodedDtypeOf(view);
    const width = DECODED_WIDTH[dtype]!;
    const values = { name: view.name, dtype, shape: view.shape, blockSize: 1, typeSize: width, byteLength: 0 };
    planSlice(values, ranges); // bad ranges fail before the read
    const whole = await view.read(options);
    return sliceBytes(whole, view.shape, width, ranges, view.name).bytes;
  }
  if (view.storage === 'encoded') {
    throw new TensorFSError(
      'unsupported',
      `tensor ${JSON.stringify(view.name)} is encoded: slice its stored form with readEncodedSlice, or read the slice with { decode: true }`,
      { details: { rule: 'tensors.slice_encoded', tensor: view.name } },
    );
  }
  if (readRange === undefined) {
    planSlice(view, ranges);
    const whole = await view.read(options);
    readRange = async (offset, target) => target.set(whole.subarray(offset, offset + target.length));
  }
  return readSliceWith(view, ranges, readRange, options);
}

/**
 * A slice of any tensor view out of its whole bytes (`view.read`, then cut): for `TensorView`
 * implementations that have no byte-range reader of their own. Same rules and errors as
 * `view.readSlice`.
 */
export function readSliceOf(
  view: TensorView,
  ranges: readonly SliceRange[],
  options: SliceOptions = {},
): Promise<Uint8Array> {
  return readViewSlice(view, ranges, options);
}
