/**
 * The GGUF writer: header, KVs (encoded or carried verbatim), tensor infos, padding; optionally data.
 */
import { requireObject, requireObjects } from '../args.js';
import { type ErrorDetails, isTensorFSError, TensorFSError } from '../errors.js';
import { Cursor, ggufError } from './_cursor.js';
import { ggmlPad, ggmlTensorGeometry } from './geometry.js';
import { ggmlTypeByName } from './ggml-types.js';
import {
  emptyMetadata,
  GGUF_MAGIC,
  type GgufMetadata,
  NO_LIMITS,
  parseGgufPrefix,
  readMetadata,
} from './parse-header.js';
import {
  GGUF_VALUE_TYPES,
  type GgufArray,
  type GgufHeader,
  type GgufKV,
  type GgufScalar,
  type GgufTensorInfo,
  type GgufValueType,
} from './types.js';

/** A tensor to declare in a header. */
export interface GgufWriteTensor {
  /** Name: at most 63 UTF-8 bytes, unique. */
  name: string;
  /** ggml type id, or its name (`'Q4_K'`, case-insensitive). */
  type: number | string;
  /** Dimensions in ggml order (`ne[0]` first), 0 to 4 of them. */
  dims: readonly (number | bigint)[];
}

/** A source file's KV block, carried byte for byte (see {@link GgufHeader.metadataBlock}). */
export interface GgufRawMetadata {
  /** The KV bytes, in the endianness being written. */
  raw: Uint8Array;
  /** How many KVs `raw` holds (the source's KV count). */
  count: number;
}

/** Options of {@link writeGgufHeader}. */
export interface GgufWriteOptions {
  /** GGUF version to write. @default 3 */
  version?: 2 | 3;
  /** Byte order to write. @default 'little' */
  endianness?: 'little' | 'big';
  /**
   * Data alignment. `general.alignment` in the metadata always governs; if given here it must agree with
   * it, and when the metadata has no `general.alignment` and this is not 32, a `general.alignment`
   * uint32 KV is appended after the metadata.
   * @default the metadata's `general.alignment`, else 32
   */
  alignment?: number;
  /** KVs to encode in order, or a source file's KV block to carry verbatim. */
  metadata: readonly GgufKV[] | GgufRawMetadata;
  /** Tensor infos in data order; offsets are assigned sequentially with padding to the alignment. */
  tensors: readonly GgufWriteTensor[];
}

/** What {@link writeGgufHeader} produced. */
export interface GgufWriteResult {
  /** Fixed header + KVs + tensor infos + zero padding up to the data start. */
  bytes: Uint8Array;
  /** The tensors with their offsets and geometry (absolute `byteOffset` in the complete file). */
  tensors: GgufTensorInfo[];
  /** The complete header, as {@link parseGgufHeader} reads the finished file. */
  header: GgufHeader;
}

/** A tensor with its data, for {@link writeGguf}. */
export interface GgufWriteFileTensor extends GgufWriteTensor {
  /** Exactly the tensor's byte length. */
  data: Uint8Array;
}

