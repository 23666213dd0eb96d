/**
 * The one tensor view type of `@tensorfs/tensors` (snapshot files and checkpoint components alike)
 * and the options of its reads. Types only: `view.ts` implements them, `decoded.ts` reads through them.
 */
import type { ContainerFormat, JsonValue, ObjectId, RecordRef } from '@tensorfs/format';
import type { TensorPool } from './pool.js';

/** How a tensor is stored (see {@link TensorView.storage}). */
export type TensorStorage = 'plain' | 'encoded';

/** One part of an encoded tensor: a plain array of its own dtype and shape. */
export interface TensorPart {
  readonly dtype: string;
  readonly shape: readonly bigint[];
  /** The part's records, in order. */
  readonly records: readonly RecordRef[];
  /** The part's length in bytes. */
  readonly byteLength: number;
}

/**
 * How an encoded tensor is stored: its scheme and params and each part's dtype and shape (the
 * logical dtype and shape are the view's own `dtype` and `shape`; records and byte lengths of the
 * parts are in {@link TensorView.parts}).
 */
export interface TensorEncoding {
  /** The scheme of `@tensorfs/format/encodings` (`bnb_nf4`, `ggml`, `gptq`, ...). */
  readonly scheme: string;
  readonly params: JsonValue;
  /** Each part's dtype and shape, by role, in role order. */
  readonly parts: Readonly<Record<string, { readonly dtype: string; readonly shape: readonly bigint[] }>>;
}

/** The container a tensor lives in: a format of `@tensorfs/format`'s codec table. */
export type TensorFormat = ContainerFormat;

/** Options of every tensor read. */
export interface ReadOptions {
  /**
   * Rehash every object read and fail with `corrupt` on a digest mismatch (one SHA-256 per byte,
   * about 1.1 GiB/s a core). Lengths are always checked.
   * @default false
   */
  verify?: boolean;
  /** Cancels the read (`cancelled`). */
  signal?: AbortSignal;
  /**
   * Read the tensor's values instead of its stored bytes: GGML block types decoded, F32/F16/BF16
   * converted, as little-endian `dtype` (see `readDecoded`).
   * @default false
   */
  decode?: boolean;
  /** With `decode`: the output dtype (default F32 for block types, else the stored dtype). */
  dtype?: 'F32' | 'F16' | 'BF16';
}

