import {
  type ByteSource,
  checkByteSource,
  MAX_PLAN_RECORDS,
  type ObjectId,
  objectIdFromDigest,
  type PlanProfile,
  type Progress,
  progressEvent,
  RECORD_GRID_BYTES,
  type RecordRef,
  TensorFSError,
  throwIfAborted,
  toTensorFSError,
} from '@tensorfs/format';
import { blobCuts, type Cuts, checkSeams, countTensorRecords, type Seams, tensorCuts } from './cuts.js';
import { type Hasher, nobleHasher } from './hasher.js';
import { detectLayout } from './layout.js';
import { readInto } from './read.js';

/** One record, as reported to {@link PlanOptions.onRecord}. */
export interface PlannedRecord {
  /** Position in the plan's record list. */
  index: number;
  /** Offset of the record's first byte in the file. */
  offset: number;
  length: number;
  digest: ObjectId;
}

/** Options of {@link planAndHash}. */
export interface PlanOptions {
  /**
   * Tensor name → byte offsets inside that tensor where a cut must fall (e.g. where a fused qkv
   * splits into q, k, v). Seams only move cut points; each seam segment is cut on the 64 MiB grid
   * from its own start. A seam naming no non-empty tensor of the file, or an offset not strictly
   * inside the tensor, is `invalid_argument` (so is any seam when the file is `blob-v1`).
   */
  seams?: Seams;
  /** @default nobleHasher() */
  hasher?: Hasher;
  /** Aborts the plan with `cancelled`. */
  signal?: AbortSignal;
  /**
   * Called in file order as bytes are hashed: phase `plan`, unit `bytes`, `bytes` hashed so far of
   * `bytesTotal` (the file size).
   */
  onProgress?: (progress: Progress) => void;
  /**
   * Buffers hashed at once. Memory is about `(concurrency + 1) × 64 MiB` for large files.
   * @default min(hasher.parallelism ?? 1, 8) (at most 9 × 64 MiB of buffers unless asked for more)
   */
  concurrency?: number;
  /**
   * Called in record order as soon as each record's digest is known, with the exact bytes that
   * were hashed (one or more pieces) when the record was buffered (≤ 64 MiB), or `null` for a
   * larger `blob-v1` record (re-read it from the source). Awaited before those buffers are reused,
   * and never called again after a failure. This is how a store admits objects reading each byte once.
   */
  onRecord?: (record: PlannedRecord, bytes: readonly Uint8Array[] | null) => void | Promise<void>;
  /**
   * Called in record order as soon as a buffered record's bytes are read, BEFORE its digest is
   * known (hashing runs meanwhile), with the exact bytes that will be hashed. The promise it
   * returns is awaited before the record's {@link PlanOptions.onRecord} call and before those
   * buffers are reused; the bytes must not be modified. If it fails, the plan fails with its error
   * (earlier records may already have had their `onRecord`). Never called for a record larger than
   * a buffer (`onRecord` gets `null` for it). A store uses it to write a temp while the record hashes.
   */
  onRead?: (record: ReadRecord, bytes: readonly Uint8Array[]) => void | Promise<void>;
  /**
   * Buffer placement for direct I/O: every buffered record of at least {@link ALIGNED_RECORD_MIN}
   * bytes starts at a multiple of `align` bytes from the start of its buffer, and the buffer
   * extends at least to its length rounded up to `align` (those slack bytes hold anything). Records
   * are then read in one read per run of contiguous records (of about 4 MiB). With a hasher whose
   * `allocate` returns page-aligned buffers, a store can write such records with O_DIRECT straight
   * from the bytes it is given. A power of two from 1 (packed, the default) to 1 MiB.
   * @default 1
   */
  align?: number;
}

/** Records shorter than this are packed after the previous one even when {@link PlanOptions.align} is set. */
export const ALIGNED_RECORD_MIN = 256 * 1024;

