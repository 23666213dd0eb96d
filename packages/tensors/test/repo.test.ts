/**
 * openRepo(store, 'owner/name', { revision, variant }) and the one resolver behind openModel:
 * a tree with two `.cozytensors` variants and a README on a draft branch, read by branch, tag,
 * tree id and revision document id; `variant` required exactly when several; older refs.
 */
import {
  type ErrorCode,
  type ManifestFileEntry,
  type ObjectId,
  createTag,
  isTensorFSError,
  moveBranch,
  writeSafetensors,
} from '@tensorfs/format';
import { noise } from '@tensorfs/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointWriter, openCheckpoint, openModel, openRepo, resolveModelRef } from '../src/index.js';
import { importTree, STORE_KINDS, type TestStore, tempStore } from './helpers.js';

async function errorOf(
  fn: () => unknown,
): Promise<{ code: ErrorCode; rule: unknown; details: Record<string, unknown> }> {
  try {
    await fn();
  } catch (error) {
    if (!isTensorFSError(error)) throw error;
    return { code: error.code, rule: error.details.rule, details: error.details };
  }
  throw new Error('expected a TensorFSError');
}

const README = new TextEncoder().encode('# acme/m\n');

describe.each(STORE_KINDS)('openRepo (%s store)', (kind) => {
  let t: TestStore;
  let headers: Record<'int8' | 'bf16', { id: ObjectId; length: number }>;
  let tree: ObjectId;
  let commit: ObjectId;

  async function checkpoint(dtype: 'I8' | 'BF16', seed: number) {
    const w = new CheckpointWriter(t.store);
    w.component('model', { cls: 'Tiny', config: {} });
    const n = dtype === 'I8' ? 16 : 32;
    await w.put('w', noise(n, seed), { dtype, shape: [16] });
    const { id } = await w.commit();
    return { id, length: (await t.store.readObject(id)).length };
  }
  const file = (path: string, digest: ObjectId, length: number): ManifestFileEntry => ({
    path,
    kind: 'file',
    mode: 0o644,
    size: length,
    profile: 'blob-v1',
    records: [{ digest, length }],
  });

  beforeEach(async () => {
    t = await tempStore(kind);
    headers = { int8: await checkpoint('I8', 1), bf16: await checkpoint('BF16', 2) };
    const readme = (await t.store.put([README])).id;
    tree = await t.store.putManifest({
      entries: [
        file('README.md', readme, README.length),
        file('model.bf16.cozytensors', headers.bf16.id, headers.bf16.length),
        file('model.int8.cozytensors', headers.int8.id, headers.int8.length),
      ],
    });
    commit = (await moveBranch(t.store, { repo: 'acme/m', branch: 'draft', target: tree, author: 'test' })).commit;
  });
  afterEach(() => t.close());

  it('needs a variant exactly when the tree has several, and opens the one named', async () => {
    expect(await errorOf(() => openRepo(t.store, 'acme/m', { revision: 'draft' }))).toMatchObject({
      code: 'invalid_argument',
      rule: 'repo.variant_required',
      details: { variants: ['bf16', 'int8'] },
    });
    const m = await openRepo(t.store, 'acme/m', { revision: 'draft', variant: 'int8' });
    expect(m.kind).toBe('checkpoint');
    expect(m.id).toBe(headers.int8.id);
    expect([m.get('w').dtype, m.get('w').shape]).toEqual(['I8', [16n]]);
    expect(await errorOf(() => openRepo(t.store, 'acme/m', { revision: 'draft', variant: 'fp4' }))).toMatchObject({
      code: 'not_found',
      rule: 'repo.no_such_variant',
      details: { variants: ['bf16', 'int8'] },
    });
    // The same through openModel and openCheckpoint, which take owner/name@revision.
    expect((await openModel(t.store, 'acme/m@draft', { variant: 'bf16' })).id).toBe(headers.bf16.id);
    expect(await errorOf(() => openCheckpoint(t.store, 'acme/m@draft'))).toMatchObject({
      rule: 'repo.variant_required',
    });
  });

  it('resolves a revision by tree id, by revision document id and by tag', async () => {
    for (const revision of [tree, commit]) {
      const r = await resolveModelRef(t.store, `acme/m@${revision}`, { variant: 'bf16' });
      expect([r.id, r.tree, r.variant, r.revision?.kind, r.revision?.commit]).toEqual([
        headers.bf16.id,
        tree,
        'bf16',
        'id',
        revision === commit ? commit : null,
      ]);
    }
    await createTag(t.store, { repo: 'acme/m', tag: 'v1', revision: 'draft' });
    expect((await openRepo(t.store, 'acme/m', { revision: 'v1', variant: 'int8' })).id).toBe(headers.int8.id);
    // The branch head is a revision document: a bare id of it reads its target too.
    expect((await resolveModelRef(t.store, commit, { variant: 'int8' })).id).toBe(headers.int8.id);
  });

  it('chooses the only variant, reads a tree without variants as its files, and keeps older refs', async () => {
    const one = await t.store.putManifest({
      entries: [file('model.cozytensors', headers.int8.id, headers.int8.length)],
    });
    await moveBranch(t.store, { repo: 'acme/one', target: one, author: 'test' });
    expect((await openRepo(t.store, 'acme/one')).id).toBe(headers.int8.id);
    expect((await openRepo(t.store, 'acme/one', { variant: '' })).id).toBe(headers.int8.id);
    // An older ref is its repository's main branch, read as before.
    const snapshot = await importTree(t, { 'model.safetensors': writeSafetensors([]) }, 'team/old');
    const m = await openRepo(t.store, 'team/old');
    expect([m.kind, m.id]).toEqual(['snapshot', snapshot]);
    expect((await openModel(t.store, 'team/old@main')).id).toBe(snapshot);
    expect((await openModel(t.store, 'team/old')).id).toBe(snapshot);
  });

  it('refuses what is not there, and bad names, with their codes', async () => {
    expect(await errorOf(() => openRepo(t.store, 'acme/none'))).toMatchObject({
      code: 'not_found',
      rule: 'repo.no_such_repo',
    });
    expect(await errorOf(() => openRepo(t.store, 'acme/m', { revision: 'nope' }))).toMatchObject({
      code: 'not_found',
      rule: 'repo.no_such_revision',
    });
    expect(await errorOf(() => openRepo(t.store, '_branches/acme/m'))).toMatchObject({
      code: 'invalid_argument',
      rule: 'repo.bad_id',
    });
    expect(await errorOf(() => openRepo(t.store, 'acme/m@draft'))).toMatchObject({
      code: 'invalid_argument',
      rule: 'repo.bad_id',
    });
  });
});
