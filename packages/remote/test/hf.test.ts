// hf:// sources against a fake Hugging Face Hub (and a fake CDN on another origin) on loopback.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { LocalStore } from '@tensorfs/cas';
import { codecForPath } from '@tensorfs/format';
import {
  expectCode,
  type FakeHub,
  type FakeHubOptions,
  fakeHubFixture,
  sha256Hex,
  startFakeHub,
  tempDir,
} from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { type HfImportOptions, importHuggingFace, parseHfUrl } from '../src/index.js';
import { after, newStore } from './helpers.js';

const fx = fakeHubFixture();
const TOKEN = 'hf_FAKEuserTOKENabcdefghijklmnop';

async function hub(options: FakeHubOptions = {}): Promise<FakeHub> {
  const h = await startFakeHub(fx.repos, options);
  after(() => h.close());
  return h;
}

function opts(h: FakeHub, more: HfImportOptions = {}): HfImportOptions {
  return { endpoint: h.endpoint, http: { baseDelayMs: 1, retries: 1, readTimeoutMs: 10_000 }, threads: 1, ...more };
}

function folder(files: Record<string, Uint8Array>): string {
  const d = join(tempDir('tfs-hf-local-'), 'repo');
  for (const [p, b] of Object.entries(files)) {
    mkdirSync(dirname(join(d, p)), { recursive: true });
    writeFileSync(join(d, p), b);
  }
  return d;
}

/** Where the data section of a safetensors file starts. */
function dataStart(bytes: Uint8Array): number {
  return 8 + Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
}

async function paths(store: LocalStore, id: string): Promise<string[]> {
  return (await store.getManifest(id as `sha256:${string}`)).entries.map((e) => e.path);
}

describe('parseHfUrl', () => {
  it('reads owner/repo and a revision (main by default; a revision may hold slashes)', () => {
    expect(parseHfUrl('hf://acme/tiny')).toEqual({ repo: 'acme/tiny', revision: 'main' });
    expect(parseHfUrl('hf://acme/tiny@v0.1')).toEqual({ repo: 'acme/tiny', revision: 'v0.1' });
    expect(parseHfUrl('hf://acme/tiny@refs/pr/1')).toEqual({ repo: 'acme/tiny', revision: 'refs/pr/1' });
    expect(parseHfUrl('hf://gpt2')).toEqual({ repo: 'gpt2', revision: 'main' });
  });

  it('refuses what is not a model repository URL', async () => {
    for (const bad of [
      'acme/tiny',
      'hf://',
      'hf://a/b/c',
      'hf://acme/../x',
      'hf://acme/tiny@',
      'hf://-a/b',
      'hf://a/b@x\ny',
    ]) {
      await expectCode(() => parseHfUrl(bad), 'invalid_argument', 'hf.url');
    }
    await expectCode(() => parseHfUrl('hf://datasets/acme/data'), 'unsupported', 'hf.repo_type');
  });
});

