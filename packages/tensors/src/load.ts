/**
 * Whole-model loads: {@link loadTensors} reads many tensors at once (bounded parallelism) into
 * one arena, over a small structural interface ({@link LoadableTensor}) that snapshot views
 * (`openTensors`), checkpoint component views (`openCheckpoint`) and anything shaped like them
 * satisfy.
 */
import { checkBytes, checkCount, checkObject, checkOptions } from './args.js';
import {
  type Progress,
  progressEvent,
  type RecordRef,
  TensorFSError,
  isTensorFSError,
  throwIfAborted,
  wrongArgument,
} from '@tensorfs/format';
import { defaultTensorPool, TensorPool } from './pool.js';
import type { ReadOptions } from './view.js';

/**
 * What {@link loadTensors} returns: key → bytes, in model order, plus {@link release}, which gives
 * the buffers back to the pool they came from (every returned view is then detached: byteLength
 * 0, so a use after release reads nothing, never another load's bytes). `using` releases it too.
 */
export class LoadedTensors extends Map<string, Uint8Array> {
  private buffers: ArrayBuffer[] = [];
  private pool: TensorPool | null = null;

  /** @internal */
  static of(entries: Iterable<[string, Uint8Array]>, buffers: ArrayBuffer[], pool: TensorPool | null): LoadedTensors {
    const out = new LoadedTensors(entries);
    out.buffers = buffers;
    out.pool = pool;
    return out;
  }

  /**
   * Gives the loaded buffers back to their pool (a caller's `into` arena is left as it is) and
   * empties the map. Every tensor returned is detached. Calling it again does nothing.
   */
  release(): void {
    const { buffers, pool } = this;
    this.buffers = [];
    this.clear();
    if (pool === null) return;
    for (const b of buffers) pool.giveBuffer(b);
  }

  /** {@link release}, for `using`. */
  [Symbol.dispose](): void {
    this.release();
  }
}

/** What {@link loadTensors} needs of one tensor (a `TensorView` or `CheckpointTensorView` has it). */
export interface LoadableTensor {
  readonly name: string;
  readonly dtype: string;
  readonly shape: readonly bigint[];
  /** The stored bytes' length (0 for an encoded checkpoint tensor: its parts hold the bytes). */
  readonly byteLength: number;
  /** The tensor's objects in order, when they hold exactly its bytes (see `TensorView.aligned`). */
  readonly records: readonly RecordRef[];
  /** False when the tensor is read by byte ranges of larger objects. */
  readonly aligned?: boolean;
  /** The checkpoint component it belongs to, if any. */
  readonly component?: string;
  /** The file it belongs to (a snapshot view's shard), if any. */
  readonly file?: string;
  /** An encoded checkpoint tensor's encoding (`null` or absent for a plain tensor). */
  readonly encoding?: { readonly parts: Readonly<Record<string, unknown>> } | null;
  /** An encoded checkpoint tensor's part, as a plain tensor. */
  part?(role: string): LoadableTensor;
  readInto(buffer: Uint8Array, offset?: number, options?: ReadOptions): Promise<Uint8Array>;
}

/** A model {@link loadTensors} takes: an opened snapshot, checkpoint, component, or tensor list. */
export type LoadableModel =
  | Iterable<LoadableTensor>
  | { readonly components: ReadonlyMap<string, { readonly tensors: ReadonlyMap<string, LoadableTensor> }> }
  | { readonly tensors: ReadonlyMap<string, LoadableTensor> | Iterable<LoadableTensor> };

/** Options of {@link loadTensors}. */
export interface LoadOptions {
  /** Load only these tensors (keys as in the result); each must exist (`not_found`). */
  names?: readonly string[];
  /**
   * Load one component: a checkpoint component's name; for a snapshot, a file (or shard) path.
   * Keys are then the bare tensor names.
   */
  component?: string;
  /** Load only tensors whose key starts with this (e.g. `model.layers.0.`). */
  prefix?: string;
  /** Tensors read at once (each a read on libuv's thread pool). @default 4 */
  concurrency?: number;
  /**
   * Rehash every object loaded and fail `corrupt` on a mismatch (nothing is returned). The hash
   * runs on the thread pool over the bytes already read (each object read once).
   * @default false
   */
  verify?: boolean;
  /** Cancels the load (`cancelled`); no read is left running when the promise settles. */
  signal?: AbortSignal;
  /**
   * The arena to load into, instead of one allocated for the load: at least
   * {@link loadedByteLength} bytes. On a failure it may hold some tensors' bytes.
   */
  into?: Uint8Array;
  /**
   * `arena`: one allocation for the whole load, each tensor a subarray (64-byte aligned);
   * `each`: one buffer per tensor. Either is taken from `pool`. Ignored with `into`.
   * @default 'arena' (measured: docs/benchmarks.md "Loads with a pool")
   */
  allocation?: 'arena' | 'each';
  /**
   * Where destinations come from and where `release()` gives them back (buffers of a failed or
   * cancelled load go back at once). Ignored with `into`. @default {@link defaultTensorPool}
   */
  pool?: TensorPool;
  /**
   * Called after each tensor (or part) is in memory: phase `load`, unit `bytes`, `bytes` of
   * `bytesTotal`, `tensors` of `tensorsTotal`, and `tensor`, the key just loaded.
   */
  onProgress?: (progress: Progress) => void;
}