/** Options of {@link writeGguf}. */
export interface GgufWriteFileOptions extends Omit<GgufWriteOptions, 'tensors'> {
  /** Tensors with their data, in data order. */
  tensors: readonly GgufWriteFileTensor[];
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const ENCODER = /* @__PURE__ */ new TextEncoder();
const LONE_SURROGATE = /\p{Cs}/u;
const INT_RANGES: Partial<Record<GgufValueType, readonly [number, number]>> = {
  uint8: [0, 0xff],
  int8: [-0x80, 0x7f],
  uint16: [0, 0xffff],
  int16: [-0x8000, 0x7fff],
  uint32: [0, 0xffffffff],
  int32: [-0x80000000, 0x7fffffff],
};
const BIG_RANGES: Partial<Record<GgufValueType, readonly [bigint, bigint]>> = {
  uint64: [0n, (1n << 64n) - 1n],
  int64: [-(1n << 63n), (1n << 63n) - 1n],
};

/**
 * Writes a GGUF header: KVs in the order given (or a source's KV block verbatim), tensor infos with
 * sequential offsets, zero padding to the alignment. The result parses back with {@link parseGgufHeader}
 * to the same values, and re-writing the parsed values gives the same bytes.
 *
 * @throws {TensorFSError} `invalid_argument` for a value that does not fit its type, a rule of
 *   spec/gguf.md broken by the input (details name the rule), a verbatim block that does not parse as
 *   `count` KVs; `unsupported` for unknown or removed ggml type ids.
 */
export function writeGgufHeader(options: GgufWriteOptions): GgufWriteResult {
  requireObject(options, 'options', 'gguf');
  requireObject(options.metadata, 'options.metadata', 'gguf');
  requireObjects(options.tensors, 'options.tensors', 'gguf');
  try {
    return writeHeader(options);
  } catch (err) {
    if (isTensorFSError(err) && err.code === 'malformed') {
      throw new TensorFSError('invalid_argument', err.message, { details: err.details, cause: err });
    }
    throw err;
  }
}

/**
 * Writes a whole GGUF file: {@link writeGgufHeader} followed by each tensor's data and its zero padding.
 * Meant for tests and small files (everything is in memory).
 *
 * @throws {TensorFSError} as {@link writeGgufHeader}; `invalid_argument` when a tensor's data length is not its
 *   byte length.
 */
export function writeGguf(options: GgufWriteFileOptions): Uint8Array {
  const { bytes, header } = writeGgufHeader(options);
  const out = new Uint8Array(header.fileSize);
  out.set(bytes);
  header.tensors.forEach((t, i) => {
    const data = options.tensors[i]!.data;
    if (data.length !== t.byteLength) {
      throw new TensorFSError('invalid_argument', `tensor ${t.name} needs ${t.byteLength} bytes of data`, {
        details: {
          format: 'gguf',
          rule: 'gguf.tensor_data_length',
          tensor: t.name,
          expected: t.byteLength,
          actual: data.length,
        },
      });
    }
    out.set(data, t.byteOffset);
  });
  return out;
}

function writeHeader(options: GgufWriteOptions): GgufWriteResult {
  const version = options.version ?? 3;
  const little = (options.endianness ?? 'little') === 'little';
  if (
    (version !== 2 && version !== 3) ||
    (options.endianness !== undefined && !['little', 'big'].includes(options.endianness))
  ) {
    throw invalid('options', 'version must be 2 or 3 and endianness little or big', { version });
  }
  const w = new ByteWriter(little);
  w.bytes(GGUF_MAGIC);
  w.u32(version);
  w.u64(BigInt(options.tensors.length));
  const countAt = w.length;
  w.u64(0n);
  const metadata = writeMetadata(w, options.metadata, options.alignment);
  const { alignment } = metadata;
  w.patchU64(countAt, BigInt(metadata.metadata.length));
  let offset = 0n;
  for (const [index, t] of options.tensors.entries()) {
    const type = tensorType(t.type, index);
    const dims = t.dims.map((d, dim) => toDim(d, index, dim));
    const g = ggmlTensorGeometry(type, dims, { tensor: t.name, index });
    w.string(t.name, undefined, index);
    w.u32(dims.length);
    for (const d of dims) w.u64(d);
    w.u32(type);
    w.u64(offset);
    offset += ggmlPad(g.byteLength, alignment);
  }
  const dataStart = Number(ggmlPad(BigInt(w.length), alignment));
  w.zeros(dataStart - w.length);
  const fileSize = BigInt(dataStart) + offset;
  if (fileSize > MAX_SAFE) throw invalid('file_size', 'the file would exceed 2^53 - 1 bytes', { actual: fileSize });
  const bytes = w.finish();
  // Read the finished header back, without the reader's caps and resuming after the KVs already checked:
  // tensor rules, offsets and geometry come from the reader itself, so no rule can be broken here.
  const header = parseGgufPrefix(bytes, Number(fileSize), NO_LIMITS, metadata);
  return { bytes, tensors: header.tensors, header };
}

/**
 * Writes the KVs and parses them back with the reader (the same key, duplicate, UTF-8 and alignment
 * rules; the alignment a verbatim block sets). Returns the parsed KVs, which the final parse resumes from.
 */
function writeMetadata(
  w: ByteWriter,
  metadata: GgufWriteOptions['metadata'],
  wanted: number | undefined,
): GgufMetadata {
  const start = w.length;
  let count: number;
  if (Array.isArray(metadata)) {
    for (const kv of metadata as readonly GgufKV[]) writeKV(w, kv);
    count = metadata.length;
  } else {
    const { raw, count: rawCount } = metadata as GgufRawMetadata;
    if (!(raw instanceof Uint8Array) || !Number.isSafeInteger(rawCount) || rawCount < 0) {
      throw invalid('metadata', 'metadata must be a KV list or { raw: Uint8Array, count }', {});
    }
    w.bytes(raw);
    count = rawCount;
  }
  const end = w.length;
  const parsed = readMetadata(
    new Cursor(w.view(0), w.little, end, end),
    count,
    emptyMetadata(start, NO_LIMITS.maxArrayItems),
  );
  if (parsed.end !== end) {
    throw invalid('metadata_raw', `the raw metadata block holds more than ${count} KVs`, {
      expected: parsed.end - start,
      actual: end - start,
    });
  }
  if (wanted === undefined || wanted === parsed.alignment) return parsed;
  if (parsed.metadataMap.has('general.alignment')) {
    throw invalid('alignment_value', 'the alignment option differs from general.alignment', {
      expected: parsed.alignment,
      actual: wanted,
    });
  }
  writeKV(w, { key: 'general.alignment', type: 'uint32', value: wanted });
  return readMetadata(new Cursor(w.view(0), w.little, w.length, w.length), count + 1, parsed);
}

function writeKV(w: ByteWriter, kv: GgufKV): void {
  if (typeof kv !== 'object' || kv === null || typeof kv.key !== 'string') {
    throw invalid('value', 'a metadata entry must be { key, type, value }', {});
  }
  const key = kv.key;
  w.string(key, key);
  const typeId = GGUF_VALUE_TYPES.indexOf(kv.type);
  if (typeId < 0) throw invalid('value_type', `unknown value type ${String(kv.type)}`, { key });
  w.u32(typeId);
  if (kv.type !== 'array') {
    writeScalar(w, kv.type, kv.value as GgufScalar, key, -1);
    return;
  }
  const arr = kv.value as GgufArray;
  if (typeof arr !== 'object' || arr === null || !Array.isArray(arr.items)) {
    throw invalid('value', 'an array value must be { itemType, items: [] }', { key });
  }
  const itemTypeId = GGUF_VALUE_TYPES.indexOf(arr.itemType);
  if (itemTypeId < 0 || arr.itemType === 'array') {
    throw invalid(arr.itemType === 'array' ? 'nested_array' : 'value_type', 'invalid array item type', { key });
  }
  w.u32(itemTypeId);
  const items = arr.items;
  w.u64(BigInt(items.length));
  for (let i = 0; i < items.length; i++) writeScalar(w, arr.itemType, items[i]!, key, i);
}

/** Writes one value of `type`; `index` is the array position (-1 for a scalar), for error details only. */
function writeScalar(w: ByteWriter, type: GgufValueType, v: GgufScalar, key: string, index: number): void {
  if (type === 'string') {
    if (typeof v !== 'string') throw notFit(type, key, index);
    w.string(v, key, index);
    return;
  }
  const ints = INT_RANGES[type];
  if (ints) {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < ints[0] || v > ints[1]) throw notFit(type, key, index);
    w.int(type, v);
    return;
  }
  const bigs = BIG_RANGES[type];
  if (bigs) {
    const b = typeof v === 'number' && Number.isSafeInteger(v) ? BigInt(v) : v;
    if (typeof b !== 'bigint' || b < bigs[0] || b > bigs[1]) throw notFit(type, key, index);
    w.big(type === 'int64', b);
    return;
  }
  if (type === 'bool') {
    if (typeof v !== 'boolean') throw notFit(type, key, index);
    w.u8(v ? 1 : 0);
    return;
  }
  if (typeof v !== 'number') throw notFit(type, key, index);
  w.float(type === 'float64', v);
}

