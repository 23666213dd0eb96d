import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bytesOf, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { tfs as run } from './helpers.js';

const SHARED = 300_000;
const ONLY_A = 200_000;
const ONLY_B = 100_000;

async function tfs(store: string, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await run([...argv, '--store', store]);
  return { code: r.code, out: r.stdout, err: r.stderr };
}

async function json(store: string, ...argv: string[]) {
  const r = await tfs(store, ...argv, '--json');
  expect(r.code, r.err).toBe(0);
  return JSON.parse(r.out);
}

/** Sum of the sizes of every file under `objects/`, walked here. */
function objectFolderBytes(store: string): number {
  let n = 0;
  for (const name of readdirSync(join(store, 'objects'), { recursive: true }) as string[]) {
    const st = statSync(join(store, 'objects', name));
    if (st.isFile()) n += st.size;
  }
  return n;
}

/** A store with refs `a` and `b` sharing one file; returns their manifests' sizes. */
async function setup() {
  const store = join(tempDir('tfs-cli-'), 'store');
  const base = tempDir('tfs-cli-');
  for (const [d, only, n, seed] of [
    ['a', 'a.bin', ONLY_A, 2],
    ['b', 'b.bin', ONLY_B, 3],
  ] as const) {
    mkdirSync(join(base, d));
    writeFileSync(join(base, d, 'shared.bin'), bytesOf(SHARED, 1));
    writeFileSync(join(base, d, only), bytesOf(n, seed));
    await json(store, 'import', join(base, d), '--name', d);
  }
  const u = await json(store, 'du');
  const manifest = (name: string, only: number) =>
    u.refs.find((r: { name: string }) => r.name === name).storedBytes - SHARED - only;
  return { store, base, u, aManifest: manifest('a', ONLY_A), bManifest: manifest('b', ONLY_B) };
}

describe('tfs du', () => {
  it('per ref: logical, stored, exclusive and shared bytes; stored equals the object files', async () => {
    const { store, u, aManifest, bManifest } = await setup();
    expect(aManifest).toBeGreaterThan(0);
    expect(u.storedBytes).toBe(objectFolderBytes(store));
    expect(u.storedBytes).toBe(SHARED + ONLY_A + ONLY_B + aManifest + bManifest);
    expect(u.unreferencedBytes).toBe(0);
    expect(u.refs.map(({ id: _, ...r }: { id: string }) => r)).toEqual([
      {
        name: 'a',
        logicalBytes: SHARED + ONLY_A,
        storedBytes: SHARED + ONLY_A + aManifest,
        objects: 3,
        exclusiveBytes: ONLY_A + aManifest,
        sharedBytes: SHARED,
      },
      {
        name: 'b',
        logicalBytes: SHARED + ONLY_B,
        storedBytes: SHARED + ONLY_B + bManifest,
        objects: 3,
        exclusiveBytes: ONLY_B + bManifest,
        sharedBytes: SHARED,
      },
    ]);
    const human = await tfs(store, 'du');
    expect(human.code).toBe(0);
    expect(human.out.split('\n')[0]).toContain('per ref: logical, stored, exclusive, shared');
    expect(human.out.split('\n')[1]!.trim().split(/\s+/).pop()).toBe('a');
  });
});

describe('tfs rm', () => {
  it('frees exactly the exclusive bytes at once, keeps what the other ref shares; exit codes', async () => {
    const { store, aManifest } = await setup();
    expect((await tfs(store, 'rm', 'nope', '--grace', '0')).code).toBe(6);
    const wrong = `sha256:${'0'.repeat(64)}`;
    expect((await tfs(store, 'rm', 'a', '--expected', wrong)).code).toBe(7);
    expect((await tfs(store, 'rm', 'a', '--expected', 'none')).code).toBe(2);
    expect((await tfs(store, 'rm', 'a', '--grace', '-1')).code).toBe(2);
    expect((await tfs(store, 'rm', '../a')).code).toBe(2);
    const before = objectFolderBytes(store);
    const r = await json(store, 'rm', 'a', '--grace', '0');
    expect(r).toMatchObject({
      name: 'a',
      removed: 2,
      bytes: ONLY_A + aManifest,
      shared: 1,
      sharedBytes: SHARED,
      left: 0,
      keptObjects: false,
    });
    expect(objectFolderBytes(store)).toBe(before - ONLY_A - aManifest);
    expect((await tfs(store, 'ref', 'get', 'a')).code).toBe(6);
    expect(await json(store, 'verify', '--data')).toMatchObject({ missing: [], corrupt: [] });
    const u = await json(store, 'du');
    expect(u.refs.map((x: { name: string }) => x.name)).toEqual(['b']);
    expect(u.refs[0].exclusiveBytes).toBe(u.storedBytes);
  });

  it('within the grace period leaves objects for gc; --keep-objects deletes just the ref', async () => {
    const { store, aManifest, bManifest } = await setup();
    const young = await tfs(store, 'rm', 'a');
    expect(young.code, young.err).toBe(0);
    expect(young.out).toContain('deleted a: freed 0 B');
    expect(young.out).toContain('younger than the grace period are left for tfs gc');
    expect(await json(store, 'gc', '--grace', '0')).toMatchObject({ removed: 2, bytes: ONLY_A + aManifest });
    const kept = await json(store, 'rm', 'b', '--keep-objects');
    expect(kept).toMatchObject({ name: 'b', removed: 0, bytes: 0, keptObjects: true });
    expect(await json(store, 'gc', '--grace', '0')).toMatchObject({ removed: 3, bytes: SHARED + ONLY_B + bManifest });
    expect(objectFolderBytes(store)).toBe(0);
  });
});