describe('importHuggingFace', () => {
  it('pins main to its commit, reads each header by Range first, and makes the objects a local import makes', async () => {
    const h = await hub();
    const store = await newStore();
    const r = await importHuggingFace(store, 'hf://acme/tiny', opts(h, { name: 'hf/tiny', token: TOKEN }));
    expect(r.source).toMatchObject({ kind: 'huggingface', repo: 'acme/tiny', revision: 'main', commit: fx.c1 });
    expect(r.source.endpoint).toBe(h.endpoint);
    expect(r.source.files.map((f) => f.path)).toEqual(Object.keys(fx.tiny).sort());
    const shard = fx.tiny['model-00001-of-00002.safetensors']!;
    expect(r.source.files.find((f) => f.path === 'model-00001-of-00002.safetensors')?.sha256).toBe(sha256Hex(shard));
    expect(await store.getRef('hf/tiny')).toBe(r.snapshot);
    // Every byte crossed the wire once.
    const total = Object.values(fx.tiny).reduce((n, b) => n + b.length, 0);
    expect(r.bytes).toBe(total);
    expect(r.bytesFetched).toBe(total);

    // Each safetensors file: its head, then the rest of its header, then the data in one stream.
    for (const name of ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']) {
      const bytes = fx.tiny[name]!;
      const gets = h.log.filter((q) => q.server === 'hub' && q.method === 'GET' && q.path.endsWith(`/${name}`));
      expect(gets.map((q) => q.range)).toEqual([
        'bytes=0-15',
        `bytes=16-${dataStart(bytes) - 1}`,
        `bytes=${dataStart(bytes)}-`,
      ]);
      expect(gets.every((q) => q.path === `/acme/tiny/resolve/${fx.c1}/${name}`)).toBe(true);
    }
    // The GGUF: its header by a bounded range (the format reads up to 1 MiB first); no open-ended read.
    const gguf = h.log.filter((q) => q.method === 'GET' && q.path.endsWith('/gguf/model.gguf'));
    expect(gguf.map((q) => q.range)).toEqual(['bytes=0-15', `bytes=16-${fx.tiny['gguf/model.gguf']!.length - 1}`]);
    // The token went to the Hub on every request, never to the CDN.
    const hubReqs = h.log.filter((q) => q.server === 'hub');
    const cdnReqs = h.log.filter((q) => q.server === 'cdn');
    expect(cdnReqs.length).toBe(8); // 3 + 3 + 2 ranges of LFS files
    expect(hubReqs.every((q) => q.authorization === `Bearer ${TOKEN}`)).toBe(true);
    expect(cdnReqs.every((q) => q.authorization === undefined)).toBe(true);

    // A local import of the same files: the same snapshot, and not one new object.
    const local = await store.importPath(folder(fx.tiny), { name: 'local/tiny' });
    expect(local.snapshot).toBe(r.snapshot);
    expect(local.objectsWritten).toBe(0);
    // And the other way round, in a fresh store: hf:// after a local import writes nothing new.
    const other = await newStore();
    const first = await other.importPath(folder(fx.tiny));
    const again = await importHuggingFace(other, 'hf://acme/tiny', opts(h));
    expect(again.snapshot).toBe(first.snapshot);
    expect(again.objectsWritten).toBe(0);
    expect((await other.verify({ data: true, all: true })).corrupt).toEqual([]);
  });

  it('resolves a commit sha and a tag to the same older commit', async () => {
    const h = await hub();
    const store = await newStore();
    const bySha = await importHuggingFace(store, `hf://acme/tiny@${fx.c0}`, opts(h));
    const byTag = await importHuggingFace(store, 'hf://acme/tiny@v0.1', opts(h));
    expect(bySha.source.commit).toBe(fx.c0);
    expect(byTag.source.commit).toBe(fx.c0);
    expect(byTag.snapshot).toBe(bySha.snapshot);
    expect(await paths(store, bySha.snapshot)).not.toContain('gguf/model.gguf');
    const m = await store.getManifest(bySha.snapshot);
    const config = m.entries.find((e) => e.path === 'config.json');
    const bytes = await store.readObject(config!.kind === 'file' ? config!.records[0]!.digest : ('' as never));
    expect(new TextDecoder().decode(bytes)).toBe('{"model_type": "llama", "revision": 0}\n');
    // Everything after the revision was asked at the commit, never at the tag.
    const after = h.log.filter((q) => q.server === 'hub' && !q.path.includes('/revision/'));
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((q) => q.path.includes(fx.c0))).toBe(true);
  });

  it('fetches only what --include selects: excluded files are never asked for', async () => {
    const h = await hub();
    const store = await newStore();
    const r = await importHuggingFace(
      store,
      'hf://acme/tiny',
      opts(h, { include: ['*.json', 'model-00001-*'], name: 'hf/part' }),
    );
    const selected = ['config.json', 'model-00001-of-00002.safetensors', 'model.safetensors.index.json'];
    expect(await paths(store, r.snapshot)).toEqual(selected);
    expect(r.source.include).toEqual(['*.json', 'model-00001-*']);
    const files = h.log.filter((q) => q.path.includes('/resolve/'));
    expect([...new Set(files.map((q) => q.path.split('/resolve/')[1]!.slice(41)))].sort()).toEqual(selected);
    const cdn = h.log.filter((q) => q.server === 'cdn').map((q) => q.path);
    const shard1 = sha256Hex(fx.tiny['model-00001-of-00002.safetensors']!);
    expect(cdn.every((p) => p === `/blobs/${shard1}`)).toBe(true);
    for (const excluded of ['README.md', 'model-00002-of-00002.safetensors', 'gguf/model.gguf']) {
      expect(h.log.some((q) => q.path.endsWith(excluded))).toBe(false);
      expect(h.log.some((q) => q.path.endsWith(sha256Hex(fx.tiny[excluded]!)))).toBe(false);
    }
    await expectCode(
      importHuggingFace(store, 'hf://acme/tiny', opts(h, { include: '*.nothing' })),
      'not_found',
      'hf.nothing_selected',
    );
  });

  it('follows tree pages (Link rel=next) to the same snapshot', async () => {
    const one = await hub();
    const paged = await hub({ pageSize: 2 });
    const store = await newStore();
    const a = await importHuggingFace(store, 'hf://acme/tiny', opts(one));
    const b = await importHuggingFace(store, 'hf://acme/tiny', opts(paged));
    expect(b.snapshot).toBe(a.snapshot);
    const pages = paged.log.filter((q) => q.path.includes('/tree/'));
    // 7 files and 1 folder, 2 a page.
    expect(pages.map((q) => q.query)).toEqual([
      '?recursive=true',
      '?recursive=true&cursor=2',
      '?recursive=true&cursor=4',
      '?recursive=true&cursor=6',
    ]);
  });

  it('a gated repository is denied without the right token, with a message naming HF_TOKEN (never the token)', async () => {
    const h = await hub();
    const store = await newStore();
    const none = await expectCode(importHuggingFace(store, 'hf://acme/gated', opts(h)), 'denied', 'hf.gated');
    expect(none.message).toContain('set HF_TOKEN');
    expect(none.details.status).toBe(401);
    const wrong = await expectCode(
      importHuggingFace(store, 'hf://acme/gated', opts(h, { token: TOKEN })),
      'denied',
      'hf.gated',
    );
    expect(wrong.details.status).toBe(403);
    expect(wrong.message).toContain('HF_TOKEN');
    expect(JSON.stringify({ m: wrong.message, d: wrong.details, s: wrong.stack })).not.toContain(TOKEN);
    const ok = await importHuggingFace(store, 'hf://acme/gated', opts(h, { token: fx.gatedToken, name: 'hf/gated' }));
    expect(await store.getRef('hf/gated')).toBe(ok.snapshot);
    expect(h.log.filter((q) => q.server === 'cdn').every((q) => q.authorization === undefined)).toBe(true);
    expect(JSON.stringify(ok)).not.toContain(fx.gatedToken);
  });

  it('a missing repository, revision or endpoint route is not_found', async () => {
    const h = await hub();
    const store = await newStore();
    await expectCode(importHuggingFace(store, 'hf://acme/missing', opts(h)), 'not_found', 'hf.repo_not_found');
    await expectCode(importHuggingFace(store, 'hf://acme/tiny@nope', opts(h)), 'not_found', 'hf.revision_not_found');
    expect(await store.listRefs()).toEqual([]);
  });

  it('bytes that do not match the announced sha256 are corrupt, and nothing is referenced', async () => {
    const shard2 = fx.tiny['model-00002-of-00002.safetensors']!;
    const lie = shard2.slice();
    lie[lie.length - 1]! ^= 0xff; // a tensor byte, same length
    const h = await hub({ cdnOverride: { [sha256Hex(shard2)]: lie } });
    const store = await newStore();
    const err = await expectCode(
      importHuggingFace(store, 'hf://acme/tiny', opts(h, { name: 'hf/tiny' })),
      'corrupt',
      'hf.digest_mismatch',
      { path: 'model-00002-of-00002.safetensors', expected: sha256Hex(shard2), actual: sha256Hex(lie) },
    );
    expect(err.message).toContain('SHA-256');
    expect(await store.listRefs()).toEqual([]);
    // A git file (config.json) whose bytes are not its blob id: the same.
    const config = fx.tiny['config.json']!;
    const wrong = config.slice();
    wrong[3]! ^= 1;
    const git = await hub({ gitOverride: { 'config.json': wrong } });
    const e2 = await expectCode(
      importHuggingFace(store, 'hf://acme/tiny', opts(git, { name: 'hf/tiny' })),
      'corrupt',
      'hf.digest_mismatch',
      { path: 'config.json' },
    );
    expect(e2.message).toContain('git blob id');
    expect(await store.listRefs()).toEqual([]);
    expect((await store.verify({ data: true, all: true })).corrupt).toEqual([]);
  });

  it('an ETag or commit header that contradicts the tree is corrupt before any byte of the file is read', async () => {
    const name = 'model-00001-of-00002.safetensors';
    const etag = await hub({
      headOverride: (p) => (p === name ? { 'x-linked-etag': `"${'0'.repeat(64)}"` } : undefined),
    });
    const store = await newStore();
    await expectCode(importHuggingFace(store, 'hf://acme/tiny', opts(etag)), 'corrupt', 'hf.etag_mismatch', {
      path: name,
    });
    expect(etag.log.some((q) => q.method === 'GET' && q.path.endsWith(name))).toBe(false);
    // A git file's ETag (its blob id) is checked too; a validator that is no digest is not one.
    const gitEtag = await hub({
      headOverride: (p) => (p === 'README.md' ? { etag: `"${'1'.repeat(40)}"` } : undefined),
    });
    await expectCode(importHuggingFace(store, 'hf://acme/tiny', opts(gitEtag)), 'corrupt', 'hf.etag_mismatch', {
      path: 'README.md',
    });
    const proxy = await hub({ headOverride: () => ({ etag: 'W/"5f2-18c2a"' }) });
    expect((await importHuggingFace(store, 'hf://acme/tiny', opts(proxy, { include: '*.md' }))).files).toBe(1);
    const commit = await hub({ headOverride: () => ({ 'x-repo-commit': fx.c0 }) });
    await expectCode(importHuggingFace(store, 'hf://acme/tiny', opts(commit)), 'corrupt', 'hf.commit_mismatch', {
      expected: fx.c1,
      actual: fx.c0,
    });
    expect(await store.listRefs()).toEqual([]);
  });

  it('aborting mid-transfer is cancelled and names nothing', async () => {
    const ac = new AbortController();
    let held = 0;
    const h = await hub({
      onCdnRequest: () => {
        held++;
        ac.abort();
        return new Promise(() => {}); // never answers; the client must give up on its own
      },
    });
    const store = await newStore();
    await expectCode(
      importHuggingFace(store, 'hf://acme/tiny', opts(h, { name: 'hf/tiny', signal: ac.signal })),
      'cancelled',
    );
    expect(held).toBe(1);
    expect(await store.listRefs()).toEqual([]);
    // An already-aborted signal asks nothing at all.
    const before = h.log.length;
    await expectCode(importHuggingFace(store, 'hf://acme/tiny', opts(h, { signal: ac.signal })), 'cancelled');
    expect(h.log.length).toBe(before);
  });

  const junk = new Uint8Array(3000).map((_, i) => (i * 7) & 0xff);
  const junkCommit = 'b'.repeat(40);
  const junkRepo = (files: Record<string, Uint8Array>) => ({
    'acme/junk': { commits: { [junkCommit]: { files } }, refs: { main: junkCommit } },
  });

  it('a file the planner stores as a blob is imported as a local import stores it, and checked', async () => {
    // A .gguf name with bytes that are not a GGUF: the header probe finds no codec.
    expect(codecForPath('x.gguf')?.name).toBe('gguf');
    const h = await startFakeHub(junkRepo({ 'x.gguf': junk }));
    after(() => h.close());
    const store = await newStore();
    const r = await importHuggingFace(store, 'hf://acme/junk', opts(h));
    expect((await store.getManifest(r.snapshot)).entries).toMatchObject([
      { path: 'x.gguf', profile: 'blob-v1', size: 3000 },
    ]);
    const local = await store.importPath(folder({ 'x.gguf': junk }));
    expect(local.snapshot).toBe(r.snapshot);
    expect(local.objectsWritten).toBe(0);
    const lie = junk.slice();
    lie[2000]! ^= 1;
    const liar = await startFakeHub(junkRepo({ 'x.gguf': junk }), { cdnOverride: { [sha256Hex(junk)]: lie } });
    after(() => liar.close());
    await expectCode(
      importHuggingFace(store, 'hf://acme/junk', opts(liar, { name: 'x' })),
      'corrupt',
      'hf.digest_mismatch',
      {
        path: 'x.gguf',
      },
    );
    expect(await store.getRef('x')).toBe(null);
  });

  // Over 64 MiB, a blob is streamed into the store whole (its id is the file's sha256).
  const big = new Uint8Array(64 * 1024 * 1024 + 5).fill(7);
  big[12345] = 1;

  it('a blob larger than a buffer is streamed once into one object named by its sha256', async () => {
    const h = await startFakeHub(junkRepo({ 'big.bin': big }));
    after(() => h.close());
    const store = await newStore();
    const r = await importHuggingFace(store, 'hf://acme/junk', opts(h));
    expect((await store.getManifest(r.snapshot)).entries).toMatchObject([
      {
        path: 'big.bin',
        profile: 'blob-v1',
        size: big.length,
        records: [{ digest: `sha256:${sha256Hex(big)}`, length: big.length }],
      },
    ]);
    expect(r.bytesFetched).toBe(big.length);
    expect(r.objectsWritten).toBe(1);
  });

  it('a large blob whose bytes differ from its sha256 is corrupt and never stored', async () => {
    const lie = big.slice();
    lie[lie.length - 2]! ^= 1;
    const liar = await startFakeHub(junkRepo({ 'big.bin': big }), { cdnOverride: { [sha256Hex(big)]: lie } });
    after(() => liar.close());
    const store = await newStore();
    await expectCode(
      importHuggingFace(store, 'hf://acme/junk', opts(liar, { name: 'x' })),
      'corrupt',
      'hf.digest_mismatch',
      {
        path: 'big.bin',
      },
    );
    expect(await store.listRefs()).toEqual([]);
    expect(await store.has(`sha256:${sha256Hex(lie)}`)).toBe(false);
    expect(await store.has(`sha256:${sha256Hex(big)}`)).toBe(false);
  });
});

