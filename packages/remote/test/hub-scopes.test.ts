/**
 * Write scopes per repository and branch on the hub: `R@B` scopes, tags created once and never
 * moved (but by an administrator), branch moves authored by the token's owner, and tokens files
 * from before repositories keeping their meaning.
 */
import { createHash } from 'node:crypto';
import {
  branchRefName,
  createTag,
  encodeRevision,
  isTensorFSError,
  moveBranch,
  resolveRevision,
  tagRefName,
} from '@tensorfs/format';
import { describe, expect, it } from 'vitest';
import { CheckpointWriter } from '@tensorfs/tensors';
import {
  HubOrigin,
  originDestination,
  parseTokensConfig,
  push,
  StoreOrigin,
  serveHub,
  type TokensConfig,
} from '../src/index.js';
import { after, newStore, storeWith } from './helpers.js';

const ADMIN = 'admin-token-0123456789';
const DRAFTS = 'drafts-token-0123456789';
const TAGS = 'tags-token-0123456789';
const OLD = 'old-writer-token-0123456';
const READER = 'reader-token-0123456789';

const ownerOf = (token: string) => createHash('sha256').update(token).digest('hex').slice(0, 16);

const TOKENS: TokensConfig = {
  tokens: [
    { token: ADMIN, admin: true },
    { token: DRAFTS, read: ['acme/*'], write: ['acme/*@draft'] },
    { token: TAGS, read: ['acme/*'], tag: ['acme/*'] },
    // A tokens file from before repositories: a plain ref glob.
    { token: OLD, read: ['*'], write: ['team/*'] },
    { token: READER, read: ['acme/m@main'] },
  ],
};

async function rule(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (isTensorFSError(err)) return `${err.code} ${String(err.details.rule)}`;
    throw err;
  }
  return 'ok';
}

async function started() {
  // One tree (a snapshot) in the store, as the hub's main of acme/m and team/x.
  const { store, id } = await storeWith('acme/m');
  await store.setRef('team/x', id);
  const hub = await serveHub(new StoreOrigin(store), { tokens: TOKENS });
  after(() => hub.close());
  const as = (token: string) => {
    const o = new HubOrigin(hub.url, { credential: token });
    after(() => o.close());
    return o;
  };
  return { hub, store, tree: id, as };
}

