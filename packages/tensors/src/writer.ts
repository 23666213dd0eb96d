import type { Lease, Store } from '@tensorfs/cas';
import {
  type ManifestFileEntry,
  RECORD_GRID_BYTES,
  type RecordRef,
  TensorFSError,
  throwIfAborted,
  validatePath,
} from '@tensorfs/format';
import { type Container, ggufContainer, type HeaderTensor, safetensorsContainer } from './containers.js';
import type { GgufTemplate } from './open.js';
import type { TensorView } from './view.js';

/** Tensor bytes handed to {@link TensorWriter.add}: one buffer, or buffers in order (sync or async). */
export type TensorData = Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

/** Options of a {@link TensorWriter}. */
export interface TensorWriterOptions {
  /** The safetensors `__metadata__` map (string to string). Not allowed for GGUF. */
  metadata?: ReadonlyMap<string, string> | Readonly<Record<string, string>>;
  /**
   * The GGUF header to write around the tensors: version, byte order, alignment and the metadata
   * block, carried verbatim (from `TensorSet.ggufHeader(file)`).
   * @default GGUF v3, little-endian, alignment 32, no metadata
   */
  ggufHeader?: GgufTemplate;
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

/** The default GGUF header: v3, little-endian, 32-byte alignment, no metadata. */
const EMPTY_GGUF: GgufTemplate = {
  version: 3,
  endianness: 'little',
  alignment: 32,
  metadata: { raw: new Uint8Array(0), count: 0 },
};

/**
 * Writes a safetensors or GGUF file into the store without building it: each tensor's bytes become
 * their own objects (cut every 64 MiB from the tensor's start, exactly as the planner cuts an
 * imported file, so a written file and an imported file share every object), inherited tensors keep
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
  private readonly container: Container;
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
    validatePath(path);
    this.path = path;
    this.container = containerFor(path, options);
    this.held = options.lease;
  }

  /**
   * The lease holding every object this writer wrote or inherited (hand it to `commit`).
   * @throws {TensorFSError} `invalid_argument` before the first call, when the writer has no lease yet.
   */
  get lease(): Lease {
    if (this.held === undefined) {
      throw new TensorFSError('invalid_argument', 'the writer has no lease before its first call', {
        details: { path: this.path },
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
    const name = options.name ?? view.name;
    await this.step(async () => {
      const byteLength = this.admit(name, view.dtype, view.shape);
      if (byteLength !== view.byteLength) {
        throw new TensorFSError('invalid_argument', 'the tensor does not have this length in the target format', {
          details: { tensor: name, dtype: view.dtype, expected: byteLength, actual: view.byteLength },
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
      const built = this.container.header(this.tensors);
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
        profile: this.container.profile,
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
        details: { path: this.path },
      });
    }
    if (this.state !== 'open') {
      throw new TensorFSError('invalid_argument', `the writer is ${this.state}`, { details: { path: this.path } });
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
        details: { tensor: name, path: this.path },
      });
    }
    return this.container.byteLength(name, dtype, shape);
  }

  private push(tensor: WrittenTensor): void {
    this.names.add(tensor.name);
    this.tensors.push(tensor);
  }

  /** Stores a tensor's bytes as objects of at most 64 MiB cut from its start; checks the length. */
  private async writeChunks(name: string, byteLength: number, data: TensorData): Promise<RecordRef[]> {
    const records: RecordRef[] = [];
    let total = 0;
    for await (const chunk of gridChunks(data, byteLength)) {
      throwIfAborted(this.options.signal);
      total += chunk.reduce((n, c) => n + c.length, 0);
      if (total > byteLength) break;
      records.push(await this.put(chunk));
    }
    if (total !== byteLength) {
      throw new TensorFSError('invalid_argument', 'tensor data does not have the length its dtype and shape need', {
        details: { tensor: name, expected: byteLength, actual: total > byteLength ? `more than ${byteLength}` : total },
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

/** The container a path's extension selects. */
function containerFor(path: string, options: TensorWriterOptions): Container {
  if (path.endsWith('.safetensors')) {
    if (options.ggufHeader !== undefined) {
      throw new TensorFSError('invalid_argument', 'ggufHeader is for .gguf files', { details: { path } });
    }
    return safetensorsContainer(metadataMap(options.metadata));
  }
  if (path.endsWith('.gguf')) {
    if (options.metadata !== undefined) {
      throw new TensorFSError('invalid_argument', 'GGUF metadata comes from ggufHeader, not metadata', {
        details: { path },
      });
    }
    return ggufContainer(options.ggufHeader ?? EMPTY_GGUF);
  }
  throw new TensorFSError('invalid_argument', 'a TensorWriter writes .safetensors or .gguf files', {
    details: { path },
  });
}

function metadataMap(
  metadata: ReadonlyMap<string, string> | Readonly<Record<string, string>> | undefined,
): ReadonlyMap<string, string> | null {
  if (metadata === undefined) return null;
  const map = metadata instanceof Map ? metadata : new Map(Object.entries(metadata));
  for (const [key, value] of map) {
    if (typeof key !== 'string' || typeof value !== 'string') {
      throw new TensorFSError('invalid_argument', 'safetensors metadata maps strings to strings', {
        details: { key: String(key) },
      });
    }
  }
  return map;
}

function toDimension(value: bigint | number): bigint {
  if (typeof value === 'bigint' && value >= 0n) return value;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  throw new TensorFSError('invalid_argument', 'a dimension is a non-negative integer', {
    details: { actual: typeof value === 'bigint' || typeof value === 'number' ? value : typeof value },
  });
}

/**
 * Regroups a stream of buffers into the planner's grid: runs of pieces of exactly 64 MiB from the
 * start, the last one shorter. Pieces are subarrays of the input (no copy). Yields one more
 * (possibly short) group past `byteLength` if the input is longer, so the caller can report it.
 */
async function* gridChunks(data: TensorData, byteLength: number): AsyncGenerator<Uint8Array[]> {
  const input: Iterable<Uint8Array> | AsyncIterable<Uint8Array> = data instanceof Uint8Array ? [data] : data;
  let group: Uint8Array[] = [];
  let filled = 0;
  let emitted = 0;
  const target = (): number => Math.max(1, Math.min(RECORD_GRID_BYTES, byteLength - emitted));
  for await (const buffer of input) {
    if (!(buffer instanceof Uint8Array)) {
      throw new TensorFSError('invalid_argument', 'tensor data must be Uint8Array pieces', {
        details: { actual: typeof buffer },
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
        emitted += filled;
        group = [];
        filled = 0;
        if (emitted > byteLength) return;
      }
    }
  }
  if (filled > 0) yield group;
}
