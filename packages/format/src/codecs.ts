/**
 * One codec per tensor container format, listed in one table ({@link CONTAINER_CODECS}).
 *
 * Everything a layer above needs to know about a container lives in its codec: how to recognise
 * it from its leading bytes, how to parse its header from a {@link ByteSource}, how to describe its
 * tensors uniformly (name, dtype, shape, byte range, block geometry), the template that carries a
 * file's non-tensor header content into a rewritten file, and how to write a header for a list of
 * tensors. The planner sniffs with {@link detectCodec}; `@tensorfs/tensors` opens, writes and
 * composes files through the codec it finds. Adding a container is adding a codec to the table.
 * @packageDocumentation
 */
import { safetensorsByteLength, safetensorsDtype } from './dtypes.js';
import { isTensorFSError, TensorFSError } from './errors.js';
import { GGML_MAX_NAME, ggmlTensorGeometry } from './gguf/geometry.js';
import { ggmlTypeByName } from './gguf/ggml-types.js';
import { GGUF_MAGIC, parseGgufHeader } from './gguf/parse-header.js';
import { readGgufHeader } from './gguf/read-header.js';
import type { GgufHeader } from './gguf/types.js';
import { type GgufRawMetadata, writeGgufHeader } from './gguf/write-header.js';
import type { PlanProfile } from './manifest/profiles.js';
import {
  MAX_SAFETENSORS_HEADER_SIZE,
  parseSafetensorsHeader,
  readSafetensorsHeader,
  SAFETENSORS_PREFIX_BYTES,
} from './safetensors/parse-header.js';
import type { SafetensorsHeader } from './safetensors/types.js';
import { writeSafetensorsHeader } from './safetensors/write-header.js';
import { type ByteSource, checkByteSource, readFully } from './source.js';
import { requireBytes, requireCount, requireOptions, requireString } from './args.js';

/** One tensor as every container describes it. */
export interface ContainerTensor {
  /** The tensor's name in its file. */
  readonly name: string;
  /** The container's dtype name (a safetensors dtype, a ggml type name, ...). */
  readonly dtype: string;
  /** Row-major dimensions (outermost first), whatever order the container stores them in. */
  readonly shape: readonly bigint[];
  /** Absolute offset of the tensor's first byte in the file. */
  readonly byteOffset: number;
  /** The tensor's exact length in bytes (no padding). */
  readonly byteLength: number;
  /** Elements per block (1 for plain dtypes; 32 or 256 for ggml block types). */
  readonly blockSize: number;
  /** Bytes per block (may be fractional for sub-byte dtypes). */
  readonly typeSize: number;
}

/** A tensor to write a header for: name, dtype, row-major shape and exact byte length. */
export interface HeaderTensor {
  readonly name: string;
  readonly dtype: string;
  readonly shape: readonly bigint[];
  readonly byteLength: number;
}

/** A header written for a list of tensors, and the zero padding that follows each tensor's bytes. */
export interface WrittenContainerHeader {
  /** Everything before the data section (prefix, header, padding). */
  readonly bytes: Uint8Array;
  /** For each tensor in order, the zero bytes after it (GGUF alignment padding; 0 for safetensors). */
  readonly padding: readonly number[];
}

/** Options of {@link ContainerCodec.read} and {@link readContainerHeader}. */
export interface ContainerReadOptions {
  /** Cancels between reads (`cancelled`). */
  signal?: AbortSignal;
  /** safetensors strict mode (see `SafetensorsParseOptions.strict`); ignored by other codecs. */
  strict?: boolean;
}

/** The safetensors template: the `__metadata__` map carried into a rewritten file. */
export interface SafetensorsTemplate {
  readonly metadata: ReadonlyMap<string, string> | null;
}

/**
 * The GGUF template: what a rewritten GGUF file keeps of its source, verbatim — version, byte
 * order, alignment and the metadata key/value block.
 */
export interface GgufTemplate {
  readonly version: GgufHeader['version'];
  readonly endianness: GgufHeader['endianness'];
  readonly alignment: number;
  /** The raw metadata block (every key/value pair, as stored) and its pair count. */
  readonly metadata: GgufRawMetadata;
}