describe('importHuggingFace under faults', () => {
  const shard1 = fx.tiny['model-00001-of-00002.safetensors']!;
  const baseline = async (): Promise<string> => {
    const h = await hub();
    return (await importHuggingFace(await newStore(), 'hf://acme/tiny', opts(h))).snapshot;
  };

  it('a download cut mid-stream is resumed where it stopped', async () => {
    const expected = await baseline();
    const ds = dataStart(shard1);
    const h = await hub({ cdnCutOnce: { [sha256Hex(shard1)]: 10 } });
    const r = await importHuggingFace(await newStore(), 'hf://acme/tiny', opts(h));
    expect(r.snapshot).toBe(expected);
    const ranges = h.log.filter((q) => q.server === 'cdn' && q.path.endsWith(sha256Hex(shard1))).map((q) => q.range);
    expect(ranges).toEqual(['bytes=0-15', `bytes=16-${ds - 1}`, `bytes=${ds}-`, `bytes=${ds + 10}-`]);
  });

  it('a CDN that ignores Range still gives the same snapshot', async () => {
    const expected = await baseline();
    const h = await hub({ cdnIgnoresRange: true });
    const r = await importHuggingFace(await newStore(), 'hf://acme/tiny', opts(h));
    expect(r.snapshot).toBe(expected);
    expect(r.bytesFetched).toBeGreaterThan(r.bytes);
  });

  it('retries a 503 with Retry-After, and a persistent 500 is unavailable', async () => {
    let first = true;
    const h = await hub({
      hubFault: (q) => {
        if (q.path.includes('/revision/') && first) {
          first = false;
          return { status: 503, headers: { 'retry-after': '0' } };
        }
        return q.path.includes('/tree/') && q.query.includes('cursor') ? { status: 500 } : undefined;
      },
      pageSize: 4,
    });
    const store = await newStore();
    await expectCode(importHuggingFace(store, 'hf://acme/tiny', opts(h)), 'unavailable', 'http.500');
    expect(h.log.filter((q) => q.path.includes('/revision/')).length).toBe(2);
    expect(h.log.filter((q) => q.path.includes('/tree/') && q.query.includes('cursor')).length).toBe(2); // retries: 1
  });

  it('a tree page linking to another origin is refused before the token could go there', async () => {
    const cdnLike = await hub();
    const h = await hub({ pageSize: 2, nextLinkBase: cdnLike.endpoint });
    await expectCode(
      importHuggingFace(await newStore(), 'hf://acme/tiny', opts(h, { token: TOKEN })),
      'malformed',
      'hf.tree_next_origin',
    );
    expect(cdnLike.log).toEqual([]);
  });
});
