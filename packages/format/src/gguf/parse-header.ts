/**
 * GGUF header parsing and validation (header, KVs, tensor infos; never tensor data).
 */
import { requireBytes, requireOptions } from '../args.js';
import { type ErrorDetails, TensorFSError } from '../errors.js';
import { Cursor, ggufError, NeedMoreBytes } from './_cursor.js';
import { arrayLength, LAZY_ARRAY_ITEMS, lazyFixed, lazyStrings, type PartialStrings } from './_lazy-array.js';
import { GGML_MAX_DIMS, GGML_MAX_NAME, GGUF_DEFAULT_ALIGNMENT, ggmlPad, ggmlTensorGeometry } from './geometry.js';
import {
  GGUF_VALUE_TYPES,
  type GgufHeader,
  type GgufKV,
  type GgufParseOptions,
  type GgufScalar,
  type GgufTensorInfo,
  type GgufValue,
} from './types.js';

/** Default cap on the header size (fixed header + KVs + tensor infos). */
export const DEFAULT_MAX_HEADER_BYTES = 128 * 1024 * 1024;
/**
 * Default cap on the items of all metadata arrays together. A u8 or bool item takes 1 byte on disk
 * and a JS array slot of 8, so without it a 128 MiB header could demand a 1 GiB array; real files
 * stay near 1.5M items (a 262k-token vocabulary with scores, types and merges).
 */
export const DEFAULT_MAX_ARRAY_ITEMS = 16 * 1024 * 1024;
/**
 * Default cap on the KV count. Each KV costs a JS object and a map entry (~150 bytes) for as little as
 * 14 bytes on disk; real files have about 50, and huggingface.js caps them at 100,000 too.
 */
export const DEFAULT_MAX_KV_COUNT = 100_000;
/**
 * Default cap on the tensor count. A tensor info costs ~400 bytes of JS objects for as little as 24 on
 * disk; the planner keeps at most 1,000,000 records per file anyway.
 */
export const DEFAULT_MAX_TENSOR_COUNT = 1_000_000;
/** Size of magic + version + tensor count + KV count (v2/v3). */
export const GGUF_FIXED_HEADER_BYTES = 24;
/** Longest key accepted, in bytes (the GGUF spec's limit; ggml does not check it). */
export const GGUF_MAX_KEY_BYTES = 65535;

/** The four bytes every GGUF file starts with: `GGUF`. */
export const GGUF_MAGIC: Uint8Array = /* @__PURE__ */ Uint8Array.of(0x47, 0x47, 0x55, 0x46);
const MAGIC = GGUF_MAGIC;
/** Smallest possible KV: key length, one key byte, value type, one value byte. */
const MIN_KV_BYTES = 8 + 1 + 4 + 1;
/** Smallest possible tensor info: name length (empty name), n_dims, type, offset. */
const MIN_TENSOR_INFO_BYTES = 8 + 4 + 4 + 8;
const T_BOOL = 7;
const T_STRING = 8;
const T_ARRAY = 9;
/** Byte size of each value type id (strings: the length prefix, their smallest size). */
const VALUE_SIZES = [1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8];

/**
 * Parses and validates a GGUF header from bytes in memory.
 *
 * `bytes` is the whole file, or a prefix of it reaching at least the end of the tensor infos with
 * `options.fileSize` set to the real size (data presence is checked against `fileSize`).
 *
 * @throws {TensorFSError} `malformed` (a rule of spec/gguf.md is broken), `unsupported` (v1, unknown
 *   versions, nested arrays, unknown or removed tensor types), `limit_exceeded` (header above
 *   `maxHeaderBytes`), `invalid_argument` (`bytes` ends before the header does, or bad options). Every
 *   error's `details` carries `rule` and `offset`, plus `key` or `tensor` where one is concerned.
 */
export function parseGgufHeader(bytes: Uint8Array, options: GgufParseOptions = {}): GgufHeader {
  requireBytes(bytes, 'bytes', 'gguf');
  requireOptions(options, 'options', 'gguf');
  const fileSize = options.fileSize ?? bytes.length;
  if (!Number.isSafeInteger(fileSize) || fileSize < bytes.length) {
    throw new TensorFSError('invalid_argument', 'fileSize must be an integer at least bytes.length', {
      details: { rule: 'gguf.file_size', fileSize, length: bytes.length },
    });
  }
  try {
    return parseGgufPrefix(bytes, fileSize, limitsOption(options));
  } catch (err) {
    if (!(err instanceof NeedMoreBytes)) throw err;
    throw new TensorFSError('invalid_argument', 'the bytes given end before the GGUF header does', {
      details: { format: 'gguf', rule: 'gguf.need_more_bytes', length: bytes.length, needed: err.needed },
    });
  }
}

