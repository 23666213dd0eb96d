/**
 * The canonical safetensors writer: the reference serializer's bytes (compact serde_json,
 * `__metadata__` first, fields `dtype, shape, data_offsets`, space padding to 8 bytes), with
 * metadata keys sorted by UTF-8 bytes so the output is byte-stable.
 */
import {
  addInt,
  BYTE_LENGTH_MESSAGES,
  byteLengthOfCount,
  type DtypeInfo,
  dimensionToInt,
  elementCount,
  type Int,
  type SafetensorsDtype,
  safetensorsDtype,
} from '../dtypes.js';
import { requireObjects, requireOptions } from '../args.js';
import { TensorFSError } from '../errors.js';
import { comparePaths as compareUtf8 } from '../order.js';
import { checkWellFormed, serdeJsonString } from './json-text.js';
import { resolveMaxHeaderSize } from './parse-header.js';
import type { SafetensorsTensorInfo } from './types.js';

/** A tensor to describe in a header. */
export interface SafetensorsWriteTensor {
  /** Tensor name: any well-formed Unicode except `__metadata__`. */
  name: string;
  /** A dtype wire name (case-sensitive). */
  dtype: SafetensorsDtype | string;
  /** Dimensions, each an integer in 0…2^64−1. */
  shape: readonly (bigint | number)[];
  /** If given, must equal shape × dtype size (checked). */
  byteLength?: bigint | number;
}

/** A tensor with its bytes, for {@link writeSafetensors}. */
export interface SafetensorsWriteTensorData extends SafetensorsWriteTensor {
  /** The payload: exactly shape × dtype size bytes, little-endian, row-major. */
  data: Uint8Array;
}

/** Options for {@link writeSafetensorsHeader} and {@link writeSafetensors}. */
export interface SafetensorsWriteOptions {
  /**
   * `__metadata__`: a string-to-string map (keys are written sorted by UTF-8 bytes). Absent or
   * `null` writes no `__metadata__`; an empty map writes `"__metadata__":{}`.
   */
  metadata?: ReadonlyMap<string, string> | Readonly<Record<string, string>> | null;
  /**
   * `given`: data in the caller's order. `reference`: the reference serializer's order
   * (descending dtype ordinal, then name by UTF-8 bytes), which keeps every tensor naturally aligned.
   * @default 'given'
   */
  order?: 'given' | 'reference';
  /**
   * Largest header (N, padding included) to produce; at most the reference limit. Lower it for
   * readers with smaller caps (huggingface.js accepts 25,000,000).
   * @default 100_000_000
   */
  maxHeaderSize?: number;
}

/** What {@link writeSafetensorsHeader} produces. */
export interface SafetensorsWriteResult {
  /** The 8-byte prefix, the header and its space padding: the file up to the data section. */
  bytes: Uint8Array;
  /** The tensors in data order, with their offsets in the file this header starts. */
  tensors: SafetensorsTensorInfo[];
}

interface PlannedTensor {
  name: string;
  dtype: DtypeInfo;
  shape: Int[];
  length: Int;
  /** Index in the caller's list. */
  index: number;
}

/**
 * Writes a canonical safetensors header. Everything is validated before a byte is produced.
 * `parseSafetensorsHeader` of the result gives back the same tensors, and writing a parsed
 * header of a file this writer made (order `given`, its metadata) reproduces it byte for byte.
 *
 * @throws {TensorFSError} `invalid_argument` for a bad name (lone surrogate, duplicate: rule S1,
 *   `__metadata__`: R9), unknown dtype (R7), bad dimension (R8), overflowing size (R13/R14),
 *   partial byte (R15), `byteLength` ≠ shape × dtype size (R16), bad metadata (R9) or option;
 *   `limit_exceeded` for a header over 100,000,000 bytes (R3) or a file past 2^53 − 1 bytes
 * @example
 * const { bytes } = writeSafetensorsHeader([{ name: 'w', dtype: 'F32', shape: [2, 2] }], { metadata: { format: 'pt' } });
 */
export function writeSafetensorsHeader(
  tensors: readonly SafetensorsWriteTensor[],
  options: SafetensorsWriteOptions = {},
): SafetensorsWriteResult {
  requireObjects(tensors, 'tensors', 'safetensors');
  requireOptions(options, 'options', 'safetensors');
  const { bytes, tensors: infos } = planHeader(tensors, options);
  return { bytes, tensors: infos };
}

