/**
 * The TFM1 snapshot manifest, the canonical CBOR it is written in, path rules and the v1
 * planner constants every implementation shares.
 */
export {
  CBOR_MAX_DEPTH,
  type CborDecodeOptions,
  type CborKey,
  type CborValue,
  decodeCbor,
  encodeCbor,
} from './cbor.js';
export {
  decodeManifest,
  encodeManifest,
  FILE_MODES,
  type FileMode,
  type Manifest,
  type ManifestEntry,
  type ManifestFileEntry,
  type ManifestSymlinkEntry,
  MANIFEST_VERSION,
  MAX_MANIFEST_ENTRIES,
  manifestId,
  type ManifestJSON,
  manifestToJSON,
  type RecordRef,
  sortManifestEntries,
  TFM1_MAGIC,
} from './manifest.js';
export { compareBytes, comparePaths } from './compare.js';
export { MAX_PATH_BYTES, MAX_SEGMENT_BYTES, validatePath, validateSymlinkTarget } from './paths.js';
export { isPlanProfile, MAX_PLAN_RECORDS, PLAN_PROFILES, type PlanProfile, RECORD_GRID_BYTES } from './profiles.js';