/** Where each tensor starts in an arena. */
export const ARENA_ALIGN = 64;

interface Task {
  readonly key: string;
  readonly tensor: LoadableTensor;
  readonly length: number;
  offset: number;
}

const DEFAULT_CONCURRENCY = 4;

function wrongValue(what: string, expected: string, value: unknown): never {
  return wrongArgument('tensors', what, expected, value);
}

function isMap(value: unknown): value is ReadonlyMap<string, unknown> {
  return value instanceof Map;
}

/** Every tensor of the model with its key, in model order (encoded tensors as their parts). */
function collect(model: LoadableModel, component: string | undefined): Array<[string, LoadableTensor]> {
  const out: Array<[string, LoadableTensor]> = [];
  const m = model as { components?: unknown; tensors?: unknown };
  if (isMap(m.components)) {
    const components = m.components as ReadonlyMap<string, { tensors: ReadonlyMap<string, LoadableTensor> }>;
    if (component !== undefined && !components.has(component)) {
      throw new TensorFSError('not_found', 'no such component in the model', {
        details: { rule: 'tensors.load_component', component, components: [...components.keys()] },
      });
    }
    const many = component === undefined && components.size > 1;
    for (const [name, c] of components) {
      if (component !== undefined && name !== component) continue;
      if (typeof c !== 'object' || c === null || !isMap(c.tensors))
        wrongValue('model.components[]', 'a component with a tensors Map', c);
      for (const [tn, t] of c.tensors) out.push([many ? `${name}/${tn}` : tn, t]);
    }
    return out;
  }
  const list = m.tensors !== undefined ? m.tensors : model;
  if (
    !isMap(list) &&
    (typeof list !== 'object' || list === null || typeof (list as Iterable<unknown>)[Symbol.iterator] !== 'function')
  ) {
    wrongValue('model.tensors', 'a Map or an iterable of tensor views', list);
  }
  const tensors = isMap(list)
    ? (list as ReadonlyMap<string, LoadableTensor>).values()
    : (list as Iterable<LoadableTensor>);
  let seen = false;
  for (const t of tensors) {
    checkTensor(t, 'model tensor');
    if (component !== undefined && t.component !== component && t.file !== component) continue;
    seen = true;
    out.push([t.name, t]);
  }
  if (component !== undefined && !seen) {
    throw new TensorFSError('not_found', 'no tensor of the model belongs to this component or file', {
      details: { rule: 'tensors.load_component', component },
    });
  }
  return out;
}

function checkTensor(t: unknown, what: string): asserts t is LoadableTensor {
  const v = t as Partial<LoadableTensor> | null;
  if (typeof v !== 'object' || v === null || typeof v.name !== 'string' || typeof v.readInto !== 'function') {
    wrongValue(what, 'a tensor view (name, byteLength, records, readInto)', t);
  }
  if (!Number.isSafeInteger(v.byteLength) || v.byteLength! < 0)
    wrongValue(`${what}.byteLength`, 'an integer ≥ 0', v.byteLength);
}

/** Encoded checkpoint tensors become their parts (`name#role`), stored as they are. */
function expand(key: string, tensor: LoadableTensor, into: Array<[string, LoadableTensor]>): void {
  checkTensor(tensor, 'model tensor');
  const enc = tensor.encoding;
  if (enc !== null && enc !== undefined && typeof tensor.part === 'function') {
    if (typeof enc.parts !== 'object' || enc.parts === null)
      wrongValue('model tensor.encoding.parts', 'an object', enc.parts);
    for (const role of Object.keys(enc.parts)) {
      const part = tensor.part(role);
      checkTensor(part, 'model tensor part');
      into.push([`${key}#${role}`, part]);
    }
  } else {
    into.push([key, tensor]);
  }
}

