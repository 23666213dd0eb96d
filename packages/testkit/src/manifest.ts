import type { ManifestFileEntry, ObjectId } from '@tensorfs/format';

/** A one-record `blob-v1` file entry of a manifest: `size` bytes, all in object `digest`. */
export function blobEntry(path: string, digest: ObjectId, size: number): ManifestFileEntry {
  return { kind: 'file', path, mode: 0o644, size, profile: 'blob-v1', records: [{ digest, length: size }] };
}