describe('repositories: tfs rm <repo>[@branch], tfs du per repository', () => {
  /** `team/model`: main = a, branch dev = b, tag v1 = a; `other` (main) shares shared.bin. */
  async function repoSetup() {
    const { store, base, aManifest, bManifest } = await setup();
    const a = (await json(store, 'ref', 'get', 'a')).id;
    const b = (await json(store, 'ref', 'get', 'b')).id;
    await json(store, 'ref', 'set', 'team/model', a);
    await json(store, 'ref', 'set', '_branches/team/model/dev', b);
    await json(store, 'ref', 'set', '_tags/team/model/v1', a);
    await json(store, 'rm', 'a', '--keep-objects');
    await json(store, 'rm', 'b', '--keep-objects');
    mkdirSync(join(base, 'o'));
    writeFileSync(join(base, 'o', 'shared.bin'), bytesOf(SHARED, 1));
    await json(store, 'import', join(base, 'o'), '--name', 'other');
    return { store, a, b, aManifest, bManifest };
  }

  it('du: a repository is its branches and tags together; exclusive is what only they reach', async () => {
    const { store, aManifest, bManifest } = await repoSetup();
    const u = await json(store, 'du');
    expect(u.storedBytes).toBe(objectFolderBytes(store));
    const other = u.refs.find((r: { name: string }) => r.name === 'other');
    expect(u.repositories).toEqual([
      {
        repo: 'other',
        refs: ['other'],
        logicalBytes: SHARED,
        storedBytes: other.storedBytes,
        objects: 2,
        exclusiveBytes: other.storedBytes - SHARED,
        sharedBytes: SHARED,
      },
      {
        repo: 'team/model',
        refs: ['_branches/team/model/dev', '_tags/team/model/v1', 'team/model'],
        logicalBytes: SHARED + ONLY_A + SHARED + ONLY_B,
        storedBytes: SHARED + ONLY_A + ONLY_B + aManifest + bManifest,
        objects: 5,
        exclusiveBytes: ONLY_A + ONLY_B + aManifest + bManifest,
        sharedBytes: SHARED,
      },
    ]);
    // Per ref, main and the tag name one snapshot: neither has exclusive bytes.
    expect(u.refs.find((r: { name: string }) => r.name === 'team/model').exclusiveBytes).toBe(0);
  });

  it('rm: a branch, then the repository (--all keeps tags), then a tag with --tags; exact bytes freed', async () => {
    const { store, aManifest, bManifest } = await repoSetup();
    const ambiguous = await tfs(store, 'rm', 'team/model', '--json');
    expect(ambiguous.code).toBe(7);
    expect(JSON.parse(ambiguous.err).error.details).toMatchObject({
      rule: 'repo.rm_ambiguous',
      branches: ['dev'],
      tags: ['v1'],
    });
    const tag = await tfs(store, 'rm', 'team/model@v1', '--json');
    expect(tag.code).toBe(2);
    expect(JSON.parse(tag.err).error.details.rule).toBe('repo.tag_needs_flag');
    expect((await tfs(store, 'rm', 'team/model@nope')).code).toBe(6);
    expect((await tfs(store, 'rm', 'nobody/x@main')).code).toBe(6);
    expect((await tfs(store, 'rm', 'team/model@dev', '--all')).code).toBe(2);
    const before = objectFolderBytes(store);
    const dev = await json(store, 'rm', 'team/model@dev', '--grace', '0');
    expect(dev).toMatchObject({ name: '_branches/team/model/dev', bytes: ONLY_B + bManifest, sharedBytes: SHARED });
    expect(objectFolderBytes(store)).toBe(before - ONLY_B - bManifest);
    // --all: every branch (main); the tag keeps a's objects, so nothing is freed yet.
    const all = await json(store, 'rm', 'team/model', '--all', '--grace', '0');
    expect(all).toMatchObject({ repo: 'team/model', keptTags: ['v1'], bytes: 0, removed: 0 });
    expect(all.refs.map((r: { name: string }) => r.name)).toEqual(['team/model']);
    const v1 = await json(store, 'rm', 'team/model@v1', '--tags', '--grace', '0');
    expect(v1).toMatchObject({ name: '_tags/team/model/v1', bytes: ONLY_A + aManifest, sharedBytes: SHARED });
    const u = await json(store, 'du');
    expect(u.repositories.map((r: { repo: string }) => r.repo)).toEqual(['other']);
    expect(u.storedBytes).toBe(objectFolderBytes(store));
    expect(u.storedBytes).toBe(u.refs[0].storedBytes);
  });

  it('rm --all --tags removes every branch and tag and frees what only the repository reached', async () => {
    const { store, aManifest, bManifest } = await repoSetup();
    const r = await json(store, 'rm', 'team/model', '--all', '--tags', '--grace', '0');
    expect(r.refs.map((x: { name: string }) => x.name)).toEqual([
      '_branches/team/model/dev',
      'team/model',
      '_tags/team/model/v1',
    ]);
    expect(r.keptTags).toEqual([]);
    expect(r.bytes).toBe(ONLY_A + ONLY_B + aManifest + bManifest);
    expect((await json(store, 'verify', '--data')).missing).toEqual([]);
  });
});