/** A record whose bytes were read but whose digest is not known yet (see {@link PlanOptions.onRead}). */
export interface ReadRecord {
  /** Position in the plan's record list. */
  index: number;
  /** Offset of the record's first byte in the file. */
  offset: number;
  length: number;
}

/** A file cut into records and hashed. */
export interface Plan {
  profile: PlanProfile;
  /** File size in bytes: the sum of the record lengths. */
  size: number;
  /** The records in file order; their concatenation is the file. */
  records: RecordRef[];
  /**
   * Tensor profiles only: tensor name → inclusive `[first, last]` record index span, in data order.
   * A tensor with no bytes has no record and no entry.
   */
  tensors?: Map<string, [number, number]>;
}

/** The default concurrency never exceeds this, whatever the hasher's thread count (memory bound). */
const DEFAULT_MAX_CONCURRENCY = 8;

/** Bytes fed to a streaming hash per read when a `blob-v1` record is larger than a buffer. */
const STREAM_CHUNK_BYTES = 16 * 1024 * 1024;

/**
 * Chooses the profile of a file from its own bytes, cuts it into records and hashes them,
 * reading the file once, sequentially, with bounded memory.
 *
 * `safetensors-v1` / `gguf-v1` when the file parses as one (header region, then every non-empty
 * tensor on the 64 MiB grid, padding and trailing bytes as records of their own); `blob-v1` (one
 * record, none if empty) for everything else, including files that fail to parse and tensor files
 * that would need more than 1,000,000 records.
 * @throws {TensorFSError} `invalid_argument` (bad seams or options), `limit_exceeded` (seams push
 * the plan past 1,000,000 records), `cancelled`, `io` and the source's or hasher's own errors.
 */
export async function planAndHash(source: ByteSource, options: PlanOptions = {}): Promise<Plan> {
  checkOptions(options);
  const { signal } = options;
  try {
    throwIfAborted(signal);
    checkByteSource(source);
    const size = checkSize(source.size);
    const cuts = await chooseCuts(source, size, options.seams, signal);
    const hasher = options.hasher ?? nobleHasher();
    const concurrency = checkConcurrency(
      options.concurrency ?? Math.min(hasher.parallelism ?? 1, DEFAULT_MAX_CONCURRENCY),
    );
    const align = checkAlign(options.align ?? 1);
    const digests = await hashCuts(source, cuts, { ...options, hasher, concurrency, size, align });
    const records = cuts.lengths.map((length, i) => ({ digest: digests[i]!, length }));
    return cuts.tensors
      ? { profile: cuts.profile, size, records, tensors: cuts.tensors }
      : { profile: cuts.profile, size, records };
  } catch (err) {
    if (signal?.aborted)
      throw new TensorFSError('cancelled', 'planning cancelled', {
        details: { rule: 'planner.cancelled' },
        cause: signal.reason,
      });
    throw toTensorFSError(err);
  }
}

async function chooseCuts(
  source: ByteSource,
  size: number,
  seams: Seams | undefined,
  signal?: AbortSignal,
): Promise<Cuts> {
  const layout = await detectLayout(source, signal);
  const tensorPlan = layout !== undefined && countTensorRecords(layout, size) <= MAX_PLAN_RECORDS ? layout : undefined;
  const checked = checkSeams(seams, tensorPlan);
  return tensorPlan ? tensorCuts(tensorPlan, size, checked) : blobCuts(size);
}

function wrongOption(what: string, expected: string, value: unknown): never {
  throw new TensorFSError('invalid_argument', `${what} must be ${expected}`, {
    details: { rule: 'planner.argument', argument: what, actual: value === null ? 'null' : typeof value },
  });
}

