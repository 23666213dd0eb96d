/**
 * What a stored object references, decided by its bytes alone. A ref or root names a top object;
 * its kind (recognised by its leading magic) says which objects it reaches, and so what GC must
 * keep, what `verify` must find and what a ref may not name before it is stored. The table is a
 * fact of the formats, not a run-time registry: every installed copy of every package reads the
 * same list, so a second copy can never walk past a kind it was not told about.
 *
 * Adding a kind is one entry in {@link REFERENCE_KINDS}.
 */
import { COZYTENSORS_MAGIC, decodeCheckpoint } from './cozytensors/header.js';
import { requireBytes } from './args.js';
import type { ObjectId } from './ids.js';
import { decodeManifest, TFM1_MAGIC } from './manifest/manifest.js';
import { COZYTENSORS_SUFFIX } from './repository/variants.js';
import { decodeRevision, REVISION_MAGIC } from './repository/revision.js';

/** One reference from an object to another. */
export interface ObjectReference {
  id: ObjectId;
  /** The exact length the referencing object declares, when it declares one. */
  length?: number;
  /** True when the child is itself a referencing object to be walked (e.g. a nested header). */
  follow?: boolean;
}

/** A kind of object that references others. */
export interface ReferenceKind {
  /** Short name for reports (e.g. `manifest`). */
  readonly name: string;
  /** Leading bytes that identify the kind (non-empty; no magic may be a prefix of another). */
  readonly magic: Uint8Array;
  /** The objects these bytes reference; throws `malformed` if the bytes are not of this kind. */
  children(bytes: Uint8Array): ObjectReference[];
}

/** Every kind of referencing object TensorFS writes. Any other object is a leaf. */
export const REFERENCE_KINDS: readonly ReferenceKind[] = Object.freeze([
  {
    name: 'manifest',
    magic: TFM1_MAGIC,
    children(bytes: Uint8Array): ObjectReference[] {
      const out: ObjectReference[] = [];
      for (const e of decodeManifest(bytes).entries) {
        if (e.kind !== 'file') continue;
        // A `.cozytensors` file of one record is a checkpoint header in a repository tree: its
        // tensors are the tree's too (spec/v1/repository.md). Other bytes under that name are a leaf.
        const header = e.records.length === 1 && e.path.endsWith(COZYTENSORS_SUFFIX);
        for (const r of e.records)
          out.push(header ? { id: r.digest, length: r.length, follow: true } : { id: r.digest, length: r.length });
      }
      return out;
    },
  },
  {
    // A cozytensors checkpoint header (spec/v1/cozytensors.md "References"): the records of its
    // tensors, parts and assets, and the TFM1 snapshot it was converted from, walked in turn.
    name: 'checkpoint',
    magic: COZYTENSORS_MAGIC,
    children(bytes: Uint8Array): ObjectReference[] {
      const header = decodeCheckpoint(bytes);
      const out: ObjectReference[] = header.source === null ? [] : [{ id: header.source, follow: true }];
      const add = (records: readonly { digest: ObjectId; length: number }[]): void => {
        for (const r of records) out.push({ id: r.digest, length: r.length });
      };
      for (const c of header.components) {
        for (const t of c.tensors) {
          if (t.records !== undefined) add(t.records);
          else for (const p of Object.values(t.encoding.parts)) add(p.records);
        }
        for (const a of c.assets) add(a.records);
      }
      return out;
    },
  },
  {
    // A revision document (spec/v1/repository.md): a branch head references its target, walked
    // in turn. Its parent and history are a record, not references: old trees stay only while
    // something else reaches them.
    name: 'revision',
    magic: REVISION_MAGIC,
    children(bytes: Uint8Array): ObjectReference[] {
      return [{ id: decodeRevision(bytes).target, follow: true }];
    },
  },
]);

/** How many leading bytes decide an object's kind (the longest magic). */
export const REFERENCE_MAGIC_LENGTH: number = REFERENCE_KINDS.reduce((n, k) => Math.max(n, k.magic.length), 0);

/** The referencing kind whose magic opens `head` (an object's first bytes), if any. */
export function referenceKindOf(head: Uint8Array): ReferenceKind | undefined {
  requireBytes(head, 'head', 'references');
  return REFERENCE_KINDS.find((k) => head.length >= k.magic.length && k.magic.every((b, i) => head[i] === b));
}

/**
 * What the object `bytes` references: `null` for a leaf (no known magic), else its kind and
 * children. Bytes that open with a known magic but do not decode throw `malformed`: what they
 * keep is unknown, so no caller may treat them as a leaf.
 */
export function objectReferences(bytes: Uint8Array): { kind: string; children: ObjectReference[] } | null {
  const kind = referenceKindOf(bytes);
  return kind === undefined ? null : { kind: kind.name, children: kind.children(bytes) };
}
