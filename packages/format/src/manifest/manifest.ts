/**
 * TFM1: the snapshot manifest. Bytes = ASCII `TFM1` + one canonical CBOR map (see `spec/v1/manifest.md`):
 *
 * ```
 * { "entries": [entry...], "version": 1 }
 * file:    { "kind": "file", "mode": 420 | 493, "path": tstr, "profile": tstr,
 *            "records": [[bstr(32) digest, uint length]...], "size": uint }
 * symlink: { "kind": "symlink", "path": tstr, "target": tstr }
 * ```
 */
import { requireBytes, requireObject, requireObjects, requireString } from '../args.js';
import { type CborKey, type CborValue, compareBytes, decodeCbor, encodeCbor } from './cbor.js';
import { type ErrorCode, TensorFSError } from '../errors.js';
import { digestInto, isObjectId, type ObjectId, objectIdFromDigest } from '../ids.js';
import { comparePaths } from '../order.js';
import { checkPath, checkSymlinkTarget, manifestRule } from './paths.js';
import { isPlanProfile, MAX_PLAN_RECORDS, RECORD_GRID_BYTES } from './profiles.js';
import { decodeManifestFast, encodeManifestFast } from './tfm1-fast.js';

export {
  FILE_MODES,
  type FileMode,
  type Manifest,
  type ManifestEntry,
  type ManifestFileEntry,
  type ManifestSymlinkEntry,
  type RecordRef,
} from './types.js';
import { FILE_MODES, type Manifest, type ManifestEntry, type ManifestFileEntry, type RecordRef } from './types.js';

/** The four magic bytes that open every TFM1 manifest: ASCII `TFM1`. */
export const TFM1_MAGIC: Uint8Array = /* @__PURE__ */ new Uint8Array([0x54, 0x46, 0x4d, 0x31]);
/** The manifest schema version inside the CBOR map. */
export const MANIFEST_VERSION = 1;
/** At most this many entries in one manifest. */
export const MAX_MANIFEST_ENTRIES = 1_000_000;

const MANIFEST_KEYS = ['entries', 'version'];
const FILE_KEYS = ['kind', 'mode', 'path', 'profile', 'records', 'size'];
const SYMLINK_KEYS = ['kind', 'path', 'target'];

/**
 * Encodes a manifest as TFM1 bytes, after validating it.
 * @throws {TensorFSError} `invalid_argument` (details `rule`, `path`) if the manifest breaks a v1
 * rule: bad path or target, unsorted or duplicate paths, a path below another entry, unknown kind,
 * mode or profile, a size that is not the sum of the record lengths, a record of length 0, a
 * tensor-profile record over 64 MiB, more than one `blob-v1` record, or a bound exceeded.
 */
export function encodeManifest(manifest: Manifest): Uint8Array {
  // Digests are checked while the fast path converts them; if anything fails, the full check
  // runs again so the error is the first one in manifest order, as always.
  try {
    validateManifest(manifest, 'invalid_argument', false);
  } catch (err) {
    validateManifest(manifest, 'invalid_argument');
    throw err;
  }
  const fast = encodeManifestFast(manifest, TFM1_MAGIC, MANIFEST_VERSION);
  if (fast !== undefined) return fast;
  validateManifest(manifest, 'invalid_argument');
  return encodeValid(manifest);
}

/** TFM1 bytes of a manifest already validated. */
function encodeValid(manifest: Manifest): Uint8Array {
  // All digests decode into one buffer: one allocation instead of one per record.
  let count = 0;
  for (const e of manifest.entries) if (e.kind === 'file') count += e.records.length;
  const digests = new Uint8Array(count * 32);
  let next = 0;
  const digest = (id: ObjectId): Uint8Array => {
    const view = digests.subarray(next, next + 32);
    digestInto(id, view);
    next += 32;
    return view;
  };
  const body = encodeCbor({
    version: MANIFEST_VERSION,
    entries: manifest.entries.map((e) => entryToCbor(e, digest)),
  });
  const out = new Uint8Array(TFM1_MAGIC.length + body.length);
  out.set(TFM1_MAGIC);
  out.set(body, TFM1_MAGIC.length);
  return out;
}

/**
 * Decodes TFM1 bytes strictly: the result re-encodes to exactly `bytes`.
 * @throws {TensorFSError} `malformed` for a bad magic, non-canonical CBOR, a wrong shape, or any
 * rule {@link encodeManifest} checks; `unsupported` for another manifest version, entry kind or profile.
 */