/** The option types, checked before anything runs: a wrong one is `invalid_argument`, never a TypeError turned `internal`. */
function checkOptions(options: PlanOptions): void {
  if (typeof options !== 'object' || options === null) wrongOption('options', 'an object', options);
  const { signal, hasher } = options;
  if (signal !== undefined && (typeof signal !== 'object' || signal === null || typeof signal.aborted !== 'boolean')) {
    wrongOption('options.signal', 'an AbortSignal', signal);
  }
  if (hasher !== undefined) {
    if (typeof hasher !== 'object' || hasher === null) wrongOption('options.hasher', 'a Hasher', hasher);
    if (typeof hasher.digest !== 'function') wrongOption('options.hasher.digest', 'a function', hasher.digest);
    if (typeof hasher.stream !== 'function') wrongOption('options.hasher.stream', 'a function', hasher.stream);
  }
  for (const name of ['onProgress', 'onRecord', 'onRead'] as const) {
    const f = options[name];
    if (f !== undefined && typeof f !== 'function') wrongOption(`options.${name}`, 'a function', f);
  }
}

function checkSize(size: number): number {
  if (!Number.isSafeInteger(size) || size < 0) {
    throw new TensorFSError('invalid_argument', 'source size must be an integer ≥ 0', {
      details: { rule: 'planner.source_size', actual: size },
    });
  }
  return size;
}

function checkConcurrency(n: number): number {
  if (!Number.isSafeInteger(n) || n < 1 || n > 64) {
    throw new TensorFSError('invalid_argument', 'concurrency must be an integer in 1…64', {
      details: { rule: 'planner.concurrency', actual: n },
    });
  }
  return n;
}

function checkAlign(n: number): number {
  if (!Number.isSafeInteger(n) || n < 1 || n > 1 << 20 || (n & (n - 1)) !== 0) {
    throw new TensorFSError('invalid_argument', 'align must be a power of two in 1…1 MiB', {
      details: { rule: 'planner.align', actual: n },
    });
  }
  return n;
}

interface HashContext extends PlanOptions {
  hasher: Hasher;
  concurrency: number;
  size: number;
  align: number;
}

/** Digests of every cut, in order. */
async function hashCuts(source: ByteSource, cuts: Cuts, ctx: HashContext): Promise<ObjectId[]> {
  const bufferSize = Math.min(RECORD_GRID_BYTES, ctx.size);
  if (cuts.lengths.length === 1 && cuts.lengths[0]! > bufferSize) {
    return [await streamRecord(source, cuts.offsets[0]!, cuts.lengths[0]!, ctx)];
  }
  return hashBuffered(source, cuts, bufferSize, ctx);
}

/** A run of consecutive records read into one buffer. */
interface Batch {
  /** Index of the first record. */
  first: number;
  /** Number of records. */
  count: number;
  offset: number;
  length: number;
  /** Where each record starts in the buffer. */
  starts: number[];
  /** Reads that fill the buffer: `[buffer position, file offset, length]`. */
  reads: [number, number, number][];
}

/**
 * A batch is read in pieces of about this many bytes (cut at record boundaries), one after the
 * other: each record is hashed and handed to `onRead` as soon as its own piece is in, instead of
 * after the whole batch (a writer then starts on the first record while the rest is still read).
 */
const READ_PIECE_BYTES = 4 * 1024 * 1024;

/**
 * Groups records into batches that fit a buffer of `capacity` bytes (every record fits one
 * buffer): packed, except that records of at least {@link ALIGNED_RECORD_MIN} bytes start at a
 * multiple of `align` and have room up to their length rounded up to `align`. A batch's reads
 * are runs of contiguous records, each closed at the first record boundary past
 * {@link READ_PIECE_BYTES}.
 */
function* batches(cuts: Cuts, capacity: number, align: number): Generator<Batch> {
  const { offsets, lengths } = cuts;
  const up = (n: number): number => Math.ceil(n / align) * align;
  let i = 0;
  while (i < lengths.length) {
    const batch: Batch = { first: i, count: 0, offset: offsets[i]!, length: 0, starts: [], reads: [] };
    let end = 0; // end of the last record's bytes in the buffer
    while (i < lengths.length) {
      const length = lengths[i]!;
      const big = align > 1 && length >= ALIGNED_RECORD_MIN;
      const start = big ? up(end) : end;
      if (batch.count > 0 && (big ? start + up(length) : start + length) > capacity) break;
      const last = batch.reads[batch.reads.length - 1];
      if (last !== undefined && start === end && last[2] < READ_PIECE_BYTES) last[2] += length;
      else batch.reads.push([start, offsets[i]!, length]);
      batch.starts.push(start);
      batch.count++;
      batch.length += length;
      end = start + length;
      i++;
    }
    yield batch;
  }
}

