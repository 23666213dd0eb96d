/**
 * Sharded checkpoints: `*.safetensors.index.json` (`weight_map`, optional `metadata`), parsed
 * with the same strict JSON reader as headers, shard names treated as hostile, cross-checked
 * against the shards' headers, and written canonically.
 *
 * Rules (`details.rule`): I1 structure/JSON, I2 unsafe shard name, I3 mapped tensor missing
 * from its shard, I4 tensor (or shard) not in the index, I5 tensor in two shards, I6 total_size
 * mismatch, I7 limits; S1 duplicate decoded keys, R10 nesting depth (as for headers).
 */
import { requireArray, requireBigint, requireBytes, requireObject, requireObjects, requireOptions } from '../args.js';
import { U64_MAX } from '../dtypes.js';
import { TensorFSError } from '../errors.js';
import { decodeUtf8Strict, type ExactJsonValue, JsonCursor, JsonNumberText, MAX_JSON_DEPTH } from './json-cursor.js';
import { comparePaths as compareUtf8 } from '../order.js';
import { checkWellFormed, pythonJsonString } from './json-text.js';
import type { SafetensorsHeader } from './types.js';

/** Largest index file accepted by default (bytes). */
export const MAX_SHARD_INDEX_SIZE = 100_000_000;
/** Most distinct shards accepted by default. */
export const MAX_SHARDS = 10_000;

/** A parsed, validated shard index. */
export interface SafetensorsShardIndex {
  /** The `metadata` object exactly (integers as bigint), or null when absent or JSON null. */
  metadata: Map<string, ExactJsonValue> | null;
  /** `metadata.total_size` when present. */
  totalSize: bigint | null;
  /** Tensor name → shard file name, in file order. */
  weightMap: Map<string, string>;
  /** Distinct shard names in order of first appearance. */
  shards: string[];
}

/** Options for {@link parseShardIndex}. */
export interface ShardIndexParseOptions {
  /** @default 100_000_000 ({@link MAX_SHARD_INDEX_SIZE}) */
  maxIndexSize?: number;
  /** @default 10_000 ({@link MAX_SHARDS}) */
  maxShards?: number;
}

/** Input to {@link writeShardIndex}. */
export interface ShardIndexInput {
  /** Tensor name → shard file name (non-empty). */
  weightMap: ReadonlyMap<string, string> | Readonly<Record<string, string>>;
  /**
   * The `metadata` object (e.g. `{ total_size: 123n }`). Values: null, booleans, strings,
   * integers (bigint or safe-integer number), {@link JsonNumberText}, arrays, Maps or plain objects.
   * Absent or null writes no `metadata`.
   */
  metadata?: ReadonlyMap<string, unknown> | Readonly<Record<string, unknown>> | null;
}

const WINDOWS_DEVICE = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])$/i;
const SUFFIX = '.safetensors';

/**
 * True if `name` is a plain shard file name: one path segment ending in `.safetensors` (with a
 * non-empty stem), at most 255 UTF-8 bytes, no `/` `\` `:` (so no absolute paths, drive letters,
 * UNC paths or URL schemes), no `..`, no C0/C1 control characters or DEL, no lone surrogate and
 * no Windows device stem (`nul.safetensors`).
 */
export function isSafeShardName(name: unknown): name is string {
  if (typeof name !== 'string' || name.length <= SUFFIX.length || !name.endsWith(SUFFIX)) return false;
  if (name.includes('..') || new TextEncoder().encode(name).length > 255) return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2f || c === 0x5c || c === 0x3a) return false;
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = name.charCodeAt(i + 1);
      if (c > 0xdbff || next < 0xdc00 || next > 0xdfff) return false;
      i++;
    }
  }
  return !WINDOWS_DEVICE.test(name.slice(0, name.indexOf('.')));
}

function malformed(rule: string, message: string, details: Record<string, unknown> = {}): TensorFSError {
  return new TensorFSError('malformed', message, { details: { rule: `safetensors.${rule}`, ...details } });
}

/**
 * Parses and validates a `*.safetensors.index.json`.
 * @throws {TensorFSError} `malformed` (rules I1, I2, S1, R10, with `offset`), `limit_exceeded`
 *   (I7) for an oversized index or too many shards, `invalid_argument` for bad options
 */