export function decodeManifest(bytes: Uint8Array): Manifest {
  requireBytes(bytes, 'bytes', 'manifest');
  if (bytes.length < TFM1_MAGIC.length || compareBytes(bytes.subarray(0, 4), TFM1_MAGIC) !== 0) {
    throw new TensorFSError('malformed', 'not a TFM1 manifest (bad magic)', {
      details: { rule: 'manifest.magic', offset: 0 },
    });
  }
  // The fast path accepts only the canonical v1 layout, so what it returns is what the generic
  // path below would return; anything else goes the generic way, which names the error.
  const fast = decodeManifestFast(bytes, TFM1_MAGIC.length, MANIFEST_VERSION);
  if (fast !== undefined) {
    validateManifest(fast, 'malformed', false);
    return fast;
  }
  let root: CborValue;
  try {
    root = decodeCbor(bytes.subarray(TFM1_MAGIC.length), { maxDepth: 5, views: true });
  } catch (err) {
    throw shiftOffset(err, TFM1_MAGIC.length);
  }
  const top = asMap(root, 'manifest', ['version']);
  const version = top.get('version');
  if (version !== MANIFEST_VERSION) {
    throw new TensorFSError('unsupported', 'unsupported TFM1 manifest version', {
      details: { rule: 'manifest.version', actual: typeof version === 'bigint' ? version.toString() : version },
    });
  }
  checkKeys(top, MANIFEST_KEYS, 'manifest');
  const entries = top.get('entries');
  if (!Array.isArray(entries)) shape('manifest entries must be an array', 'entries');
  const manifest: Manifest = { entries: (entries as CborValue[]).map(entryFromCbor) };
  // Digests were built from 32 decoded bytes: they are object ids by construction.
  validateManifest(manifest, 'malformed', false);
  // The shape checks above map root ⇄ manifest one to one, so re-encoding the decoded CBOR proves
  // that the manifest re-encodes to exactly these bytes.
  if (compareBytes(encodeCbor(root), bytes.subarray(TFM1_MAGIC.length)) !== 0) {
    throw new TensorFSError('malformed', 'manifest is not in its canonical encoding', {
      details: { rule: 'manifest.canonical' },
    });
  }
  return manifest;
}

/**
 * The id of manifest bytes: `sha256:` of the bytes, with the SHA-256 supplied by the caller
 * (format does no hashing itself).
 */
export async function manifestId(
  bytes: Uint8Array,
  sha256: (bytes: Uint8Array) => Uint8Array | Promise<Uint8Array>,
): Promise<ObjectId> {
  requireBytes(bytes, 'bytes', 'manifest');
  if (typeof sha256 !== 'function') {
    throw new TensorFSError('invalid_argument', 'sha256 must be a function', {
      details: { rule: 'manifest.argument', argument: 'sha256' },
    });
  }
  return objectIdFromDigest(await sha256(bytes));
}

/** The JSON form of a manifest (`spec/v1/manifest.schema.json`). */
export interface ManifestJSON {
  version: typeof MANIFEST_VERSION;
  entries: ManifestEntry[];
}

/** The JSON form of a manifest: `{"version": 1, "entries": [...]}` with fields in a fixed order. */
export function manifestToJSON(manifest: Manifest): ManifestJSON {
  requireObject(manifest, 'manifest', 'manifest');
  requireObjects(manifest.entries, 'manifest.entries', 'manifest');
  return {
    version: MANIFEST_VERSION,
    entries: manifest.entries.map((e) =>
      e.kind === 'symlink'
        ? { path: e.path, kind: e.kind, target: e.target }
        : {
            path: e.path,
            kind: e.kind,
            mode: e.mode,
            size: e.size,
            profile: e.profile,
            records: e.records.map(({ digest, length }) => ({ digest, length })),
          },
    ),
  };
}

/** Sorts entries into manifest order (by the UTF-8 bytes of their paths), returning a new array. */
export function sortManifestEntries<T extends { path: string }>(entries: readonly T[]): T[] {
  requireObjects(entries, 'entries', 'manifest');
  for (const e of entries) requireString(e.path, 'entries[].path', 'manifest');
  return [...entries].sort((a, b) => comparePaths(a.path, b.path));
}

// ---------------------------------------------------------------------------------------------

function entryToCbor(entry: ManifestEntry, digest: (id: ObjectId) => Uint8Array): CborValue {
  if (entry.kind === 'symlink') return { kind: 'symlink', path: entry.path, target: entry.target };
  return {
    kind: 'file',
    mode: entry.mode,
    path: entry.path,
    profile: entry.profile,
    records: entry.records.map((r) => [digest(r.digest), r.length]),
    size: entry.size,
  };
}