/** @internal The reader's caps. */
export interface GgufLimits {
  maxHeaderBytes: number;
  maxArrayItems: number;
  maxKvCount: number;
  maxTensorCount: number;
}

/** @internal No caps (the writer's). */
export const NO_LIMITS: GgufLimits = {
  maxHeaderBytes: Number.MAX_SAFE_INTEGER,
  maxArrayItems: Number.MAX_SAFE_INTEGER,
  maxKvCount: Number.MAX_SAFE_INTEGER,
  maxTensorCount: Number.MAX_SAFE_INTEGER,
};

/** @internal The caps of `options`, validated. */
export function limitsOption(options: GgufParseOptions): GgufLimits {
  const limits: GgufLimits = {
    maxHeaderBytes: options.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES,
    maxArrayItems: options.maxArrayItems ?? DEFAULT_MAX_ARRAY_ITEMS,
    maxKvCount: options.maxKvCount ?? DEFAULT_MAX_KV_COUNT,
    maxTensorCount: options.maxTensorCount ?? DEFAULT_MAX_TENSOR_COUNT,
  };
  for (const [name, value] of Object.entries(limits)) {
    const least = name === 'maxHeaderBytes' ? GGUF_FIXED_HEADER_BYTES : 0;
    if (!Number.isSafeInteger(value) || value < least) {
      throw new TensorFSError('invalid_argument', `${name} must be an integer of at least ${least}`, {
        details: { rule: 'gguf.options', [name]: value },
      });
    }
  }
  return limits;
}

/**
 * @internal Parses a prefix of a file of `fileSize` bytes; throws {@link NeedMoreBytes} when the prefix is
 * too short (the caller reads more and calls again with a longer prefix of the same file and the same
 * `progress`, which keeps the KVs already read).
 */
export function parseGgufPrefix(
  bytes: Uint8Array,
  fileSize: number,
  limits: GgufLimits,
  progress?: GgufMetadata,
): GgufHeader {
  const { maxHeaderBytes } = limits;
  const probe = new Cursor(bytes, true, fileSize, maxHeaderBytes);
  probe.ensure(4);
  for (let i = 0; i < 4; i++) {
    if (bytes[i] !== MAGIC[i]) {
      const found = Array.from(bytes.subarray(0, 4), (x) => x.toString(16).padStart(2, '0')).join('');
      throw probe.error(
        'malformed',
        'magic',
        `not a GGUF file (starts with ${found}, not the GGUF magic)`,
        {
          expected: 'GGUF',
          actual: found,
        },
        0,
      );
    }
  }
  probe.pos = 4;
  const raw = probe.u32();
  // ggml: a version with its low 16 bits zero is a byte-swapped one; hf.js and gguf-py detect it the same way.
  const little = (raw & 0xffff) !== 0;
  const version = little ? raw : swap32(raw);
  if (version !== 2 && version !== 3) {
    throw probe.error(
      'unsupported',
      'version',
      version === 1 ? 'GGUF v1 is not supported' : `unknown GGUF version ${version}`,
      { version, endianness: little ? 'little' : 'big' },
      4,
    );
  }
  const c = new Cursor(bytes, little, fileSize, maxHeaderBytes);
  c.pos = 8;
  const tensorCount = c.size();
  const kvCount = c.size();
  checkCount(c, kvCount, MIN_KV_BYTES, 'kv_count', 16);
  checkCount(c, tensorCount, MIN_TENSOR_INFO_BYTES, 'tensor_count', 8, kvCount * MIN_KV_BYTES);
  checkCountLimit(c, kvCount, limits.maxKvCount, 'kv_count_limit', 16);
  checkCountLimit(c, tensorCount, limits.maxTensorCount, 'tensor_count_limit', 8);

  const metadataStart = c.pos;
  const m = progress ?? emptyMetadata(metadataStart, limits.maxArrayItems);
  const { metadata, metadataMap, alignment } = readMetadata(c, kvCount, m);
  const metadataEnd = c.pos;
  const infos = readTensorInfos(c, tensorCount, alignment);
  const infoEnd = c.pos;
  // With no tensors there is no data section, and ggml pads only when there are tensors:
  // llama.cpp's vocabulary-only files end right after the KVs. Such a file's data starts at its end.
  const padded = Number(ggmlPad(BigInt(infoEnd), alignment));
  const dataStart = infos.length === 0 && fileSize === infoEnd ? infoEnd : padded;
  const tensors = placeTensors(infos, dataStart, fileSize);
  return {
    version,
    endianness: little ? 'little' : 'big',
    alignment,
    metadata,
    metadataMap,
    metadataBlock: { offset: metadataStart, length: metadataEnd - metadataStart },
    tensorInfoBlock: { offset: metadataEnd, length: infoEnd - metadataEnd },
    tensors,
    dataStart,
    fileSize,
  };
}