export function parseShardIndex(bytes: Uint8Array, options: ShardIndexParseOptions = {}): SafetensorsShardIndex {
  requireBytes(bytes, 'bytes', 'safetensors');
  requireOptions(options, 'options', 'safetensors');
  const maxIndexSize = limitOption(options.maxIndexSize, MAX_SHARD_INDEX_SIZE, 'maxIndexSize');
  const maxShards = limitOption(options.maxShards, MAX_SHARDS, 'maxShards');
  if (bytes.length > maxIndexSize) {
    throw new TensorFSError('limit_exceeded', 'shard index too large', {
      details: { rule: 'safetensors.I7', limit: maxIndexSize, actual: bytes.length },
    });
  }
  const c = new JsonCursor(decodeUtf8Strict(bytes, 0, 'I1'), 0, 'I1');
  c.ws();
  if (c.peek() !== 0x7b) c.fail('the index must be a JSON object');
  let metadata: Map<string, ExactJsonValue> | null | undefined;
  let weightMap: Map<string, string> | undefined;
  const seen = new Set<string>();
  if (c.objectStart()) {
    do {
      const at = c.pos;
      const key = c.key();
      if (seen.has(key)) c.fail('duplicate key', 'S1', { key }, at);
      seen.add(key);
      if (key === 'metadata') metadata = parseIndexMetadata(c);
      else if (key === 'weight_map') weightMap = parseWeightMap(c);
      else c.value(1, 'R10', 'S1');
    } while (c.objectNext());
  }
  c.ws();
  if (!c.atEnd()) c.fail('trailing characters after the index object');
  if (weightMap === undefined || weightMap.size === 0) throw malformed('I1', 'weight_map is missing or empty');
  const shards = [...new Set(weightMap.values())];
  if (shards.length > maxShards) {
    throw new TensorFSError('limit_exceeded', 'too many shards', {
      details: { rule: 'safetensors.I7', limit: maxShards, actual: shards.length },
    });
  }
  const total = metadata?.get('total_size');
  return { metadata: metadata ?? null, totalSize: typeof total === 'bigint' ? total : null, weightMap, shards };
}

function limitOption(value: number | undefined, fallback: number, what: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TensorFSError('invalid_argument', `${what} must be a non-negative integer`, {
      details: { rule: 'safetensors.options', actual: value },
    });
  }
  return value;
}

function parseIndexMetadata(c: JsonCursor): Map<string, ExactJsonValue> | null {
  const at = c.pos;
  const value = c.value(1, 'R10', 'S1');
  if (value === null) return null;
  if (!(value instanceof Map)) return c.fail('metadata must be an object or null', 'I1', {}, at);
  if (value.has('total_size')) {
    const total = value.get('total_size');
    if (typeof total !== 'bigint' || total < 0n || total > U64_MAX) {
      c.fail('metadata.total_size must be an integer in 0…2^64−1', 'I1', {}, at);
    }
  }
  return value;
}

function parseWeightMap(c: JsonCursor): Map<string, string> {
  if (c.peek() !== 0x7b) c.fail('weight_map must be an object', 'I1');
  const map = new Map<string, string>();
  if (c.objectStart()) {
    do {
      const at = c.pos;
      const tensor = c.key();
      if (map.has(tensor)) c.fail('duplicate tensor in weight_map', 'S1', { tensor }, at);
      const valueAt = c.pos;
      const shard = c.string('I1', 'a shard file name');
      if (!isSafeShardName(shard)) c.fail('unsafe shard file name', 'I2', { tensor, shard }, valueAt);
      map.set(tensor, shard);
    } while (c.objectNext());
  }
  return map;
}

/**
 * Cross-checks an index against its shards' headers: every mapped tensor is in its shard (I3),
 * every shard tensor is mapped (I4) to that shard and no other (I5), every shard given is in the
 * index (I4), and `total_size`, when present, equals the sum of tensor byte lengths (I6).
 * @throws {TensorFSError} `malformed` as above; `invalid_argument` when a shard the index names
 *   has no header in `headersByShard`
 */
export function checkShardIndex(
  index: SafetensorsShardIndex,
  headersByShard: ReadonlyMap<string, SafetensorsHeader>,
): void {
  requireObject(index, 'index', 'safetensors');
  requireArray(index.shards, 'index.shards', 'safetensors');
  if (!(index.weightMap instanceof Map)) requireObject(null, 'index.weightMap (a Map)', 'safetensors');
  if (!(headersByShard instanceof Map)) {
    throw new TensorFSError('invalid_argument', 'headersByShard must be a Map', {
      details: { rule: 'safetensors.argument', argument: 'headersByShard' },
    });
  }
  for (const shard of index.shards) {
    if (!headersByShard.has(shard)) {
      throw new TensorFSError('invalid_argument', 'no header given for a shard the index names', {
        details: { rule: 'safetensors.shard_header_missing', shard },
      });
    }
  }
  for (const header of headersByShard.values() as Iterable<unknown>) {
    requireObject(header, 'headersByShard values', 'safetensors');
    const h = header as Partial<SafetensorsHeader>;
    if (!(h.byName instanceof Map)) requireObject(null, 'headersByShard values: byName (a Map)', 'safetensors');
    requireObjects(h.tensors, 'headersByShard values: tensors', 'safetensors');
  }
  const named = new Set(index.shards);
  for (const shard of headersByShard.keys()) {
    if (!named.has(shard)) throw malformed('I4', 'shard not referenced by the index', { shard });
  }
  for (const [tensor, shard] of index.weightMap) {
    if (!headersByShard.get(shard)!.byName.has(tensor)) {
      throw malformed('I3', 'tensor in weight_map is missing from its shard', { tensor, shard });
    }
  }
  let total = 0n;
  for (const [shard, header] of headersByShard) {
    for (const t of header.tensors) {
      const mapped = index.weightMap.get(t.name);
      if (mapped === undefined)
        throw malformed('I4', 'shard holds a tensor not in weight_map', { tensor: t.name, shard });
      if (mapped !== shard) {
        throw malformed('I5', 'tensor appears in two shards', { tensor: t.name, shard, expected: mapped });
      }
      total += BigInt(t.byteLength);
    }
  }
  if (index.totalSize !== null && index.totalSize !== total) {
    throw malformed('I6', 'metadata.total_size differs from the sum of tensor sizes', {
      expected: total,
      actual: index.totalSize,
    });
  }
}

