/**
 * The safetensors header reader: framing, a schema-directed strict JSON parse and the
 * reference's semantic validation (rules R1–R17 of `spec/safetensors.md`), plus the TensorFS
 * rules S1–S3 where we are stricter.
 */
import {
  BYTE_LENGTH_MESSAGES,
  type DtypeInfo,
  type Int,
  payloadByteLength,
  safetensorsDtype,
  subInt,
} from '../dtypes.js';
import { TensorFSError, throwIfAborted, toTensorFSError } from '../errors.js';
import type { ByteSource } from '../source.js';
import { decodeUtf8Strict, JsonCursor } from './json-cursor.js';
import type { SafetensorsHeader, SafetensorsParseOptions, SafetensorsTensorInfo } from './types.js';

/** The reference's header limit (decimal 100 MB; exactly 100,000,000 is allowed). */
export const MAX_SAFETENSORS_HEADER_SIZE = 100_000_000;

/** Bytes of the little-endian u64 length prefix. */
const PREFIX_SIZE = 8;

/** Depth of a tensor descriptor (the root object is depth 1). */
const DESCRIPTOR_DEPTH = 2;

/** A descriptor as parsed, before validation. */
interface RawTensor {
  name: string;
  dtype: DtypeInfo;
  shape: Int[];
  begin: Int;
  end: Int;
  /** Code-unit position of the tensor's key, for error offsets. */
  at: number;
}

/**
 * Parses and validates a safetensors header from bytes in memory.
 *
 * @param bytes the whole file, or at least the 8-byte prefix and the header with
 *   `options.fileSize` giving the real file size
 * @returns the validated header; tensors in data order
 * @throws {TensorFSError} `malformed` for any rule violation (`details.rule`, and `tensor` and
 *   `offset` where known), `limit_exceeded` for a header longer than `maxHeaderSize` (R3),
 *   `invalid_argument` for bad options or when `bytes` stop before the end of the header
 * @example
 * const h = parseSafetensorsHeader(fileBytes);
 * h.byName.get('lm_head.weight')?.byteOffset;
 */
export function parseSafetensorsHeader(bytes: Uint8Array, options: SafetensorsParseOptions = {}): SafetensorsHeader {
  const { strict, maxHeaderSize } = resolveOptions(options);
  const fileSize = options.fileSize ?? bytes.length;
  checkSize(fileSize, 'fileSize');
  if (fileSize < bytes.length) {
    throw new TensorFSError('invalid_argument', 'fileSize is smaller than the bytes given', {
      details: { fileSize, actual: bytes.length },
    });
  }
  checkPrefixPresent(fileSize);
  if (bytes.length < PREFIX_SIZE) {
    throw new TensorFSError('invalid_argument', 'bytes must hold the 8-byte length prefix', {
      details: { actual: bytes.length },
    });
  }
  const n = headerLength(bytes, fileSize, maxHeaderSize);
  if (bytes.length < PREFIX_SIZE + n) {
    throw new TensorFSError('invalid_argument', 'bytes stop before the end of the header', {
      details: { expected: PREFIX_SIZE + n, actual: bytes.length },
    });
  }
  return parseHeaderBody(bytes.subarray(PREFIX_SIZE, PREFIX_SIZE + n), fileSize, strict);
}

/**
 * Reads and validates a safetensors header from a byte source: the 8-byte prefix, then the
 * header. Never reads the data section.
 *
 * @throws {TensorFSError} as {@link parseSafetensorsHeader}; `io` (or the source's own
 *   TensorFSError) when a read fails or comes back short; `cancelled` when `options.signal` aborts
 */
export async function readSafetensorsHeader(
  source: ByteSource,
  options: SafetensorsParseOptions = {},
): Promise<SafetensorsHeader> {
  const { strict, maxHeaderSize } = resolveOptions(options);
  const fileSize = source.size;
  checkSize(fileSize, 'source.size');
  if (options.fileSize !== undefined && options.fileSize !== fileSize) {
    throw new TensorFSError('invalid_argument', 'fileSize contradicts the source size', {
      details: { fileSize: options.fileSize, actual: fileSize },
    });
  }
  checkPrefixPresent(fileSize);
  const prefix = await readExact(source, 0, PREFIX_SIZE, options.signal);
  const n = headerLength(prefix, fileSize, maxHeaderSize);
  const header = await readExact(source, PREFIX_SIZE, n, options.signal);
  return parseHeaderBody(header, fileSize, strict);
}