function notFit(type: GgufValueType, key: string, index: number): TensorFSError {
  return invalid('value', `a metadata value does not fit ${type}`, index < 0 ? { key, type } : { key, type, index });
}

function tensorType(type: number | string, index: number): number {
  if (typeof type === 'number' && Number.isInteger(type) && type >= 0 && type <= 0xffffffff) return type;
  const info = typeof type === 'string' ? ggmlTypeByName(type) : undefined;
  if (info === undefined) throw invalid('tensor_type_unknown', `unknown ggml type ${String(type)}`, { index, type });
  return info.id;
}

function toDim(d: number | bigint, index: number, dim: number): bigint {
  if (typeof d === 'bigint') return d;
  if (typeof d === 'number' && Number.isSafeInteger(d)) return BigInt(d);
  throw invalid('tensor_dim_range', 'a dimension must be an integer', { index, dim, actual: String(d) });
}

function invalid(rule: string, message: string, details: ErrorDetails): TensorFSError {
  return ggufError('invalid_argument', rule, message, details);
}

/** A growable little- or big-endian byte buffer. */
class ByteWriter {
  private buf = new Uint8Array(4096);
  private dv = new DataView(this.buf.buffer);
  length = 0;

  constructor(readonly little: boolean) {}

  private reserve(n: number): number {
    const at = this.length;
    if (at + n > this.buf.length) {
      const next = new Uint8Array(Math.max(this.buf.length * 2, at + n));
      next.set(this.buf.subarray(0, at));
      this.buf = next;
      this.dv = new DataView(next.buffer);
    }
    this.length = at + n;
    return at;
  }

