/**
 * The safetensors header reader: framing, a schema-directed strict JSON parse and the
 * reference's semantic validation (rules R1–R17 of `spec/safetensors.md`), plus the TensorFS
 * rules S1–S3 where we are stricter.
 */
import {
  BYTE_LENGTH_MESSAGES,
  byteLengthOfCount,
  type DtypeInfo,
  elementCount,
  type Int,
  SAFETENSORS_DTYPES,
  safetensorsDtype,
  subInt,
} from '../dtypes.js';
import { TensorFSError } from '../errors.js';
import { type ByteSource, checkByteSource, readFully } from '../source.js';
import { requireBytes, requireOptions } from '../args.js';
import { decodeUtf8Strict, JsonCursor } from './json-cursor.js';
import type { SafetensorsHeader, SafetensorsParseOptions, SafetensorsTensorInfo } from './types.js';

/** The reference's header limit (decimal 100 MB; exactly 100,000,000 is allowed). */
export const MAX_SAFETENSORS_HEADER_SIZE = 100_000_000;

/** Bytes of the little-endian u64 length prefix. */
export const SAFETENSORS_PREFIX_BYTES = 8;
const PREFIX_SIZE = SAFETENSORS_PREFIX_BYTES;

/** Depth of a tensor descriptor (the root object is depth 1). */
const DESCRIPTOR_DEPTH = 2;

/**
 * Parses and validates a safetensors header from bytes in memory.
 *
 * @param bytes the whole file, or at least the 8-byte prefix and the header with
 *   `options.fileSize` giving the real file size
 * @returns the validated header; tensors in data order
 * @throws {TensorFSError} `malformed` for any rule violation (`details.rule`, and `tensor` and
 *   `offset` where known), `limit_exceeded` for a header longer than `maxHeaderSize` (R3),
 *   `invalid_argument` for bad options or when `bytes` stop before the end of the header,
 *   `unsupported` (`safetensors.other_format`, `details.format`) for the bytes of a GGUF file, a
 *   cozytensors checkpoint header or a TFM1 manifest, named by their magic
 * @example
 * const h = parseSafetensorsHeader(fileBytes);
 * h.byName.get('lm_head.weight')?.byteOffset;
 */