interface Pending {
  batch: Batch;
  buffer: Uint8Array;
  /** Settles when every piece of the batch is read. */
  filled: Promise<void>;
  /** Each record's digest. */
  digests: Promise<Uint8Array>[];
  /** What `onRead` returned for each record (awaited before its `onRecord` and before the buffer is reused). */
  reads: Promise<unknown>[];
}

/**
 * Reads batches sequentially into a pool of `concurrency + 1` buffers, each batch piece by piece
 * (see {@link READ_PIECE_BYTES}); a record is hashed and handed to `onRead` as soon as its piece
 * is in. The next batch's read starts once the current one is in, so reading overlaps hashing
 * even when the hasher runs on this thread; up to `concurrency` batches hash at once.
 */
async function hashBuffered(source: ByteSource, cuts: Cuts, bufferSize: number, ctx: HashContext): Promise<ObjectId[]> {
  const { hasher, signal, align } = ctx;
  // Room for one record of `bufferSize` bytes rounded up to the alignment.
  bufferSize = Math.ceil(bufferSize / align) * align;
  const ids: ObjectId[] = new Array(cuts.lengths.length);
  const free: Uint8Array[] = [];
  const owned: Uint8Array[] = [];
  const take = (): Uint8Array => {
    const buffer = free.pop();
    if (buffer) return buffer;
    const fresh = hasher.allocate?.(bufferSize) ?? new Uint8Array(bufferSize);
    owned.push(fresh);
    return fresh;
  };
  const queue: Pending[] = [];
  let done = 0;
  const drain = async (): Promise<void> => {
    const { batch, buffer, digests, reads } = queue[0]!;
    // Record by record: the first record's onRecord need not wait for the rest of its batch.
    for (let k = 0; k < batch.count; k++) {
      const index = batch.first + k;
      const digest = await digests[k]!;
      await reads[k];
      throwIfAborted(signal);
      ids[index] = objectIdFromDigest(digest);
      if (ctx.onRecord) {
        const offset = cuts.offsets[index]!;
        const length = cuts.lengths[index]!;
        const start = batch.starts[k]!;
        await ctx.onRecord({ index, offset, length, digest: ids[index] }, [buffer.subarray(start, start + length)]);
      }
    }
    queue.shift();
    // Every record's onRead has settled (each was awaited above): the buffer can be reused.
    done += batch.length;
    ctx.onProgress?.(progressEvent('plan', 'bytes', { bytes: done, bytesTotal: ctx.size }));
    free.push(buffer);
  };
  /** Starts reading `batch` piece by piece; each record hashes (and goes to `onRead`) once its piece is in. */
  const start = (batch: Batch): Pending => {
    const buffer = take();
    const ready: Promise<void>[] = [];
    let piece: Promise<void> = Promise.resolve();
    for (const [at, offset, length] of batch.reads) {
      piece = piece.then(() => readInto(source, offset, buffer.subarray(at, at + length), signal));
      // The records this piece completes (a record never spans two pieces).
      while (ready.length < batch.count && batch.starts[ready.length]! < at + length) ready.push(piece);
    }
    while (ready.length < batch.count) ready.push(piece); // empty records at the very end
    const record = (k: number): Uint8Array => {
      const at = batch.starts[k]!;
      return buffer.subarray(at, at + cuts.lengths[batch.first + k]!);
    };
    const digests = ready.map((r, k) => quiet(r.then(() => hasher.digest([record(k)], signal))));
    const onRead = ctx.onRead;
    const reads = onRead
      ? ready.map((r, k) =>
          quiet(
            r.then(() => {
              const index = batch.first + k;
              return onRead({ index, offset: cuts.offsets[index]!, length: cuts.lengths[index]! }, [record(k)]);
            }),
          ),
        )
      : [];
    return { batch, buffer, filled: quiet(piece), digests, reads };
  };
  const it = batches(cuts, bufferSize, align);
  let current = it.next();
  let pending = current.done ? undefined : start(current.value);
  while (pending) {
    await pending.filled;
    throwIfAborted(signal);
    queue.push(pending);
    current = it.next();
    pending = undefined;
    if (!current.done) {
      if (free.length === 0 && owned.length > ctx.concurrency) await drain();
      pending = start(current.value);
    }
    while (queue.length > ctx.concurrency) await drain();
  }
  while (queue.length > 0) await drain();
  // Only after success: after a failure a worker may still be hashing from these buffers.
  for (const buffer of owned) hasher.release?.(buffer);
  return ids;
}