function entryFromCbor(value: CborValue, index: number): ManifestEntry {
  const map = asMap(value, `entry ${index}`, ['kind']);
  const kind = map.get('kind');
  if (kind === 'symlink') {
    checkKeys(map, SYMLINK_KEYS, `entry ${index}`);
    return { path: text(map.get('path'), 'path'), kind, target: text(map.get('target'), 'target') };
  }
  if (kind !== 'file') {
    throw new TensorFSError('unsupported', 'unsupported manifest entry kind', {
      details: { rule: 'manifest.entry_kind', index, actual: typeof kind === 'string' ? kind : typeof kind },
    });
  }
  checkKeys(map, FILE_KEYS, `entry ${index}`);
  const records = map.get('records');
  if (!Array.isArray(records)) shape('records must be an array', 'records');
  const profile = map.get('profile');
  if (typeof profile !== 'string') shape('profile must be a text string', 'profile');
  if (!isPlanProfile(profile)) {
    throw new TensorFSError('unsupported', 'unsupported planner profile', {
      details: { rule: 'manifest.profile', index, actual: profile },
    });
  }
  return {
    path: text(map.get('path'), 'path'),
    kind,
    mode: uint(map.get('mode'), 'mode'),
    size: uint(map.get('size'), 'size'),
    profile,
    records: (records as CborValue[]).map(recordFromCbor),
  };
}

function recordFromCbor(value: CborValue): RecordRef {
  if (!Array.isArray(value) || value.length !== 2) shape('a record is a [digest, length] pair', 'record');
  const [digest, length] = value as CborValue[];
  if (!(digest instanceof Uint8Array) || digest.length !== 32) shape('a record digest is 32 bytes', 'record-digest');
  return { digest: objectIdFromDigest(digest as Uint8Array), length: uint(length, 'record-length') };
}

function asMap(value: CborValue, what: string, required: string[]): Map<CborKey, CborValue> {
  if (!(value instanceof Map)) shape(`${what} must be a map`, 'shape');
  const map = value as Map<CborKey, CborValue>;
  for (const key of required) if (!map.has(key)) shape(`${what} lacks "${key}"`, 'missing-key');
  return map;
}

function checkKeys(map: Map<CborKey, CborValue>, keys: string[], what: string): void {
  for (const key of keys) if (!map.has(key)) shape(`${what} lacks "${key}"`, 'missing-key');
  if (map.size !== keys.length) shape(`${what} has an unknown key`, 'unknown-key');
}

function text(value: CborValue | undefined, rule: string): string {
  if (typeof value !== 'string') shape(`${rule} must be a text string`, rule);
  return value as string;
}

function uint(value: CborValue | undefined, rule: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    shape(`${rule} must be an unsigned integer below 2^53`, rule);
  }
  return value as number;
}

function shape(message: string, rule: string): never {
  throw new TensorFSError('malformed', message, { details: { rule: manifestRule(rule) } });
}

function shiftOffset(err: unknown, by: number): unknown {
  if (err instanceof TensorFSError && typeof err.details.offset === 'number') {
    return new TensorFSError(err.code, err.message, {
      details: { ...err.details, offset: err.details.offset + by },
      cause: err.cause,
    });
  }
  return err;
}

// ---------------------------------------------------------------------------------------------
// Validation (shared by encode and decode; only the error code differs)