/**
 * Everything TensorFS knows about one container format.
 * @typeParam N - the codec's name.
 * @typeParam H - its parsed header.
 * @typeParam T - its template (the header content a rewrite carries over).
 */
export interface ContainerCodec<N extends string = string, H = unknown, T = unknown> {
  /** The format's name (`safetensors`, `gguf`). */
  readonly name: N;
  /** The name as people write it (`GGUF`), for messages. */
  readonly title: string;
  /** The planner profile a file of this format is stored under. */
  readonly profile: PlanProfile;
  /** File name endings that announce this format (`.safetensors`). */
  readonly extensions: readonly string[];
  /** The magic bytes at offset 0, or `null` for a format that has none (safetensors). */
  readonly magic: Uint8Array | null;
  /**
   * True if `head` (the first {@link DETECT_BYTES} bytes of a file of `size` bytes, or all of a
   * shorter file) may start a file of this format. A format with magic bytes answers from them;
   * one without answers from the framing it can check (it may still fail to parse).
   */
  detect(head: Uint8Array, size: number): boolean;
  /**
   * Reads and validates the header from a source (never reads tensor data beyond what the header
   * reads happen to cover).
   * @throws {TensorFSError} the format's `malformed` / `unsupported` / `limit_exceeded`; `io`,
   *   `cancelled` from the source.
   */
  read(source: ByteSource, options?: ContainerReadOptions): Promise<H>;
  /** Parses the header from bytes holding at least the whole header, of a file of `fileSize` bytes. */
  parse(bytes: Uint8Array, fileSize: number): H;
  /** Where the data section starts (the end of the header region). */
  dataStart(header: H): number;
  /** The file's tensors in data order, described uniformly. */
  tensors(header: H): ContainerTensor[];
  /** The template of a parsed file; `head` must reach the end of the header region. */
  template(header: H, head: ByteSource, signal?: AbortSignal): Promise<T>;
  /** The template of a file written from scratch. */
  readonly defaultTemplate: T;
  /**
   * Checks a template a caller gave.
   * @throws {TensorFSError} `invalid_argument`.
   */
  checkTemplate(template: unknown): T;
  /**
   * Checks a tensor a caller wants to write and returns its exact byte length.
   * @throws {TensorFSError} `invalid_argument` (bad name, dtype or shape), `limit_exceeded` (over 2^53 − 1 bytes).
   */
  byteLength(name: string, dtype: string, shape: readonly bigint[]): number;
  /**
   * The header of a file holding `tensors` back to back in this order (with the format's padding).
   * @throws {TensorFSError} `invalid_argument` for what the format cannot hold.
   */
  writeHeader(template: T, tensors: readonly HeaderTensor[]): WrittenContainerHeader;
}

/** Leading bytes every codec's {@link ContainerCodec.detect} is given (or the whole file if shorter). */
export const DETECT_BYTES = 16;

/** The name safetensors reserves for its metadata map. */
const METADATA_KEY = '__metadata__';