function checkModel(model: unknown): asserts model is LoadableModel {
  const m = model as { components?: unknown; tensors?: unknown; [Symbol.iterator]?: unknown } | null;
  if (
    typeof m !== 'object' ||
    m === null ||
    !(isMap(m.components) || m.tensors !== undefined || typeof m[Symbol.iterator] === 'function')
  ) {
    wrongValue('model', 'a TensorSet, Checkpoint, component or iterable of tensor views', model);
  }
}

/** The tasks of a load: keys checked unique, `names` each found, in model order. */
function plan(model: LoadableModel, options: LoadOptions): Task[] {
  const all: Array<[string, LoadableTensor]> = [];
  for (const [key, t] of collect(model, options.component)) expand(key, t, all);
  const byKey = new Map<string, LoadableTensor>();
  for (const [key, t] of all) {
    if (byKey.has(key)) {
      throw new TensorFSError('invalid_argument', 'two tensors of the model load under one name; pass `component`', {
        details: { rule: 'tensors.load_duplicate', tensor: key },
      });
    }
    byKey.set(key, t);
  }
  let keys = [...byKey.keys()];
  if (options.names !== undefined) {
    const wanted = new Set(options.names);
    for (const name of wanted) {
      if (!byKey.has(name)) {
        throw new TensorFSError('not_found', 'no such tensor in the model', {
          details: { rule: 'tensors.load_name', tensor: name },
        });
      }
    }
    keys = keys.filter((k) => wanted.has(k));
  }
  if (options.prefix !== undefined) keys = keys.filter((k) => k.startsWith(options.prefix!));
  return keys.map((key) => {
    const tensor = byKey.get(key)!;
    return { key, tensor, length: tensor.byteLength, offset: 0 };
  });
}

function align(n: number): number {
  return Math.ceil(n / ARENA_ALIGN) * ARENA_ALIGN;
}

/** Places the tasks in an arena; returns its length. */
function place(tasks: Task[]): number {
  let at = 0;
  for (const t of tasks) {
    t.offset = at;
    at += align(t.length);
  }
  return at;
}

function checkLoadOptions(options: LoadOptions): void {
  checkOptions(options);
  if (options.names !== undefined) {
    if (!Array.isArray(options.names)) wrongValue('options.names', 'an array of strings', options.names);
    for (const n of options.names) if (typeof n !== 'string') wrongValue('options.names[]', 'a string', n);
  }
  for (const k of ['component', 'prefix'] as const) {
    if (options[k] !== undefined && typeof options[k] !== 'string') wrongValue(`options.${k}`, 'a string', options[k]);
  }
  if (options.concurrency !== undefined) {
    checkCount(options.concurrency, 'options.concurrency');
    if (options.concurrency < 1) wrongValue('options.concurrency', 'an integer ≥ 1', options.concurrency);
  }
  if (options.into !== undefined) checkBytes(options.into, 'options.into');
  if (options.allocation !== undefined && options.allocation !== 'arena' && options.allocation !== 'each') {
    wrongValue('options.allocation', "'arena' or 'each'", options.allocation);
  }
  if (options.pool !== undefined && !(options.pool instanceof TensorPool))
    wrongValue('options.pool', 'a TensorPool', options.pool);
}

/**
 * The bytes an `into` arena needs for a load with these options (tensors 64-byte aligned).
 * @throws {TensorFSError} as {@link loadTensors} does for a bad model, selection or option.
 */
export function loadedByteLength(model: LoadableModel, options: Omit<LoadOptions, 'into'> = {}): number {
  checkModel(model);
  checkObject(options, 'options');
  checkLoadOptions(options);
  return place(plan(model, options));
}

/** The tensor's records when they hold exactly its bytes (so each can be hashed in place). */
function wholeRecords(t: LoadableTensor): readonly RecordRef[] | null {
  if (t.aligned === false || !Array.isArray(t.records) || t.records.length === 0) return null;
  let n = 0;
  for (const r of t.records) n += r.length;
  return n === t.byteLength ? t.records : null;
}

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  // WebCrypto digests run on libuv's thread pool, beside the reads, off the main thread.
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', bytes));
  let hex = '';
  for (const b of digest) hex += b.toString(16).padStart(2, '0');
  return hex;
}

/** Reads one tensor into `dest`, verified as asked. */
async function loadOne(task: Task, dest: Uint8Array, options: LoadOptions): Promise<void> {
  const { tensor } = task;
  const records = options.verify ? wholeRecords(tensor) : null;
  const read: ReadOptions = {
    ...(options.signal ? { signal: options.signal } : {}),
    // Tensors read by byte ranges of larger objects are verified by the store (the whole object).
    ...(options.verify && records === null ? { verify: true } : {}),
  };
  await tensor.readInto(dest, 0, read);
  if (records === null) return;
  let at = 0;
  for (const r of records) {
    throwIfAborted(options.signal);
    const actual = `sha256:${await sha256Hex(dest.subarray(at, at + r.length))}`;
    if (actual !== r.digest) {
      throw new TensorFSError(
        'corrupt',
        `a stored object does not hash to its id (tensor ${JSON.stringify(task.key)})`,
        {
          details: { rule: 'tensors.object_digest', tensor: task.key, digest: r.digest, actual },
        },
      );
    }
    at += r.length;
  }
}

