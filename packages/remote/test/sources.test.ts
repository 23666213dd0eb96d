// https:// and civitai:// sources through the one import pipeline, against servers on loopback:
// with Range, without Range, one that lies about Content-Length, a body cut mid-way and resumed
// (in the same run and by a later attempt from the spool), a wrong --sha256; a fake Civitai API
// following the documented model-version shape with a CDN on another origin.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  chmodSync,
  copyFileSync,
  readFileSync,
  mkdirSync,
  readdirSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readFileSha256 } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import { MemoryStore } from '@tensorfs/format/store';
import { bytesOf, expectCode, safetensorsBytes, sha256Hex, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import {
  civitaiSource,
  httpsSource,
  importSources,
  localSource,
  parseCivitaiUrl,
  type HttpsProvenance,
  type CivitaiProvenance,
} from '../src/index.js';
import { after, newStore } from './helpers.js';

interface Served {
  bytes: Uint8Array;
  etag?: string;
  lastModified?: string;
  /** Honour Range (default true). */
  ranges?: boolean;
  /** Content-Length to announce instead of the true one. */
  lieLength?: number;
  /** Cut the body of the first `cuts` streamed GETs after this many bytes. */
  cutAfter?: number;
  cuts?: number;
  /** Answer HEAD with 405. */
  noHead?: boolean;
  /** Redirect to this URL instead of serving. */
  redirect?: string;
}

interface Logged {
  method: string;
  url: string;
  range?: string;
  authorization?: string;
}

async function serve(routes: Record<string, Served>): Promise<{ url: string; log: Logged[]; server: Server }> {
  const log: Logged[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    log.push({
      method: req.method!,
      url: req.url!,
      ...(req.headers.range ? { range: req.headers.range } : {}),
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    });
    const path = new URL(req.url!, 'http://x').pathname;
    const r = routes[path];
    if (r === undefined) {
      res.writeHead(404).end();
      return;
    }
    if (r.redirect) {
      res.writeHead(302, { location: r.redirect }).end();
      return;
    }
    if (req.method === 'HEAD' && r.noHead) {
      res.writeHead(405).end();
      return;
    }
    const headers: Record<string, string> = {};
    if (r.etag) headers.etag = r.etag;
    if (r.lastModified) headers['last-modified'] = r.lastModified;
    let body = r.bytes;
    let status = 200;
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (m && r.ranges !== false) {
      const start = Number(m[1]);
      const end = m[2] === '' ? r.bytes.length - 1 : Math.min(Number(m[2]), r.bytes.length - 1);
      body = r.bytes.subarray(start, end + 1);
      status = 206;
      headers['content-range'] = `bytes ${start}-${end}/${r.lieLength ?? r.bytes.length}`;
      headers['accept-ranges'] = 'bytes';
    }
    headers['content-length'] = String(status === 200 && r.lieLength !== undefined ? r.lieLength : body.length);
    res.writeHead(status, headers);
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    const streamed = !m || m[2] === '';
    if (streamed && r.cutAfter !== undefined && (r.cuts ?? 1) > 0 && body.length > r.cutAfter) {
      r.cuts = (r.cuts ?? 1) - 1;
      res.write(body.subarray(0, r.cutAfter), () => res.destroy());
      return;
    }
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  after(() => {
    server.closeAllConnections();
  });
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, log, server };
}

const HTTP = { baseDelayMs: 1, retries: 0, readTimeoutMs: 10_000 };

/** A safetensors file large enough for several records and a stream after the header. */
function model(seed = 1): Uint8Array {
  return safetensorsBytes([
    { name: 'a.weight', dtype: 'F32', shape: [64, 64], data: bytesOf(64 * 64 * 4, seed) },
    { name: 'b.weight', dtype: 'F32', shape: [128, 256], data: bytesOf(128 * 256 * 4, seed + 1) },
    { name: 'c.bias', dtype: 'F32', shape: [256], data: bytesOf(256 * 4, seed + 2) },
  ]);
}

/** The snapshot a local import of `bytes` as `name` makes. */
async function localSnapshot(bytes: Uint8Array, name: string): Promise<string> {
  const dir = tempDir('tfs-src-local-');
  writeFileSync(join(dir, name), bytes);
  const store = await newStore();
  return (await store.importPath(join(dir, name))).snapshot;
}

describe('https:// sources', () => {
  it('reads the header by Range first, then the tensors, and makes the snapshot a local import makes', async () => {
    const bytes = model();
    const s = await serve({
      '/m/model.safetensors': { bytes, etag: '"v1"', lastModified: 'Tue, 01 Dec 2026 10:00:00 GMT' },
    });
    const store = await newStore();
    const r = await importSources(store, httpsSource(`${s.url}/m/model.safetensors`, { http: HTTP }), {
      name: 'web/model',
      threads: 1,
    });
    expect(r.snapshot).toBe(await localSnapshot(bytes, 'model.safetensors'));
    expect(await store.getRef('web/model')).toBe(r.snapshot);
    // The whole file's SHA-256 is recorded with the tree, as a local import records it.
    expect([...(await readFileSha256(store, r.snapshot)).values()]).toEqual([sha256Hex(bytes)]);
    const p = r.sources[0] as HttpsProvenance;
    expect(p).toMatchObject({
      kind: 'https',
      url: `${s.url}/m/model.safetensors`,
      path: 'model.safetensors',
      size: bytes.length,
      etag: '"v1"',
      lastModified: 'Tue, 01 Dec 2026 10:00:00 GMT',
      sha256: sha256Hex(bytes),
    });
    const gets = s.log.filter((l) => l.method === 'GET');
    expect(s.log[0]!.method).toBe('HEAD');
    // The first reads are bounded ranges of the header; the last one streams to the end.
    expect(Number(/^bytes=0-(\d+)$/.exec(gets[0]!.range ?? '')?.[1])).toBeLessThan(64);
    expect(gets.slice(0, -1).every((g) => /^bytes=\d+-\d+$/.test(g.range ?? ''))).toBe(true);
    expect(gets.at(-1)!.range).toMatch(/^bytes=\d+-$/);
    expect(r.bytesFetched).toBe(bytes.length);
  });

  it('a server without Range (and without HEAD) still gives the same snapshot, verified', async () => {
    const bytes = model(3);
    const s = await serve({ '/model.safetensors': { bytes, ranges: false, noHead: true } });
    const store = await newStore();
    const r = await importSources(
      store,
      httpsSource(`${s.url}/model.safetensors`, { http: HTTP, sha256: sha256Hex(bytes) }),
      { threads: 1 },
    );
    expect(r.snapshot).toBe(await localSnapshot(bytes, 'model.safetensors'));
    expect((r.sources[0] as HttpsProvenance).sha256).toBe(sha256Hex(bytes));
    expect(s.log.some((l) => l.method === 'HEAD')).toBe(true);
  });

  it('a wrong --sha256 is corrupt and nothing is kept under the name', async () => {
    const bytes = model(5);
    const s = await serve({ '/model.safetensors': { bytes, etag: '"x"' } });
    const store = await newStore();
    const wrong = sha256Hex(bytes.subarray(1));
    const spoolDir = tempDir('tfs-spool-');
    await expectCode(
      importSources(store, httpsSource(`${s.url}/model.safetensors`, { http: HTTP, sha256: wrong, spoolDir }), {
        name: 'web/m',
        threads: 1,
      }),
      'corrupt',
      'https.digest_mismatch',
      { expected: wrong, actual: sha256Hex(bytes) },
    );
    expect(await store.getRef('web/m')).toBeNull();
    expect(readdirSync(spoolDir)).toEqual([]); // bytes that did not verify are not kept for a retry
    await expectCode(
      async () => httpsSource(`${s.url}/model.safetensors`, { sha256: 'abc' }),
      'invalid_argument',
      'https.sha256',
    );
  });

  it('a server that lies about Content-Length is refused before any ref moves', async () => {
    const bytes = model(7);
    const longer = await serve({ '/m.safetensors': { bytes, lieLength: bytes.length + 100 } });
    const store = await newStore();
    // It announced more than it has: the reads past its real end find nothing, however often asked.
    await expectCode(
      importSources(store, httpsSource(`${longer.url}/m.safetensors`, { http: HTTP }), { name: 'web/m', threads: 1 }),
      'unavailable',
      'https.truncated',
      { offset: bytes.length },
    );
    expect(await store.getRef('web/m')).toBeNull();
    // Announcing a length on HEAD and another on GET (no Range): corrupt, named.
    const bytes2 = model(8);
    const routes: Record<string, Served> = { '/n.safetensors': { bytes: bytes2, ranges: false } };
    const two = await serve(routes);
    const source = httpsSource(`${two.url}/n.safetensors`, { http: HTTP });
    const resolved = await source.resolve();
    routes['/n.safetensors']!.lieLength = bytes2.length - 10;
    await expectCode(resolved.files[0]!.open(0, undefined), 'corrupt', 'https.size_mismatch', {
      expected: bytes2.length,
      actual: bytes2.length - 10,
    });
  });

  it('a body cut mid-way is resumed by Range in the same run, asking only for the rest', async () => {
    const bytes = model(9);
    const cutAfter = 40_000;
    const s = await serve({ '/m.safetensors': { bytes, etag: '"e"', cutAfter, cuts: 1 } });
    const store = await newStore();
    const r = await importSources(store, httpsSource(`${s.url}/m.safetensors`, { http: HTTP }), { threads: 1 });
    expect(r.snapshot).toBe(await localSnapshot(bytes, 'm.safetensors'));
    const streams = s.log.filter((l) => l.method === 'GET' && /-$/.test(l.range ?? ''));
    expect(streams.length).toBe(2);
    const first = Number(/=(\d+)-/.exec(streams[0]!.range!)![1]);
    expect(streams[1]!.range).toBe(`bytes=${first + cutAfter}-`);
  });

  it('an interrupted import continues from the bytes kept in the spool on the next attempt', async () => {
    const bytes = model(11);
    const cutAfter = 20_000;
    // Cut every stream of the attempt (more times than it resumes): it fails.
    const routes: Record<string, Served> = {
      '/m.safetensors': { bytes, etag: '"one"', cutAfter, cuts: 10 },
    };
    const s = await serve(routes);
    const store = await newStore();
    const spoolDir = tempDir('tfs-spool-');
    const attempt = () =>
      importSources(store, httpsSource(`${s.url}/m.safetensors`, { http: HTTP, spoolDir }), {
        name: 'web/m',
        threads: 1,
      });
    const streamStarts = () =>
      s.log
        .filter((l) => l.method === 'GET' && /-$/.test(l.range ?? ''))
        .map((l) => Number(/=(\d+)-/.exec(l.range!)![1]));
    await expectCode(attempt(), 'unavailable', 'https.stream');
    expect(await store.getRef('web/m')).toBeNull();
    expect(readdirSync(spoolDir).filter((n) => n.endsWith('.part')).length).toBe(1);
    const reached = Math.max(...streamStarts());
    // The file changed (another ETag): the kept bytes are not used, the next attempt starts over.
    routes['/m.safetensors']!.etag = '"two"';
    routes['/m.safetensors']!.cuts = 10;
    s.log.length = 0;
    await expectCode(attempt(), 'unavailable', 'https.stream');
    expect(Math.min(...streamStarts())).toBeLessThan(cutAfter);
    // Same file, no more cuts: only what is after the kept prefix is asked for.
    routes['/m.safetensors']!.cuts = 0;
    s.log.length = 0;
    const r = await attempt();
    expect(r.snapshot).toBe(await localSnapshot(bytes, 'm.safetensors'));
    expect(await store.getRef('web/m')).toBe(r.snapshot);
    const gets = s.log.filter((l) => l.method === 'GET');
    expect(gets.length).toBe(1);
    expect(streamStarts()[0]).toBeGreaterThanOrEqual(reached + cutAfter);
    expect(r.bytesFetched).toBe(bytes.length - streamStarts()[0]!);
    expect(readdirSync(spoolDir)).toEqual([]); // done: the spool is removed
  });

  it('follows redirects and refuses URLs it cannot import', async () => {
    const bytes = model(13);
    const cdn = await serve({ '/blob': { bytes } });
    const s = await serve({ '/dl/model.safetensors': { bytes, redirect: `${cdn.url}/blob` } });
    const store = await newStore();
    const r = await importSources(store, httpsSource(`${s.url}/dl/model.safetensors`, { http: HTTP }), {
      threads: 1,
    });
    expect(r.snapshot).toBe(await localSnapshot(bytes, 'model.safetensors'));
    await expectCode(async () => httpsSource('ftp://x/y'), 'invalid_argument', 'https.url');
    await expectCode(async () => httpsSource('http://example.org/m.safetensors'), 'invalid_argument', 'https.insecure');
    expect(httpsSource('http://example.org/m.safetensors', { sha256: sha256Hex(bytes) })).toBeDefined();
    await expectCode(async () => httpsSource('https://u:p@example.org/m'), 'invalid_argument', 'https.url');
    await expectCode(
      importSources(store, httpsSource(`${s.url}/missing.safetensors`, { http: HTTP })),
      'not_found',
      'https.not_found',
    );
  });
});

/** A fake Civitai API (documented model-version shape) and a CDN on another origin. */
async function fakeCivitai(files: { name: string; bytes: Uint8Array; primary?: boolean; sha?: string }[]) {
  const cdnRoutes: Record<string, Served> = {};
  const cdn = await serve(cdnRoutes);
  const apiRoutes: Record<string, Served> = {};
  const api = await serve(apiRoutes);
  const version = {
    id: 2514310,
    modelId: 827184,
    name: 'v16.0',
    baseModel: 'Illustrious',
    model: { name: 'Tiny-SDXL', type: 'Checkpoint' },
    files: files.map((f, i) => ({
      id: 100 + i,
      name: f.name,
      type: 'Model',
      sizeKB: f.bytes.length / 1024,
      metadata: { format: 'SafeTensor', size: 'pruned', fp: 'fp16' },
      hashes: { AutoV2: 'A5F58EB1C3', SHA256: (f.sha ?? sha256Hex(f.bytes)).toUpperCase(), CRC32: 'DAEE95B7' },
      downloadUrl: `${api.url}/api/download/models/2514310?file=${i}`,
      primary: f.primary ?? i === 0,
    })),
    downloadUrl: `${api.url}/api/download/models/2514310`,
  };
  apiRoutes['/api/v1/model-versions/2514310'] = { bytes: new TextEncoder().encode(JSON.stringify(version)) };
  apiRoutes['/api/v1/models/827184'] = {
    bytes: new TextEncoder().encode(JSON.stringify({ id: 827184, modelVersions: [{ id: 2514310 }, { id: 1 }] })),
  };
  // Each download redirects to the CDN, as civitai.com does; the query picks the file.
  const server = api.server;
  server.prependListener('request', (req: IncomingMessage) => {
    const u = new URL(req.url!, 'http://x');
    if (u.pathname === '/api/download/models/2514310') {
      const i = Number(u.searchParams.get('file') ?? 0);
      apiRoutes['/api/download/models/2514310'] = { bytes: new Uint8Array(0), redirect: `${cdn.url}/f/${i}` };
    }
  });
  files.forEach((f, i) => {
    cdnRoutes[`/f/${i}`] = { bytes: f.bytes, etag: `"cdn-${i}"` };
  });
  return { api: Object.assign(api, { routes: apiRoutes }), cdn };
}

function apiServed(api: { routes: Record<string, Served> }, route: string): Uint8Array {
  return api.routes[route]!.bytes;
}

function setApiServed(api: { routes: Record<string, Served> }, route: string, bytes: Uint8Array): void {
  api.routes[route] = { bytes };
}

describe('civitai:// sources', () => {
  const TOKEN = 'civitai_FAKEtoken0123456789';

  it('parses version ids and model page URLs', () => {
    expect(parseCivitaiUrl('civitai://2514310')).toEqual({ versionId: 2514310 });
    expect(parseCivitaiUrl('civitai://models/827184@2514310')).toEqual({ versionId: 2514310 });
    expect(parseCivitaiUrl('https://civitai.com/models/827184/wai?modelVersionId=2514310')).toEqual({
      versionId: 2514310,
    });
    expect(parseCivitaiUrl('https://civitai.com/models/827184')).toEqual({ modelId: 827184 });
    for (const bad of ['civitai://', 'civitai://x', 'https://example.org/models/1', 'civitai://0', 'civitai://1/2']) {
      expect(() => parseCivitaiUrl(bad)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    }
  });

  it("imports the version's files, checked against the announced SHA-256; the token goes to the API only", async () => {
    const a = model(21);
    const cfg = new TextEncoder().encode('{"v":1}\n');
    const { api, cdn } = await fakeCivitai([
      { name: 'tiny.safetensors', bytes: a },
      { name: 'tiny.json', bytes: cfg, primary: false },
    ]);
    const store = await newStore();
    const r = await importSources(
      store,
      civitaiSource('civitai://2514310', { endpoint: api.url, token: TOKEN, http: HTTP }),
      { name: 'civitai/tiny', threads: 1 },
    );
    const local = tempDir('tfs-civ-local-');
    writeFileSync(join(local, 'tiny.safetensors'), a);
    writeFileSync(join(local, 'tiny.json'), cfg);
    expect(r.snapshot).toBe((await (await newStore()).importPath(local)).snapshot);
    const p = r.sources[0] as CivitaiProvenance;
    expect(p).toMatchObject({
      kind: 'civitai',
      endpoint: api.url,
      modelId: 827184,
      versionId: 2514310,
      versionName: 'v16.0',
      modelName: 'Tiny-SDXL',
      baseModel: 'Illustrious',
    });
    expect(p.files).toEqual([
      { name: 'tiny.safetensors', size: a.length, sizeKB: a.length / 1024, sha256: sha256Hex(a), primary: true },
      { name: 'tiny.json', size: cfg.length, sizeKB: cfg.length / 1024, sha256: sha256Hex(cfg), primary: false },
    ]);
    expect(api.log.length).toBeGreaterThan(0);
    expect(api.log.every((l) => l.authorization === `Bearer ${TOKEN}`)).toBe(true);
    expect(cdn.log.length).toBeGreaterThan(0);
    expect(cdn.log.every((l) => l.authorization === undefined)).toBe(true);
  });

  it('--include takes one file; a model page URL takes its newest version', async () => {
    const a = model(23);
    const { api } = await fakeCivitai([
      { name: 'tiny.safetensors', bytes: a },
      { name: 'tiny.json', bytes: new TextEncoder().encode('{}'), primary: false },
    ]);
    const store = await newStore();
    const r = await importSources(
      store,
      civitaiSource('civitai://models/827184', { endpoint: api.url, include: 'tiny.safetensors', http: HTTP }),
      { threads: 1 },
    );
    expect((await store.getManifest(r.snapshot)).entries.map((e) => e.path)).toEqual(['tiny.safetensors']);
    expect(r.snapshot).toBe(await localSnapshot(a, 'tiny.safetensors'));
    expect((r.sources[0] as CivitaiProvenance).include).toEqual(['tiny.safetensors']);
    await expectCode(
      importSources(store, civitaiSource('civitai://2514310', { endpoint: api.url, include: '*.ckpt', http: HTTP })),
      'not_found',
      'civitai.nothing_selected',
    );
    await expectCode(
      importSources(store, civitaiSource('civitai://999', { endpoint: api.url, http: HTTP })),
      'not_found',
      'civitai.not_found',
    );
  });

  it('the token is not sent to a download URL on another origin, even without a redirect', async () => {
    const a = model(27);
    const { api, cdn } = await fakeCivitai([{ name: 'tiny.safetensors', bytes: a }]);
    // The API lists the CDN's URL itself as the download URL.
    const route = '/api/v1/model-versions/2514310';
    const listed = JSON.parse(new TextDecoder().decode(apiServed(api, route)));
    listed.files[0].downloadUrl = `${cdn.url}/f/0`;
    setApiServed(api, route, new TextEncoder().encode(JSON.stringify(listed)));
    const store = await newStore();
    const r = await importSources(
      store,
      civitaiSource('civitai://2514310', { endpoint: api.url, token: TOKEN, http: HTTP }),
      { threads: 1 },
    );
    expect(r.snapshot).toBe(await localSnapshot(a, 'tiny.safetensors'));
    expect(api.log.every((l) => l.authorization === `Bearer ${TOKEN}`)).toBe(true);
    expect(cdn.log.length).toBeGreaterThan(0);
    expect(cdn.log.every((l) => l.authorization === undefined)).toBe(true);
  });

  it('bytes that differ from the announced SHA-256 are corrupt and no ref moves', async () => {
    const a = model(25);
    const { api } = await fakeCivitai([{ name: 'tiny.safetensors', bytes: a, sha: sha256Hex(model(26)) }]);
    const store = await newStore();
    await expectCode(
      importSources(store, civitaiSource('civitai://2514310', { endpoint: api.url, http: HTTP }), {
        name: 'civitai/tiny',
        threads: 1,
      }),
      'corrupt',
      'civitai.digest_mismatch',
      { expected: sha256Hex(model(26)), actual: sha256Hex(a) },
    );
    expect(await store.getRef('civitai/tiny')).toBeNull();
  });
});

describe('local sources on the pipeline', () => {
  it('a folder imported into any store (here the in-memory one) is the snapshot LocalStore.importPath makes', async () => {
    const dir = tempDir('tfs-src-tree-');
    mkdirSync(join(dir, 'unet'));
    writeFileSync(join(dir, 'unet', 'model.safetensors'), model(31));
    writeFileSync(join(dir, 'config.json'), '{"a":1}\n');
    writeFileSync(join(dir, 'run.sh'), '#!/bin/sh\n');
    chmodSync(join(dir, 'run.sh'), 0o755);
    writeFileSync(join(dir, 'empty.txt'), '');
    symlinkSync('unet/model.safetensors', join(dir, 'link.safetensors'));
    const expected = (await (await newStore()).importPath(dir)).snapshot;
    const memory = new MemoryStore();
    const r = await importSources(memory, localSource(dir), { name: 'mem/tree', threads: 1 });
    expect(r.snapshot).toBe(expected);
    expect(await memory.getRef('mem/tree')).toBe(expected);
    expect(r.files).toBe(4);
  });

  it('local and remote sources together make one snapshot', async () => {
    const bytes = model(33);
    const s = await serve({ '/w/model.safetensors': { bytes, etag: '"m"' } });
    const dir = tempDir('tfs-src-mixed-');
    writeFileSync(join(dir, 'config.json'), '{"b":2}\n');
    const both = tempDir('tfs-src-both-');
    writeFileSync(join(both, 'config.json'), '{"b":2}\n');
    writeFileSync(join(both, 'model.safetensors'), bytes);
    const store = await newStore();
    const r = await importSources<unknown>(
      store,
      [localSource(dir), httpsSource(`${s.url}/w/model.safetensors`, { http: HTTP })],
      {
        threads: 1,
      },
    );
    expect(r.snapshot).toBe((await (await newStore()).importPath(both)).snapshot);
    expect(r.sources.map((p) => (p as { kind: string }).kind)).toEqual(['local', 'https']);
    await expectCode(
      importSources<unknown>(store, [localSource(both), httpsSource(`${s.url}/w/model.safetensors`, { http: HTTP })]),
      'invalid_argument',
      'source.duplicate_path',
    );
  });

  const vectors = fileURLToPath(new URL('../../../vectors/v1/files/', import.meta.url));

  /** The records of `snapshot` in `store` are all stored there. */
  async function everyRecordStored(store: MemoryStore, snapshot: ObjectId): Promise<number> {
    let n = 0;
    for (const e of (await store.getManifest(snapshot)).entries) {
      if (e.kind !== 'file') continue;
      for (const r of e.records) {
        expect(await store.has(r.digest)).toBe(true);
        n++;
      }
    }
    return n;
  }

  it("single files (safetensors, GGUF, a GGUF that does not parse, a blob, an empty file) make importPath's snapshot", async () => {
    const dir = tempDir('tfs-src-single-');
    writeFileSync(join(dir, 'model.safetensors'), model(41));
    writeFileSync(join(dir, 'weights.bin'), bytesOf(300_001, 42));
    writeFileSync(join(dir, 'empty.txt'), '');
    for (const name of ['basic.gguf', 'quantized.gguf', 'vocab-padded.gguf', 'truncated.gguf']) {
      copyFileSync(join(vectors, name), join(dir, name));
    }
    const local = await newStore();
    for (const name of readdirSync(dir).sort()) {
      const expected = await local.importPath(join(dir, name));
      const memory = new MemoryStore();
      const r = await importSources(memory, localSource(join(dir, name)));
      expect(r.snapshot, name).toBe(expected.snapshot);
      expect(r.files).toBe(1);
      const records = await everyRecordStored(memory, r.snapshot);
      const profile = (await memory.getManifest(r.snapshot)).entries[0];
      if (name.endsWith('.gguf') && name !== 'truncated.gguf') {
        expect(profile?.kind === 'file' && profile.profile, name).toBe('gguf-v1');
        if (name === 'quantized.gguf') expect(records).toBeGreaterThan(1);
      }
      if (name === 'truncated.gguf') expect(profile?.kind === 'file' && profile.profile).toBe('blob-v1');
    }
  });

  it('a sharded folder into a local store: the same snapshot, objects and whole-file SHA-256 list as importPath', async () => {
    const dir = tempDir('tfs-src-shards-');
    writeFileSync(join(dir, 'model-00001-of-00002.safetensors'), model(51));
    writeFileSync(join(dir, 'model-00002-of-00002.safetensors'), model(53));
    writeFileSync(
      join(dir, 'model.safetensors.index.json'),
      JSON.stringify({ weight_map: { 'a.weight': 'model-00001-of-00002.safetensors' } }),
    );
    copyFileSync(join(vectors, 'quantized.gguf'), join(dir, 'model.gguf'));
    const reference = await newStore();
    const expected = await reference.importPath(dir, { name: 'ref/shards', fileSha256: true });
    const store = await newStore();
    const r = await importSources(store, localSource(dir), { name: 'pipe/shards', fileSha256: true });
    expect(r.snapshot).toBe(expected.snapshot);
    expect(r.objectsWritten).toBe(expected.objectsWritten);
    expect(r.bytesWritten).toBe(expected.bytesWritten);
    const list = await readFileSha256(store, r.snapshot);
    expect(list.size).toBe(3); // the two shards and the GGUF file: several records each
    expect(list).toEqual(await readFileSha256(reference, expected.snapshot));
    // Each entry is the file's SHA-256.
    const shard = readFileSync(join(dir, 'model-00001-of-00002.safetensors'));
    expect([...list.values()]).toContain(sha256Hex(shard));
    expect(r.sources[0]).toMatchObject({ kind: 'local', files: 4 });
  });

  it('a blob larger than the planner buffers is streamed into the store once, as importPath stores it', async () => {
    const dir = tempDir('tfs-src-big-');
    const big = bytesOf((64 << 20) + 4097, 61);
    writeFileSync(join(dir, 'big.bin'), big);
    const expected = await (await newStore()).importPath(join(dir, 'big.bin'));
    const store = await newStore();
    const r = await importSources(store, localSource(join(dir, 'big.bin')), { name: 'pipe/big' });
    expect(r.snapshot).toBe(expected.snapshot);
    expect(r.bytesWritten).toBe(big.length);
    expect(r.objectsWritten).toBe(1);
    expect(await store.has(`sha256:${sha256Hex(big)}` as ObjectId)).toBe(true);
  });

  it('seams cut as importPath cuts them', async () => {
    const dir = tempDir('tfs-src-seams-');
    writeFileSync(join(dir, 'model.safetensors'), model(71));
    const seams = { 'model.safetensors': { 'b.weight': [4096, 65536] } };
    const expected = await (await newStore()).importPath(dir, { seams });
    const memory = new MemoryStore();
    const r = await importSources(memory, localSource(dir), { seams });
    expect(r.snapshot).toBe(expected.snapshot);
    const plain = await importSources(new MemoryStore(), localSource(dir));
    expect(plain.snapshot).not.toBe(r.snapshot);
    await expectCode(
      importSources(new MemoryStore(), localSource(dir), { seams: { 'model.safetensors': { nope: [8] } } }),
      'invalid_argument',
      'planner.seam_tensor',
    );
  });

  it('a file changed after it was listed is conflict (import.source_changed) and no ref is set', async () => {
    const dir = tempDir('tfs-src-changed-');
    const file = join(dir, 'model.safetensors');
    writeFileSync(file, model(81));
    const changing = {
      async resolve() {
        const resolved = await localSource(dir).resolve();
        writeFileSync(file, model(82)); // same size, other bytes
        utimesSync(file, new Date(1_000_000), new Date(1_000_000));
        return resolved;
      },
    };
    const memory = new MemoryStore();
    await expectCode(importSources(memory, changing, { name: 'x/changed' }), 'conflict', 'import.source_changed');
    expect(await memory.getRef('x/changed')).toBeNull();
  });
});
