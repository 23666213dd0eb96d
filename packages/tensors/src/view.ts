import type { Store } from '@tensorfs/format/store';
import { checkBytes, checkCount, checkOptions } from './args.js';
import {
  type ByteSource,
  canReadInto,
  readInto,
  type ObjectId,
  RECORD_GRID_BYTES,
  type RecordRef,
  TensorFSError,
  isTensorFSError,
  throwIfAborted,
  toTensorFSError,
} from '@tensorfs/format';
import { readDecoded, readDecodedInto } from './decoded.js';
import type { ReadOptions, TensorEncoding, TensorFormat, TensorPart, TensorStorage, TensorView } from './tensor.js';

export type { ReadOptions, TensorEncoding, TensorFormat, TensorPart, TensorStorage, TensorView } from './tensor.js';
import { readViewSlice, type SliceOptions, type SliceRange } from './slice.js';

/** The largest piece a tensor that is not record-aligned is read in (the planner's grid). */
export const RANGE_PIECE_BYTES = RECORD_GRID_BYTES;

/** `length` cut into windows of at most {@link RANGE_PIECE_BYTES}. */
function windows(length: number): number[] {
  const out: number[] = [];
  for (let at = 0; at < length; at += RANGE_PIECE_BYTES) out.push(Math.min(RANGE_PIECE_BYTES, length - at));
  return out;
}

/** What a view needs of the file it belongs to. @internal */
export interface ViewFile {
  readonly store: Store;
  readonly path: string;
  readonly format: TensorFormat;
  /** The byte order of the file's tensor data (big only for a big-endian GGUF file). */
  readonly byteOrder?: 'little' | 'big';
  /** The component of the file's tensors (default: {@link componentOfPath} of `path`). */
  readonly component?: string;
  /**
   * A byte source over the file's whole record list, shared by the file's views (so an object
   * rehashed under `verify` is rehashed once, not once per tensor).
   */
  source(verify: boolean): ByteSource;
}

/** The facts of one tensor, before it is bound to a file. @internal */
export interface ViewFacts {
  readonly name: string;
  readonly dtype: string;
  readonly shape: readonly bigint[];
  readonly blockSize: number;
  readonly typeSize: number;
  readonly byteOffset: number;
  readonly byteLength: number;
  /** The span's records, or `null` when the tensor is not record-aligned. */
  readonly records: readonly RecordRef[] | null;
}

/**
 * The component of a snapshot file's tensors: its top folder (a Diffusers component), or `model`
 * for a file at the root, as `convert` names the components of a snapshot it converts.
 */
export function componentOfPath(path: string): string {
  const slash = path.indexOf('/');
  return slash < 0 ? 'model' : path.slice(0, slash);
}

const NO_PARTS: Readonly<Record<string, TensorPart>> = Object.freeze({});

/** A plain {@link TensorView} over a stored file. @internal */
export class StoredTensorView implements TensorView {
  readonly storage: TensorStorage = 'plain';
  readonly encoding: TensorEncoding | null = null;
  readonly parts: Readonly<Record<string, TensorPart>> = NO_PARTS;
  readonly component: string;
  readonly name: string;
  readonly file: string;
  readonly format: TensorFormat;
  readonly byteOrder: 'little' | 'big';
  readonly dtype: string;
  readonly shape: readonly bigint[];
  readonly blockSize: number;
  readonly typeSize: number;
  readonly byteOffset: number;
  readonly byteLength: number;
  readonly aligned: boolean;
  readonly records: readonly RecordRef[];
  readonly digests: readonly ObjectId[];

  constructor(
    private readonly owner: ViewFile,
    facts: ViewFacts,
  ) {
    this.name = facts.name;
    this.component = owner.component ?? componentOfPath(owner.path);
    this.file = owner.path;
    this.format = owner.format;
    this.byteOrder = owner.byteOrder ?? 'little';
    this.dtype = facts.dtype;
    this.shape = Object.freeze([...facts.shape]);
    this.blockSize = facts.blockSize;
    this.typeSize = facts.typeSize;
    this.byteOffset = facts.byteOffset;
    this.byteLength = facts.byteLength;
    this.aligned = facts.records !== null;
    this.records = Object.freeze([...(facts.records ?? [])]);
    this.digests = Object.freeze(this.records.map((r) => r.digest));
  }

  part(role: string): TensorView {
    throw new TensorFSError('not_found', 'a plain tensor has no parts', {
      details: { rule: 'tensors.no_part', tensor: this.name, role },
    });
  }

  pieces(options: ReadOptions = {}): AsyncIterable<Uint8Array> {
    checkOptions(options);
    return this.aligned ? this.objectPieces(options) : this.rangePieces(options);
  }

  async read(options: ReadOptions = {}): Promise<Uint8Array> {
    checkOptions(options);
    if (options.decode) return readDecoded(this, options);
    if (this.aligned && this.records.length === 1) {
      for await (const piece of this.objectPieces(options)) return piece;
    }
    return this.readInto(new Uint8Array(this.byteLength), 0, options);
  }