/**
 * Loads many tensors of a model into memory at once: `concurrency` reads in flight, each tensor
 * read straight from the store's object files into its destination (no intermediate copy): a
 * 64-byte-aligned arena (default) or a buffer a tensor, taken from a {@link TensorPool} (the
 * process-wide {@link defaultTensorPool} unless `pool` is given), or `into`. `release()` on the result gives the buffers back to the pool for the next load. Encoded checkpoint tensors load as their parts, under
 * `name#role`. Keys are tensor names (`component/name` for a checkpoint of several components
 * loaded whole).
 *
 * @param model - a `TensorSet` (`openTensors`), a `Checkpoint` (`openCheckpoint`), one of its
 *   components, or any iterable of tensor views.
 * @returns key → bytes, in model order ({@link LoadedTensors}, a Map). Nothing is returned on a
 *   failure, and the buffers taken for it are back in the pool.
 * @throws {TensorFSError} `invalid_argument` (bad option, `into` too small, two tensors under one
 *   key), `not_found` (a name, component or object missing), `corrupt` (an object of the wrong
 *   length, or under `verify` one that does not hash to its id), `cancelled`, `io`.
 * @example
 * const set = await openTensors(store, 'acme/llama');
 * using weights = await loadTensors(set, { prefix: 'model.layers.0.', verify: true });
 * // … use weights.get('model.layers.0.mlp.up_proj.weight'); released at the end of the block
 */
export async function loadTensors(model: LoadableModel, options: LoadOptions = {}): Promise<LoadedTensors> {
  checkModel(model);
  checkObject(options, 'options');
  checkLoadOptions(options);
  throwIfAborted(options.signal);
  const tasks = plan(model, options);
  const total = place(tasks);
  const pool = options.into !== undefined ? null : (options.pool ?? defaultTensorPool());
  let arena: Uint8Array | null = null;
  const owned: ArrayBuffer[] = [];
  if (options.into !== undefined) {
    if (options.into.length < total) {
      throw new TensorFSError('invalid_argument', 'the `into` buffer is too small for the load', {
        details: { rule: 'tensors.load_into', limit: options.into.length, actual: total },
      });
    }
    arena = options.into;
  } else if ((options.allocation ?? 'arena') === 'arena') {
    arena = pool!.take(total);
    owned.push(arena.buffer as ArrayBuffer);
    // Pooled memory holds earlier bytes: the padding between tensors is zeroed.
    for (const t of tasks) arena.fill(0, t.offset + t.length, t.offset + align(t.length));
  }
  const bytes = tasks.reduce((n, t) => n + t.length, 0);
  const dests = tasks.map((t) => {
    if (arena !== null) return arena.subarray(t.offset, t.offset + t.length);
    const d = pool!.take(t.length);
    if (d.length > 0) owned.push(d.buffer as ArrayBuffer);
    return d;
  });
  let next = 0;
  let tensorsDone = 0;
  let bytesDone = 0;
  let failure: unknown;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < tasks.length) {
      const i = next++;
      const task = tasks[i]!;
      try {
        throwIfAborted(options.signal);
        await loadOne(task, dests[i]!, options);
      } catch (error) {
        failure ??= error;
        return;
      }
      tensorsDone++;
      bytesDone += task.length;
      options.onProgress?.(
        progressEvent('load', 'bytes', {
          bytes: bytesDone,
          bytesTotal: bytes,
          tensors: tensorsDone,
          tensorsTotal: tasks.length,
          tensor: task.key,
        }),
      );
    }
  };
  const concurrency = Math.min(options.concurrency ?? DEFAULT_CONCURRENCY, Math.max(1, tasks.length));
  // Every worker settles before the load does: no read writes into `into` after a failure.
  await Promise.all(Array.from({ length: concurrency }, worker));
  if (failure !== undefined) {
    // Nothing was handed out: the buffers go straight back to the pool.
    if (pool !== null) for (const b of owned) pool.giveBuffer(b);
    if (options.signal?.aborted && !(isTensorFSError(failure) && failure.code === 'cancelled')) {
      throwIfAborted(options.signal);
    }
    throw failure;
  }
  return LoadedTensors.of(
    tasks.map((t, i) => [t.key, dests[i]!]),
    owned,
    pool,
  );
}