/** The safetensors codec. */
export const safetensorsCodec: ContainerCodec<'safetensors', SafetensorsHeader, SafetensorsTemplate> = {
  name: 'safetensors',
  title: 'safetensors',
  profile: 'safetensors-v1',
  extensions: ['.safetensors'],
  magic: null,
  detect(head, size) {
    // No magic: an 8-byte little-endian header length within the limit and within the file.
    if (size < SAFETENSORS_PREFIX_BYTES || head.length < SAFETENSORS_PREFIX_BYTES) return false;
    const view = new DataView(head.buffer, head.byteOffset, SAFETENSORS_PREFIX_BYTES);
    const n = view.getBigUint64(0, true);
    return n <= BigInt(MAX_SAFETENSORS_HEADER_SIZE) && Number(n) + SAFETENSORS_PREFIX_BYTES <= size;
  },
  read(source, options = {}) {
    return readSafetensorsHeader(source, {
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.strict !== undefined ? { strict: options.strict } : {}),
    });
  },
  parse(bytes, fileSize) {
    return parseSafetensorsHeader(bytes, { fileSize });
  },
  dataStart: (header) => header.dataStart,
  tensors: (header) =>
    header.tensors.map((t) => ({
      name: t.name,
      dtype: t.dtype,
      shape: t.shape,
      byteOffset: t.byteOffset,
      byteLength: t.byteLength,
      blockSize: 1,
      // The parser only returns known dtypes.
      typeSize: safetensorsDtype(t.dtype)!.bits / 8,
    })),
  async template(header) {
    return { metadata: header.metadata };
  },
  defaultTemplate: Object.freeze({ metadata: null }),
  checkTemplate(template) {
    if (typeof template !== 'object' || template === null || !('metadata' in template)) {
      throw new TensorFSError('invalid_argument', 'a safetensors template is { metadata }', {
        details: { rule: 'codec.template' },
      });
    }
    return { metadata: metadataMap((template as { metadata: unknown }).metadata) };
  },
  byteLength(name, dtype, shape) {
    if (name === METADATA_KEY) {
      throw new TensorFSError('invalid_argument', 'a safetensors tensor cannot be named __metadata__', {
        details: { rule: 'safetensors.R9', tensor: name },
      });
    }
    return toLength(
      asArgument(() => safetensorsByteLength(dtype, shape), name),
      name,
    );
  },
  writeHeader(template, tensors) {
    const written = writeSafetensorsHeader(
      tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: [...t.shape], byteLength: t.byteLength })),
      { order: 'given', ...(template.metadata !== null ? { metadata: template.metadata } : {}) },
    );
    // The data section is the tensors back to back, in the order given.
    let at = 0n;
    written.tensors.forEach((info, i) => {
      const expected = tensors[i]!;
      if (info.name !== expected.name || info.dataOffsets[0] !== at || info.byteLength !== expected.byteLength) {
        throw new TensorFSError('internal', 'the safetensors header writer did not keep the given order', {
          details: { rule: 'codec.writer_order', tensor: expected.name },
        });
      }
      at = info.dataOffsets[1];
    });
    return { bytes: written.bytes, padding: tensors.map(() => 0) };
  },
};

const EMPTY_GGUF: GgufTemplate = Object.freeze({
  version: 3,
  endianness: 'little',
  alignment: 32,
  metadata: Object.freeze({ raw: new Uint8Array(0), count: 0 }),
});

const utf8 = new TextEncoder();

/** The GGUF codec. */
export const ggufCodec: ContainerCodec<'gguf', GgufHeader, GgufTemplate> = {
  name: 'gguf',
  title: 'GGUF',
  profile: 'gguf-v1',
  extensions: ['.gguf'],
  magic: GGUF_MAGIC,
  detect(head) {
    return startsWith(head, GGUF_MAGIC);
  },
  read(source, options = {}) {
    return readGgufHeader(source, options.signal ? { signal: options.signal } : {});
  },
  parse(bytes, fileSize) {
    return parseGgufHeader(bytes, { fileSize });
  },
  dataStart: (header) => header.dataStart,
  tensors: (header) =>
    header.tensors.map((t) => ({
      name: t.name,
      dtype: t.typeName,
      shape: t.shape,
      byteOffset: t.byteOffset,
      byteLength: t.byteLength,
      blockSize: t.blockSize,
      typeSize: t.typeSize,
    })),
  async template(header, head, signal) {
    const block = header.metadataBlock;
    const raw = (await head.read(block.offset, block.length, signal)).slice();
    return {
      version: header.version,
      endianness: header.endianness,
      alignment: header.alignment,
      metadata: { raw, count: header.metadata.length },
    };
  },
  defaultTemplate: EMPTY_GGUF,
  checkTemplate(template) {
    const t = template as Partial<GgufTemplate> | null;
    if (
      typeof t !== 'object' ||
      t === null ||
      typeof t.metadata !== 'object' ||
      t.metadata === null ||
      !(t.metadata.raw instanceof Uint8Array)
    ) {
      throw new TensorFSError('invalid_argument', 'a GGUF template is { version, endianness, alignment, metadata }', {
        details: { rule: 'codec.template' },
      });
    }
    return t as GgufTemplate;
  },
  byteLength(name, dtype, shape) {
    const bytes = utf8.encode(name).length;
    if (bytes === 0 || bytes >= GGML_MAX_NAME) {
      throw new TensorFSError('invalid_argument', `a GGUF tensor name takes 1 to ${GGML_MAX_NAME - 1} bytes`, {
        details: { rule: 'gguf.tensor_name_length', tensor: name, limit: GGML_MAX_NAME - 1, actual: bytes },
      });
    }
    const type = ggmlTypeByName(dtype);
    if (type === undefined || type.removed === true) {
      throw new TensorFSError('invalid_argument', 'not a ggml tensor type', {
        details: { rule: 'gguf.tensor_type_unknown', tensor: name, dtype },
      });
    }
    const geometry = asArgument(() => ggmlTensorGeometry(type.id, [...shape].reverse(), { tensor: name }), name);
    return toLength(geometry.byteLength, name);
  },
  writeHeader(template, tensors) {
    const written = writeGgufHeader({
      version: template.version,
      endianness: template.endianness,
      alignment: template.alignment,
      metadata: template.metadata,
      tensors: tensors.map((t) => ({ name: t.name, type: t.dtype, dims: [...t.shape].reverse() })),
    });
    const padding = written.tensors.map((info, i) => {
      if (info.name !== tensors[i]!.name || info.byteLength !== tensors[i]!.byteLength) {
        throw new TensorFSError('internal', 'the GGUF header writer did not keep the given order', {
          details: { rule: 'codec.writer_order', tensor: tensors[i]!.name },
        });
      }
      return info.paddedLength - info.byteLength;
    });
    return { bytes: written.bytes, padding };
  },
};