/** The `total_size` of a set of shards: the sum of their tensors' byte lengths. */
export function shardIndexTotalSize(headers: Iterable<SafetensorsHeader>): bigint {
  if (typeof (headers as Partial<Iterable<unknown>> | null)?.[Symbol.iterator] !== 'function') {
    requireArray(headers, 'headers', 'safetensors');
  }
  let total = 0n;
  for (const h of headers) {
    requireObject(h, 'headers[]', 'safetensors');
    requireObjects(h.tensors, 'headers[].tensors', 'safetensors');
    for (const t of h.tensors) {
      if (typeof t.byteLength !== 'bigint' && !Number.isSafeInteger(t.byteLength)) {
        requireBigint(t.byteLength, 'headers[].tensors[].byteLength', 'safetensors');
      }
      total += BigInt(t.byteLength);
    }
  }
  return total;
}

/**
 * Writes an index exactly as huggingface_hub / transformers do —
 * `json.dumps(index, indent=2, sort_keys=True) + "\n"` with Python's default `ensure_ascii` — so
 * the output is ASCII, keys sorted by code point at every level. Integers are written exactly;
 * a {@link JsonNumberText} is written as its text (Python would print floats in its own repr).
 * @throws {TensorFSError} `invalid_argument` for an empty weight_map, an unsafe shard name (I2),
 *   a lone surrogate, a bad `total_size` or a value JSON cannot hold
 */
export function writeShardIndex(index: ShardIndexInput): Uint8Array {
  requireObject(index, 'index', 'safetensors');
  const weightMap = entriesOf(index?.weightMap, 'weight_map');
  if (weightMap.length === 0) throw invalidIndex('weight_map must not be empty');
  for (const [tensor, shard] of weightMap) {
    checkWellFormed(tensor, 'tensor name', 'I1');
    if (!isSafeShardName(shard)) {
      throw new TensorFSError('invalid_argument', 'unsafe shard file name', {
        details: { rule: 'safetensors.I2', tensor, shard: String(shard) },
      });
    }
  }
  const root = new Map<string, unknown>();
  if (index.metadata !== undefined && index.metadata !== null) {
    const metadata = new Map(entriesOf(index.metadata, 'metadata'));
    if (metadata.has('total_size')) {
      const total = metadata.get('total_size');
      const exact = typeof total === 'number' && Number.isSafeInteger(total) ? BigInt(total) : total;
      if (typeof exact !== 'bigint' || exact < 0n || exact > U64_MAX) {
        throw invalidIndex('metadata.total_size must be an integer in 0…2^64−1');
      }
    }
    root.set('metadata', metadata);
  }
  root.set('weight_map', new Map(weightMap));
  return new TextEncoder().encode(`${pythonJson(root, '')}\n`);
}

function invalidIndex(message: string): TensorFSError {
  return new TensorFSError('invalid_argument', message, { details: { rule: 'safetensors.I1' } });
}

function entriesOf(value: unknown, what: string): [string, unknown][] {
  if (value instanceof Map) return [...value];
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return Object.entries(value);
  throw invalidIndex(`${what} must be a Map or a plain object`);
}

/** `json.dumps(value, indent=2, sort_keys=True)` at indentation `indent` (2 spaces per level). */
function pythonJson(value: unknown, indent: string): string {
  if (indent.length > 2 * MAX_JSON_DEPTH) throw invalidIndex('value nested too deeply (or cyclic)');
  if (value === null) return 'null';
  if (value === true || value === false) return String(value);
  if (typeof value === 'string') {
    checkWellFormed(value, 'string', 'I1');
    return pythonJsonString(value);
  }
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  if (value instanceof JsonNumberText) return value.text;
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return `[\n${value.map((v) => inner + pythonJson(v, inner)).join(',\n')}\n${indent}]`;
  }
  if (typeof value === 'object' && value !== null && !(value instanceof Uint8Array)) {
    const entries = entriesOf(value, 'object');
    if (entries.length === 0) return '{}';
    for (const [k] of entries) checkWellFormed(k, 'key', 'I1');
    entries.sort((a, b) => compareUtf8(a[0], b[0]));
    return `{\n${entries.map(([k, v]) => `${inner}${pythonJsonString(k)}: ${pythonJson(v, inner)}`).join(',\n')}\n${indent}}`;
  }
  throw invalidIndex(`a ${typeof value} cannot be written as JSON`);
}
