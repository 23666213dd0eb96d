/**
 * The TFM1 manifest's types (what a snapshot is), apart from its codec so the fast and the
 * reference codec can both name them without importing each other.
 */
import type { ObjectId } from '../ids.js';
import type { PlanProfile } from './profiles.js';

/** One record of a stored file: an object and its exact length. The file is the concatenation. */
export interface RecordRef {
  /** The object id. */
  digest: ObjectId;
  /** The object's exact length in bytes (≥ 1). */
  length: number;
}

/** The two file modes of v1: an ordinary file and an executable one. */
export const FILE_MODES = [0o644, 0o755] as const;

/** A file's mode: `0o644` (420) or `0o755` (493). */
export type FileMode = (typeof FILE_MODES)[number];

/** A regular file of a snapshot. */
export interface ManifestFileEntry {
  /** Tree-relative path (see {@link validatePath}). */
  path: string;
  kind: 'file';
  /** `0o644` or `0o755`; no other mode exists in v1. */
  mode: number;
  /** The file size: exactly the sum of the record lengths. */
  size: number;
  /** The planner profile that cut the file. */
  profile: PlanProfile;
  /** The records in file order (none for an empty file). */
  records: RecordRef[];
}

/** A symbolic link of a snapshot; its target is relative and stays inside the tree. */
export interface ManifestSymlinkEntry {
  /** Tree-relative path (see {@link validatePath}). */
  path: string;
  kind: 'symlink';
  /** Relative target (see `validateSymlinkTarget`). */
  target: string;
}

/** One entry of a snapshot. */
export type ManifestEntry = ManifestFileEntry | ManifestSymlinkEntry;

/** A snapshot: entries sorted by the UTF-8 bytes of their paths, unique. Directories are implied. */
export interface Manifest {
  entries: ManifestEntry[];
}