/**
 * Every container codec, in detection order: codecs with magic bytes first, so a format without
 * magic (safetensors) is only tried when no magic matched.
 */
export const CONTAINER_CODECS = Object.freeze([ggufCodec, safetensorsCodec] as const);

/** Any codec of the table. */
export type AnyContainerCodec = (typeof CONTAINER_CODECS)[number];

/** The name of a container format of the table (`'safetensors' | 'gguf'`). */
export type ContainerFormat = AnyContainerCodec['name'];

/** Format name → its parsed header type. */
export type ContainerHeaderOf<F extends ContainerFormat> =
  Extract<AnyContainerCodec, { name: F }> extends ContainerCodec<F, infer H, unknown> ? H : never;

/** Format name → its template type. */
export type ContainerTemplateOf<F extends ContainerFormat> =
  Extract<AnyContainerCodec, { name: F }> extends ContainerCodec<F, unknown, infer T> ? T : never;

/** A parsed header tagged with its format (a discriminated union over the table). */
export type ContainerHeader = {
  [F in ContainerFormat]: { readonly format: F; readonly header: ContainerHeaderOf<F> };
}[ContainerFormat];

/** The codec called `name`, or `undefined`. */
export function codecByName(name: string): AnyContainerCodec | undefined {
  return CONTAINER_CODECS.find((c) => c.name === name);
}

/** The codec a planner profile belongs to, or `undefined` (`blob-v1`). */
export function codecByProfile(profile: string): AnyContainerCodec | undefined {
  return CONTAINER_CODECS.find((c) => c.profile === profile);
}

/** The codec a file name's ending announces, or `undefined`. */
export function codecForPath(path: string): AnyContainerCodec | undefined {
  requireString(path, 'path', 'codec');
  return CONTAINER_CODECS.find((c) => c.extensions.some((e) => path.endsWith(e)));
}

/**
 * The codec whose {@link ContainerCodec.detect} accepts the leading bytes of a file, first in table
 * order, or `undefined`.
 */
export function detectCodec(head: Uint8Array, size: number): AnyContainerCodec | undefined {
  requireBytes(head, 'head', 'codec');
  requireCount(size, 'size', 'codec');
  return CONTAINER_CODECS.find((c) => c.detect(head, size));
}

/** Options of {@link readContainerHeader}. */
export interface ReadContainerOptions extends ContainerReadOptions {
  /**
   * The file's name. A name announcing a format with magic bytes (`.gguf`) makes a file without
   * them `malformed` ("not a GGUF file") instead of trying another format.
   */
  path?: string;
}