/** Hashes one record larger than a buffer with a streaming hash, double-buffered. */
async function streamRecord(source: ByteSource, offset: number, length: number, ctx: HashContext): Promise<ObjectId> {
  const { hasher, signal } = ctx;
  const stream = hasher.stream();
  const buffers = [0, 1].map(() => hasher.allocate?.(STREAM_CHUNK_BYTES) ?? new Uint8Array(STREAM_CHUNK_BYTES));
  const chunk = (at: number, k: number): Promise<Uint8Array> => {
    const target = buffers[k % 2]!.subarray(0, Math.min(STREAM_CHUNK_BYTES, offset + length - at));
    return quiet(readInto(source, at, target, signal).then(() => target));
  };
  let k = 0;
  let next: Promise<Uint8Array> | undefined = chunk(offset, 0);
  for (let at = offset; next; k++) {
    const bytes = await next;
    throwIfAborted(signal);
    at += bytes.length;
    next = at < offset + length ? chunk(at, k + 1) : undefined;
    await stream.update(bytes);
    ctx.onProgress?.(progressEvent('plan', 'bytes', { bytes: at - offset, bytesTotal: ctx.size }));
  }
  const digest = objectIdFromDigest(await stream.digest());
  for (const buffer of buffers) hasher.release?.(buffer);
  await ctx.onRecord?.({ index: 0, offset, length, digest }, null);
  return digest;
}

/** Marks a promise as handled (its failure is observed later, or made moot by an earlier one). */
function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

/** The JSON form of a plan: `{"profile","size","records":[{"digest","length"}],"tensors":{name:[first,last]}}`. */
export interface PlanJSON {
  profile: PlanProfile;
  size: number;
  records: { digest: ObjectId; length: number }[];
  tensors?: Record<string, [number, number]>;
}

/**
 * The JSON form of a plan (`spec/v1/plan.schema.json`): `tensors` in data order, present only for
 * tensor profiles.
 */
export function planToJSON(plan: Plan): PlanJSON {
  if (typeof plan !== 'object' || plan === null) wrongOption('plan', 'a Plan', plan);
  if (!Array.isArray(plan.records)) wrongOption('plan.records', 'an array', plan.records);
  for (const r of plan.records) if (typeof r !== 'object' || r === null) wrongOption('plan.records[]', 'an object', r);
  if (plan.tensors !== undefined && !(plan.tensors instanceof Map)) wrongOption('plan.tensors', 'a Map', plan.tensors);
  const out: PlanJSON = {
    profile: plan.profile,
    size: plan.size,
    records: plan.records.map(({ digest, length }) => ({ digest, length })),
  };
  if (plan.tensors) {
    // A null-prototype object keeps any tensor name (`__proto__` included) as an own key.
    const tensors: Record<string, [number, number]> = Object.create(null);
    for (const [name, [first, last]] of plan.tensors) tensors[name] = [first, last];
    out.tensors = tensors;
  }
  return out;
}
