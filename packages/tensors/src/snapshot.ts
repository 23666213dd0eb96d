import type { Store } from '@tensorfs/format/store';
import {
  type Manifest,
  type ManifestEntry,
  type ManifestFileEntry,
  type ObjectId,
  isCheckpointHeader,
  isTensorFSError,
  TensorFSError,
  resolveSpec,
} from '@tensorfs/format';

/** The most symlinks followed when resolving one snapshot path. */
const MAX_SYMLINK_HOPS = 16;

/** A snapshot loaded for reading: its id, its manifest and its entries by path. @internal */
export class SnapshotTree {
  readonly byPath: ReadonlyMap<string, ManifestEntry>;

  constructor(
    readonly id: ObjectId,
    readonly manifest: Manifest,
  ) {
    this.byPath = new Map(manifest.entries.map((entry) => [entry.path, entry]));
  }

  /** Resolves a ref name, `owner/name[@revision]` or an id (format's `resolveSpec`) and loads its manifest. */
  static async load(store: Store, refOrId: string): Promise<SnapshotTree> {
    const id = (await resolveSpec(store, refOrId)).target;
    try {
      return new SnapshotTree(id, await store.getManifest(id));
    } catch (error) {
      // A well-formed checkpoint is not a bad manifest: say what it is and which door opens it.
      if (isTensorFSError(error) && error.code === 'malformed' && (await isCheckpointObject(store, id))) {
        throw new TensorFSError(
          'invalid_argument',
          'this ref names a checkpoint, not a snapshot (open it with openModel or openCheckpoint)',
          { details: { rule: 'tensors.not_snapshot', ref: refOrId, id }, cause: error },
        );
      }
      throw error;
    }
  }

  /** Every file entry, in manifest (path) order. */
  files(): ManifestFileEntry[] {
    return this.manifest.entries.filter((entry): entry is ManifestFileEntry => entry.kind === 'file');
  }

  /**
   * The file at `path`, following symlinks inside the snapshot (relative targets, resolved
   * lexically). `not_found` if there is none; `invalid_argument` if a link leaves the snapshot.
   */
  file(path: string): ManifestFileEntry {
    let current = path;
    for (let hop = 0; hop <= MAX_SYMLINK_HOPS; hop++) {
      const entry = this.byPath.get(current);
      if (entry === undefined) {
        throw new TensorFSError('not_found', 'no such file in the snapshot', {
          details: {
            rule: 'tensors.no_file',
            path: current,
            snapshot: this.id,
            ...(current !== path ? { from: path } : {}),
          },
        });
      }
      if (entry.kind === 'file') return entry;
      current = joinPath(dirname(current), entry.target);
    }
    throw new TensorFSError('limit_exceeded', 'too many symlinks while resolving a snapshot path', {
      details: { rule: 'tensors.symlink_limit', path, limit: MAX_SYMLINK_HOPS },
    });
  }
}

/** True when object `id` starts with the cozytensors magic. */
async function isCheckpointObject(store: Store, id: ObjectId): Promise<boolean> {
  try {
    return isCheckpointHeader(await store.readObjectRange(id, 0, 4));
  } catch {
    return false;
  }
}

/** The directory part of a snapshot path (`''` at the root). */
export function dirname(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash < 0 ? '' : path.slice(0, slash);
}

/**
 * Joins a snapshot directory and a relative path, resolving `.` and `..` lexically.
 * `invalid_argument` for an absolute path or one that climbs above the snapshot root.
 */
export function joinPath(dir: string, relative: string): string {
  if (relative.startsWith('/') || relative.includes('\\') || relative.includes('\0')) {
    throw new TensorFSError('invalid_argument', 'a link target or shard name is not a relative snapshot path', {
      details: { rule: 'tensors.relative_path', actual: relative },
    });
  }
  const parts = dir === '' ? [] : dir.split('/');
  for (const part of relative.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (parts.length === 0) {
        throw new TensorFSError('invalid_argument', 'a link target or shard name leaves the snapshot', {
          details: { rule: 'tensors.relative_path', actual: relative },
        });
      }
      parts.pop();
    } else {
      parts.push(part);
    }
  }
  return parts.join('/');
}