/**
 * Finds a file's format from its own bytes and reads its header: the codec whose magic bytes
 * match; else, when `path` announces a format with magic bytes, `malformed` naming the bytes found;
 * else the format without magic (safetensors), whose parser then reports what is wrong.
 * @throws {TensorFSError} `malformed` (rule `codec.magic`), the codec's parse errors, `io`, `cancelled`.
 */
export async function readContainerHeader(
  source: ByteSource,
  options: ReadContainerOptions = {},
): Promise<ContainerHeader> {
  checkByteSource(source);
  requireOptions(options, 'options', 'codec');
  const head = await readHead(source, options.signal);
  const named = options.path !== undefined ? codecForPath(options.path) : undefined;
  const found = CONTAINER_CODECS.find((c) => c.magic !== null && c.detect(head, source.size));
  if (found === undefined && named?.magic != null) throw notThisFormat(named, head, source.size);
  const codec = found ?? named ?? CONTAINER_CODECS.find((c) => c.magic === null)!;
  return { format: codec.name, header: await codec.read(source, options) } as ContainerHeader;
}

/** The leading {@link DETECT_BYTES} bytes of a source (fewer if it is shorter), copied. */
export async function readHead(source: ByteSource, signal?: AbortSignal): Promise<Uint8Array> {
  checkByteSource(source);
  const length = Math.min(DETECT_BYTES, source.size);
  return (await readFully(source, 0, length, signal)).slice();
}

function notThisFormat(codec: AnyContainerCodec, head: Uint8Array, size: number): TensorFSError {
  const what = codec.title;
  const expected = ascii(codec.magic!);
  if (size < codec.magic!.length) {
    return new TensorFSError('malformed', `not a ${what} file: ${size} bytes, too short for the "${expected}" magic`, {
      details: { rule: 'codec.magic', format: codec.name, expected, actual: size, limit: codec.magic!.length },
    });
  }
  const found = head.subarray(0, codec.magic!.length);
  return new TensorFSError(
    'malformed',
    `not a ${what} file: it starts with ${describeBytes(found)}, not the "${expected}" magic`,
    { details: { rule: 'codec.magic', format: codec.name, expected, actual: hex(found) } },
  );
}

function startsWith(head: Uint8Array, magic: Uint8Array): boolean {
  if (head.length < magic.length) return false;
  for (let i = 0; i < magic.length; i++) if (head[i] !== magic[i]) return false;
  return true;
}

function ascii(bytes: Uint8Array): string {
  return String.fromCharCode(...bytes);
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** `"GGUF" (47475546)` when printable, else the hex alone. */
function describeBytes(bytes: Uint8Array): string {
  const printable = bytes.every((b) => b >= 0x20 && b < 0x7f && b !== 0x22);
  return printable ? `"${ascii(bytes)}" (${hex(bytes)})` : `bytes ${hex(bytes)}`;
}

function metadataMap(metadata: unknown): ReadonlyMap<string, string> | null {
  if (metadata === null || metadata === undefined) return null;
  if (typeof metadata !== 'object') {
    throw new TensorFSError('invalid_argument', 'safetensors metadata maps strings to strings', {
      details: { rule: 'safetensors.R9', actual: typeof metadata },
    });
  }
  const map = metadata instanceof Map ? metadata : new Map(Object.entries(metadata));
  for (const [key, value] of map) {
    if (typeof key !== 'string' || typeof value !== 'string') {
      throw new TensorFSError('invalid_argument', 'safetensors metadata maps strings to strings', {
        details: { rule: 'safetensors.R9', key: String(key) },
      });
    }
  }
  return map as ReadonlyMap<string, string>;
}

/** Runs a format check, reporting any failure as the caller's `invalid_argument`. */
function asArgument<T>(check: () => T, tensor: string): T {
  try {
    return check();
  } catch (error) {
    if (!isTensorFSError(error)) throw error;
    throw new TensorFSError('invalid_argument', error.message, {
      details: { ...error.details, tensor },
      cause: error,
    });
  }
}

/** A byte length as a number; `limit_exceeded` beyond 2^53 − 1. */
function toLength(length: bigint, tensor: string): number {
  if (length > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new TensorFSError('limit_exceeded', 'a tensor is larger than 2^53 - 1 bytes', {
      details: { rule: 'codec.tensor_too_large', tensor, actual: length },
    });
  }
  return Number(length);
}