/**
 * A whole safetensors file in memory: the canonical header followed by each tensor's bytes in
 * data order. For tests and small files; large files should stream the data after
 * {@link writeSafetensorsHeader}.
 * @throws {TensorFSError} as {@link writeSafetensorsHeader}; `invalid_argument` when `data` is
 *   not a Uint8Array of the right length (R16); `limit_exceeded` when the file cannot be allocated
 */
export function writeSafetensors(
  tensors: readonly SafetensorsWriteTensorData[],
  options: SafetensorsWriteOptions = {},
): Uint8Array {
  if (!Array.isArray(tensors))
    throw new TensorFSError('invalid_argument', 'tensors must be an array', {
      details: { rule: 'safetensors.argument', argument: 'tensors' },
    });
  requireOptions(options, 'options', 'safetensors');
  const described = tensors.map((t, i) => {
    if (!(t?.data instanceof Uint8Array)) {
      throw new TensorFSError('invalid_argument', 'tensor data must be a Uint8Array', {
        details: { rule: 'safetensors.argument', argument: 'tensors[].data', index: i },
      });
    }
    if (t.byteLength !== undefined && BigInt(t.byteLength) !== BigInt(t.data.length)) {
      throw new TensorFSError('invalid_argument', 'byteLength differs from data.length', {
        details: { rule: 'safetensors.R16', tensor: t.name, expected: t.data.length, actual: t.byteLength },
      });
    }
    return { name: t.name, dtype: t.dtype, shape: t.shape, byteLength: t.data.length };
  });
  const { bytes: head, tensors: infos, order } = planHeader(described, options);
  const last = infos[infos.length - 1];
  const size = last === undefined ? head.length : last.byteOffset + last.byteLength;
  let out: Uint8Array;
  try {
    out = new Uint8Array(size);
  } catch (cause) {
    throw new TensorFSError('limit_exceeded', 'file too large to build in memory', {
      details: { rule: 'safetensors.in_memory_limit', actual: size },
      cause,
    });
  }
  out.set(head, 0);
  for (let k = 0; k < infos.length; k++) out.set(tensors[order[k]!]!.data, infos[k]!.byteOffset);
  return out;
}

/** Validates and lays out; `order[k]` is the caller's index of the k-th tensor in data order. */
function planHeader(
  tensors: readonly SafetensorsWriteTensor[],
  options: SafetensorsWriteOptions,
): SafetensorsWriteResult & { order: number[] } {
  const orderOption = options.order ?? 'given';
  if (orderOption !== 'given' && orderOption !== 'reference') {
    throw new TensorFSError('invalid_argument', 'order must be "given" or "reference"', {
      details: { rule: 'safetensors.options', actual: String(orderOption) },
    });
  }
  if (!Array.isArray(tensors))
    throw new TensorFSError('invalid_argument', 'tensors must be an array', {
      details: { rule: 'safetensors.argument', argument: 'tensors' },
    });
  const maxHeaderSize = resolveMaxHeaderSize(options.maxHeaderSize);
  const metadata = metadataEntries(options.metadata);
  const planned = tensors.map(planTensor);
  const names = new Set<string>();
  for (const t of planned) {
    if (names.has(t.name)) {
      throw new TensorFSError('invalid_argument', 'duplicate tensor name', {
        details: { rule: 'safetensors.S1', tensor: t.name },
      });
    }
    names.add(t.name);
  }
  if (orderOption === 'reference') {
    planned.sort((a, b) => b.dtype.ordinal - a.dtype.ordinal || compareUtf8(a.name, b.name));
  }
  const offsets: [Int, Int][] = [];
  let running: Int = 0;
  for (const t of planned) {
    const end = addInt(running, t.length);
    offsets.push([running, end]);
    running = end;
  }
  const json = headerJson(planned, offsets, metadata);
  const encoded = new TextEncoder().encode(json);
  const headerSize = Math.ceil(encoded.length / 8) * 8;
  if (headerSize > maxHeaderSize) {
    throw new TensorFSError('limit_exceeded', 'header exceeds the size limit', {
      details: { rule: 'safetensors.R3', limit: maxHeaderSize, actual: headerSize },
    });
  }
  const dataStart = 8 + headerSize;
  if (typeof running === 'bigint' || dataStart + running > Number.MAX_SAFE_INTEGER) {
    throw new TensorFSError('limit_exceeded', 'file size exceeds 2^53 − 1 bytes', {
      details: {
        rule: 'safetensors.file_size_limit',
        limit: Number.MAX_SAFE_INTEGER,
        actual: BigInt(dataStart) + BigInt(running),
      },
    });
  }
  const bytes = new Uint8Array(dataStart);
  new DataView(bytes.buffer).setUint32(0, headerSize, true);
  bytes.set(encoded, 8);
  bytes.fill(0x20, 8 + encoded.length);
  const infos = planned.map((t, k): SafetensorsTensorInfo => {
    const [begin, end] = offsets[k]!;
    return {
      name: t.name,
      dtype: t.dtype.name,
      shape: t.shape.map((d) => BigInt(d)),
      dataOffsets: [BigInt(begin), BigInt(end)],
      byteOffset: dataStart + Number(begin),
      byteLength: Number(t.length),
    };
  });
  return { bytes, tensors: infos, order: planned.map((t) => t.index) };
}

