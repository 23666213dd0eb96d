/**
 * The Hugging Face download API of the hub, by HTTP and through `@huggingface/hub`: repository
 * info, tree pages, HEAD/GET of files with the headers `huggingface_hub` needs, ranges, the error
 * codes it maps, verify-while-serving, the kept SHA-256, checkpoints served as their export, and
 * pull-through from another hub (single flight, upstream token, upstream stopped).
 */
import { createHash } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { type LocalStore, fileSha256Ref } from '@tensorfs/cas';
import { type ObjectId, createTag, moveBranch, resolveRevision } from '@tensorfs/format';
import { bytesOf, objectFile, safetensorsBytes } from '@tensorfs/testkit';
import { convertSnapshot } from '@tensorfs/tensors';
import { downloadFile, listFiles, modelInfo } from '@huggingface/hub';
import { describe, expect, it } from 'vitest';
import { type HubOptions, StoreOrigin, serveHub } from '../src/index.js';
import { after, folderOf, newStore } from './helpers.js';

const ALL = 'hf-all-token-123456';
const OTHER = 'hf-other-token-123456';
const TOKENS = {
  tokens: [
    { token: ALL, read: ['*'], write: ['*'] },
    { token: OTHER, read: ['other/*'] },
  ],
  anonymous: { read: ['team/*', 'datasets/team/*'] },
};

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** A safetensors file of three tensors (four records: header + three), and two small files. */
function modelFiles(seed = 1): Record<string, Uint8Array> {
  return {
    'model.safetensors': safetensorsBytes([
      { name: 'a', data: bytesOf(200_000, seed) },
      { name: 'b', data: bytesOf(150_000, seed + 1) },
      { name: 'c', data: bytesOf(100_000, seed + 2) },
    ]),
    'config.json': new TextEncoder().encode(`{"model_type":"tiny","seed":${seed}}\n`),
    'sub/notes.txt': new TextEncoder().encode('hello\n'),
  };
}

async function serving(store: LocalStore, options: HubOptions = {}) {
  const lines: string[] = [];
  const hub = await serveHub(new StoreOrigin(store), { tokens: TOKENS, log: (l) => lines.push(l), ...options });
  after(() => hub.close());
  return { hub, url: hub.url, lines };
}

async function storeWithRepo(repo: string, files = modelFiles()) {
  const store = await newStore();
  const r = await store.importPath(folderOf(files), { name: repo });
  return { store, snapshot: r.snapshot };
}

const auth = { authorization: `Bearer ${ALL}` };

