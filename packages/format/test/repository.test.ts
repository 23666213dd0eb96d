import { expectCode, expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import {
  branchLog,
  branchRefName,
  COZYTENSORS_MAGIC,
  createTag,
  decodeRevision,
  encodeRevision,
  type Manifest,
  type ManifestFileEntry,
  listRepositories,
  moveBranch,
  type ObjectId,
  objectReferences,
  parseRepoRefName,
  parseRepoSpec,
  resolveRevision,
  type RevisionDocument,
  selectVariant,
  tagRefName,
  treeVariants,
  validateRepoId,
  variantNameOf,
} from '../src/index.js';
import { MemoryStore } from '../src/store/index.js';

const fakeId = (c: string): ObjectId => `sha256:${c.repeat(64)}`;
const bytes = (s: string) => new TextEncoder().encode(s);

const file = (path: string, digest: ObjectId, size: number): ManifestFileEntry => ({
  kind: 'file',
  path,
  mode: 0o644,
  size,
  profile: 'blob-v1',
  records: [{ digest, length: size }],
});

/** A tree of a README and the given checkpoint-header paths, each header a real (tiny) stored object. */
async function tree(store: MemoryStore, ...headers: string[]): Promise<{ id: ObjectId; manifest: Manifest }> {
  const readme = await store.put(bytes('# readme\n'));
  const entries: ManifestFileEntry[] = [file('README.md', readme.id, readme.length)];
  for (const h of headers) {
    // Not a decodable header: the repository layer only classifies by the magic.
    const b = new Uint8Array([...COZYTENSORS_MAGIC, ...bytes(h)]);
    const r = await store.put(b);
    entries.push(file(h, r.id, r.length));
  }
  entries.sort((a, b) => (a.path < b.path ? -1 : 1));
  const manifest: Manifest = { entries };
  return { id: await store.putManifest(manifest), manifest };
}

describe('repository names', () => {
  it('lays branches and tags out in refs; main is the bare repository ref', () => {
    expect(branchRefName('acme/llama')).toBe('acme/llama');
    expect(branchRefName('acme/llama', 'draft')).toBe('_branches/acme/llama/draft');
    expect(tagRefName('gpt2', 'v1.0')).toBe('_tags/gpt2/v1.0');
    expect(parseRepoRefName('acme/llama')).toEqual({ repo: 'acme/llama', kind: 'branch', name: 'main' });
    expect(parseRepoRefName('_branches/acme/llama/draft')).toEqual({
      repo: 'acme/llama',
      kind: 'branch',
      name: 'draft',
    });
    expect(parseRepoRefName('_tags/acme/llama/v1')).toEqual({ repo: 'acme/llama', kind: 'tag', name: 'v1' });
    expect(parseRepoRefName('_branches/acme/llama/main')).toBeNull();
    expect(parseRepoRefName('_other/x')).toBeNull();
    expect(parseRepoRefName('_tags/v1')).toBeNull();
  });

  it('splits <repo>@<revision> and refuses what is not one', () => {
    expect(parseRepoSpec('acme/llama')).toEqual({ repo: 'acme/llama', revision: null });
    expect(parseRepoSpec('acme/llama@draft')).toEqual({ repo: 'acme/llama', revision: 'draft' });
    expect(parseRepoSpec(`a/b@${fakeId('c')}`)).toEqual({ repo: 'a/b', revision: fakeId('c') });
    expectCodeSync(() => parseRepoSpec('a/b@'), 'invalid_argument', 'repo.bad_spec');
    expectCodeSync(() => parseRepoSpec('_branches/x'), 'invalid_argument', 'repo.bad_id');
    expectCodeSync(() => validateRepoId('a/../b'), 'invalid_argument', 'repo.bad_id');
    expectCodeSync(() => branchRefName('a/b', 'x/y'), 'invalid_argument', 'repo.bad_name');
    expectCodeSync(() => branchRefName('a/b', 'a'.repeat(40).replace(/a/g, 'f')), 'invalid_argument', 'repo.bad_name');
  });
});

describe('revision documents', () => {
  const doc: RevisionDocument = {
    repo: 'acme/llama',
    branch: 'main',
    target: fakeId('a'),
    parent: null,
    time: 1_700_000_000_000,
    author: 'tok:0123456789abcdef',
    message: 'first',
    upstream: { source: 'hf', revision: 'f'.repeat(40) },
    history: [{ commit: fakeId('b'), previous: null, target: fakeId('c'), time: 1, author: 'x', message: 'older' }],
  };

  it('round-trips canonically and opens with TFR1', () => {
    const b = encodeRevision(doc);
    expect([...b.subarray(0, 4)]).toEqual([0x54, 0x46, 0x52, 0x31]);
    expect(decodeRevision(b)).toEqual(doc);
    expect(encodeRevision(decodeRevision(b))).toEqual(b);
  });

  it('references its target only, walked in turn', () => {
    expect(objectReferences(encodeRevision(doc))).toEqual({
      kind: 'revision',
      children: [{ id: fakeId('a'), follow: true }],
    });
  });

  it('refuses malformed and non-canonical bytes', () => {
    const b = encodeRevision(doc);
    expectCodeSync(() => decodeRevision(b.subarray(0, b.length - 1)), 'malformed', 'repo.bad_revision');
    expectCodeSync(
      () => decodeRevision(new Uint8Array([...bytes('TFR2'), ...b.subarray(4)])),
      'malformed',
      'repo.bad_revision',
    );
    expectCodeSync(
      () => encodeRevision({ ...doc, message: 'x'.repeat(1025) }),
      'invalid_argument',
      'repo.bad_revision',
    );
    expectCodeSync(() => encodeRevision({ ...doc, time: -1 }), 'invalid_argument', 'repo.bad_revision');
    expectCodeSync(() => encodeRevision({ ...doc, branch: 'a/b' }), 'invalid_argument', 'repo.bad_revision');
    // A non-minimal integer (time 5 written as 0x18 0x05) decodes to the same value but is not canonical.
    const small = encodeRevision({ ...doc, time: 5 });
    const at = Buffer.from(small).indexOf(Buffer.from([0x64, ...bytes('time'), 0x05])) + 5;
    expect(small[at]).toBe(0x05);
    const wide = new Uint8Array([...small.subarray(0, at), 0x18, 0x05, ...small.subarray(at + 1)]);
    expectCodeSync(() => decodeRevision(wide), 'malformed', 'repo.bad_revision');
    expectCodeSync(() => decodeRevision(new Uint8Array([...b.subarray(0, 4), 0xff])), 'malformed', 'repo.bad_revision');
  });
});

describe('variants', () => {
  it('names variants by the middle of the file name', () => {
    expect(variantNameOf('model.int8.cozytensors')).toBe('int8');
    expect(variantNameOf('unet/model.fp16.cozytensors')).toBe('fp16');
    expect(variantNameOf('model.cozytensors')).toBe('');
    expect(variantNameOf('model.safetensors')).toBeNull();
  });

  it('chooses the only one, requires a name for several, refuses an unknown name', async () => {
    const store = new MemoryStore();
    const one = await tree(store, 'model.cozytensors');
    const two = await tree(store, 'model.bf16.cozytensors', 'model.int8.cozytensors');
    const none = await tree(store);
    expect(selectVariant(one.manifest)?.path).toBe('model.cozytensors');
    expect(selectVariant(none.manifest)).toBeNull();
    expect(treeVariants(two.manifest).map((v) => v.name)).toEqual(['bf16', 'int8']);
    const err = expectCodeSync(() => selectVariant(two.manifest), 'invalid_argument', 'repo.variant_required');
    expect(err.details.variants).toEqual(['bf16', 'int8']);
    expect(selectVariant(two.manifest, 'int8')?.path).toBe('model.int8.cozytensors');
    expectCodeSync(() => selectVariant(two.manifest, 'fp8'), 'not_found', 'repo.no_such_variant');
    expectCodeSync(() => selectVariant(none.manifest, 'fp8'), 'not_found', 'repo.no_such_variant');
  });

  it('a tree reaches the objects of its .cozytensors headers (followed), and only those files', async () => {
    const store = new MemoryStore();
    const t = await tree(store, 'model.int8.cozytensors');
    const refs = objectReferences(await store.readObject(t.id))!;
    const header = t.manifest.entries.find((e) => e.path.endsWith('.cozytensors')) as ManifestFileEntry;
    const readme = t.manifest.entries.find((e) => e.path === 'README.md') as ManifestFileEntry;
    expect(refs.children).toEqual([
      { id: readme.records[0]!.digest, length: readme.size },
      { id: header.records[0]!.digest, length: header.size, follow: true },
    ]);
  });
});

describe('branches, tags and logs over a store', () => {
  it('moves branches by compare-and-swap, carrying their history', async () => {
    const store = new MemoryStore();
    const t1 = await tree(store, 'model.cozytensors');
    const t2 = await tree(store, 'model.int8.cozytensors');
    const a = await moveBranch(store, {
      repo: 'acme/m',
      branch: 'draft',
      target: t1.id,
      author: 'alice',
      message: 'one',
      time: 10,
    });
    expect(a.previous).toBeNull();
    expect(await store.getRef('_branches/acme/m/draft')).toBe(a.commit);
    const b = await moveBranch(store, {
      repo: 'acme/m',
      branch: 'draft',
      target: t2.id,
      author: 'bob',
      message: 'two',
      time: 20,
    });
    expect(b.previous).toBe(a.commit);
    // A stale expected head: conflict, and the branch stays where it was.
    await expectCode(
      moveBranch(store, { repo: 'acme/m', branch: 'draft', target: t1.id, expected: a.commit, author: 'eve' }),
      'conflict',
    );
    await expectCode(
      moveBranch(store, { repo: 'acme/m', branch: 'draft', target: t1.id, expected: null, author: 'eve' }),
      'conflict',
    );
    expect(await store.getRef('_branches/acme/m/draft')).toBe(b.commit);
    const log = await branchLog(store, 'acme/m', 'draft');
    expect(log.map((e) => [e.commit, e.previous, e.target, e.time, e.author, e.message])).toEqual([
      [b.commit, a.commit, t2.id, 20, 'bob', 'two'],
      [a.commit, null, t1.id, 10, 'alice', 'one'],
    ]);
    // Only the head's target is referenced: the first tree is no longer reachable from the branch.
    expect(objectReferences(await store.readObject(b.commit))!.children).toEqual([{ id: t2.id, follow: true }]);
  });

  it('refuses a target that is missing or not a tree or header', async () => {
    const store = new MemoryStore();
    await expectCode(
      moveBranch(store, { repo: 'a/b', target: fakeId('9'), author: 'x' }),
      'not_found',
      'repo.no_such_target',
    );
    const blob = await store.put(bytes('just bytes'));
    await expectCode(
      moveBranch(store, { repo: 'a/b', target: blob.id, author: 'x' }),
      'invalid_argument',
      'repo.bad_target',
    );
    expect(await store.getRef('a/b')).toBeNull();
  });

  it('an existing ref is the repository main, and moving it keeps the old head in the log', async () => {
    const store = new MemoryStore();
    const t1 = await tree(store);
    const t2 = await tree(store, 'model.cozytensors');
    await store.setRef('local/example', t1.id);
    const r = await resolveRevision(store, 'local/example');
    expect(r).toMatchObject({
      kind: 'branch',
      ref: 'local/example',
      head: t1.id,
      commit: null,
      target: t1.id,
      targetKind: 'tree',
    });
    expect(await branchLog(store, 'local/example')).toEqual([
      { commit: t1.id, previous: null, target: t1.id, time: null, author: null, message: null, upstream: null },
    ]);
    const m = await moveBranch(store, { repo: 'local/example', target: t2.id, author: 'me', time: 5 });
    const log = await branchLog(store, 'local/example');
    expect(log.map((e) => e.commit)).toEqual([m.commit, t1.id]);
    expect((await resolveRevision(store, 'local/example')).target).toBe(t2.id);
  });

  it('resolves branches, tags, ids and 40-hex prefixes; tags never move', async () => {
    const store = new MemoryStore();
    const t1 = await tree(store, 'model.cozytensors');
    const t2 = await tree(store, 'model.bf16.cozytensors');
    const m1 = await moveBranch(store, { repo: 'acme/m', target: t1.id, author: 'a', time: 1 });
    const tag = await createTag(store, { repo: 'acme/m', tag: 'v1' });
    expect(tag).toEqual({ ref: '_tags/acme/m/v1', head: m1.commit });
    const m2 = await moveBranch(store, { repo: 'acme/m', target: t2.id, author: 'a', time: 2 });
    expect((await resolveRevision(store, 'acme/m')).target).toBe(t2.id);
    expect(await resolveRevision(store, 'acme/m', 'v1')).toMatchObject({
      kind: 'tag',
      commit: m1.commit,
      target: t1.id,
    });
    expect(await resolveRevision(store, 'acme/m', m2.commit)).toMatchObject({
      kind: 'id',
      commit: m2.commit,
      target: t2.id,
    });
    expect(await resolveRevision(store, 'acme/m', t1.id)).toMatchObject({ kind: 'id', commit: null, target: t1.id });
    const hex = (id: ObjectId) => id.slice(7, 47);
    expect((await resolveRevision(store, 'acme/m', hex(m1.commit))).target).toBe(t1.id);
    expect((await resolveRevision(store, 'acme/m', hex(m2.commit))).target).toBe(t2.id);
    await expectCode(resolveRevision(store, 'acme/m', '0'.repeat(40)), 'not_found', 'repo.no_such_revision');
    await expectCode(createTag(store, { repo: 'acme/m', tag: 'v1' }), 'conflict', 'repo.tag_exists');
    await expectCode(
      createTag(store, { repo: 'acme/m', tag: 'v1', revision: m2.commit }),
      'conflict',
      'repo.tag_exists',
    );
    expect(await store.getRef('_tags/acme/m/v1')).toBe(m1.commit);
    await expectCode(createTag(store, { repo: 'acme/m', tag: 'main' }), 'conflict', 'repo.name_taken');
    await expectCode(
      moveBranch(store, { repo: 'acme/m', branch: 'v1', target: t1.id, author: 'a' }),
      'conflict',
      'repo.name_taken',
    );
    await expectCode(resolveRevision(store, 'acme/m', 'nope'), 'not_found', 'repo.no_such_revision');
    await expectCode(resolveRevision(store, 'acme/other'), 'not_found', 'repo.no_such_repo');
    const blob = await store.put(bytes('leaf'));
    await expectCode(resolveRevision(store, 'acme/m', blob.id), 'invalid_argument', 'repo.not_a_revision');
    // Another repository's revision document is not a revision of this one.
    const other = await moveBranch(store, { repo: 'acme/other', target: t1.id, author: 'a' });
    await expectCode(resolveRevision(store, 'acme/m', other.commit), 'not_found', 'repo.no_such_revision');
  });

  it('lists repositories with their branches and tags', async () => {
    const store = new MemoryStore();
    const t = await tree(store);
    await moveBranch(store, { repo: 'acme/m', target: t.id, author: 'a' });
    await moveBranch(store, { repo: 'acme/m', branch: 'draft', target: t.id, author: 'a' });
    await createTag(store, { repo: 'acme/m', tag: 'v1', revision: 'draft' });
    await store.setRef('legacy', t.id);
    const list = await listRepositories(store);
    expect(list.map((r) => [r.repo, r.branches.map((b) => b.name), r.tags.map((x) => x.name)])).toEqual([
      ['acme/m', ['draft', 'main'], ['v1']],
      ['legacy', ['main'], []],
    ]);
  });
});
