import type { Lease, Store } from '@tensorfs/format/store';
import { checkObject, checkOptions, checkView } from './args.js';
import {
  type ContainerCodec,
  codecForPath,
  type GgufTemplate,
  type HeaderTensor,
  type ManifestFileEntry,
  type RecordRef,
  TensorFSError,
  throwIfAborted,
  validatePath,
} from '@tensorfs/format';
import { checkTensorSeams, cutTensor, type Seams } from '@tensorfs/planner';
import type { TensorView } from './view.js';

/** Tensor bytes handed to {@link TensorWriter.add}: one buffer, or buffers in order (sync or async). */
export type TensorData = Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

/** Options of a {@link TensorWriter}. */
export interface TensorWriterOptions {
  /** The safetensors `__metadata__` map (string to string). Not allowed for GGUF. */
  metadata?: ReadonlyMap<string, string> | Readonly<Record<string, string>>;
  /**
   * The GGUF header to write around the tensors: version, byte order, alignment and the metadata
   * block, carried verbatim (from `TensorSet.ggufHeader(file)`). Same as `template` for a `.gguf`.
   * @default GGUF v3, little-endian, alignment 32, no metadata
   */
  ggufHeader?: GgufTemplate;
  /**
   * The container template to write around the tensors, as `TensorSet.template(file)` returns it
   * (whatever the format: safetensors `{ metadata }`, the GGUF header block, ...).
   * @default the format's empty template
   */
  template?: unknown;
  /**
   * Tensor name → byte offsets inside that tensor where a cut must fall, exactly as
   * `planAndHash`'s `seams`: the tensor is cut at its seams, then every 64 MiB from each segment's
   * start, so a file written with seams shares its objects with the same file planned with them.
   * Applies to tensors added (or copied through) by name in the new file.
   */
  seams?: Seams;
  /**
   * The lease that keeps the written and inherited objects alive until a snapshot references them.
   * @default a new lease of the store (ten minutes, renewed while the process lives), released by {@link TensorWriter.close}
   */
  lease?: Lease;
  /** The file mode of the entry. @default 0o644 */
  mode?: 0o644 | 0o755;
  /** Cancels pending and later writes (`cancelled`). */
  signal?: AbortSignal;
}

/** Options of {@link TensorWriter.inherit}. */
export interface InheritOptions {
  /** The name in the new file. @default the view's name */
  name?: string;
}

/** One tensor of the file being written. */
interface WrittenTensor extends HeaderTensor {
  readonly records: readonly RecordRef[];
}

/**
 * Writes a tensor container file (safetensors, GGUF: any codec of `@tensorfs/format`) into the
 * store without building it: each tensor's bytes become their own objects (cut by the planner's
 * `cutTensor`, at the tensor's seams and every 64 MiB, exactly as the planner cuts an imported
 * file, so a written file and an imported file share every object), inherited tensors keep
 * their objects, and {@link TensorWriter.finish} writes the header object and returns the file's
 * manifest entry. Tensors are laid out in the order they were added.
 *
 * Every object written or inherited is held by a lease until a snapshot references it; a writer
 * that fails or is abandoned leaves nothing referenced.
 *
 * @example
 * ```ts
 * const writer = new TensorWriter(store, 'model.safetensors');
 * await writer.add('w', 'F32', [2n, 2n], bytes);
 * await writer.inherit(source.get('b'));
 * const entry = await writer.finish();
 * await commit(store, { base: 'main', put: [entry], ref: 'main' });
 * await writer.close();
 * ```
 */
export class TensorWriter {
  /** The file's snapshot path. */
  readonly path: string;
  private readonly codec: ContainerCodec;
  private readonly template: unknown;
  private readonly tensors: WrittenTensor[] = [];
  private readonly names = new Set<string>();
  private readonly paddings = new Map<number, RecordRef>();
  private busy = false;
  private state: 'open' | 'finished' | 'failed' = 'open';

  /** The lease passed in, or the writer's own once its first call made it. */
  private held: Lease | undefined;

  /**
   * A writer for `path` (ending in `.safetensors` or `.gguf`). Nothing is written until the first
   * `add`, `inherit` or `finish`.
   * @throws {TensorFSError} `invalid_argument` for a bad path, a format option of the other format or a bad metadata map.
   */
  constructor(
    private readonly store: Store,
    path: string,
    private readonly options: TensorWriterOptions = {},
  ) {
    checkObject(store, 'store', 'a Store');
    checkOptions(options);
    validatePath(path);
    this.path = path;
    [this.codec, this.template] = codecFor(path, options);
    this.held = options.lease;
  }

  /**
   * The lease holding every object this writer wrote or inherited (hand it to `commit`).
   * @throws {TensorFSError} `invalid_argument` before the first call, when the writer has no lease yet.
   */
  get lease(): Lease {
    if (this.held === undefined) {
      throw new TensorFSError('invalid_argument', 'the writer has no lease before its first call', {
        details: { rule: 'tensors.writer_lease', path: this.path },
      });
    }
    return this.held;
  }