function swap32(v: number): number {
  return (((v & 0xff) << 24) | ((v & 0xff00) << 8) | ((v >>> 8) & 0xff00) | (v >>> 24)) >>> 0;
}

/** A count within the bytes left may still exceed our cap on the objects it makes. */
function checkCountLimit(c: Cursor, count: number, limit: number, rule: string, at: number): void {
  if (count > limit) {
    throw c.error(
      'limit_exceeded',
      rule,
      `${c.peekU64(at)} exceeds the configured maximum of ${limit}`,
      {
        actual: c.peekU64(at),
        limit,
      },
      at,
    );
  }
}

/** A count is bounded by the bytes that remain (each item takes at least `minBytes`), before any loop. */
function checkCount(c: Cursor, count: number, minBytes: number, rule: string, at: number, reserved = 0): void {
  const needed = count * minBytes;
  if (needed > c.remaining() - reserved) {
    throw c.error(
      'malformed',
      rule,
      `${rule.replace('_', ' ')} ${c.peekU64(at)} cannot fit in the file`,
      {
        actual: c.peekU64(at),
        remaining: c.remaining(),
      },
      at,
    );
  }
  if (c.pos + reserved + needed > c.maxBytes) {
    throw c.error(
      'limit_exceeded',
      'header_size',
      `${rule.replace('_', ' ')} ${count} exceeds the header size cap`,
      {
        actual: count,
        limit: c.maxBytes,
      },
      at,
    );
  }
}

/**
 * @internal KVs read so far, the alignment they set and where the last complete one ends. A reader that
 * must fetch more bytes passes it back in, so the KVs already read are not parsed again.
 */
export interface GgufMetadata {
  metadata: GgufKV[];
  metadataMap: Map<string, GgufKV>;
  alignment: number;
  /** Offset just after the last complete KV. */
  end: number;
  /** Array items the remaining KVs may still hold (the `maxArrayItems` budget). */
  itemsLeft: number;
  /** A large string array of the next KV that the last prefix cut short: where to resume it. */
  partial?: PartialStrings;
}

/** @internal No KVs read yet; the first starts at `start`; arrays may hold `maxArrayItems` in all. */
export function emptyMetadata(start: number, maxArrayItems: number): GgufMetadata {
  return {
    metadata: [],
    metadataMap: new Map(),
    alignment: GGUF_DEFAULT_ALIGNMENT,
    end: start,
    itemsLeft: maxArrayItems,
  };
}

/**
 * @internal Reads KVs until `count` are in `m`, starting at `m.end` (also used by the writer to check a
 * verbatim block). `m` is updated after each complete KV.
 */
export function readMetadata(c: Cursor, count: number, m: GgufMetadata): GgufMetadata {
  c.pos = m.end;
  for (let i = m.metadata.length; i < count; i++) {
    const at = c.pos;
    const kv = readKV(c, m);
    if (kv.key === 'general.alignment') m.alignment = checkAlignment(c, kv, at);
    m.metadata.push(kv);
    m.metadataMap.set(kv.key, kv);
    m.end = c.pos;
    if (typeof kv.value === 'object') m.itemsLeft -= arrayLength(kv.value);
  }
  return m;
}

function readKV(c: Cursor, m: GgufMetadata): GgufKV {
  const at = c.pos;
  c.context = {};
  const key = c.string(GGUF_MAX_KEY_BYTES, 'key_length');
  if (key === '') throw c.error('malformed', 'key_empty', 'a metadata key is empty', {}, at);
  c.context = { key };
  // ggml compares keys as C strings: "a\0b" would collide with "a".
  if (key.includes('\0')) throw c.error('malformed', 'key_nul', 'a metadata key contains NUL', {}, at);
  if (m.metadataMap.has(key))
    throw c.error('malformed', 'key_duplicate', `duplicate metadata key ${JSON.stringify(key)}`, {}, at);
  const typeAt = c.pos;
  const typeId = c.u32();
  const type = GGUF_VALUE_TYPES[typeId];
  if (type === undefined) {
    throw c.error('malformed', 'value_type', `unknown metadata value type ${typeId}`, { type: typeId }, typeAt);
  }
  const value: GgufValue = typeId === T_ARRAY ? readArray(c, m) : readScalar(c, typeId);
  return { key, type, value };
}

