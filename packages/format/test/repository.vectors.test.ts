/**
 * The v1 repository vectors (vectors/v1/repository/repository.json, encoded by
 * vectors/repository.py with the generators' own canonical CBOR encoder, vectors/canonical_cbor.py, and hashed with Python's hashlib): every
 * revision document through `encodeRevision` / `decodeRevision` to the same bytes and id, every
 * rejection with its code and rule, the ref layout and the variant names.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  branchRefName,
  decodeRevision,
  encodeRevision,
  type ErrorCode,
  fromHex,
  objectReferences,
  parseRepoRefName,
  type RevisionDocument,
  tagRefName,
  toHex,
  variantNameOf,
} from '@tensorfs/format';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const root = new URL('../../../', import.meta.url);
const vectors: {
  revisions: {
    valid: { name: string; document: RevisionDocument; hex: string; id: string }[];
    invalid: { name: string; hex: string; code: ErrorCode; rule: string }[];
  };
  layout: { repo: string; kind: 'branch' | 'tag'; name: string; ref: string }[];
  variants: { path: string; variant: string | null }[];
} = JSON.parse(readFileSync(new URL('vectors/v1/repository/repository.json', root), 'utf8'));
const sha = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

describe('v1 repository vectors', () => {
  it('has the vectors the spec promises', () => {
    expect(vectors.revisions.valid.map((v) => v.name)).toEqual([
      'created',
      'moved',
      'history',
      'checkpoint-target',
      'limits',
    ]);
    expect(vectors.revisions.invalid.length).toBeGreaterThanOrEqual(35);
  });

  it.each(vectors.revisions.valid.map((v) => [v.name, v] as const))(
    '%s encodes, decodes and hashes exactly',
    (_name, v) => {
      const bytes = encodeRevision(v.document);
      expect(toHex(bytes)).toBe(v.hex);
      expect(sha(bytes)).toBe(v.id);
      const back = decodeRevision(fromHex(v.hex));
      expect(back).toEqual(v.document);
      expect(toHex(encodeRevision(back))).toBe(v.hex);
      const file = readFileSync(new URL(`vectors/v1/repository/${v.name}.tfr1`, root));
      expect(toHex(new Uint8Array(file))).toBe(v.hex);
      // A revision document references its target only (followed); parent and history are a record.
      expect(objectReferences(bytes)).toEqual({
        kind: 'revision',
        children: [{ id: v.document.target, follow: true }],
      });
    },
  );

  it('chains: each parent is the id of the document before', () => {
    const [created, moved, history] = vectors.revisions.valid;
    expect(moved!.document.parent).toBe(created!.id);
    expect(history!.document.parent).toBe(moved!.id);
    expect(history!.document.history.map((m) => m.commit)).toEqual([moved!.id, created!.id]);
  });

  it.each(vectors.revisions.invalid.map((v) => [v.name, v] as const))('%s is rejected', (_name, v) => {
    expectCodeSync(() => decodeRevision(fromHex(v.hex)), v.code, v.rule);
  });

  it.each(vectors.layout.map((v) => [`${v.repo} ${v.kind} ${v.name}`, v] as const))('lays out %s', (_name, v) => {
    expect(v.kind === 'branch' ? branchRefName(v.repo, v.name) : tagRefName(v.repo, v.name)).toBe(v.ref);
    expect(parseRepoRefName(v.ref)).toEqual({ repo: v.repo, kind: v.kind, name: v.name });
  });

  it.each(vectors.variants.map((v) => [v.path, v] as const))('names the variant of %s', (_name, v) => {
    expect(variantNameOf(v.path)).toBe(v.variant);
  });
});