function validateManifest(manifest: Manifest, code: ErrorCode, checkDigests = true): void {
  const fail = (rule: string, message: string, details: Record<string, unknown> = {}): never => {
    throw new TensorFSError(code, message, { details: { rule: manifestRule(rule), ...details } });
  };
  if (typeof manifest !== 'object' || manifest === null || !Array.isArray(manifest.entries)) {
    fail('shape', 'a manifest is { entries: [...] }');
  }
  const { entries } = manifest;
  if (entries.length > MAX_MANIFEST_ENTRIES) {
    fail('entries-limit', 'too many manifest entries', { limit: MAX_MANIFEST_ENTRIES, actual: entries.length });
  }
  let prev: string | undefined;
  for (const entry of entries) {
    if (typeof entry !== 'object' || entry === null) fail('shape', 'an entry must be an object');
    const { path } = entry;
    checkPath(path, code, false);
    if (prev !== undefined && comparePaths(prev, path) >= 0) {
      fail('entries-order', 'entries are not sorted by path bytes, or a path repeats', { path });
    }
    prev = path;
    if (entry.kind === 'file') validateFile(entry, fail, checkDigests);
    else if (entry.kind === 'symlink') checkSymlinkTarget(path, entry.target, code);
    else fail('entry-kind', 'unknown entry kind', { path });
  }
  // A file or symlink cannot also be a directory of another entry. Without symlinks this is all the
  // trie below is for, and the sorted order allows a walk with a stack instead (no Map per
  // directory): every entry sorting between P and a path below P starts with P, so the earlier
  // entries that are prefixes of the current path form a chain on the stack, and only the top can
  // be its parent directory (a longer prefix below P would itself have failed).
  if (!entries.some((e) => e.kind === 'symlink')) {
    const open: string[] = [];
    for (const { path } of entries) {
      while (open.length > 0 && !path.startsWith(open[open.length - 1]!)) open.pop();
      const top = open[open.length - 1];
      if (top !== undefined && path.charCodeAt(top.length) === 0x2f) {
        fail('path-below-entry', 'an entry lies below a file or symlink', { path });
      }
      open.push(path);
    }
    return;
  }
  // A trie of path segments keeps this linear in the total path length (hashing every prefix
  // string is quadratic in a deep path).
  const root: PathNode = { leaf: false };
  for (const entry of entries) {
    const { path } = entry;
    let node = root;
    for (const segment of path.split('/')) {
      if (node.leaf) fail('path-below-entry', 'an entry lies below a file or symlink', { path });
      node.kids ??= new Map();
      let next = node.kids.get(segment);
      if (next === undefined) node.kids.set(segment, (next = { leaf: false }));
      node = next;
    }
    if (node.kids !== undefined) fail('path-below-entry', 'an entry lies below a file or symlink', { path });
    node.leaf = true;
    node.link = entry.kind === 'symlink';
  }
  // A symlink's target is checked lexically (it stays in the tree), which holds only if resolving
  // it never passes *through* another symlink of the snapshot (`d/l -> ..`, `x -> d/l/..` would
  // leave the tree once exported): walk the target over the trie and refuse that.
  for (const entry of entries) {
    if (entry.kind !== 'symlink') continue;
    const stack: (PathNode | undefined)[] = [root];
    for (const segment of entry.path.split('/').slice(0, -1)) stack.push(stack.at(-1)?.kids?.get(segment));
    const segments = entry.target.split('/');
    segments.forEach((segment, i) => {
      if (segment === '..') stack.pop();
      else if (segment !== '.') stack.push(stack.at(-1)?.kids?.get(segment));
      if (i < segments.length - 1 && stack.at(-1)?.link) {
        fail('symlink-through-symlink', 'a symlink target passes through another symlink', { path: entry.path });
      }
    });
  }
}

/** One path segment in the {@link validateManifest} trie. */
interface PathNode {
  leaf: boolean;
  link?: boolean;
  kids?: Map<string, PathNode>;
}

type Fail = (rule: string, message: string, details?: Record<string, unknown>) => never;

function validateFile(entry: ManifestFileEntry, fail: Fail, checkDigests: boolean): void {
  const at = { path: entry.path };
  if (!(FILE_MODES as readonly number[]).includes(entry.mode)) {
    fail('file-mode', 'file mode must be 0o644 or 0o755', { ...at, actual: entry.mode });
  }
  if (!isPlanProfile(entry.profile)) fail('profile', 'unknown planner profile', { ...at, actual: entry.profile });
  if (!Number.isSafeInteger(entry.size) || entry.size < 0) fail('file-size', 'file size must be an integer ≥ 0', at);
  if (!Array.isArray(entry.records)) fail('records', 'records must be an array', at);
  const { records } = entry;
  if (records.length > MAX_PLAN_RECORDS) {
    fail('records-limit', 'too many records in one file', { ...at, limit: MAX_PLAN_RECORDS, actual: records.length });
  }
  if (entry.profile === 'blob-v1' && records.length > 1) {
    fail('blob-records', 'a blob-v1 file has at most one record', { ...at, actual: records.length });
  }
  const ceiling = entry.profile === 'blob-v1' ? Number.MAX_SAFE_INTEGER : RECORD_GRID_BYTES;
  let total = 0;
  records.forEach((record, index) => {
    if (typeof record !== 'object' || record === null)
      fail('record-shape', 'a record must be an object', { ...at, index });
    if (checkDigests && !isObjectId(record.digest))
      fail('record-digest', 'record digest is not an object id', { ...at, index });
    if (!Number.isSafeInteger(record.length) || record.length < 1 || record.length > ceiling) {
      fail('record-length', 'record length out of range', { ...at, index, limit: ceiling, actual: record.length });
    }
    total += record.length;
  });
  if (!Number.isSafeInteger(total)) fail('file-size', 'file size beyond 2^53 - 1', at);
  if (total !== entry.size) {
    fail('file-size', 'file size is not the sum of its record lengths', { ...at, expected: total, actual: entry.size });
  }
}
