/**
 * What an object references, as pull, push and the hub walk it. The decoding is format's
 * (`objectReferences` over its table of referencing kinds: manifests today, checkpoint headers
 * when they join the table); this module only adapts it.
 */
import { type ObjectId, objectReferences, referenceKindOf } from '@tensorfs/format';

/** One reference from an object. */
export interface Reference {
  id: ObjectId;
  /** Length the referencing object declares for it, if any. */
  length?: number;
  /** True when the referenced object itself references others (walk it). */
  follow: boolean;
}

/** True when `bytes` open like an object that references others. */
export function isReferencing(bytes: Uint8Array): boolean {
  return referenceKindOf(bytes) !== undefined;
}

/** The objects `bytes` reference (none for a leaf); `malformed` if a referencing object does not decode. */
export function referencesOf(bytes: Uint8Array): Reference[] {
  const r = objectReferences(bytes);
  if (r === null) return [];
  return r.children.map((c) => ({
    id: c.id,
    ...(c.length === undefined ? {} : { length: c.length }),
    follow: c.follow === true,
  }));
}
