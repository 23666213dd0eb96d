/**
 * What an object references, decided from its bytes: the closure pull and push walk. The
 * decoding is format's (TFM1 manifests through `decodeManifest`); this module only walks.
 */
import { type ObjectId, decodeManifest } from '@tensorfs/format';

/** One reference from an object. */
export interface Reference {
  id: ObjectId;
  /** Length the referencing object declares for it, if any. */
  length?: number;
  /** True when the referenced object itself references others (walk it). */
  follow: boolean;
}

const TFM1 = [0x54, 0x46, 0x4d, 0x31];

/** True when `bytes` start like an object that references others. */
export function isReferencing(bytes: Uint8Array): boolean {
  return TFM1.every((b, i) => bytes[i] === b);
}

/** The objects `bytes` reference (none for a plain data object); `malformed` if they do not decode. */
export function referencesOf(bytes: Uint8Array): Reference[] {
  if (!isReferencing(bytes)) return [];
  const out: Reference[] = [];
  for (const e of decodeManifest(bytes).entries) {
    if (e.kind === 'file') for (const r of e.records) out.push({ id: r.digest, length: r.length, follow: false });
  }
  return out;
}