describe('the Hugging Face API', () => {
  it('answers repository info, tree pages and files with the headers huggingface_hub reads', async () => {
    const files = modelFiles();
    const { store } = await storeWithRepo('team/tiny', files);
    const { url } = await serving(store, { huggingFace: { pageSize: 2 } });
    const info = await fetch(`${url}/api/models/team/tiny/revision/main`);
    expect(info.status).toBe(200);
    const body = (await info.json()) as { id: string; sha: string; siblings: { rfilename: string }[] };
    expect(body.id).toBe('team/tiny');
    expect(body.sha).toMatch(/^[0-9a-f]{40}$/);
    expect(body.siblings.map((s) => s.rfilename)).toEqual(['config.json', 'model.safetensors', 'sub/notes.txt']);
    // The default branch without /revision/, and a %2F-free revision of the same sha.
    expect(((await (await fetch(`${url}/api/models/team/tiny`)).json()) as { sha: string }).sha).toBe(body.sha);

    // Tree, recursive, two entries a page, next pages by Link.
    const entries: { type: string; path: string; size: number; oid: string; lfs?: { oid: string } }[] = [];
    let next: string | undefined = `${url}/api/models/team/tiny/tree/${body.sha}?recursive=True&expand=False`;
    let pages = 0;
    while (next) {
      const r = await fetch(next);
      expect(r.status).toBe(200);
      entries.push(...((await r.json()) as typeof entries));
      next = /<([^>]+)>;\s*rel="next"/.exec(r.headers.get('link') ?? '')?.[1];
      pages++;
    }
    expect(pages).toBe(2);
    expect(entries.map((e) => `${e.type}:${e.path}`)).toEqual([
      'file:config.json',
      'file:model.safetensors',
      'directory:sub',
      'file:sub/notes.txt',
    ]);
    const st = entries.find((e) => e.path === 'model.safetensors')!;
    expect(st.lfs!.oid).toBe(sha256(files['model.safetensors']!));
    expect(st.size).toBe(files['model.safetensors']!.length);
    // Not recursive: the root's children only.
    const top = (await (await fetch(`${url}/api/models/team/tiny/tree/main`)).json()) as { path: string }[];
    expect(top.map((e) => e.path)).toEqual(['config.json', 'model.safetensors']);

    for (const [path, bytes] of Object.entries(files)) {
      const head = await fetch(`${url}/team/tiny/resolve/main/${path}`, {
        method: 'HEAD',
        headers: { 'accept-encoding': 'identity' },
      });
      expect(head.status).toBe(200);
      expect(head.headers.get('x-repo-commit')).toBe(body.sha);
      expect(head.headers.get('etag')).toBe(`"${sha256(bytes)}"`);
      expect(head.headers.get('x-linked-etag')).toBe(`"${sha256(bytes)}"`);
      expect(head.headers.get('x-linked-size')).toBe(String(bytes.length));
      expect(head.headers.get('content-length')).toBe(String(bytes.length));
      expect(head.headers.get('accept-ranges')).toBe('bytes');
      expect(head.headers.get('content-encoding')).toBeNull();
      expect([...head.headers.keys()].some((k) => k.startsWith('x-xet'))).toBe(false);
      const get = await fetch(`${url}/team/tiny/resolve/${body.sha}/${path}`);
      expect(Buffer.from(await get.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
    }
    // Ranges across object boundaries (header | a | b | c), and past the end.
    const whole = files['model.safetensors']!;
    for (const [from, to] of [
      [0, 10],
      [150, 250_000],
      [199_999, whole.length - 1],
      [whole.length - 1, whole.length - 1],
    ] as const) {
      const r = await fetch(`${url}/team/tiny/resolve/main/model.safetensors`, {
        headers: { range: `bytes=${from}-${to === whole.length - 1 ? '' : to}` },
      });
      expect(r.status).toBe(206);
      expect(r.headers.get('content-range')).toBe(`bytes ${from}-${to}/${whole.length}`);
      expect(Buffer.from(await r.arrayBuffer()).equals(Buffer.from(whole.subarray(from, to + 1)))).toBe(true);
    }
    const past = await fetch(`${url}/team/tiny/resolve/main/model.safetensors`, {
      headers: { range: `bytes=${whole.length}-` },
    });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${whole.length}`);
  });

  it('refuses bad requests with the X-Error-Code huggingface_hub maps', async () => {
    const { store } = await storeWithRepo('team/tiny');
    await store.importPath(folderOf(modelFiles(3)), { name: 'private/tiny' });
    const { url } = await serving(store);
    const sha = ((await (await fetch(`${url}/api/models/team/tiny`)).json()) as { sha: string }).sha;
    const cases: [string, Record<string, string>, number, string | null][] = [
      ['/api/models/team/none', {}, 404, 'RepoNotFound'],
      ['/team/none/resolve/main/config.json', {}, 404, 'RepoNotFound'],
      ['/api/models/team/tiny/revision/nope', {}, 404, 'RevisionNotFound'],
      ['/team/tiny/resolve/nope/config.json', {}, 404, 'RevisionNotFound'],
      [`/team/tiny/resolve/${'0'.repeat(40)}/config.json`, {}, 404, 'RevisionNotFound'],
      ['/team/tiny/resolve/main/none.json', {}, 404, 'EntryNotFound'],
      ['/team/tiny/resolve/main/sub/..%2F..%2Fconfig.json', {}, 400, 'EntryNotFound'],
      ['/private/tiny/resolve/main/config.json', {}, 401, 'RepoNotFound'],
      ['/api/models/private/tiny', { authorization: `Bearer ${OTHER}` }, 403, 'GatedRepo'],
      ['/api/models/team/tiny', { authorization: 'Bearer not-a-token-at-all' }, 401, null],
      // A model is not a dataset, and a dataset route does not serve models.
      ['/api/datasets/team/tiny', {}, 404, 'RepoNotFound'],
    ];
    for (const [path, headers, status, code] of cases) {
      const r = await fetch(`${url}${path}`, { headers });
      expect([path, r.status, r.headers.get('x-error-code')]).toEqual([path, status, code]);
      await r.arrayBuffer();
    }
    // Dot segments sent as they are (fetch would normalise them away).
    for (const raw of [
      '/team/tiny/resolve/main/sub/%2E%2E/config.json',
      '/team/tiny/resolve/main/../../x',
      '/team/tiny/resolve/main//x',
    ]) {
      const answer = await new Promise<{ status: number; code: string | undefined }>((resolve, reject) => {
        const { hostname, port } = new URL(url);
        const req = httpRequest({ hostname, port, path: raw, method: 'HEAD' }, (res) => {
          res.resume();
          resolve({ status: res.statusCode!, code: res.headers['x-error-code'] as string | undefined });
        });
        req.on('error', reject);
        req.end();
      });
      expect([raw, answer]).toEqual([raw, { status: 400, code: 'EntryNotFound' }]);
    }
    // A missing file says at which commit it is missing (the client caches the absence).
    const missing = await fetch(`${url}/team/tiny/resolve/main/none.json`, { method: 'HEAD' });
    expect(missing.headers.get('x-repo-commit')).toBe(sha);
    // The private repository with a token that reads it.
    expect((await fetch(`${url}/private/tiny/resolve/main/config.json`, { headers: auth })).status).toBe(200);
  });

  it('resolves each answered sha back to its tree, across branch moves', async () => {
    const { store } = await storeWithRepo('team/tiny');
    const { url } = await serving(store);
    const shaOf = async () => ((await (await fetch(`${url}/api/models/team/tiny`)).json()) as { sha: string }).sha;
    const config = async (rev: string) => (await fetch(`${url}/team/tiny/resolve/${rev}/config.json`)).text();
    // A legacy ref (a bare tree): the tree's first 40 hex digits.
    const legacy = await shaOf();
    expect(legacy).toBe((await store.getRef('team/tiny'))!.slice(7, 47));
    // Two moves with revision documents: each sha is its document's, and every one still resolves.
    const second = await store.importPath(folderOf(modelFiles(7)), {});
    const m2 = await moveBranch(store, { repo: 'team/tiny', target: second.snapshot, author: 'test' });
    const sha2 = await shaOf();
    expect(sha2).toBe(m2.commit.slice(7, 47));
    const third = await store.importPath(folderOf(modelFiles(8)), {});
    const m3 = await moveBranch(store, { repo: 'team/tiny', target: third.snapshot, author: 'test' });
    expect(await shaOf()).toBe(m3.commit.slice(7, 47));
    expect(await config(legacy)).toBe('{"model_type":"tiny","seed":1}\n');
    expect(await config(sha2)).toBe('{"model_type":"tiny","seed":7}\n');
    expect(await config('main')).toBe('{"model_type":"tiny","seed":8}\n');
    // A tag, and a sha256: revision.
    await createTag(store, { repo: 'team/tiny', tag: 'v1', revision: sha2 });
    expect(await config('v1')).toBe('{"model_type":"tiny","seed":7}\n');
    expect(await config(encodeURIComponent(second.snapshot))).toBe('{"model_type":"tiny","seed":7}\n');
    // A new hub (nothing remembered) resolves the old shas from the histories.
    const fresh = await serving(store);
    expect(await (await fetch(`${fresh.url}/team/tiny/resolve/${legacy}/config.json`)).text()).toBe(
      '{"model_type":"tiny","seed":1}\n',
    );
    expect(await (await fetch(`${fresh.url}/team/tiny/resolve/${sha2}/config.json`)).text()).toBe(
      '{"model_type":"tiny","seed":7}\n',
    );
    const none = await fetch(`${fresh.url}/team/tiny/resolve/${'ab'.repeat(20)}/config.json`);
    expect([none.status, none.headers.get('x-error-code')]).toEqual([404, 'RevisionNotFound']);
  });

  it('serves datasets under /datasets/ when the repository id starts with datasets/', async () => {
    const { store } = await storeWithRepo('datasets/team/data');
    const { url } = await serving(store);
    const info = (await (await fetch(`${url}/api/datasets/team/data`)).json()) as { id: string };
    expect(info.id).toBe('team/data');
    const r = await fetch(`${url}/datasets/team/data/resolve/main/config.json`);
    expect(await r.text()).toBe('{"model_type":"tiny","seed":1}\n');
    expect((await fetch(`${url}/api/models/datasets/team/data`)).status).toBe(404);
  });

  it('keeps each file SHA-256 it computes in a side ref, so a new hub answers HEAD without rehashing', async () => {
    const files = modelFiles();
    const { store, snapshot } = await storeWithRepo('team/tiny', files);
    // A tree without a whole-file list (an import records none unless asked: fileSha256).
    expect(await store.getRef(fileSha256Ref(snapshot))).toBeNull();
    const a = await serving(store);
    await (await fetch(`${a.url}/team/tiny/resolve/main/model.safetensors`, { method: 'HEAD' })).arrayBuffer();
    const refs = (await store.scanRefs()).refs.map((r) => r.name).filter((n) => n.startsWith('_hf/etags/'));
    expect(refs).toHaveLength(1);
    const kept = new TextDecoder().decode(await store.readObject((await store.getRef(refs[0]!))!));
    expect(kept).toBe(`sha256:${sha256(files['model.safetensors']!)}\n`);
    // With the objects of the file gone, a new hub still knows its digest.
    const m = await store.getManifest(snapshot);
    const st = m.entries.find((e) => e.path === 'model.safetensors')!;
    const victim = st.kind === 'file' ? st.records[1]!.digest : (undefined as never);
    const path = objectFile(store.root, victim);
    chmodSync(path, 0o644);
    writeFileSync(path, new Uint8Array(10));
    const b = await serving(store);
    const head = await fetch(`${b.url}/team/tiny/resolve/main/model.safetensors`, { method: 'HEAD' });
    expect(head.headers.get('etag')).toBe(`"${sha256(files['model.safetensors']!)}"`);
  });

  it('cuts an answer whose object is damaged before its last byte, quarantines it, then answers corrupt', async () => {
    const files = modelFiles();
    const { store, snapshot } = await storeWithRepo('team/tiny', files);
    const { url } = await serving(store);
    await (await fetch(`${url}/team/tiny/resolve/main/model.safetensors`, { method: 'HEAD' })).arrayBuffer();
    const m = await store.getManifest(snapshot);
    const st = m.entries.find((e) => e.path === 'model.safetensors')!;
    const last = st.kind === 'file' ? st.records[3]!.digest : (undefined as never);
    const path = objectFile(store.root, last as ObjectId);
    const good = readFileSync(path);
    const bad = Buffer.from(good);
    bad[bad.length - 1]! ^= 0xff;
    chmodSync(path, 0o644);
    writeFileSync(path, bad);
    const r = await fetch(`${url}/team/tiny/resolve/main/model.safetensors`);
    expect(r.status).toBe(200);
    const got = await r
      .arrayBuffer()
      .then((b) => b.byteLength)
      .catch(() => -1);
    // Either the body failed (cut) or it is short: never the whole length.
    expect(got).not.toBe(files['model.safetensors']!.length);
    const later = await fetch(`${url}/team/tiny/resolve/main/model.safetensors`);
    expect(later.status).toBe(422);
    expect(await store.has(last as ObjectId)).toBe(false);
  });

  it('serves a checkpoint as its --safetensors export', async () => {
    const files = modelFiles();
    const { store, snapshot } = await storeWithRepo('team/tiny', files);
    const cp = await convertSnapshot(store, snapshot, { name: 'team/cp' });
    const { url } = await serving(store);
    const info = (await (await fetch(`${url}/api/models/team/cp`)).json()) as { siblings: { rfilename: string }[] };
    expect(info.siblings.map((s) => s.rfilename)).toEqual(['config.json', 'model.safetensors', 'sub/notes.txt']);
    const st = await fetch(`${url}/team/cp/resolve/main/model.safetensors`);
    expect(Buffer.from(await st.arrayBuffer()).equals(Buffer.from(files['model.safetensors']!))).toBe(true);
    // A tree holding the checkpoint as a variant beside a README: the README and the export.
    const m = await store.getManifest(snapshot);
    const header = await store.objectSize(cp.id);
    const readme = await store.put([new TextEncoder().encode('# tiny\n')]);
    const tree = await store.putManifest({
      entries: [
        {
          path: 'README.md',
          kind: 'file',
          mode: 0o644,
          size: readme.length,
          profile: 'blob-v1',
          records: [{ digest: readme.id, length: readme.length }],
        },
        {
          path: 'model.cozytensors',
          kind: 'file',
          mode: 0o644,
          size: header,
          profile: 'blob-v1',
          records: [{ digest: cp.id, length: header }],
        },
      ],
    });
    expect(m.entries.length).toBe(3);
    await moveBranch(store, { repo: 'team/variant', target: tree, author: 'test' });
    const v = (await (await fetch(`${url}/api/models/team/variant`)).json()) as { siblings: { rfilename: string }[] };
    expect(v.siblings.map((s) => s.rfilename)).toEqual([
      'README.md',
      'config.json',
      'model.safetensors',
      'sub/notes.txt',
    ]);
    const vst = await fetch(`${url}/team/variant/resolve/main/model.safetensors`);
    expect(Buffer.from(await vst.arrayBuffer()).equals(Buffer.from(files['model.safetensors']!))).toBe(true);
  });

  it('is read by @huggingface/hub', async () => {
    const files = modelFiles();
    const { store } = await storeWithRepo('team/tiny', files);
    const { url } = await serving(store);
    const info = await modelInfo({ name: 'team/tiny', hubUrl: url });
    expect(info.name).toBe('team/tiny');
    const listed: string[] = [];
    for await (const f of listFiles({ repo: 'team/tiny', hubUrl: url, recursive: true })) listed.push(f.path);
    expect(listed).toEqual(['config.json', 'model.safetensors', 'sub', 'sub/notes.txt']);
    const blob = await downloadFile({ repo: 'team/tiny', path: 'model.safetensors', hubUrl: url, xet: false });
    expect(Buffer.from(await blob!.arrayBuffer()).equals(Buffer.from(files['model.safetensors']!))).toBe(true);
    expect(await downloadFile({ repo: 'team/tiny', path: 'none.json', hubUrl: url })).toBeNull();
  });
});

describe('pull-through', () => {
  it('imports a missing repository once for concurrent requests, with its own token, and serves it with the upstream stopped', async () => {
    const files = modelFiles();
    const { store: upStore } = await storeWithRepo('team/tiny', files);
    await upStore.importPath(folderOf(modelFiles(5)), { name: 'team/other' });
    const UP = 'upstream-only-token-123';
    const up = await serveHub(new StoreOrigin(upStore), {
      tokens: { tokens: [{ token: UP, read: ['*'] }] },
      log: (l) => upLines.push(l),
    });
    const upLines: string[] = [];
    let upOpen = true;
    after(() => (upOpen ? up.close() : undefined));
    const store = await newStore();
    const { url } = await serving(store, {
      huggingFace: { upstream: { endpoint: up.url, token: UP, http: { retries: 0 } } },
    });

    // One file of one repository: only that file is imported.
    const one = await fetch(`${url}/team/other/resolve/main/config.json`);
    expect(await one.text()).toBe('{"model_type":"tiny","seed":5}\n');
    const otherRev = await resolveRevision(store, 'team/other');
    expect(otherRev.document?.upstream).toEqual({
      source: `${up.url}/team/other`,
      revision: otherRev.document?.upstream?.revision,
    });
    const otherTree = await store.getManifest(otherRev.target);
    expect(otherTree.entries.map((e) => e.path)).toEqual(['config.json']);
    // What pull-through fetched is cached (evictable under the store's budget), not saved.
    expect(await store.isCached('team/other')).toBe(true);
    // Listing that revision completes it first (snapshot_download asks for the info, then every file).
    const otherInfo = (await (await fetch(`${url}/api/models/team/other`)).json()) as {
      sha: string;
      siblings: { rfilename: string }[];
    };
    expect(otherInfo.siblings.map((s) => s.rfilename)).toEqual(['config.json', 'model.safetensors', 'sub/notes.txt']);
    expect(otherInfo.sha).toBe(otherRev.document?.upstream?.revision);

    // Concurrent requests for a whole repository: one import.
    const answers = await Promise.all(
      [1, 2, 3, 4].map(() => fetch(`${url}/api/models/team/tiny/revision/main`).then((r) => r.json())),
    );
    const shas = new Set(answers.map((a) => (a as { sha: string }).sha));
    expect(shas.size).toBe(1);
    expect(upLines.filter((l) => l.startsWith('GET /api/models/team/tiny/revision/main ')).length).toBe(1);
    const upSha = (
      (await (
        await fetch(`${up.url}/api/models/team/tiny`, { headers: { authorization: `Bearer ${UP}` } })
      ).json()) as { sha: string }
    ).sha;
    expect([...shas][0]).toBe(upSha);

    // The upstream stops: everything fetched is served from the store.
    upOpen = false;
    await up.close();
    for (const [path, bytes] of Object.entries(files)) {
      const r = await fetch(`${url}/team/tiny/resolve/${upSha}/${path}`);
      expect(Buffer.from(await r.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
    }
    // A file the upstream commit does not have: not asked upstream again (the tree is complete).
    const absent = await fetch(`${url}/team/tiny/resolve/main/none.json`);
    expect([absent.status, absent.headers.get('x-error-code')]).toEqual([404, 'EntryNotFound']);
    expect((await store.scanRefs()).refs.filter((r) => r.name.startsWith('_hf/complete/')).length).toBe(2);
    // What was never fetched is not found (the upstream is down: answered from the store).
    expect((await fetch(`${url}/team/gone/resolve/main/config.json`)).status).toBeGreaterThanOrEqual(404);
    // A token without read scope on a fetched repository is refused.
    expect(
      (await fetch(`${url}/team/tiny/resolve/main/config.json`, { headers: { authorization: `Bearer ${OTHER}` } }))
        .status,
    ).toBe(403);
  });
});