describe('hub write scopes per repository and branch', () => {
  it('says who a token is (GET /v1/whoami): the owner id a revision must name', async () => {
    const { as, hub } = await started();
    expect(await as(DRAFTS).whoami()).toEqual({ owner: ownerOf(DRAFTS), anonymous: false, admin: false });
    expect(await as(ADMIN).whoami()).toEqual({ owner: ownerOf(ADMIN), anonymous: false, admin: true });
    const anon = await fetch(`${hub.url}/v1/whoami`);
    expect(await anon.json()).toEqual({ owner: 'anonymous', anonymous: true, admin: false });
  });

  it('a token limited to drafts moves acme/*@draft as its owner, and never main', async () => {
    const { as, store, tree } = await started();
    const hub = as(DRAFTS);
    const mainBefore = await store.getRef('acme/m');
    // main: outside the scope, nothing changed.
    expect(
      await rule(
        moveBranch(hub, { repo: 'acme/m', branch: 'main', target: tree, author: ownerOf(DRAFTS), message: 'x' }),
      ),
    ).toBe('denied hub.scope');
    expect(await store.getRef('acme/m')).toBe(mainBefore);
    // draft, authored by someone else: refused, nothing changed.
    expect(
      await rule(
        moveBranch(hub, { repo: 'acme/m', branch: 'draft', target: tree, author: 'someone-else', message: 'x' }),
      ),
    ).toBe('denied hub.author_mismatch');
    expect(await store.getRef(branchRefName('acme/m', 'draft'))).toBeNull();
    // draft straight to a tree id (no revision document): refused for an `R@B` scope.
    expect(await rule(hub.setRef(branchRefName('acme/m', 'draft'), tree, { expected: null }))).toBe(
      'denied hub.author_mismatch',
    );
    // draft, authored by this token: moved.
    const moved = await moveBranch(hub, {
      repo: 'acme/m',
      branch: 'draft',
      target: tree,
      author: ownerOf(DRAFTS),
      message: 'first draft',
    });
    expect(await store.getRef(branchRefName('acme/m', 'draft'))).toBe(moved.commit);
    // another repository's draft: outside `acme/*`.
    expect(
      await rule(
        moveBranch(hub, { repo: 'team/x', branch: 'draft', target: tree, author: ownerOf(DRAFTS), message: 'x' }),
      ),
    ).toBe('denied hub.scope');
    // nor tags
    expect(await rule(createTag(hub, { repo: 'acme/m', tag: 'v1', revision: 'draft' }))).toBe('denied hub.scope');
  });

  it('a revision document for another branch is refused on this one', async () => {
    const { as, store, tree } = await started();
    const hub = as(DRAFTS);
    const doc = encodeRevision({
      repo: 'acme/m',
      branch: 'other',
      target: tree,
      parent: null,
      time: 1,
      author: ownerOf(DRAFTS),
      message: 'm',
      upstream: null,
      history: [],
    });
    const { id } = await hub.put([doc]);
    expect(await rule(hub.setRef(branchRefName('acme/m', 'draft'), id, { expected: null }))).toBe(
      'invalid_argument hub.revision_mismatch',
    );
    expect(await store.getRef(branchRefName('acme/m', 'draft'))).toBeNull();
  });

  it('a tags-only token creates tags, never moves one, and moves no branch', async () => {
    const { as, store, tree } = await started();
    const admin = as(ADMIN);
    const moved = await moveBranch(admin, {
      repo: 'acme/m',
      branch: 'draft',
      target: tree,
      author: ownerOf(ADMIN),
      message: 'draft',
    });
    const tags = as(TAGS);
    expect(
      await rule(
        moveBranch(tags, { repo: 'acme/m', branch: 'draft', target: tree, author: ownerOf(TAGS), message: 'x' }),
      ),
    ).toBe('denied hub.scope');
    await createTag(tags, { repo: 'acme/m', tag: 'v1', revision: 'draft' });
    const v1 = await store.getRef(tagRefName('acme/m', 'v1'));
    expect(v1).not.toBeNull();
    // Again, the same or another target: a tag never moves.
    expect(await rule(createTag(tags, { repo: 'acme/m', tag: 'v1', revision: 'main' }))).toBe(
      'conflict repo.tag_exists',
    );
    expect(await rule(tags.setRef(tagRefName('acme/m', 'v1'), moved.commit, { expected: v1 }))).toBe(
      'conflict repo.tag_exists',
    );
    expect(await rule(tags.setRef(tagRefName('acme/m', 'v1'), moved.commit))).toBe('conflict repo.tag_exists');
    expect(await store.getRef(tagRefName('acme/m', 'v1'))).toBe(v1);
    // The hub has no ref deletion at all: a tag cannot be removed through it.
    const del = await fetch(`${(tags as unknown as { base: string }).base}/v1/refs/_tags/acme/m/v1`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${TAGS}` },
    });
    expect(del.status).toBe(400);
    expect(((await del.json()) as { error: { details: { rule: string } } }).error.details.rule).toBe('hub.method');
    expect(await store.getRef(tagRefName('acme/m', 'v1'))).toBe(v1);
    // An administrator may move it.
    await admin.setRef(tagRefName('acme/m', 'v1'), moved.commit, { expected: v1 });
    expect(await store.getRef(tagRefName('acme/m', 'v1'))).toBe(moved.commit);
  });

  it('a tokens file from before repositories keeps working: team/* moves team/x (main) as before', async () => {
    const { as, store, tree } = await started();
    const old = as(OLD);
    // The pre-repository protocol: main straight to a tree id (tfs push).
    const { store: src, id: second } = await storeWith('x', { 'a.txt': new TextEncoder().encode('second tree\n') });
    await push(src, old, 'x', { name: 'team/x', expected: tree });
    expect(await store.getRef('team/x')).toBe(second);
    // Other branches of team/x too, as revision documents it authored; and its tags.
    const m = await moveBranch(old, {
      repo: 'team/x',
      branch: 'dev',
      target: tree,
      author: ownerOf(OLD),
      message: 'dev',
    });
    expect(await store.getRef(branchRefName('team/x', 'dev'))).toBe(m.commit);
    await createTag(old, { repo: 'team/x', tag: 'v1', revision: 'dev' });
    expect(await store.getRef(tagRefName('team/x', 'v1'))).not.toBeNull();
    // And still nothing outside team/*.
    expect(await rule(old.setRef('acme/m', second))).toBe('denied hub.scope');
    // The old file format parses unchanged.
    expect(parseTokensConfig({ tokens: [{ token: OLD, read: ['*'], write: ['team/*'] }] })).toEqual({
      tokens: [{ token: OLD, read: ['*'], write: ['team/*'] }],
    });
  });

  it('read scopes name repositories and revisions: branches and tags of acme/* are readable, others are not', async () => {
    const { as, tree } = await started();
    const admin = as(ADMIN);
    await moveBranch(admin, { repo: 'acme/m', branch: 'draft', target: tree, author: ownerOf(ADMIN), message: 'd' });
    await moveBranch(admin, { repo: 'team/x', branch: 'draft', target: tree, author: ownerOf(ADMIN), message: 'd' });
    const drafts = as(DRAFTS);
    expect(await drafts.getRef(branchRefName('acme/m', 'draft'))).not.toBeNull();
    expect(await rule(drafts.getRef(branchRefName('team/x', 'draft')))).toBe('denied hub.scope');
    const names = (await drafts.scanRefs()).refs.map((r) => r.name).sort();
    expect(names).toEqual(['_branches/acme/m/draft', 'acme/m']);
    // `acme/m@main` reads main only.
    const reader = as(READER);
    expect(await reader.getRef('acme/m')).toBe(tree);
    expect(await rule(reader.getRef(branchRefName('acme/m', 'draft')))).toBe('denied hub.scope');
  });

  it('originDestination: a checkpoint writer publishes to a hub by URL and token, authored by the token', async () => {
    const { hub, store } = await started();
    const local = await newStore();
    const destination = await originDestination({ origin: hub.url, repo: 'acme/m', token: DRAFTS, variant: 'int8' });
    after(() => destination.origin.close());
    expect(destination.author).toBe(ownerOf(DRAFTS));
    const w = new CheckpointWriter(local, { destination });
    w.component('m', { cls: 'M', config: {} });
    await w.put('w', new Uint8Array(1000).fill(5), { dtype: 'U8', shape: [1000] });
    const done = await w.commit();
    const r = await resolveRevision(store, 'acme/m', 'draft');
    expect(r.commit).toBe(done.published!.revision);
    expect(r.document?.author).toBe(ownerOf(DRAFTS));
    // The draft starts from main's tree (here a snapshot): its files are kept beside the variant.
    const paths = (await store.getManifest(r.target)).entries.map((e) => e.path);
    expect(paths).toContain('model.int8.cozytensors');
    expect(paths).toContain('config.json');
    // To main the same token is refused, and the local checkpoint is kept.
    const refused = await originDestination({ origin: hub.url, repo: 'acme/m', branch: 'main', token: DRAFTS });
    after(() => refused.origin.close());
    const w2 = new CheckpointWriter(local, { destination: refused });
    w2.component('m', { cls: 'M', config: {} });
    expect(await rule(w2.commit({ name: 'kept' }))).toBe('denied hub.scope');
    expect(await local.getRef('kept')).not.toBeNull();
  });

  it('refuses scopes that are not REPO or REPO@REV, and an admin that is not a boolean', () => {
    const bad = (t: object) => {
      try {
        parseTokensConfig({ tokens: [{ token: 'a-long-token', ...t }] });
      } catch (err) {
        if (isTensorFSError(err)) return `${err.code} ${String(err.details.rule)}`;
      }
      return 'ok';
    };
    expect(bad({ write: ['a/*@b@c'] })).toBe('invalid_argument hub.bad_tokens_file');
    expect(bad({ write: ['a/*@'] })).toBe('invalid_argument hub.bad_tokens_file');
    expect(bad({ tag: ['a/*@x/y'] })).toBe('invalid_argument hub.bad_tokens_file');
    expect(bad({ tag: 'a/*' })).toBe('invalid_argument hub.bad_tokens_file');
    expect(bad({ admin: 'yes' })).toBe('invalid_argument hub.bad_tokens_file');
    expect(bad({ write: ['a/*@draft'], tag: ['a/*@v*'], admin: false })).toBe('ok');
  });
});