type FixedReader = (v: DataView, p: number, le: boolean) => number | bigint;

/** Readers of the fixed-size numeric types by type id (bool, string and array are read apart). */
const FIXED_READERS: readonly (FixedReader | undefined)[] = [
  (v, p) => v.getUint8(p),
  (v, p) => v.getInt8(p),
  (v, p, le) => v.getUint16(p, le),
  (v, p, le) => v.getInt16(p, le),
  (v, p, le) => v.getUint32(p, le),
  (v, p, le) => v.getInt32(p, le),
  (v, p, le) => v.getFloat32(p, le),
  undefined,
  undefined,
  undefined,
  (v, p, le) => v.getBigUint64(p, le),
  (v, p, le) => v.getBigInt64(p, le),
  (v, p, le) => v.getFloat64(p, le),
];

function readScalar(c: Cursor, typeId: number): GgufScalar {
  if (typeId === T_BOOL) return readBool(c);
  if (typeId === T_STRING) return c.string(Number.POSITIVE_INFINITY, 'string_length');
  const size = VALUE_SIZES[typeId]!;
  c.ensure(size);
  const value = FIXED_READERS[typeId]!(c.view, c.pos, c.little);
  c.pos += size;
  return value;
}

/** Bools must be 0 or 1 (the spec's rule; ggml reads any non-zero byte as true, which cannot round-trip). */
function readBool(c: Cursor): boolean {
  const b = c.u8();
  if (b > 1) throw c.error('malformed', 'bool_value', `a bool is ${b}, not 0 or 1`, { actual: b }, c.pos - 1);
  return b === 1;
}

function readArray(c: Cursor, m: GgufMetadata): GgufValue {
  const { itemsLeft } = m;
  const at = c.pos;
  const itemTypeId = c.u32();
  if (itemTypeId === T_ARRAY) throw c.error('unsupported', 'nested_array', 'nested arrays are not supported', {}, at);
  const itemType = GGUF_VALUE_TYPES[itemTypeId];
  if (itemType === undefined) {
    throw c.error('malformed', 'value_type', `unknown array item type ${itemTypeId}`, { type: itemTypeId }, at);
  }
  const countAt = c.pos;
  const count = c.size();
  if (count * VALUE_SIZES[itemTypeId]! > c.remaining()) {
    throw c.error(
      'malformed',
      'array_count',
      'an array count cannot fit in the file',
      {
        actual: c.peekU64(countAt),
        remaining: c.remaining(),
      },
      countAt,
    );
  }
  if (count > itemsLeft) {
    throw c.error(
      'limit_exceeded',
      'array_items',
      'metadata arrays hold more items than the configured maximum',
      {
        actual: c.peekU64(countAt),
        limit: itemsLeft,
      },
      countAt,
    );
  }
  if (count >= LAZY_ARRAY_ITEMS) {
    if (itemTypeId === T_STRING) return lazyStrings(c, itemType, count, m);
    const read = itemTypeId === T_BOOL ? (v: DataView, p: number) => v.getUint8(p) === 1 : FIXED_READERS[itemTypeId]!;
    return lazyFixed(c, itemType, count, VALUE_SIZES[itemTypeId]!, read, itemTypeId === T_BOOL);
  }
  return { itemType, items: readItems(c, itemTypeId, count) };
}

function readItems(c: Cursor, typeId: number, count: number): GgufScalar[] {
  if (typeId === T_STRING) return readStrings(c, count);
  const items: GgufScalar[] = [];
  if (typeId === T_BOOL) {
    for (let i = 0; i < count; i++) items.push(readBool(c));
    return items;
  }
  const size = VALUE_SIZES[typeId]!;
  c.ensure(count * size);
  const read = FIXED_READERS[typeId]!;
  const v = c.view;
  const le = c.little;
  const end = c.pos + count * size;
  for (let p = c.pos; p < end; p += size) items.push(read(v, p, le));
  c.pos = end;
  return items;
}

/**
 * Reads `count` strings. When the prefix runs out part-way, the request for more bytes is extrapolated
 * from the strings read so far, so a large vocabulary costs one or two re-reads, not a doubling series.
 */
function readStrings(c: Cursor, count: number): string[] {
  const items: string[] = [];
  const start = c.pos;
  try {
    for (let i = 0; i < count; i++) items.push(c.string(Number.POSITIVE_INFINITY, 'string_length'));
  } catch (err) {
    if (!(err instanceof NeedMoreBytes) || items.length === 0) throw err;
    const estimate = start + Math.ceil(((c.pos - start) / items.length) * count * 1.05);
    throw new NeedMoreBytes(Math.min(Math.max(err.needed, estimate), c.fileSize, c.maxBytes));
  }
  return items;
}

