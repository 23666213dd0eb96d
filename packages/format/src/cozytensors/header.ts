/**
 * The cozytensors checkpoint header (`spec/v1/cozytensors.md`). Bytes = ASCII `TFC1` + one
 * canonical CBOR map:
 *
 * ```
 * { "components": [component...], "pipeline": null | {"cls": tstr, "config": json},
 *   "source": null | bstr(32), "version": 1 }
 * component: { "assets": [asset...], "cls": tstr, "config": json, "name": tstr, "tensors": [tensor...] }
 * tensor:    { "dtype": tstr, "name": tstr, "records": [record...], "shape": [uint...] }
 *          | { "dtype": tstr, "encoding": encoding, "name": tstr, "shape": [uint...] }
 * encoding:  { "params": json, "parts": { role: part }, "scheme": tstr }
 * part:      { "dtype": tstr, "records": [record...], "shape": [uint...] }
 * asset:     { "name": tstr, "records": [record...] }
 * record:    [bstr(32) digest, uint length]
 * ```
 */
import { requireArray, requireBytes, requireCount, requireFunction, requireString } from '../args.js';
import { type SafetensorsDtype, safetensorsDtype } from '../dtypes.js';
import { type ErrorCode, TensorFSError } from '../errors.js';
import { digestInto, isObjectId, type ObjectId, objectIdFromDigest } from '../ids.js';
import { type CborKey, type CborValue, compareBytes, decodeCbor, encodeCbor } from '../manifest/cbor.js';
import type { RecordRef } from '../manifest/manifest.js';
import { checkPath } from '../manifest/paths.js';
import { MAX_PLAN_RECORDS, RECORD_GRID_BYTES } from '../manifest/profiles.js';
import { cborToJson, type JsonValue, jsonToCbor } from './json-value.js';

/** The four bytes that open every cozytensors header: ASCII `TFC1` ("TensorFS checkpoint, v1"). */
export const COZYTENSORS_MAGIC: Uint8Array = /* @__PURE__ */ new Uint8Array([0x54, 0x46, 0x43, 0x31]);
/** The header schema version inside the CBOR map. */
export const COZYTENSORS_VERSION = 1;
/** At most this many components in one checkpoint. */
export const MAX_COMPONENTS = 4096;
/** At most this many tensors (over all components) in one checkpoint. */
export const MAX_CHECKPOINT_TENSORS = 1_000_000;
/** At most this many records (tensors, parts and assets together) in one checkpoint. */
export const MAX_CHECKPOINT_RECORDS = MAX_PLAN_RECORDS;
/** At most this many dimensions in one shape. */
export const MAX_DIMS = 64;
/** Longest tensor, role, scheme or class name, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 4096;

/** A plain tensor's data or an encoded tensor's part: a dtype, a shape and the records of its bytes. */
export interface CheckpointPart {
  /** A safetensors dtype name (`F32`, `BF16`, `U8`…). */
  dtype: SafetensorsDtype;
  /** Dimensions (each an integer in 0…2^53−1); `[]` is a scalar. */
  shape: number[];
  /** The bytes, row-major, as records; their lengths add up to exactly dtype × shape. */
  records: RecordRef[];
}

/** How an encoded tensor's parts become values of its logical dtype. Any scheme is carried as is. */
export interface CheckpointEncoding {
  /** The scheme name (the encodings table defines the known ones; unknown ones are kept). */
  scheme: string;
  /** The scheme's parameters: any JSON value. */
  params: JsonValue;
  /** The stored arrays by role (`qweight`, `scales`…); at least one. */
  parts: Record<string, CheckpointPart>;
}

/** One tensor of a component: plain (`records`) or encoded (`encoding`), never both. */
export type CheckpointTensor =
  | { name: string; dtype: SafetensorsDtype; shape: number[]; records: RecordRef[]; encoding?: undefined }
  | { name: string; dtype: SafetensorsDtype; shape: number[]; encoding: CheckpointEncoding; records?: undefined };

/** A named file a component needs at run time (tokenizer files, configs as written…). */
export interface CheckpointAsset {
  /** A relative `/`-separated path (the TFM1 path rules: no `..`, no absolute path, no NUL…). */
  name: string;
  /** The bytes as records (any number, each 1 byte or more). */
  records: RecordRef[];
}

