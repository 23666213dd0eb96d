/** Public shapes of the GGUF reader and writer. */

/** A GGUF metadata value type (`enum gguf_type`), by name. */
export type GgufValueType =
  | 'uint8'
  | 'int8'
  | 'uint16'
  | 'int16'
  | 'uint32'
  | 'int32'
  | 'float32'
  | 'bool'
  | 'string'
  | 'array'
  | 'uint64'
  | 'int64'
  | 'float64';

/**
 * The value type names indexed by their id on disk (`GGUF_TYPE_UINT8 = 0` ... `GGUF_TYPE_FLOAT64 = 12`).
 */
export const GGUF_VALUE_TYPES: readonly GgufValueType[] = /* @__PURE__ */ Object.freeze([
  'uint8',
  'int8',
  'uint16',
  'int16',
  'uint32',
  'int32',
  'float32',
  'bool',
  'string',
  'array',
  'uint64',
  'int64',
  'float64',
] as const);

/** A scalar metadata value: `number` for 8/16/32-bit ints and floats, `bigint` for 64-bit ints. */
export type GgufScalar = number | bigint | boolean | string;

/** Any metadata value. */
export type GgufValue = GgufScalar | GgufArray;

/**
 * An array value. `items` is always a plain JS array (never a typed array), holding values of the
 * same JS type a scalar of `itemType` has: `number` for 8/16/32-bit ints and floats, `bigint` for
 * `uint64`/`int64`, `boolean`, `string`. Nested arrays are not supported (ggml rejects them too).
 */
export interface GgufArray {
  /** The element type; never `'array'`. */
  itemType: GgufValueType;
  /**
   * The elements, in file order. For arrays of 256+ items read by the parser this is a getter that
   * decodes the (already validated) bytes on first access and then holds the plain array.
   */
  items: GgufScalar[];
}

/** One metadata key/value pair. */
export interface GgufKV {
  /** The key: non-empty, valid UTF-8, unique in the file. */
  key: string;
  /** The value type as stored. */
  type: GgufValueType;
  /** The value; an array for `type: 'array'`. */
  value: GgufValue;
}

/** A tensor info with its geometry resolved, so later layers never recompute it. */
export interface GgufTensorInfo {
  /** Tensor name (valid UTF-8, at most 63 bytes, unique in the file). */
  name: string;
  /** The `ggml_type` id. */
  type: number;
  /** The ggml type name (`F32`, `Q4_K`...). */
  typeName: string;
  /** Dimensions in ggml order (`ne[0]`, the contiguous one, first); exactly as many as stored (0 to 4). */
  dims: bigint[];
  /** Dimensions in row-major order (reversed `dims`), as PyTorch and safetensors write shapes. */
  shape: bigint[];
  /** Offset relative to the data section, as stored. */
  offset: bigint;
  /** Absolute offset of the tensor's first byte in the file. */
  byteOffset: number;
  /** Exact data bytes, without alignment padding. */
  byteLength: number;
  /** Data bytes plus the zero padding to the alignment that follows them. */
  paddedLength: number;
  /** Number of elements (the product of `dims`; 1 for zero dims). */
  elementCount: bigint;
  /** Elements per block of the type. */
  blockSize: number;
  /** Bytes per block of the type. */
  typeSize: number;
}

/** A byte range in the file. */
export interface GgufByteRange {
  /** Absolute start offset. */
  offset: number;
  /** Length in bytes. */
  length: number;
}

/** A parsed and validated GGUF header. */
export interface GgufHeader {
  /** GGUF version (v1 and unknown versions are rejected as `unsupported`). */
  version: 2 | 3;
  /** Byte order, detected from the version field. */
  endianness: 'little' | 'big';
  /** Data alignment: `general.alignment` or 32. */
  alignment: number;
  /** Metadata, in file order. */
  metadata: GgufKV[];
  /** Metadata by key. */
  metadataMap: Map<string, GgufKV>;
  /** The raw KV bytes (after the 24-byte fixed header), for carrying them verbatim into another file. */
  metadataBlock: GgufByteRange;
  /** The raw tensor-info bytes (after the KVs, before the padding). */
  tensorInfoBlock: GgufByteRange;
  /** Tensors in tensor-info order, which is also data order (enforced). */
  tensors: GgufTensorInfo[];
  /** Absolute offset of the data section (end of the tensor infos padded to the alignment). */
  dataStart: number;
  /** File size in bytes (= `dataStart` + the padded sizes of all tensors: trailing bytes are rejected). */
  fileSize: number;
}

/** Options for {@link parseGgufHeader} and {@link readGgufHeader}. */
export interface GgufParseOptions {
  /**
   * The real file size, when `bytes` is only a prefix of the file. For {@link readGgufHeader} it must
   * equal the source's size if given.
   * @default bytes.length (parse) / source.size (read)
   */
  fileSize?: number;
  /**
   * Largest header (fixed header + KVs + tensor infos) accepted, in bytes; beyond it `limit_exceeded`.
   * @default 134217728 (128 MiB; a 260k-token vocabulary takes about 5 MiB)
   */
  maxHeaderBytes?: number;
  /**
   * Most items all metadata arrays may hold together; beyond it `limit_exceeded` (rule `array_items`).
   * @default 16777216 (a 262k-token vocabulary with scores, types and merges is about 1.5M)
   */
  maxArrayItems?: number;
  /**
   * Most KVs a header may declare; beyond it `limit_exceeded` (rule `kv_count_limit`).
   * @default 100000
   */
  maxKvCount?: number;
  /**
   * Most tensors a header may declare; beyond it `limit_exceeded` (rule `tensor_count_limit`).
   * @default 1000000
   */
  maxTensorCount?: number;
  /**
   * Size of {@link readGgufHeader}'s first read (later reads grow from it). A remote source may want a
   * smaller first request; any value gives the same result.
   * @default 1048576 (1 MiB)
   */
  initialReadBytes?: number;
  /** Aborts {@link readGgufHeader} between reads. */
  signal?: AbortSignal;
}