/** One tensor of a stored safetensors or GGUF file, read straight from the store's objects. */
export interface TensorView {
  /** The tensor's name in its file. */
  readonly name: string;
  /** The snapshot path of the file holding the tensor's bytes (the shard, for a sharded model). */
  readonly file: string;
  /** The container format of that file. */
  readonly format: TensorFormat;
  /** The byte order of the stored elements: `big` only in a big-endian GGUF file. */
  readonly byteOrder?: 'little' | 'big';
  /**
   * The safetensors dtype (`F32`, `BF16`, ...) or the ggml type name (`F16`, `Q4_K`, ...); for an
   * encoded tensor, its logical dtype (what a decoded read gives by default).
   */
  readonly dtype: string;
  /** The shape, row-major (outermost dimension first), for GGUF too. */
  readonly shape: readonly bigint[];
  /** Elements per block (1 for plain dtypes; 32 or 256 for ggml block types). */
  readonly blockSize: number;
  /** Bytes per block (the element size for plain dtypes; may be fractional for sub-byte safetensors dtypes). */
  readonly typeSize: number;
  /** Where the tensor's bytes start in its file. */
  readonly byteOffset: number;
  /** The tensor's length in bytes (for an encoded tensor: its parts' lengths summed). */
  readonly byteLength: number;
  /**
   * True when the tensor's bytes are exactly a run of whole records (the planner's tensor-aligned
   * profiles): its objects are its own and {@link TensorView.digests} lists them. False for files
   * stored whole (`blob-v1`) or cut on another grid: reads then go through byte ranges of the records.
   */
  readonly aligned: boolean;
  /**
   * The tensor's records, in order (empty when not {@link TensorView.aligned}, or for an empty
   * tensor; an encoded tensor's are its parts' records, in role order).
   */
  readonly records: readonly RecordRef[];
  /** The tensor's objects, in order (the digests of {@link TensorView.records}). */
  readonly digests: readonly ObjectId[];
  /**
   * How the tensor is stored: `plain` (its bytes are its values in {@link TensorView.dtype}, as a
   * safetensors or GGUF file holds them, ggml block types included) or `encoded` (a checkpoint
   * tensor stored as parts under a scheme of `@tensorfs/format/encodings`; read its values with
   * `read({ decode: true })`, its parts with {@link TensorView.part}).
   */
  readonly storage: TensorStorage;
  /**
   * The component the tensor belongs to: a checkpoint's component; for a snapshot, the top folder
   * of its file (a Diffusers component), or `model` for a file at the root (what `convert` names it).
   */
  readonly component: string;
  /** `null` for a plain tensor; for an encoded one its scheme, params and its parts' dtypes and shapes. */
  readonly encoding: TensorEncoding | null;
  /**
   * An encoded tensor's parts by role (dtype, shape, records, byte length), in role order; empty
   * for a plain tensor.
   */
  readonly parts: Readonly<Record<string, TensorPart>>;
  /**
   * A part of an encoded tensor, as a plain view (`name#role`).
   * @throws {TensorFSError} `not_found` (no such role, or a plain tensor, which has no parts).
   */
  part(role: string): TensorView;
  /**
   * The tensor's bytes, one `Uint8Array` per object in order (pieces of at most 64 MiB for a tensor
   * that is not aligned). Every piece is length-checked before it is yielded.
   * @throws {TensorFSError} `not_found` (an object is missing), `corrupt` (wrong length, or digest with `verify`), `cancelled`.
   */
  pieces(options?: ReadOptions): AsyncIterable<Uint8Array>;
  /**
   * The tensor's bytes in one buffer. A tensor of one object is returned without a copy.
   * @throws {TensorFSError} `unsupported` for an encoded tensor without `decode` (rule `tensors.encoded`).
   */
  read(options?: ReadOptions): Promise<Uint8Array>;
  /**
   * Reads the tensor's bytes into `buffer` at `offset` and returns the filled subarray.
   * @throws {TensorFSError} `invalid_argument` if the buffer is too small.
   */
  readInto(buffer: Uint8Array, offset?: number, options?: ReadOptions): Promise<Uint8Array>;
  /**
   * The bytes of a slice, row-major: `ranges` holds one `[start, end)` pair per leading axis
   * given, the axes not given whole. Reads only the objects and bytes the slice touches (see
   * `planSlice`); a block-quantized tensor slices its last axis on whole blocks. With `decode`,
   * the whole tensor is decoded, then sliced. With `into`, the slice fills that buffer.
   * @throws {TensorFSError} `invalid_argument` (rule `tensors.slice_range`, `details.axis`),
   *   `unsupported` (`tensors.slice_block`: a cut inside a block; `tensors.slice_encoded`: an
   *   encoded checkpoint tensor, see `readEncodedSlice`), and what a read throws.
   */
  readSlice(ranges: readonly SliceRange[], options?: SliceOptions): Promise<Uint8Array>;
}

/** One `[start, end)` pair of a slice, numbers or bigints. */
export type SliceRange = readonly [number | bigint, number | bigint];

/** Options of {@link TensorView.readSlice}. */
export interface SliceOptions extends ReadOptions {
  /**
   * Fill this buffer (from its start) instead of a new one; the result is its subarray. At least
   * the slice's `byteLength` (`planSlice`) bytes: `invalid_argument` (rule `tensors.slice_into`)
   * otherwise. Not with `decode`.
   */
  into?: Uint8Array;
  /**
   * Take the result's buffer from this pool (give it back with `pool.give(slice)` when done, so
   * the next slice of the same size reuses its memory). On a failure it goes back at once. Not
   * with `into`; a `decode` slice ignores it.
   */
  pool?: TensorPool;
  /**
   * Gaps of at most this many bytes between two runs of the slice are read through (one read
   * instead of two, the gap's bytes discarded); `0` reads exactly the slice's bytes, one read per
   * run. A gap that holds a whole object of the tensor is never read through.
   * @default SLICE_GAP_BYTES (64 KiB)
   */
  gap?: number;
}