function resolveOptions(options: SafetensorsParseOptions): { strict: boolean; maxHeaderSize: number } {
  const maxHeaderSize = options.maxHeaderSize ?? MAX_SAFETENSORS_HEADER_SIZE;
  if (!Number.isSafeInteger(maxHeaderSize) || maxHeaderSize < 0 || maxHeaderSize > MAX_SAFETENSORS_HEADER_SIZE) {
    throw new TensorFSError('invalid_argument', 'maxHeaderSize must be an integer in 0…100,000,000', {
      details: { limit: MAX_SAFETENSORS_HEADER_SIZE, actual: maxHeaderSize },
    });
  }
  return { strict: options.strict === true, maxHeaderSize };
}

function checkSize(size: number, what: string): void {
  if (!Number.isSafeInteger(size) || size < 0) {
    throw new TensorFSError('invalid_argument', `${what} must be a non-negative safe integer`, {
      details: { actual: size },
    });
  }
}

/** R1: the file holds at least the 8-byte prefix. */
function checkPrefixPresent(fileSize: number): void {
  if (fileSize < PREFIX_SIZE) {
    throw new TensorFSError('malformed', 'file is shorter than the 8-byte length prefix', {
      details: { rule: 'R1', offset: 0, actual: fileSize },
    });
  }
}

/** R2–R4: the header length N from the prefix, within the limit and within the file. */
function headerLength(prefix: Uint8Array, fileSize: number, maxHeaderSize: number): number {
  const view = new DataView(prefix.buffer, prefix.byteOffset, PREFIX_SIZE);
  const low = view.getUint32(0, true);
  const high = view.getUint32(4, true);
  if (high !== 0 || low > maxHeaderSize) {
    const actual = view.getBigUint64(0, true);
    throw new TensorFSError('limit_exceeded', 'header length exceeds the limit', {
      details: { rule: 'R3', offset: 0, limit: maxHeaderSize, actual: high === 0 ? low : actual },
    });
  }
  if (PREFIX_SIZE + low > fileSize) {
    throw new TensorFSError('malformed', 'header length runs past the end of the file', {
      details: { rule: 'R4', offset: 0, actual: low, fileSize },
    });
  }
  return low;
}

async function readExact(source: ByteSource, offset: number, length: number, signal?: AbortSignal) {
  throwIfAborted(signal);
  let bytes: Uint8Array;
  try {
    bytes = await source.read(offset, length, signal);
  } catch (error) {
    throw toTensorFSError(error, 'io', 'reading the safetensors header failed');
  }
  if (bytes.length !== length) {
    throw new TensorFSError('io', 'short read from the source', {
      details: { offset, expected: length, actual: bytes.length },
    });
  }
  return bytes;
}

/** R5–R17 and S1–S3 over the N header bytes. */
function parseHeaderBody(header: Uint8Array, fileSize: number, strict: boolean): SafetensorsHeader {
  const text = decodeUtf8Strict(header, PREFIX_SIZE, 'R5');
  const c = new JsonCursor(text, PREFIX_SIZE, 'R6');
  if (strict) {
    if (c.peek() !== 0x7b) c.fail('strict: the header must begin with "{"', 'S2');
  } else c.ws();
  if (c.atEnd()) c.fail('the header holds no JSON value');
  if (c.peek() !== 0x7b) c.fail('the header must be a JSON object');
  const { metadata, tensors } = parseRoot(c, strict);
  if (strict) {
    while (c.peek() === 0x20) c.pos++;
    if (!c.atEnd()) c.fail('strict: only spaces (0x20) may follow the header object', 'S2');
  } else {
    c.ws();
    if (!c.atEnd()) c.fail('trailing characters after the header object');
  }
  return validate(c, tensors, metadata, header.length, fileSize);
}