  u8(v: number): void {
    const at = this.reserve(1);
    this.buf[at] = v;
  }

  u32(v: number): void {
    const at = this.reserve(4);
    this.dv.setUint32(at, v, this.little);
  }

  u64(v: bigint): void {
    const at = this.reserve(8);
    this.dv.setBigUint64(at, v, this.little);
  }

  patchU64(at: number, v: bigint): void {
    this.dv.setBigUint64(at, v, this.little);
  }

  // Each setter reserves first: reserve() may replace the buffer and its DataView.
  int(type: GgufValueType, v: number): void {
    const le = this.little;
    if (type === 'uint8' || type === 'int8') {
      const at = this.reserve(1);
      if (type === 'uint8') this.dv.setUint8(at, v);
      else this.dv.setInt8(at, v);
    } else if (type === 'uint16' || type === 'int16') {
      const at = this.reserve(2);
      if (type === 'uint16') this.dv.setUint16(at, v, le);
      else this.dv.setInt16(at, v, le);
    } else {
      const at = this.reserve(4);
      if (type === 'uint32') this.dv.setUint32(at, v, le);
      else this.dv.setInt32(at, v, le);
    }
  }

  big(signed: boolean, v: bigint): void {
    const at = this.reserve(8);
    if (signed) this.dv.setBigInt64(at, v, this.little);
    else this.dv.setBigUint64(at, v, this.little);
  }

  float(double: boolean, v: number): void {
    const at = this.reserve(double ? 8 : 4);
    if (double) this.dv.setFloat64(at, v, this.little);
    else this.dv.setFloat32(at, v, this.little);
  }

  /**
   * A gguf_string, encoded straight into the buffer. Strings with lone surrogates are refused (they have
   * no UTF-8 form). `key` / `index` only feed error details (no key: a tensor name at `index`).
   */
  string(s: string, key?: string, index = -1): void {
    if (typeof s !== 'string' || LONE_SURROGATE.test(s)) {
      const where = key === undefined ? { tensor: String(s), index } : index < 0 ? { key } : { key, index };
      throw invalid('utf8', 'a string is not well-formed Unicode', where);
    }
    const at = this.reserve(8 + s.length * 3);
    const { written } = ENCODER.encodeInto(s, this.buf.subarray(at + 8));
    this.length = at + 8 + written;
    this.dv.setUint32(this.little ? at : at + 4, written, this.little);
    this.dv.setUint32(this.little ? at + 4 : at, 0, this.little);
  }

  bytes(b: Uint8Array): void {
    const at = this.reserve(b.length);
    this.buf.set(b, at);
  }

  zeros(n: number): void {
    const at = this.reserve(n);
    this.buf.fill(0, at, at + n);
  }

  view(from: number): Uint8Array {
    return this.buf.subarray(from, this.length);
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}