  /**
   * Adds a tensor from its bytes. The bytes must be exactly what the dtype and shape need (for GGUF
   * block types: `elements / blockSize * typeSize`); they are checked as they arrive.
   *
   * @param dtype - a safetensors dtype, or a ggml type name for GGUF.
   * @param shape - row-major dimensions (reversed into ggml order for GGUF).
   * @throws {TensorFSError} `invalid_argument` (duplicate or bad name, bad dtype or shape, data of the
   *   wrong length, a call while another add is pending or after finish), `cancelled`, or a store error.
   */
  async add(name: string, dtype: string, shape: readonly (bigint | number)[], data: TensorData): Promise<void> {
    await this.step(async () => {
      const dims = shape.map(toDimension);
      const byteLength = this.admit(name, dtype, dims);
      const records = await this.writeChunks(name, byteLength, data);
      this.push({ name, dtype, shape: dims, byteLength, records });
    });
  }

  /**
   * Adds a tensor of another stored file, keeping its objects: no byte is read or written when the
   * view is record-aligned. A view that is not (its file was stored whole) is copied through.
   *
   * @throws {TensorFSError} `invalid_argument` (duplicate name, or a dtype/shape the target format cannot
   *   hold with these bytes), plus the errors of {@link TensorWriter.add} for a copied view.
   */
  async inherit(view: TensorView, options: InheritOptions = {}): Promise<void> {
    checkView(view);
    checkOptions(options);
    const name = options.name ?? view.name;
    await this.step(async () => {
      const byteLength = this.admit(name, view.dtype, view.shape);
      if (byteLength !== view.byteLength) {
        throw new TensorFSError('invalid_argument', 'the tensor does not have this length in the target format', {
          details: {
            rule: 'tensors.tensor_length',
            tensor: name,
            dtype: view.dtype,
            expected: byteLength,
            actual: view.byteLength,
          },
        });
      }
      let records: readonly RecordRef[];
      if (view.aligned) {
        records = view.records;
        if (records.length > 0) this.lease.add(records.map((r) => r.digest));
      } else {
        records = await this.writeChunks(name, byteLength, view.pieces({ signal: this.options.signal }));
      }
      this.push({ name, dtype: view.dtype, shape: view.shape, byteLength, records });
    });
  }

  /**
   * Writes the header object and returns the file's manifest entry (header record, then each
   * tensor's records, with GGUF alignment padding as records of their own). Commit it with `commit`.
   * @throws {TensorFSError} `invalid_argument` after a failure or a second finish, or a header-writer error.
   */
  async finish(): Promise<ManifestFileEntry> {
    let entry: ManifestFileEntry | undefined;
    await this.step(async () => {
      const built = this.codec.writeHeader(this.template, this.tensors);
      const header = await this.put([built.bytes]);
      const records: RecordRef[] = [header];
      for (let i = 0; i < this.tensors.length; i++) {
        records.push(...this.tensors[i]!.records);
        const padding = built.padding[i]!;
        if (padding > 0) records.push(await this.paddingRecord(padding));
      }
      const size = records.reduce((n, r) => n + r.length, 0);
      entry = {
        path: this.path,
        kind: 'file',
        mode: this.options.mode ?? 0o644,
        size,
        profile: this.codec.profile,
        records,
      };
    });
    this.state = 'finished';
    return entry!;
  }

  /** Releases the writer's own lease (not a lease passed in). Call it once the entry is committed. */
  async close(): Promise<void> {
    if (this.held !== undefined && this.held !== this.options.lease) await this.held.release();
  }

  /** Runs one add/inherit/finish: one at a time, only while open; a failure fails the writer. */
  private async step(run: () => Promise<void>): Promise<void> {
    if (this.busy) {
      throw new TensorFSError('invalid_argument', 'wait for the previous add to finish (tensors keep their order)', {
        details: { rule: 'tensors.writer_busy', path: this.path },
      });
    }
    if (this.state !== 'open') {
      throw new TensorFSError('invalid_argument', `the writer is ${this.state}`, {
        details: { rule: 'tensors.writer_state', path: this.path },
      });
    }
    this.busy = true;
    try {
      throwIfAborted(this.options.signal);
      this.held ??= await this.store.lease({ purpose: `write ${this.path}` });
      await run();
    } catch (error) {
      this.state = 'failed';
      // Nothing of a failed writer can be referenced any more: let GC have its objects now
      // (its own lease only; a lease passed in belongs to the caller).
      await this.close().catch(() => {});
      throw error;
    } finally {
      this.busy = false;
    }
  }

  /** Checks a new tensor's name, dtype and shape and returns its byte length. */
  private admit(name: string, dtype: string, shape: readonly bigint[]): number {
    if (typeof name !== 'string' || this.names.has(name)) {
      throw new TensorFSError('invalid_argument', 'a tensor of this name was already added', {
        details: { rule: 'tensors.writer_duplicate', tensor: name, path: this.path },
      });
    }
    return this.codec.byteLength(name, dtype, shape);
  }