function parseRoot(c: JsonCursor, strict: boolean): { metadata: Map<string, string> | null; tensors: RawTensor[] } {
  const tensors: RawTensor[] = [];
  const names = new Set<string>();
  let metadata: Map<string, string> | null = null;
  let sawMetadata = false;
  if (c.objectStart()) {
    do {
      const at = c.pos;
      const name = c.key();
      if (name === '__metadata__') {
        if (sawMetadata) c.fail('duplicate __metadata__', 'R9', {}, at);
        sawMetadata = true;
        metadata = parseMetadata(c);
      } else {
        if (names.has(name)) c.fail('duplicate tensor name', 'S1', { tensor: name }, at);
        names.add(name);
        tensors.push(parseDescriptor(c, name, at, strict));
      }
    } while (c.objectNext());
  }
  return { metadata, tensors };
}

/** R9: `__metadata__` is `null` or an object of strings (S1: no duplicate keys). */
function parseMetadata(c: JsonCursor): Map<string, string> | null {
  if (c.eatNull()) return null;
  if (c.peek() !== 0x7b) c.fail('__metadata__ must be an object of strings or null', c.startsValue() ? 'R9' : 'R6');
  const map = new Map<string, string>();
  if (c.objectStart()) {
    do {
      const at = c.pos;
      const key = c.key();
      if (map.has(key)) c.fail('duplicate __metadata__ key', 'S1', { key }, at);
      map.set(key, c.string('R9', 'a string __metadata__ value'));
    } while (c.objectNext());
  }
  return map;
}

const FIELD_DTYPE = 0;
const FIELD_SHAPE = 1;
const FIELD_OFFSETS = 2;
const FIELD_UNKNOWN = 3;

/** Which descriptor field a key names; literal fast paths, then the decoded key. */
function descriptorField(c: JsonCursor): { field: number; key: string } {
  if (c.eatLiteral('"dtype"')) return { field: FIELD_DTYPE, key: 'dtype' };
  if (c.eatLiteral('"shape"')) return { field: FIELD_SHAPE, key: 'shape' };
  if (c.eatLiteral('"data_offsets"')) return { field: FIELD_OFFSETS, key: 'data_offsets' };
  const key = c.string();
  const field =
    key === 'dtype'
      ? FIELD_DTYPE
      : key === 'shape'
        ? FIELD_SHAPE
        : key === 'data_offsets'
          ? FIELD_OFFSETS
          : FIELD_UNKNOWN;
  return { field, key };
}

/** R7, R8, R10, S1, S3: one tensor descriptor. */
function parseDescriptor(c: JsonCursor, tensor: string, at: number, strict: boolean): RawTensor {
  if (c.peek() !== 0x7b) {
    c.fail('a tensor descriptor must be an object', c.startsValue() ? 'R7' : 'R6', { tensor });
  }
  let dtype: DtypeInfo | undefined;
  let shape: Int[] | undefined;
  let begin: Int | undefined;
  let end: Int = 0;
  let unknown: Set<string> | undefined;
  if (c.objectStart()) {
    do {
      const keyAt = c.pos;
      const { field, key } = descriptorField(c);
      c.colon();
      const seen =
        field === FIELD_DTYPE ? dtype : field === FIELD_SHAPE ? shape : field === FIELD_OFFSETS ? begin : undefined;
      if (seen !== undefined) c.fail(`duplicate field "${key}"`, 'R7', { tensor }, keyAt);
      if (field === FIELD_DTYPE) dtype = parseDtype(c, tensor);
      else if (field === FIELD_SHAPE) shape = parseShape(c, tensor);
      else if (field === FIELD_OFFSETS) [begin, end] = parseOffsets(c, tensor);
      else {
        if (strict) c.fail('strict: unknown descriptor field', 'S3', { tensor, field: key }, keyAt);
        unknown ??= new Set();
        if (unknown.has(key)) c.fail('duplicate descriptor field', 'S1', { tensor, field: key }, keyAt);
        unknown.add(key);
        c.value(DESCRIPTOR_DEPTH, 'R10', 'S1');
      }
    } while (c.objectNext());
  }
  if (dtype === undefined || shape === undefined || begin === undefined) {
    const missing = dtype === undefined ? 'dtype' : shape === undefined ? 'shape' : 'data_offsets';
    return c.fail(`missing field "${missing}"`, 'R7', { tensor, field: missing }, at);
  }
  return { name: tensor, dtype, shape, begin, end, at };
}