/** A component: a class, a parsed config, tensors in construction order and assets sorted by name. */
export interface CheckpointComponent {
  /** One path segment (the folder an export writes it to): no `/`, not `.` or `..`. */
  name: string;
  /** The class the consuming library builds it with (may be empty). */
  cls: string;
  /** The parsed config: any JSON value. */
  config: JsonValue;
  /** Tensors in construction order (part of the checkpoint's identity); names unique. */
  tensors: CheckpointTensor[];
  /** Assets sorted by the UTF-8 bytes of their names; names unique. */
  assets: CheckpointAsset[];
}

/** A decoded cozytensors header. */
export interface CheckpointHeader {
  /** The pipeline class and config, or `null` for a checkpoint that is not a pipeline. */
  pipeline: { cls: string; config: JsonValue } | null;
  /** Components in construction order (part of the checkpoint's identity); names unique. */
  components: CheckpointComponent[];
  /**
   * The TFM1 snapshot this checkpoint was converted from (its original files, byte for byte), or
   * `null`. It shares the checkpoint's tensor objects; export uses it to give the files back.
   */
  source: ObjectId | null;
}

const TOP_KEYS = ['components', 'pipeline', 'source', 'version'];
const PIPELINE_KEYS = ['cls', 'config'];
const COMPONENT_KEYS = ['assets', 'cls', 'config', 'name', 'tensors'];
const PLAIN_KEYS = ['dtype', 'name', 'records', 'shape'];
const ENCODED_KEYS = ['dtype', 'encoding', 'name', 'shape'];
const ENCODING_KEYS = ['params', 'parts', 'scheme'];
const PART_KEYS = ['dtype', 'records', 'shape'];
const ASSET_KEYS = ['name', 'records'];
const utf8 = new TextEncoder();

type Fail = (rule: string, message: string, details?: Record<string, unknown>) => never;

function failer(code: ErrorCode): Fail {
  return (rule, message, details = {}) => {
    throw new TensorFSError(code, message, { details: { rule: `cozytensors.${rule}`, ...details } });
  };
}

/** True when `bytes` starts with {@link COZYTENSORS_MAGIC}. */
export function isCheckpointHeader(bytes: Uint8Array): boolean {
  return (
    bytes instanceof Uint8Array && bytes.length >= 4 && compareBytes(bytes.subarray(0, 4), COZYTENSORS_MAGIC) === 0
  );
}

// ---------------------------------------------------------------------------------------------
// Encoding

/**
 * Encodes a checkpoint header as `TFC1` bytes, after validating it.
 * @throws {TensorFSError} `invalid_argument` (details `rule` `cozytensors.<rule>`, and where) for
 * anything {@link decodeCheckpoint} would refuse: a bad name, a duplicate component, tensor or
 * asset name, an unknown dtype, records that do not add up to dtype × shape, a config that is not
 * a JSON value, a bound exceeded.
 */