export function parseSafetensorsHeader(bytes: Uint8Array, options: SafetensorsParseOptions = {}): SafetensorsHeader {
  requireBytes(bytes, 'bytes', 'safetensors');
  requireOptions(options, 'options', 'safetensors');
  const { strict, maxHeaderSize } = resolveOptions(options);
  const fileSize = options.fileSize ?? bytes.length;
  checkSize(fileSize, 'fileSize');
  if (fileSize < bytes.length) {
    throw new TensorFSError('invalid_argument', 'fileSize is smaller than the bytes given', {
      details: { rule: 'safetensors.file_size', fileSize, actual: bytes.length },
    });
  }
  checkPrefixPresent(fileSize);
  if (bytes.length < PREFIX_SIZE) {
    throw new TensorFSError('invalid_argument', 'bytes must hold the 8-byte length prefix', {
      details: { rule: 'safetensors.need_more_bytes', actual: bytes.length },
    });
  }
  const n = headerLength(bytes, fileSize, maxHeaderSize);
  if (bytes.length < PREFIX_SIZE + n) {
    throw new TensorFSError('invalid_argument', 'bytes stop before the end of the header', {
      details: { rule: 'safetensors.need_more_bytes', expected: PREFIX_SIZE + n, actual: bytes.length },
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
  checkByteSource(source);
  requireOptions(options, 'options', 'safetensors');
  const { strict, maxHeaderSize } = resolveOptions(options);
  const fileSize = source.size;
  checkSize(fileSize, 'source.size');
  if (options.fileSize !== undefined && options.fileSize !== fileSize) {
    throw new TensorFSError('invalid_argument', 'fileSize contradicts the source size', {
      details: { rule: 'safetensors.file_size', fileSize: options.fileSize, actual: fileSize },
    });
  }
  checkPrefixPresent(fileSize);
  const prefix = await readExact(source, 0, PREFIX_SIZE, options.signal);
  const n = headerLength(prefix, fileSize, maxHeaderSize);
  const header = await readExact(source, PREFIX_SIZE, n, options.signal);
  return parseHeaderBody(header, fileSize, strict);
}

function resolveOptions(options: SafetensorsParseOptions): { strict: boolean; maxHeaderSize: number } {
  return { strict: options.strict === true, maxHeaderSize: resolveMaxHeaderSize(options.maxHeaderSize) };
}

/**
 * A `maxHeaderSize` option: default 100,000,000, may be lowered, never raised.
 * @throws {TensorFSError} `invalid_argument` outside 0…100,000,000
 * @internal
 */
export function resolveMaxHeaderSize(value: number | undefined): number {
  const max = value ?? MAX_SAFETENSORS_HEADER_SIZE;
  if (!Number.isSafeInteger(max) || max < 0 || max > MAX_SAFETENSORS_HEADER_SIZE) {
    throw new TensorFSError('invalid_argument', 'maxHeaderSize must be an integer in 0…100,000,000', {
      details: { rule: 'safetensors.options', limit: MAX_SAFETENSORS_HEADER_SIZE, actual: max },
    });
  }
  return max;
}

function checkSize(size: number, what: string): void {
  if (!Number.isSafeInteger(size) || size < 0) {
    throw new TensorFSError('invalid_argument', `${what} must be a non-negative safe integer`, {
      details: { rule: 'safetensors.file_size', actual: size },
    });
  }
}

/** R1: the file holds at least the 8-byte prefix. */
function checkPrefixPresent(fileSize: number): void {
  if (fileSize < PREFIX_SIZE) {
    throw new TensorFSError('malformed', 'file is shorter than the 8-byte length prefix', {
      details: { rule: 'safetensors.R1', offset: 0, actual: fileSize },
    });
  }
}

/** R2–R4: the header length N from the prefix, within the limit and within the file. */
function headerLength(prefix: Uint8Array, fileSize: number, maxHeaderSize: number): number {
  const view = new DataView(prefix.buffer, prefix.byteOffset, PREFIX_SIZE);
  const low = view.getUint32(0, true);
  const high = view.getUint32(4, true);
  if (high !== 0 || low > maxHeaderSize) {
    otherFormat(prefix);
    const actual = view.getBigUint64(0, true);
    throw new TensorFSError('limit_exceeded', 'header length exceeds the limit', {
      details: { rule: 'safetensors.R3', offset: 0, limit: maxHeaderSize, actual: high === 0 ? low : actual },
    });
  }
  if (PREFIX_SIZE + low > fileSize) {
    throw new TensorFSError('malformed', 'header length runs past the end of the file', {
      details: { rule: 'safetensors.R4', offset: 0, actual: low, fileSize },
    });
  }
  return low;
}

/**
 * The formats with a 4-byte magic that a safetensors reader may be handed by mistake (see
 * `GGUF_MAGIC`, `COZYTENSORS_MAGIC`, `TFM1_MAGIC`). Read as a length prefix, each is a header of
 * over 800 MB, past any limit, so naming the format never turns away a safetensors file.
 */
const OTHER_FORMATS: readonly { magic: string; format: string; what: string }[] = [
  { magic: 'GGUF', format: 'gguf', what: 'a GGUF file' },
  { magic: 'TFC1', format: 'cozytensors', what: 'a cozytensors checkpoint header' },
  { magic: 'TFM1', format: 'tfm1', what: 'a TFM1 snapshot manifest' },
];

/** Refuses a prefix that is another format's magic: `unsupported`, naming the format. */
function otherFormat(prefix: Uint8Array): void {
  const head = String.fromCharCode(prefix[0] ?? 0, prefix[1] ?? 0, prefix[2] ?? 0, prefix[3] ?? 0);
  const other = OTHER_FORMATS.find((f) => f.magic === head);
  if (other === undefined) return;
  throw new TensorFSError('unsupported', `this is ${other.what} (magic "${other.magic}"), not a safetensors file`, {
    details: { rule: 'safetensors.other_format', offset: 0, format: other.format },
  });
}

const readExact = readFully;

/** R5–R17 and S1–S3 over the N header bytes. */
function parseHeaderBody(header: Uint8Array, fileSize: number, strict: boolean): SafetensorsHeader {
  const text = decodeUtf8Strict(header, PREFIX_SIZE, 'R5');
  const c = new JsonCursor(text, PREFIX_SIZE, 'R6', header);
  if (strict) {
    if (c.peek() !== 0x7b) c.fail('strict: the header must begin with "{"', 'S2');
  } else c.ws();
  if (c.atEnd()) c.fail('the header holds no JSON value');
  if (c.peek() !== 0x7b) c.fail('the header must be a JSON object');
  const parsed = new ParsedTensors();
  const metadata = parseRoot(c, strict, parsed);
  if (strict) {
    while (c.peek() === 0x20) c.pos++;
    if (!c.atEnd()) c.fail('strict: only spaces (0x20) may follow the header object', 'S2');
  } else {
    c.ws();
    if (!c.atEnd()) c.fail('trailing characters after the header object');
  }
  return validate(c, parsed, metadata, header.length, fileSize);
}

/** Placeholder offsets of a tensor not yet validated (replaced before anyone sees it). */
const UNVALIDATED: [bigint, bigint] = [0n, 0n];
const NO_SHAPE: bigint[] = [];

/** Numbers kept per parsed tensor: begin, end, element count, dtype bits, key position. */
const SLOTS = 5;

/**
 * Descriptors as parsed, before validation, in header order. The result objects are created
 * once, here, and completed by {@link validate}; the numbers validation needs live in one
 * growable Float64Array (no per-tensor objects, no boxing), with the rare values a double cannot
 * hold exactly (bigints above 2^53 − 1, an overflowed count) kept aside by slot.
 */
class ParsedTensors {
  readonly infos: SafetensorsTensorInfo[] = [];
  readonly byName = new Map<string, SafetensorsTensorInfo>();
  /** Whether the tensors added so far are in data order: (begin, end) never decreasing. */
  inDataOrder = true;
  private numbers = new Float64Array(SLOTS * 64);
  private wide: Map<number, bigint | 'R13'> | undefined;
  private lastBegin: Int = 0;
  private lastEnd: Int = 0;

  add(info: SafetensorsTensorInfo, begin: Int, end: Int, count: Int | 'R13', bits: number, keyPosition: number): void {
    if (this.inDataOrder) {
      if ((compareInt(begin, this.lastBegin) || compareInt(end, this.lastEnd)) < 0) this.inDataOrder = false;
      this.lastBegin = begin;
      this.lastEnd = end;
    }
    const base = this.infos.length * SLOTS;
    if (base + SLOTS > this.numbers.length) {
      const grown = new Float64Array(this.numbers.length * 2);
      grown.set(this.numbers);
      this.numbers = grown;
    }
    this.put(base, begin);
    this.put(base + 1, end);
    this.put(base + 2, count);
    this.numbers[base + 3] = bits;
    this.numbers[base + 4] = keyPosition;
    this.infos.push(info);
  }

  private put(slot: number, value: Int | 'R13'): void {
    if (typeof value === 'number') {
      this.numbers[slot] = value;
    } else {
      this.numbers[slot] = Number.NaN;
      (this.wide ??= new Map()).set(slot, value);
    }
  }

  private get(slot: number): Int | 'R13' {
    const value = this.numbers[slot]!;
    return Number.isNaN(value) ? this.wide!.get(slot)! : value;
  }

  begin(i: number): Int {
    return this.get(i * SLOTS) as Int;
  }
  end(i: number): Int {
    return this.get(i * SLOTS + 1) as Int;
  }
  count(i: number): Int | 'R13' {
    return this.get(i * SLOTS + 2);
  }
  bits(i: number): number {
    return this.numbers[i * SLOTS + 3]!;
  }
  keyPosition(i: number): number {
    return this.numbers[i * SLOTS + 4]!;
  }
}

/** The root object; returns `__metadata__` and fills `parsed`. */
function parseRoot(c: JsonCursor, strict: boolean, parsed: ParsedTensors): Map<string, string> | null {
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
        parseDescriptor(c, name, at, strict, parsed);
      }
    } while (c.objectNext());
  }
  return metadata;
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
const FIELD_NAMES = ['dtype', 'shape', 'data_offsets'];

/**
 * Which descriptor field the next key names: literal fast paths, then the decoded key (so
 * escaped spellings such as `"\u0064type"` are the same field). Consumes the key.
 */
function descriptorField(c: JsonCursor): number | string {
  if (c.eatLiteral('"dtype"')) return FIELD_DTYPE;
  if (c.eatLiteral('"shape"')) return FIELD_SHAPE;
  if (c.eatLiteral('"data_offsets"')) return FIELD_OFFSETS;
  const key = c.string();
  const field = FIELD_NAMES.indexOf(key);
  return field < 0 ? key : field;
}

/** Dimensions of the shape being parsed (reused, so parsing a shape allocates only its result). */
const scratchShape: Int[] = [];
let scratchLength = 0;

/** R7, R8, R10, S1, S3: one tensor descriptor, appended to `parsed`. */
function parseDescriptor(c: JsonCursor, name: string, at: number, strict: boolean, parsed: ParsedTensors): void {
  const info: SafetensorsTensorInfo = {
    name,
    dtype: 'BOOL',
    shape: NO_SHAPE,
    dataOffsets: UNVALIDATED,
    // NaN, not 0: the fields start as doubles, so storing large offsets later never migrates the object shape.
    byteOffset: Number.NaN,
    byteLength: Number.NaN,
  };
  // One hash lookup both registers the name and detects a duplicate (S1).
  const known = parsed.byName.size;
  if (parsed.byName.set(name, info).size === known) c.fail('duplicate tensor name', 'S1', { tensor: name }, at);
  if (c.peek() !== 0x7b) {
    c.fail('a tensor descriptor must be an object', c.startsValue() ? 'R7' : 'R6', { tensor: name });
  }
  if (compactDescriptor(c, info, parsed, at)) return;
  let dtype: DtypeInfo | undefined;
  let shape: bigint[] | undefined;
  let count: Int | 'R13' = 0;
  let begin: Int = -1;
  let end: Int = -1;
  let unknown: Set<string> | undefined;
  if (c.objectStart()) {
    do {
      const keyAt = c.pos;
      const field = descriptorField(c);
      c.colon();
      if (field === FIELD_DTYPE) {
        if (dtype !== undefined) duplicateField(c, name, field, keyAt);
        dtype = parseDtype(c, name);
      } else if (field === FIELD_SHAPE) {
        if (shape !== undefined) duplicateField(c, name, field, keyAt);
        shape = parseShape(c, name);
        count = elementCount(scratchShape, scratchLength);
      } else if (field === FIELD_OFFSETS) {
        if (begin !== -1) duplicateField(c, name, field, keyAt);
        const start = c.pos;
        if (c.arrayStart('R7', 'data_offsets')) {
          begin = c.uint('R8', 'R7', 'an offset');
          if (c.arrayNext()) end = c.uint('R8', 'R7', 'an offset');
        }
        if (end === -1 || c.arrayNext()) {
          c.fail('data_offsets must hold exactly two integers', 'R7', { tensor: name }, start);
        }
      } else if (typeof field === 'string') {
        if (strict) c.fail('strict: unknown descriptor field', 'S3', { tensor: name, field }, keyAt);
        unknown ??= new Set();
        if (unknown.has(field)) c.fail('duplicate descriptor field', 'S1', { tensor: name, field }, keyAt);
        unknown.add(field);
        c.value(DESCRIPTOR_DEPTH, 'R10', 'S1');
      }
    } while (c.objectNext());
  }
  if (dtype === undefined || shape === undefined || begin === -1) {
    const missing = FIELD_NAMES[dtype === undefined ? 0 : shape === undefined ? 1 : 2];
    c.fail(`missing field "${missing}"`, 'R7', { tensor: name, field: missing }, at);
  }
  info.dtype = dtype.name;
  info.shape = shape;
  parsed.add(info, begin, end, count, dtype.bits, at);
}

function duplicateField(c: JsonCursor, tensor: string, field: number, at: number): never {
  return c.fail(`duplicate field "${FIELD_NAMES[field]}"`, 'R7', { tensor }, at);
}

/** Quoted dtype names grouped by first letter, most common first, for the literal fast path. */
const QUOTED_DTYPES: ReadonlyMap<number, readonly (readonly [string, DtypeInfo])[]> = /* @__PURE__ */ (() => {
  const common = ['BF16', 'F16', 'F32', 'I64', 'U8', 'I32'];
  const rank = (d: DtypeInfo) => {
    const i = common.indexOf(d.name);
    return i < 0 ? common.length + d.ordinal : i;
  };
  const groups = new Map<number, [string, DtypeInfo][]>();
  for (const d of [...SAFETENSORS_DTYPES].sort((a, b) => rank(a) - rank(b))) {
    const key = d.name.charCodeAt(0);
    const group = groups.get(key) ?? [];
    group.push([`"${d.name}"`, d]);
    groups.set(key, group);
  }
  return groups;
})();

function parseDtype(c: JsonCursor, tensor: string): DtypeInfo {
  const candidates = QUOTED_DTYPES.get(c.text.charCodeAt(c.pos + 1));
  if (candidates !== undefined && c.peek() === 0x22) {
    for (let i = 0; i < candidates.length; i++) {
      const candidate = candidates[i]!;
      if (c.eatLiteral(candidate[0])) return candidate[1];
    }
  }
  const at = c.pos;
  const name = c.string('R7', 'a dtype string');
  return safetensorsDtype(name) ?? c.fail('unknown dtype', 'R7', { tensor, dtype: name }, at);
}

/**
 * Parses a shape into the first {@link scratchLength} slots of {@link scratchShape} and returns it
 * as bigints. (The scratch array is never shortened: `length = 0` would free its storage.)
 */
function parseShape(c: JsonCursor, tensor: string): bigint[] {
  let n = 0;
  if (c.peek() !== 0x5b) c.fail('shape must be an array', 'R7', { tensor });
  if (c.arrayStart('R7', 'shape')) {
    do scratchShape[n++] = c.uint('R8', 'R7', 'a dimension');
    while (c.arrayNext());
  }
  scratchLength = n;
  const shape = new Array<bigint>(n);
  for (let i = 0; i < n; i++) shape[i] = toBigIntCached(scratchShape[i]!);
  return shape;
}

/**
 * Dimensions below this come from a cache (BigInt creation costs more than a lookup). A Map that
 * fills as dimensions are seen: a 65,536-slot array made on first use cost a fresh process a
 * quarter of a millisecond (in dictionary mode) before its first header was parsed.
 */
const CACHED_BELOW = 65536;
const bigintCache = new Map<number, bigint>();

function toBigIntCached(value: Int): bigint {
  if (typeof value === 'bigint') return value;
  if (value >= CACHED_BELOW) return BigInt(value);
  let cached = bigintCache.get(value);
  if (cached === undefined) bigintCache.set(value, (cached = BigInt(value)));
  return cached;
}

/**
 * Descriptor prefixes `{"dtype":"<name>","shape":[` by the first letter of the dtype name: the
 * compact layout the reference and most writers emit, matched as one literal.
 */
const COMPACT_PREFIXES: readonly (readonly (readonly [string, DtypeInfo])[] | undefined)[] = /* @__PURE__ */ (() => {
  const table: [string, DtypeInfo][][] = [];
  for (const [letter, group] of QUOTED_DTYPES) {
    table[letter] = group.map(([quoted, d]) => [`{"dtype":${quoted},"shape":[`, d]);
  }
  return table;
})();

const OFFSETS_LITERAL = '],"data_offsets":[';

/**
 * Reads a whole digit run of at most 15 digits without a leading zero at `p`: its value, or -1
 * (nothing consumed) when the text holds anything else there. The end is {@link digitsEnd}.
 */
let digitsEnd = 0;
function compactUint(t: string, p: number): number {
  let c = t.charCodeAt(p);
  if (c === 0x30) {
    c = t.charCodeAt(p + 1);
    if (c >= 0x30 && c <= 0x39) return -1;
    digitsEnd = p + 1;
    return 0;
  }
  if (!(c > 0x30 && c <= 0x39)) return -1;
  const start = p;
  let n = 0;
  do {
    n = n * 10 + (c - 0x30);
    c = t.charCodeAt(++p);
  } while (c >= 0x30 && c <= 0x39);
  if (p - start > 15) return -1;
  digitsEnd = p;
  return n;
}

/**
 * The common case of a descriptor, without whitespace, fields in the order `dtype`, `shape`,
 * `data_offsets`, integers of at most 15 digits: checked character by character, completed into
 * `info` and added to `parsed`. Returns false, having consumed nothing, for anything else (the
 * general reader then parses it and names any error).
 */
function compactDescriptor(c: JsonCursor, info: SafetensorsTensorInfo, parsed: ParsedTensors, at: number): boolean {
  const t = c.text;
  const candidates = COMPACT_PREFIXES[t.charCodeAt(c.pos + 10)];
  if (candidates === undefined) return false;
  let p = c.pos;
  let dtype: DtypeInfo | undefined;
  for (let i = 0; i < candidates.length; i++) {
    const candidate = candidates[i]!;
    if (t.startsWith(candidate[0], p)) {
      dtype = candidate[1];
      p += candidate[0].length;
      break;
    }
  }
  if (dtype === undefined) return false;
  let n = 0;
  if (t.charCodeAt(p) !== 0x5d) {
    for (;;) {
      const d = compactUint(t, p);
      if (d < 0) return false;
      scratchShape[n++] = d;
      p = digitsEnd;
      if (t.charCodeAt(p) !== 0x2c) break;
      p++;
    }
  }
  if (!t.startsWith(OFFSETS_LITERAL, p)) return false;
  const begin = compactUint(t, p + OFFSETS_LITERAL.length);
  if (begin < 0 || t.charCodeAt(digitsEnd) !== 0x2c) return false;
  const end = compactUint(t, digitsEnd + 1);
  if (end < 0 || t.charCodeAt(digitsEnd) !== 0x5d || t.charCodeAt(digitsEnd + 1) !== 0x7d) return false;
  c.pos = digitsEnd + 2;
  scratchLength = n;
  const shape = new Array<bigint>(n);
  for (let i = 0; i < n; i++) shape[i] = toBigIntCached(scratchShape[i]!);
  info.dtype = dtype.name;
  info.shape = shape;
  parsed.add(info, begin, end, elementCount(scratchShape, n), dtype.bits, at);
  return true;
}

function compareInt(a: Int, b: Int): number {
  return a === b ? 0 : a < b ? -1 : 1;
}

/** Header indices in data order: by (begin, end), ties in header order; null when already so. */
function dataOrder(p: ParsedTensors): number[] | null {
  if (p.inDataOrder) return null;
  const n = p.infos.length;
  const compare = (a: number, b: number) => compareInt(p.begin(a), p.begin(b)) || compareInt(p.end(a), p.end(b));
  return Array.from({ length: n }, (_, i) => i).sort((a, b) => compare(a, b) || a - b);
}

/** R11–R17: data-order coverage, sizes and the exact end of the file. */
function validate(
  c: JsonCursor,
  p: ParsedTensors,
  metadata: Map<string, string> | null,
  headerSize: number,
  fileSize: number,
): SafetensorsHeader {
  const order = dataOrder(p);
  const dataStart = PREFIX_SIZE + headerSize;
  const tensors = new Array<SafetensorsTensorInfo>(p.infos.length);
  let running: Int = 0;
  let runningBig = 0n;
  let lastLength: Int = -1;
  let lastLengthBig = 0n;
  let otherLength: Int = -1;
  let otherLengthBig = 0n;
  for (let k = 0; k < tensors.length; k++) {
    const i = order === null ? k : order[k]!;
    const begin = p.begin(i);
    const end = p.end(i);
    if (begin !== running || end < begin) {
      tensorError(c, p, i, 'R12', 'data_offsets leave a gap, overlap or run backwards', {
        expected: running,
        actual: [begin, end],
      });
    }
    const length = byteLengthOfCount(p.count(i), p.bits(i));
    if (typeof length === 'string') tensorError(c, p, i, length, BYTE_LENGTH_MESSAGES[length]);
    if (subInt(end, begin) !== length) {
      tensorError(c, p, i, 'R16', 'data_offsets span differs from shape × dtype size', {
        expected: length,
        actual: subInt(end, begin),
      });
    }
    // end = begin + length = running + length: one bigint addition (the length's bigint reused
    // while lengths repeat) costs less than converting `end`.
    if (length !== lastLength) {
      const swap: Int = lastLength;
      const swapBig = lastLengthBig;
      if (length === otherLength) lastLengthBig = otherLengthBig;
      else lastLengthBig = BigInt(length);
      lastLength = length;
      otherLength = swap;
      otherLengthBig = swapBig;
    }
    const endBig = end === begin ? runningBig : runningBig + lastLengthBig;
    const info = p.infos[i]!;
    info.dataOffsets = [runningBig, endBig];
    info.byteOffset = dataStart + Number(begin);
    info.byteLength = Number(length);
    tensors[k] = info;
    running = end;
    runningBig = endBig;
  }
  if (running !== fileSize - dataStart) {
    throw new TensorFSError('malformed', 'tensors do not cover the data section exactly', {
      details: { rule: 'safetensors.R17', offset: dataStart, expected: fileSize - dataStart, actual: running },
    });
  }
  return { headerSize, dataStart, fileSize, metadata, tensors, byName: p.byName };
}

/** Throws `malformed` for tensor `i`, at the byte offset of its key. */
function tensorError(
  c: JsonCursor,
  p: ParsedTensors,
  i: number,
  rule: string,
  message: string,
  extra: Record<string, unknown> = {},
): never {
  throw new TensorFSError('malformed', message, {
    details: {
      rule: `safetensors.${rule}`,
      tensor: p.infos[i]!.name,
      offset: c.byteOffset(p.keyPosition(i)),
      ...extra,
    },
  });
}