function parseDtype(c: JsonCursor, tensor: string): DtypeInfo {
  const at = c.pos;
  const name = c.string('R7', 'a dtype string');
  return safetensorsDtype(name) ?? c.fail('unknown dtype', 'R7', { tensor, dtype: name }, at);
}

function parseShape(c: JsonCursor, tensor: string): Int[] {
  const shape: Int[] = [];
  if (c.arrayStart('R7', `shape of "${tensor}"`)) {
    do shape.push(c.uint('R8', 'R7', 'a dimension'));
    while (c.arrayNext());
  }
  return shape;
}

function parseOffsets(c: JsonCursor, tensor: string): [Int, Int] {
  const start = c.pos;
  const bad = () => c.fail('data_offsets must hold exactly two integers', 'R7', { tensor }, start);
  if (!c.arrayStart('R7', 'data_offsets')) bad();
  const begin = c.uint('R8', 'R7', 'an offset');
  if (!c.arrayNext()) bad();
  const end = c.uint('R8', 'R7', 'an offset');
  if (c.arrayNext()) bad();
  return [begin, end];
}

function byDataOffsets(a: RawTensor, b: RawTensor): number {
  if (a.begin !== b.begin) return a.begin < b.begin ? -1 : 1;
  if (a.end !== b.end) return a.end < b.end ? -1 : 1;
  return 0;
}

function isSorted(tensors: RawTensor[]): boolean {
  for (let i = 1; i < tensors.length; i++) if (byDataOffsets(tensors[i - 1]!, tensors[i]!) > 0) return false;
  return true;
}

/** R11–R17: data-order coverage, sizes and the exact end of the file. */
function validate(
  c: JsonCursor,
  raw: RawTensor[],
  metadata: Map<string, string> | null,
  headerSize: number,
  fileSize: number,
): SafetensorsHeader {
  // Array.prototype.sort is stable: ties keep header order.
  const sorted = isSorted(raw) ? raw : raw.slice().sort(byDataOffsets);
  const dataStart = PREFIX_SIZE + headerSize;
  const tensors: SafetensorsTensorInfo[] = new Array(sorted.length);
  const byName = new Map<string, SafetensorsTensorInfo>();
  let running: Int = 0;
  for (let i = 0; i < sorted.length; i++) {
    const t = sorted[i]!;
    if (t.begin !== running || t.end < t.begin) {
      tensorError(c, t, 'R12', 'data_offsets leave a gap, overlap or run backwards', {
        expected: running,
        actual: [t.begin, t.end],
      });
    }
    running = t.end;
    const length = payloadByteLength(t.shape, t.dtype.bits);
    if (typeof length === 'string') tensorError(c, t, length, BYTE_LENGTH_MESSAGES[length]);
    if (subInt(t.end, t.begin) !== length) {
      tensorError(c, t, 'R16', 'data_offsets span differs from shape × dtype size', {
        expected: length,
        actual: subInt(t.end, t.begin),
      });
    }
    const info: SafetensorsTensorInfo = {
      name: t.name,
      dtype: t.dtype.name,
      shape: toBigInts(t.shape),
      dataOffsets: [BigInt(t.begin), BigInt(t.end)],
      byteOffset: dataStart + Number(t.begin),
      byteLength: Number(length),
    };
    tensors[i] = info;
    byName.set(t.name, info);
  }
  if (running !== fileSize - dataStart) {
    throw new TensorFSError('malformed', 'tensors do not cover the data section exactly', {
      details: { rule: 'R17', offset: dataStart, expected: fileSize - dataStart, actual: running },
    });
  }
  return { headerSize, dataStart, fileSize, metadata, tensors, byName };
}

/** Throws `malformed` for a tensor, at the byte offset of its key. */
function tensorError(
  c: JsonCursor,
  t: RawTensor,
  rule: string,
  message: string,
  extra: Record<string, unknown> = {},
): never {
  throw new TensorFSError('malformed', message, {
    details: { rule, tensor: t.name, offset: c.byteOffset(t.at), ...extra },
  });
}

function toBigInts(values: Int[]): bigint[] {
  const out = new Array<bigint>(values.length);
  for (let i = 0; i < values.length; i++) out[i] = BigInt(values[i]!);
  return out;
}