  async readInto(buffer: Uint8Array, offset = 0, options: ReadOptions = {}): Promise<Uint8Array> {
    checkBytes(buffer, 'buffer');
    checkCount(offset, 'offset');
    checkOptions(options);
    if (options.decode) return readDecodedInto(this, buffer, offset, options);
    if (!Number.isSafeInteger(offset) || offset < 0 || offset + this.byteLength > buffer.length) {
      throw new TensorFSError('invalid_argument', 'the buffer is too small for the tensor', {
        details: {
          rule: 'tensors.buffer_size',
          tensor: this.name,
          limit: buffer.length - offset,
          actual: this.byteLength,
          offset,
        },
      });
    }
    // Memory stays bounded by one object (or one 64 MiB window) whatever the tensor's size. A
    // store source with its own `readInto` fills the buffer directly; otherwise an aligned tensor
    // is read object by object (one read ahead) and copied, the fewest copies the store allows.
    const source = this.owner.source(options.verify ?? false);
    let done = 0;
    if (this.aligned && !canReadInto(source)) {
      for await (const piece of this.objectPieces(options)) {
        buffer.set(piece, offset + done);
        done += piece.length;
      }
    } else {
      const lengths = this.aligned ? this.records.map((r) => r.length) : windows(this.byteLength);
      for (const length of lengths) {
        throwIfAborted(options.signal);
        const target = buffer.subarray(offset + done, offset + done + length);
        await this.wrap(() => readInto(source, this.byteOffset + done, target, options.signal));
        done += length;
      }
    }
    if (done !== this.byteLength) throw this.shortRead(done);
    return buffer.subarray(offset, offset + done);
  }

  readSlice(ranges: readonly SliceRange[], options: SliceOptions = {}): Promise<Uint8Array> {
    return readViewSlice(this, ranges, options, (at, target, signal) =>
      this.wrap(() => readInto(this.owner.source(options.verify ?? false), this.byteOffset + at, target, signal)),
    );
  }

  /** One piece per record, reading one record ahead of the consumer. */
  private async *objectPieces(options: ReadOptions): AsyncGenerator<Uint8Array> {
    const { records } = this;
    let next = records.length > 0 ? this.readRecord(records[0]!, options) : null;
    for (let i = 0; i < records.length; i++) {
      const current = next!;
      next = i + 1 < records.length ? this.readRecord(records[i + 1]!, options) : null;
      // A consumer that stops early must not leave an unhandled rejection behind.
      next?.catch(() => {});
      yield await current;
    }
  }

  /** Byte ranges of the file's records, in pieces of at most {@link RANGE_PIECE_BYTES}. */
  private async *rangePieces(options: ReadOptions): AsyncGenerator<Uint8Array> {
    const source = this.owner.source(options.verify ?? false);
    let done = 0;
    for (const length of windows(this.byteLength)) {
      throwIfAborted(options.signal);
      const bytes = await this.wrap(() => source.read(this.byteOffset + done, length, options.signal));
      if (bytes.length !== length) throw this.shortRead(done + bytes.length);
      // A source may reuse its buffer on the next read: hand out a copy.
      yield bytes.slice();
      done += length;
    }
  }

  private async readRecord(record: RecordRef, options: ReadOptions): Promise<Uint8Array> {
    throwIfAborted(options.signal);
    const bytes = await this.wrap(() =>
      this.owner.store.readObject(record.digest, { verify: options.verify ?? false }),
    );
    if (bytes.length !== record.length) {
      throw new TensorFSError('corrupt', 'a stored object does not have its recorded length', {
        details: {
          rule: 'tensors.object_length',
          tensor: this.name,
          path: this.file,
          digest: record.digest,
          expected: record.length,
          actual: bytes.length,
        },
      });
    }
    return bytes;
  }

  /** Runs a store read, adding this tensor and file to the details of any failure. */
  private async wrap<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (error) {
      const base = isTensorFSError(error) ? error : toTensorFSError(error, 'io');
      throw new TensorFSError(base.code, `${base.message} (tensor ${JSON.stringify(this.name)})`, {
        details: { ...base.details, tensor: this.name, path: this.file },
        cause: error,
      });
    }
  }

  private shortRead(actual: number): TensorFSError {
    return new TensorFSError('corrupt', 'the stored bytes of a tensor are shorter than its header says', {
      details: { rule: 'tensors.tensor_length', tensor: this.name, path: this.file, expected: this.byteLength, actual },
    });
  }
}

/** A view of the same bytes under another dtype/shape of the same byte length (internal). */
export function retyped(
  view: TensorView,
  dtype: string,
  shape: readonly number[],
  typeSize = view.typeSize,
): TensorView {
  if (dtype === view.dtype && shape.length === view.shape.length && shape.every((d, i) => BigInt(d) === view.shape[i]))
    return view;
  const out: TensorView = {
    storage: view.storage,
    component: view.component,
    encoding: view.encoding,
    parts: view.parts,
    part: view.part.bind(view),
    name: view.name,
    file: view.file,
    format: view.format,
    dtype,
    shape: shape.map(BigInt),
    blockSize: 1,
    typeSize,
    byteOffset: view.byteOffset,
    byteLength: view.byteLength,
    aligned: view.aligned,
    records: view.records,
    digests: view.digests,
    pieces: view.pieces.bind(view),
    read: view.read.bind(view),
    readInto: view.readInto.bind(view),
    readSlice: (ranges, options) => readViewSlice(out, ranges, options),
  };
  return out;
}