/** `general.alignment` must be a u32, non-zero, a power of two (ggml's rules). */
function checkAlignment(c: Cursor, kv: GgufKV, at: number): number {
  if (kv.type !== 'uint32') {
    throw c.error('malformed', 'alignment_type', `general.alignment is ${kv.type}, not uint32`, { type: kv.type }, at);
  }
  const a = kv.value as number;
  if (a === 0 || (a & (a - 1)) !== 0) {
    throw c.error(
      'malformed',
      'alignment_value',
      `general.alignment ${a} is not a non-zero power of two`,
      {
        actual: a,
      },
      at,
    );
  }
  return a;
}

interface RawTensorInfo {
  name: string;
  type: number;
  dims: bigint[];
  offset: bigint;
  at: number;
  elementCount: bigint;
  byteLength: bigint;
  paddedLength: bigint;
  blockSize: number;
  typeSize: number;
  typeName: string;
}

function readTensorInfos(c: Cursor, count: number, alignment: number): RawTensorInfo[] {
  const infos: RawTensorInfo[] = [];
  const names = new Set<string>();
  let expected = 0n;
  for (let i = 0; i < count; i++) {
    const at = c.pos;
    c.context = { index: i };
    const name = c.string(GGML_MAX_NAME - 1, 'tensor_name_length');
    c.context = { tensor: name };
    // ggml keeps names as C strings: "a\0b" would become "a".
    if (name.includes('\0')) throw c.error('malformed', 'tensor_name_nul', 'a tensor name contains NUL', {}, at);
    if (names.has(name)) throw c.error('malformed', 'tensor_name_duplicate', 'duplicate tensor name', {}, at);
    names.add(name);
    const nDimsAt = c.pos;
    const nDims = c.u32();
    if (nDims > GGML_MAX_DIMS) {
      throw c.error(
        'malformed',
        'tensor_dims_count',
        `a tensor has ${nDims} dimensions`,
        {
          limit: GGML_MAX_DIMS,
          actual: nDims,
        },
        nDimsAt,
      );
    }
    const dims: bigint[] = [];
    for (let d = 0; d < nDims; d++) dims.push(c.u64());
    const type = c.u32();
    const offsetAt = c.pos;
    const offset = c.u64();
    const g = ggmlTensorGeometry(type, dims, { tensor: name, offset: at });
    if (offset !== expected) {
      throw c.error(
        'malformed',
        'tensor_offset',
        'tensor offsets must follow tensor-info order, padded to the alignment',
        {
          expected,
          actual: offset,
        },
        offsetAt,
      );
    }
    const paddedLength = ggmlPad(g.byteLength, alignment);
    expected += paddedLength;
    infos.push({
      name,
      type,
      dims,
      offset,
      at,
      elementCount: g.elementCount,
      byteLength: g.byteLength,
      paddedLength,
      blockSize: g.typeInfo.blockSize,
      typeSize: g.typeInfo.typeSize,
      typeName: g.typeInfo.name,
    });
  }
  return infos;
}

/** Checks that every tensor and its padding lie in the file and nothing follows the last one. */
function placeTensors(infos: RawTensorInfo[], dataStart: number, fileSize: number): GgufTensorInfo[] {
  const size = BigInt(fileSize);
  const start = BigInt(dataStart);
  const truncated = (details: ErrorDetails) =>
    ggufError('malformed', 'data_truncated', 'tensor data runs past the end of the file', { fileSize, ...details });
  if (start > size) throw truncated({ offset: dataStart, dataStart });
  const tensors: GgufTensorInfo[] = [];
  let end = start;
  for (const t of infos) {
    end = start + t.offset + t.paddedLength;
    if (end > size) throw truncated({ tensor: t.name, offset: t.at, needed: end });
    tensors.push({
      name: t.name,
      type: t.type,
      typeName: t.typeName,
      dims: t.dims,
      shape: t.dims.slice().reverse(),
      offset: t.offset,
      byteOffset: dataStart + Number(t.offset),
      byteLength: Number(t.byteLength),
      paddedLength: Number(t.paddedLength),
      elementCount: t.elementCount,
      blockSize: t.blockSize,
      typeSize: t.typeSize,
    });
  }
  if (end !== size) {
    throw ggufError('malformed', 'trailing_bytes', 'bytes follow the padding of the last tensor', {
      offset: Number(end),
      fileSize,
    });
  }
  return tensors;
}