export function encodeCheckpoint(header: CheckpointHeader): Uint8Array {
  const fail = failer('invalid_argument');
  if (typeof header !== 'object' || header === null || !Array.isArray(header.components)) {
    fail('shape', 'a checkpoint header is { pipeline, components, source }');
  }
  const counts = { tensors: 0, records: 0 };
  const record = (r: RecordRef, where: Record<string, unknown>, ceiling: number): CborValue => {
    if (typeof r !== 'object' || r === null || !isObjectId(r.digest))
      fail('record_digest', 'record digest is not an object id', where);
    if (!Number.isSafeInteger(r.length) || r.length < 1 || r.length > ceiling) {
      fail('record_length', 'record length out of range', { ...where, limit: ceiling, actual: r.length });
    }
    const d = new Uint8Array(32);
    digestInto(r.digest, d);
    return [d, r.length];
  };
  const records = (list: unknown, where: Record<string, unknown>, ceiling: number): CborValue[] => {
    if (!Array.isArray(list)) fail('shape', 'records must be an array', where);
    counts.records += (list as RecordRef[]).length;
    if (counts.records > MAX_CHECKPOINT_RECORDS)
      fail('records_limit', 'too many records', { limit: MAX_CHECKPOINT_RECORDS });
    return (list as RecordRef[]).map((r) => record(r, where, ceiling));
  };
  const part = (
    p: CheckpointPart,
    where: Record<string, unknown>,
  ): { dtype: string; records: CborValue[]; shape: number[] } => {
    if (typeof p !== 'object' || p === null) fail('shape', 'a part is { dtype, shape, records }', where);
    checkDtype(p.dtype, where, fail);
    checkShape(p.shape, where, fail);
    const body = records(p.records, where, RECORD_GRID_BYTES);
    checkDataSize(p.dtype, p.shape, p.records, where, fail);
    return { dtype: p.dtype, records: body, shape: [...p.shape] };
  };

  if (header.pipeline !== null && (typeof header.pipeline !== 'object' || header.pipeline === undefined)) {
    fail('shape', 'pipeline must be { cls, config } or null');
  }
  if (header.components.length > MAX_COMPONENTS) {
    fail('components_limit', 'too many components', { limit: MAX_COMPONENTS, actual: header.components.length });
  }
  if (header.source !== null && !isObjectId(header.source)) fail('source', 'source must be an object id or null');
  const componentNames = new Set<string>();
  const components = header.components.map((c): CborValue => {
    if (typeof c !== 'object' || c === null) fail('shape', 'a component is { name, cls, config, tensors, assets }');
    checkComponentName(c.name, fail);
    if (componentNames.has(c.name)) fail('duplicate_component', 'component names repeat', { component: c.name });
    componentNames.add(c.name);
    checkText(c.cls, 'class', { component: c.name }, fail, true);
    if (!Array.isArray(c.tensors) || !Array.isArray(c.assets))
      fail('shape', 'tensors and assets must be arrays', { component: c.name });
    counts.tensors += c.tensors.length;
    if (counts.tensors > MAX_CHECKPOINT_TENSORS)
      fail('tensors_limit', 'too many tensors', { limit: MAX_CHECKPOINT_TENSORS });
    const tensorNames = new Set<string>();
    const tensors = c.tensors.map((t): CborValue => {
      if (typeof t !== 'object' || t === null)
        fail('shape', 'a tensor is { name, dtype, shape, records | encoding }', { component: c.name });
      const at = { component: c.name, tensor: t.name };
      checkText(t.name, 'tensor_name', at, fail);
      if (tensorNames.has(t.name)) fail('duplicate_tensor', 'tensor names repeat within a component', at);
      tensorNames.add(t.name);
      checkDtype(t.dtype, at, fail);
      checkShape(t.shape, at, fail);
      const hasRecords = t.records !== undefined;
      const hasEncoding = t.encoding !== undefined;
      if (hasRecords === hasEncoding) fail('tensor_kind', 'a tensor has exactly one of records and encoding', at);
      if (hasRecords)
        return {
          dtype: t.dtype,
          name: t.name,
          records: part(t as CheckpointPart, at).records,
          shape: [...t.shape],
        } as CborValue;
      const e = t.encoding!;
      if (typeof e !== 'object' || e === null) fail('shape', 'an encoding is { scheme, params, parts }', at);
      checkText(e.scheme, 'scheme', at, fail);
      if (typeof e.parts !== 'object' || e.parts === null || Array.isArray(e.parts))
        fail('shape', 'parts must be an object', at);
      const roles = Object.keys(e.parts);
      if (roles.length === 0) fail('parts_empty', 'an encoding has at least one part', at);
      const parts = new Map<CborKey, CborValue>();
      for (const role of roles) {
        const pat = { ...at, role };
        checkText(role, 'role', pat, fail);
        parts.set(role, part(e.parts[role]!, pat));
      }
      const params = jsonToCbor(e.params, 'invalid_argument', `params of ${t.name}`);
      return { dtype: t.dtype, encoding: { params, parts, scheme: e.scheme }, name: t.name, shape: [...t.shape] };
    });
    let prev: Uint8Array | undefined;
    const assets = c.assets.map((a): CborValue => {
      if (typeof a !== 'object' || a === null) fail('shape', 'an asset is { name, records }', { component: c.name });
      const at = { component: c.name, asset: a.name };
      checkAssetName(a.name, at, fail);
      const key = utf8.encode(a.name);
      if (prev !== undefined) {
        const order = compareBytes(prev, key);
        if (order === 0) fail('duplicate_asset', 'asset names repeat within a component', at);
        if (order > 0) fail('asset_order', 'assets are not sorted by name', at);
      }
      prev = key;
      const body = records(a.records, at, Number.MAX_SAFE_INTEGER);
      checkAssetSize(a.records, at, fail);
      return { name: a.name, records: body };
    });
    const config = jsonToCbor(c.config, 'invalid_argument', `config of ${c.name}`);
    return { assets, cls: c.cls, config, name: c.name, tensors };
  });
  let pipeline: CborValue = null;
  if (header.pipeline !== null) {
    checkText(header.pipeline.cls, 'class', {}, fail, true);
    pipeline = {
      cls: header.pipeline.cls,
      config: jsonToCbor(header.pipeline.config, 'invalid_argument', 'pipeline config'),
    };
  }
  let source: CborValue = null;
  if (header.source !== null) {
    const d = new Uint8Array(32);
    digestInto(header.source, d);
    source = d;
  }
  const body = encodeCbor({ components, pipeline, source, version: COZYTENSORS_VERSION });
  const out = new Uint8Array(COZYTENSORS_MAGIC.length + body.length);
  out.set(COZYTENSORS_MAGIC);
  out.set(body, COZYTENSORS_MAGIC.length);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Decoding

/**
 * Decodes `TFC1` bytes strictly: the result re-encodes to exactly `bytes`.
 * @throws {TensorFSError} `malformed` (details `rule` `cozytensors.<rule>`) for a bad magic,
 * truncated or non-canonical CBOR, unknown or missing fields, a duplicate name, a bad asset or
 * component name, records that do not add up to dtype × shape, a config outside the JSON data
 * model, a bound exceeded; `unsupported` (`cozytensors.version`) for another header version.
 */
export function decodeCheckpoint(bytes: Uint8Array): CheckpointHeader {
  requireBytes(bytes, 'bytes', 'cozytensors');
  const fail = failer('malformed');
  if (!isCheckpointHeader(bytes)) fail('magic', 'not a cozytensors header (bad magic)', { offset: 0 });
  const body = bytes.subarray(COZYTENSORS_MAGIC.length);
  let root: CborValue;
  try {
    root = decodeCbor(body, { views: true });
  } catch (err) {
    if (!(err instanceof TensorFSError)) throw err;
    const inner = String(err.details.rule ?? '');
    const offset = typeof err.details.offset === 'number' ? err.details.offset + COZYTENSORS_MAGIC.length : undefined;
    throw new TensorFSError('malformed', `cozytensors header: ${err.message}`, {
      details: {
        rule: inner.includes('truncated') ? 'cozytensors.truncated' : 'cozytensors.cbor',
        cbor: inner,
        ...(offset === undefined ? {} : { offset }),
      },
      cause: err,
    });
  }
  const top = asMap(root, 'header', fail);
  const version = top.get('version');
  if (version !== COZYTENSORS_VERSION) {
    throw new TensorFSError('unsupported', 'unsupported cozytensors header version', {
      details: { rule: 'cozytensors.version', actual: typeof version === 'bigint' ? version.toString() : version },
    });
  }
  checkKeys(top, TOP_KEYS, 'header', {}, fail);

  const pipelineValue = top.get('pipeline')!;
  let pipeline: CheckpointHeader['pipeline'] = null;
  if (pipelineValue !== null) {
    const p = asMap(pipelineValue, 'pipeline', fail);
    checkKeys(p, PIPELINE_KEYS, 'pipeline', {}, fail);
    const cls = p.get('cls');
    checkText(cls, 'class', {}, fail, true);
    pipeline = { cls: cls as string, config: cborToJson(p.get('config')!, 'pipeline config') };
  }

  const sourceValue = top.get('source');
  let source: ObjectId | null = null;
  if (sourceValue !== null) {
    if (!(sourceValue instanceof Uint8Array) || sourceValue.length !== 32) fail('source', 'source is 32 bytes or null');
    source = objectIdFromDigest(sourceValue as Uint8Array);
  }

  const componentsValue = top.get('components');
  if (!Array.isArray(componentsValue)) fail('shape', 'components must be an array');
  const list = componentsValue as CborValue[];
  if (list.length > MAX_COMPONENTS)
    fail('components_limit', 'too many components', { limit: MAX_COMPONENTS, actual: list.length });
  const counts = { tensors: 0, records: 0 };
  const componentNames = new Set<string>();
  const records = (value: CborValue | undefined, where: Record<string, unknown>, ceiling: number): RecordRef[] => {
    if (!Array.isArray(value)) fail('shape', 'records must be an array', where);
    const arr = value as CborValue[];
    counts.records += arr.length;
    if (counts.records > MAX_CHECKPOINT_RECORDS)
      fail('records_limit', 'too many records', { limit: MAX_CHECKPOINT_RECORDS });
    return arr.map((r, index) => {
      if (!Array.isArray(r) || r.length !== 2)
        fail('shape', 'a record is a [digest, length] pair', { ...where, index });
      const [d, n] = r as CborValue[];
      if (!(d instanceof Uint8Array) || d.length !== 32)
        fail('record_digest', 'a record digest is 32 bytes', { ...where, index });
      if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1 || n > ceiling) {
        fail('record_length', 'record length out of range', { ...where, index, limit: ceiling });
      }
      return { digest: objectIdFromDigest(d as Uint8Array), length: n as number };
    });
  };
  const part = (value: CborValue, keys: string[], where: Record<string, unknown>) => {
    const m = asMap(value, 'tensor', fail, where);
    checkKeys(m, keys, 'tensor', where, fail);
    const dtype = m.get('dtype');
    checkDtype(dtype, where, fail);
    const shape = m.get('shape');
    checkShape(shape, where, fail);
    return { m, dtype: dtype as SafetensorsDtype, shape: shape as number[] };
  };

  const components = list.map((value, ci): CheckpointComponent => {
    const m = asMap(value, 'component', fail, { index: ci });
    checkKeys(m, COMPONENT_KEYS, 'component', { index: ci }, fail);
    const name = m.get('name');
    checkComponentName(name, fail);
    const cname = name as string;
    if (componentNames.has(cname)) fail('duplicate_component', 'component names repeat', { component: cname });
    componentNames.add(cname);
    const cls = m.get('cls');
    checkText(cls, 'class', { component: cname }, fail, true);
    const tensorsValue = m.get('tensors');
    const assetsValue = m.get('assets');
    if (!Array.isArray(tensorsValue) || !Array.isArray(assetsValue)) {
      fail('shape', 'tensors and assets must be arrays', { component: cname });
    }
    counts.tensors += (tensorsValue as CborValue[]).length;
    if (counts.tensors > MAX_CHECKPOINT_TENSORS)
      fail('tensors_limit', 'too many tensors', { limit: MAX_CHECKPOINT_TENSORS });
    const tensorNames = new Set<string>();
    const tensors = (tensorsValue as CborValue[]).map((tv, ti): CheckpointTensor => {
      const tm = asMap(tv, 'tensor', fail, { component: cname, index: ti });
      const tname = tm.get('name');
      checkText(tname, 'tensor_name', { component: cname, index: ti }, fail);
      const at = { component: cname, tensor: tname as string };
      if (tensorNames.has(tname as string)) fail('duplicate_tensor', 'tensor names repeat within a component', at);
      tensorNames.add(tname as string);
      if (tm.has('records') && tm.has('encoding'))
        fail('tensor_kind', 'a tensor has exactly one of records and encoding', at);
      if (!tm.has('encoding')) {
        const { m: pm, dtype, shape } = part(tv, PLAIN_KEYS, at);
        const recs = records(pm.get('records'), at, RECORD_GRID_BYTES);
        checkDataSize(dtype, shape, recs, at, fail);
        return { name: tname as string, dtype, shape, records: recs };
      }
      const { m: em, dtype, shape } = part(tv, ENCODED_KEYS, at);
      const enc = asMap(em.get('encoding')!, 'encoding', fail, at);
      checkKeys(enc, ENCODING_KEYS, 'encoding', at, fail);
      const scheme = enc.get('scheme');
      checkText(scheme, 'scheme', at, fail);
      const partsValue = enc.get('parts');
      const pmap = asMap(partsValue!, 'parts', fail, at);
      if (pmap.size === 0) fail('parts_empty', 'an encoding has at least one part', at);
      const parts: Record<string, CheckpointPart> = {};
      for (const [role, pv] of pmap) {
        if (typeof role !== 'string') fail('role', 'part roles are text', at);
        const pat = { ...at, role: role as string };
        checkText(role, 'role', pat, fail);
        const p = part(pv, PART_KEYS, pat);
        const recs = records(p.m.get('records'), pat, RECORD_GRID_BYTES);
        checkDataSize(p.dtype, p.shape, recs, pat, fail);
        Object.defineProperty(parts, role as string, {
          value: { dtype: p.dtype, shape: p.shape, records: recs },
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      const params = cborToJson(enc.get('params')!, `params of ${tname as string}`);
      return { name: tname as string, dtype, shape, encoding: { scheme: scheme as string, params, parts } };
    });
    let prev: Uint8Array | undefined;
    const assets = (assetsValue as CborValue[]).map((av, ai): CheckpointAsset => {
      const am = asMap(av, 'asset', fail, { component: cname, index: ai });
      checkKeys(am, ASSET_KEYS, 'asset', { component: cname, index: ai }, fail);
      const aname = am.get('name');
      const at = { component: cname, asset: aname };
      checkAssetName(aname, at, fail);
      const key = utf8.encode(aname as string);
      if (prev !== undefined) {
        const order = compareBytes(prev, key);
        if (order === 0) fail('duplicate_asset', 'asset names repeat within a component', at);
        if (order > 0) fail('asset_order', 'assets are not sorted by name', at);
      }
      prev = key;
      const recs = records(am.get('records'), at, Number.MAX_SAFE_INTEGER);
      checkAssetSize(recs, at, fail);
      return { name: aname as string, records: recs };
    });
    const config = cborToJson(m.get('config')!, `config of ${cname}`);
    return { name: cname, cls: cls as string, config, tensors, assets };
  });

  // The shape checks above map root ⇄ header one to one, and every leaf kept its decoded value,
  // so re-encoding the decoded CBOR proves the header re-encodes to exactly these bytes. (The CBOR
  // decoder is itself canonical; this is the belt to its braces.)
  if (compareBytes(encodeCbor(root), body) !== 0) {
    fail('canonical', 'header is not in its canonical encoding');
  }
  return { pipeline, components, source };
}

/**
 * Every object a header references, each once, in order of first appearance: the source
 * snapshot, then per component the records of its tensors (parts in role order) and assets.
 * This is the reference decoder GC and verify follow.
 * @throws {TensorFSError} as {@link decodeCheckpoint}.
 */
export function checkpointReferences(bytes: Uint8Array): ObjectId[] {
  const header = decodeCheckpoint(bytes);
  const seen = new Set<ObjectId>();
  if (header.source !== null) seen.add(header.source);
  for (const c of header.components) {
    for (const t of c.tensors) {
      if (t.records !== undefined) for (const r of t.records) seen.add(r.digest);
      else for (const p of Object.values(t.encoding.parts)) for (const r of p.records) seen.add(r.digest);
    }
    for (const a of c.assets) for (const r of a.records) seen.add(r.digest);
  }
  return [...seen];
}

/**
 * The id of header bytes: `sha256:` of the bytes, with the SHA-256 supplied by the caller
 * (format does no hashing itself).
 */
export async function checkpointId(
  bytes: Uint8Array,
  sha256: (bytes: Uint8Array) => Uint8Array | Promise<Uint8Array>,
): Promise<ObjectId> {
  requireBytes(bytes, 'bytes', 'cozytensors');
  requireFunction(sha256, 'sha256', 'cozytensors');
  return objectIdFromDigest(await sha256(bytes));
}

/** The exact byte length of a plain tensor (or part) of `dtype` and `shape`. */
export function checkpointDataSize(dtype: string, shape: readonly number[]): number {
  requireString(dtype, 'dtype', 'cozytensors');
  requireArray(shape, 'shape', 'cozytensors');
  for (const d of shape) requireCount(d, 'shape[]', 'cozytensors');
  const info = safetensorsDtype(dtype);
  if (info === undefined) failer('invalid_argument')('dtype', 'unknown dtype', { dtype });
  let count = 1;
  for (const d of shape) count *= d;
  const bits = count * info!.bits;
  if (!Number.isSafeInteger(bits)) failer('invalid_argument')('byte_length', 'tensor byte length beyond 2^53 − 1');
  if (bits % 8 !== 0) failer('invalid_argument')('byte_length', 'sub-byte tensor does not fill whole bytes');
  return bits / 8;
}

// ---------------------------------------------------------------------------------------------
// Shared checks (only the error code differs between encode and decode)

function checkComponentName(name: unknown, fail: Fail): void {
  if (typeof name !== 'string') fail('component_name', 'component name must be text');
  const n = name as string;
  if (n.includes('/') || n.length === 0)
    fail('component_name', 'component name must be one non-empty path segment', { component: shorten(n) });
  try {
    checkPath(n, 'malformed', false);
  } catch {
    fail('component_name', 'component name must be a safe path segment (no control character, backslash, . or ..)', {
      component: shorten(n),
    });
  }
}

function checkAssetName(name: unknown, where: Record<string, unknown>, fail: Fail): void {
  if (typeof name !== 'string') fail('asset_name', 'asset name must be text', where);
  try {
    checkPath(name as string, 'malformed', false);
  } catch (err) {
    const inner = err instanceof TensorFSError ? String(err.details.rule) : 'path';
    fail(
      'asset_name',
      'asset name must be a relative path without . or .. segments, control characters or backslashes',
      {
        ...where,
        asset: shorten(name),
        path: inner,
      },
    );
  }
}

function checkText(value: unknown, rule: string, where: Record<string, unknown>, fail: Fail, emptyOk = false): void {
  if (typeof value !== 'string') fail(rule, `${rule.replace('_', ' ')} must be text`, where);
  const s = value as string;
  if (!emptyOk && s.length === 0) fail(rule, `${rule.replace('_', ' ')} must not be empty`, where);
  if (s.includes('\u0000')) fail(rule, `${rule.replace('_', ' ')} must not contain NUL`, where);
  if (/\p{Cs}/u.test(s)) fail(rule, `${rule.replace('_', ' ')} holds a lone surrogate`, where);
  if (s.length > MAX_NAME_BYTES && utf8.encode(s).length > MAX_NAME_BYTES) {
    fail(rule, `${rule.replace('_', ' ')} is longer than ${MAX_NAME_BYTES} bytes`, where);
  }
}

function checkDtype(dtype: unknown, where: Record<string, unknown>, fail: Fail): void {
  if (typeof dtype !== 'string' || safetensorsDtype(dtype) === undefined) {
    fail('dtype', 'unknown dtype', { ...where, dtype: typeof dtype === 'string' ? shorten(dtype) : typeof dtype });
  }
}

function checkShape(shape: unknown, where: Record<string, unknown>, fail: Fail): void {
  if (!Array.isArray(shape)) fail('shape', 'shape must be an array', where);
  const s = shape as unknown[];
  if (s.length > MAX_DIMS) fail('shape', `shape has more than ${MAX_DIMS} dimensions`, where);
  for (const d of s) {
    if (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0) {
      fail('shape', 'a dimension must be an integer in 0…2^53−1', where);
    }
  }
}

function checkDataSize(
  dtype: string,
  shape: readonly number[],
  records: readonly RecordRef[],
  where: Record<string, unknown>,
  fail: Fail,
): void {
  const bits = safetensorsDtype(dtype)!.bits;
  let count = 1;
  for (const d of shape) count = d === 0 || count === 0 ? 0 : count * d;
  const total = count * bits;
  if (!Number.isSafeInteger(total)) fail('byte_length', 'tensor byte length beyond 2^53 − 1', where);
  if (total % 8 !== 0) fail('byte_length', 'sub-byte tensor does not fill whole bytes', where);
  let sum = 0;
  for (const r of records) sum += r.length;
  if (sum !== total / 8) {
    fail('data_size', 'records do not add up to dtype × shape', { ...where, expected: total / 8, actual: sum });
  }
}

function checkAssetSize(records: readonly RecordRef[], where: Record<string, unknown>, fail: Fail): void {
  let sum = 0;
  for (const r of records) sum += r.length;
  if (!Number.isSafeInteger(sum)) fail('asset_size', 'asset size beyond 2^53 − 1', where);
}

function asMap(
  value: CborValue,
  what: string,
  fail: Fail,
  where: Record<string, unknown> = {},
): Map<CborKey, CborValue> {
  if (!(value instanceof Map)) fail('shape', `${what} must be a map`, where);
  return value as Map<CborKey, CborValue>;
}

function checkKeys(
  map: Map<CborKey, CborValue>,
  keys: string[],
  what: string,
  where: Record<string, unknown>,
  fail: Fail,
): void {
  for (const key of keys) if (!map.has(key)) fail('missing_field', `${what} lacks "${key}"`, { ...where, field: key });
  if (map.size !== keys.length) {
    const extra = [...map.keys()].find((k) => typeof k !== 'string' || !keys.includes(k));
    fail('unknown_field', `${what} has an unknown field`, {
      ...where,
      field: typeof extra === 'string' ? shorten(extra) : String(extra),
    });
  }
}

function shorten(s: unknown): unknown {
  return typeof s === 'string' && s.length > 200 ? `${s.slice(0, 200)}…` : s;
}