function planTensor(t: SafetensorsWriteTensor, index: number): PlannedTensor {
  if (typeof t !== 'object' || t === null) {
    throw new TensorFSError('invalid_argument', 'a tensor must be an object', {
      details: { rule: 'safetensors.argument', argument: 'tensors[]', index },
    });
  }
  checkWellFormed(t.name, 'tensor name', 'R7');
  const details = { tensor: t.name };
  if (t.name === '__metadata__') {
    throw new TensorFSError('invalid_argument', '"__metadata__" is reserved', {
      details: { rule: 'safetensors.R9', ...details },
    });
  }
  const dtype = typeof t.dtype === 'string' ? safetensorsDtype(t.dtype) : undefined;
  if (dtype === undefined) {
    throw new TensorFSError('invalid_argument', 'unknown dtype', {
      details: { rule: 'safetensors.R7', ...details, dtype: String(t.dtype) },
    });
  }
  if (!Array.isArray(t.shape)) {
    throw new TensorFSError('invalid_argument', 'shape must be an array', {
      details: { rule: 'safetensors.R7', ...details },
    });
  }
  const shape = t.shape.map(dimensionToInt);
  const length = byteLengthOfCount(elementCount(shape), dtype.bits);
  if (typeof length === 'string') {
    throw new TensorFSError('invalid_argument', BYTE_LENGTH_MESSAGES[length], {
      details: { rule: `safetensors.${length}`, ...details },
    });
  }
  if (t.byteLength !== undefined) {
    const given = typeof t.byteLength === 'number' || typeof t.byteLength === 'bigint' ? t.byteLength : Number.NaN;
    if (!isExactInteger(given) || BigInt(given) !== BigInt(length)) {
      throw new TensorFSError('invalid_argument', 'byteLength differs from shape × dtype size', {
        details: { rule: 'safetensors.R16', ...details, expected: length, actual: String(t.byteLength) },
      });
    }
  }
  return { name: t.name, dtype, shape, length, index };
}

function isExactInteger(value: number | bigint): boolean {
  return typeof value === 'bigint' || Number.isSafeInteger(value);
}

/** Metadata entries, validated, sorted by UTF-8 bytes; null for none. */
function metadataEntries(metadata: SafetensorsWriteOptions['metadata']): [string, string][] | null {
  if (metadata === undefined || metadata === null) return null;
  let entries: [string, unknown][];
  if (metadata instanceof Map) entries = [...metadata];
  else if (typeof metadata === 'object' && !Array.isArray(metadata)) entries = Object.entries(metadata);
  else
    throw new TensorFSError('invalid_argument', 'metadata must be a Map or a plain object', {
      details: { rule: 'safetensors.R9' },
    });
  for (const [key, value] of entries) {
    checkWellFormed(key, 'metadata key', 'R9');
    checkWellFormed(value, 'metadata value', 'R9');
  }
  return (entries as [string, string][]).sort((a, b) => compareUtf8(a[0], b[0]));
}

function headerJson(tensors: PlannedTensor[], offsets: [Int, Int][], metadata: [string, string][] | null): string {
  const members: string[] = [];
  if (metadata !== null) {
    members.push(
      `"__metadata__":{${metadata.map(([k, v]) => `${serdeJsonString(k)}:${serdeJsonString(v)}`).join(',')}}`,
    );
  }
  tensors.forEach((t, k) => {
    const [begin, end] = offsets[k]!;
    members.push(
      `${serdeJsonString(t.name)}:{"dtype":"${t.dtype.name}","shape":[${t.shape.join(',')}],"data_offsets":[${begin},${end}]}`,
    );
  });
  return `{${members.join(',')}}`;
}