  private push(tensor: WrittenTensor): void {
    this.names.add(tensor.name);
    this.tensors.push(tensor);
  }

  /** Stores a tensor's bytes as objects cut by the planner's rule (seams, 64 MiB grid); checks the length. */
  private async writeChunks(name: string, byteLength: number, data: TensorData): Promise<RecordRef[]> {
    const records: RecordRef[] = [];
    let total = 0;
    const seams = this.options.seams?.[name];
    const lengths = cutTensor(byteLength, seams === undefined ? [] : checkTensorSeams(name, seams, byteLength));
    for await (const chunk of cutChunks(data, lengths)) {
      throwIfAborted(this.options.signal);
      total += chunk.reduce((n, c) => n + c.length, 0);
      if (total > byteLength) break;
      records.push(await this.put(chunk));
    }
    if (total !== byteLength) {
      throw new TensorFSError('invalid_argument', 'tensor data does not have the length its dtype and shape need', {
        details: {
          rule: 'tensors.tensor_length',
          tensor: name,
          expected: byteLength,
          actual: total > byteLength ? `more than ${byteLength}` : total,
        },
      });
    }
    return records;
  }

  private async put(pieces: readonly Uint8Array[]): Promise<RecordRef> {
    const { id, length } = await this.store.put(pieces, { lease: this.lease });
    return { digest: id, length };
  }

  private async paddingRecord(length: number): Promise<RecordRef> {
    let record = this.paddings.get(length);
    if (record === undefined) {
      record = await this.put([new Uint8Array(length)]);
      this.paddings.set(length, record);
    }
    return record;
  }
}

/** The codec a path's ending selects, and the template to write with, checked by that codec. */
function codecFor(path: string, options: TensorWriterOptions): [ContainerCodec, unknown] {
  const codec: ContainerCodec | undefined = codecForPath(path);
  if (codec === undefined) {
    throw new TensorFSError('invalid_argument', 'a TensorWriter writes tensor container files (.safetensors, .gguf)', {
      details: { rule: 'tensors.writer_path', path },
    });
  }
  // `metadata` and `ggufHeader` are the older, per-format spellings of `template`.
  const given = [
    options.template,
    options.ggufHeader,
    options.metadata === undefined ? undefined : { metadata: options.metadata },
  ].filter((t) => t !== undefined);
  if (given.length > 1) {
    throw new TensorFSError('invalid_argument', 'give one of template, ggufHeader, metadata', {
      details: { rule: 'tensors.writer_template', path },
    });
  }
  if (given.length === 0) return [codec, codec.defaultTemplate];
  if ((options.ggufHeader !== undefined || options.metadata !== undefined) && !matchesLegacy(codec, options)) {
    throw new TensorFSError('invalid_argument', `this option is not for ${codec.extensions.join('/')} files`, {
      details: { rule: 'tensors.writer_template', path },
    });
  }
  return [codec, codec.checkTemplate(given[0])];
}

/** The older per-format options and the one format each belongs to (kept for compatibility). */
const LEGACY_OPTIONS = { ggufHeader: 'gguf', metadata: 'safetensors' } as const;

function matchesLegacy(codec: ContainerCodec, options: TensorWriterOptions): boolean {
  const option = options.ggufHeader !== undefined ? 'ggufHeader' : 'metadata';
  return LEGACY_OPTIONS[option] === codec.name;
}

function toDimension(value: bigint | number): bigint {
  if (typeof value === 'bigint' && value >= 0n) return value;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  throw new TensorFSError('invalid_argument', 'a dimension is a non-negative integer', {
    details: {
      rule: 'tensors.shape',
      actual: typeof value === 'bigint' || typeof value === 'number' ? value : typeof value,
    },
  });
}

/**
 * Regroups a stream of buffers into records of the given `lengths` (the planner's cut of the
 * tensor). Pieces are subarrays of the input (no copy). Yields one more (possibly short) group
 * past the last length if the input is longer, so the caller can report it.
 */
export async function* cutChunks(data: TensorData, lengths: readonly number[]): AsyncGenerator<Uint8Array[]> {
  const input: Iterable<Uint8Array> | AsyncIterable<Uint8Array> = data instanceof Uint8Array ? [data] : data;
  let group: Uint8Array[] = [];
  let filled = 0;
  let k = 0;
  // Past the last record, any byte is one too many: a group of 1 reports the excess.
  const target = (): number => lengths[k] ?? 1;
  for await (const buffer of input) {
    if (!(buffer instanceof Uint8Array)) {
      throw new TensorFSError('invalid_argument', 'tensor data must be Uint8Array pieces', {
        details: { rule: 'tensors.data_type', actual: typeof buffer },
      });
    }
    let rest = buffer;
    while (rest.length > 0) {
      const take = Math.min(rest.length, target() - filled);
      group.push(rest.subarray(0, take));
      filled += take;
      rest = rest.subarray(take);
      if (filled === target()) {
        yield group;
        if (k++ >= lengths.length) return;
        group = [];
        filled = 0;
      }
    }
  }
  if (filled > 0) yield group;
}
