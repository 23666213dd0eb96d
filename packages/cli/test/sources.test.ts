// tfs export --portable writes an origin (pulled from as a folder and through nginx, byte-exact);
// tfs import <portable folder> gives the same checkpoint; tfs import/convert of https:// and
// civitai:// sources against loopback servers (a fake Civitai API that follows the documented
// model-version shape, its downloads redirected to a CDN on another origin).
import * as fsp from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { SAMPLES, type RunningNginx, sha256Hex, startNginx } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tfs as run } from './helpers.js';

const DIFFUSERS = path.join(SAMPLES, 'tiny-model', 'diffusers');

async function files(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string, rel: string) => {
    for (const e of await fsp.readdir(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(path.join(d, e.name), r);
      else out[r] = sha256Hex(new Uint8Array(await fsp.readFile(path.join(d, e.name))));
    }
  };
  await walk(dir, '');
  return out;
}

interface Route {
  body: Uint8Array;
  redirect?: string;
  etag?: string;
}

interface Seen {
  method: string;
  path: string;
  authorization?: string;
}

/** A file server on loopback with Range, a request log and redirects. */
async function server(routes: Record<string, Route>) {
  const log: Seen[] = [];
  const s = createServer((req: IncomingMessage, res: ServerResponse) => {
    const p = new URL(req.url!, 'http://x').pathname;
    log.push({
      method: req.method!,
      path: p,
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    });
    const r = routes[p];
    if (!r) return void res.writeHead(404).end();
    if (r.redirect) return void res.writeHead(302, { location: r.redirect }).end();
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const headers: Record<string, string> = r.etag ? { etag: r.etag } : {};
    let body = r.body;
    let status = 200;
    if (m) {
      const start = Number(m[1]);
      const end = m[2] === '' ? r.body.length - 1 : Math.min(Number(m[2]), r.body.length - 1);
      body = r.body.subarray(start, end + 1);
      status = 206;
      headers['content-range'] = `bytes ${start}-${end}/${r.body.length}`;
    }
    headers['content-length'] = String(body.length);
    res.writeHead(status, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  return {
    url,
    log,
    close: () =>
      new Promise<void>((resolve) => {
        s.closeAllConnections();
        s.close(() => resolve());
      }),
  };
}

describe('portable folders are origins; tfs import takes portable folders, https:// and civitai://', () => {
  let dir: string;
  let store: string;
  let checkpoint: string;
  const closers: (() => Promise<unknown>)[] = [];
  const tfs = (argv: string[], env: NodeJS.ProcessEnv = {}) => run([...argv, '--store', store], env);

  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-cli-sources-'));
    store = path.join(dir, 'store');
    const c = await tfs(['convert', DIFFUSERS, '--name', 'team/pipe', '--threads', '1', '--json']);
    expect(c.code, c.stderr).toBe(0);
    checkpoint = JSON.parse(c.stdout).id;
  });
  afterAll(async () => {
    for (const c of closers.reverse()) await c();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('export --portable writes the origin layout: every object (the header too) in chunks/, refs/<ref>', async () => {
    const portable = path.join(dir, 'portable');
    const e = await tfs(['export', 'team/pipe', portable, '--portable']);
    expect(e.code, e.stderr).toBe(0);
    expect((await fsp.readdir(portable)).sort()).toEqual(['chunks', 'model.cozytensors', 'refs']);
    expect(await fsp.readFile(path.join(portable, 'refs', 'team', 'pipe'), 'utf8')).toBe(`${checkpoint}\n`);
    const header = new Uint8Array(await fsp.readFile(path.join(portable, 'model.cozytensors')));
    expect(`sha256:${sha256Hex(header)}`).toBe(checkpoint);
    const chunk = new Uint8Array(await fsp.readFile(path.join(portable, 'chunks', checkpoint.slice(7))));
    expect(sha256Hex(chunk)).toBe(sha256Hex(header));
    for (const name of await fsp.readdir(path.join(portable, 'chunks'))) {
      expect(sha256Hex(new Uint8Array(await fsp.readFile(path.join(portable, 'chunks', name))))).toBe(name);
    }
    // Exported by id: the ref is named after the variant.
    const byId = path.join(dir, 'by-id');
    expect((await tfs(['export', checkpoint, byId, '--portable', '--variant', 'fp32'])).code).toBe(0);
    expect(await fsp.readFile(path.join(byId, 'refs', 'fp32'), 'utf8')).toBe(`${checkpoint}\n`);
  });

  it('tfs pull <portable folder> sha256:… and through nginx (static HTTP origin): byte-exact', async () => {
    const portable = path.join(dir, 'portable');
    for (const [origin, ref] of [
      [portable, checkpoint],
      [portable, 'team/pipe'],
    ] as const) {
      const other = path.join(await fsp.mkdtemp(path.join(dir, 'pull-')), 'store');
      const p = await run(['pull', origin, ref, '--name', 'copy/pipe', '--store', other, '--json']);
      expect(p.code, p.stderr).toBe(0);
      const g = await run(['ref', 'get', 'copy/pipe', '--store', other]);
      expect(g.stdout.trim()).toBe(checkpoint);
      const out = path.join(path.dirname(other), 'out');
      const x = await run(['export', 'copy/pipe', out, '--store', other]);
      expect(x.code, x.stderr).toBe(0);
      expect(await files(out)).toEqual(await files(DIFFUSERS));
    }
    const nginx: RunningNginx = await startNginx(portable);
    closers.push(() => nginx.stop());
    const other = path.join(await fsp.mkdtemp(path.join(dir, 'pull-nginx-')), 'store');
    const p = await run(['pull', nginx.url, checkpoint, '--name', 'copy/pipe', '--store', other]);
    expect(p.code, p.stderr).toBe(0);
    const out = path.join(path.dirname(other), 'out');
    expect((await run(['export', 'copy/pipe', out, '--store', other])).code).toBe(0);
    expect(await files(out)).toEqual(await files(DIFFUSERS));
  });

  it('tfs import <portable folder> [--name N] is the checkpoint it holds', async () => {
    const portable = path.join(dir, 'portable');
    const other = path.join(await fsp.mkdtemp(path.join(dir, 'imp-')), 'store');
    const named = await run(['import', portable, '--name', 'mine/pipe', '--store', other, '--json']);
    expect(named.code, named.stderr).toBe(0);
    expect(JSON.parse(named.stdout)).toMatchObject({ ref: 'mine/pipe', checkpoint });
    // Without --name: the folder's own ref.
    const plain = await run(['import', portable, '--store', other, '--json']);
    expect(plain.code, plain.stderr).toBe(0);
    expect(JSON.parse(plain.stdout)).toMatchObject({ ref: 'team/pipe', checkpoint });
    const ls = await run(['ls', '--store', other, '--json']);
    expect(JSON.parse(ls.stdout).refs).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'mine/pipe', id: checkpoint, kind: 'checkpoint' }),
        expect.objectContaining({ name: 'team/pipe', id: checkpoint, kind: 'checkpoint' }),
      ]),
    );
    const out = path.join(path.dirname(other), 'out');
    expect((await run(['export', 'mine/pipe', out, '--store', other])).code).toBe(0);
    expect(await files(out)).toEqual(await files(DIFFUSERS));
  });

  it('tfs import https://… records the ETag and SHA-256; a wrong --sha256 is exit 4 and no ref', async () => {
    const weights = new Uint8Array(
      await fsp.readFile(path.join(DIFFUSERS, 'unet', 'diffusion_pytorch_model.safetensors')),
    );
    const srv = await server({ '/files/unet.safetensors': { body: weights, etag: '"w1"' } });
    closers.push(srv.close);
    const url = `${srv.url}/files/unet.safetensors`;
    const bad = await tfs(['import', url, '--sha256', sha256Hex(weights.subarray(1)), '--json']);
    expect(bad.code).toBe(4);
    expect(JSON.parse(bad.stderr).error).toMatchObject({ code: 'corrupt', details: { rule: 'https.digest_mismatch' } });
    expect((await tfs(['ref', 'get', 'web/unet.safetensors'])).code).toBe(6);
    const ok = await tfs(['import', url, '--sha256', sha256Hex(weights), '--json']);
    expect(ok.code, ok.stderr).toBe(0);
    const r = JSON.parse(ok.stdout);
    expect(r).toMatchObject({
      ref: 'web/unet.safetensors',
      files: 1,
      bytes: weights.length,
      source: { kind: 'https', url, etag: '"w1"', sha256: sha256Hex(weights), size: weights.length },
    });
    const recorded = JSON.parse(await fsp.readFile(path.join(store, 'sources', `${r.snapshot.slice(7)}.json`), 'utf8'));
    expect(recorded.sources).toEqual([expect.objectContaining({ kind: 'https', url, sha256: sha256Hex(weights) })]);
    // The same file imported locally is the same snapshot.
    const local = path.join(dir, 'local-unet');
    await fsp.mkdir(local);
    await fsp.writeFile(path.join(local, 'unet.safetensors'), weights);
    const l = await tfs(['import', path.join(local, 'unet.safetensors'), '--json']);
    expect(JSON.parse(l.stdout).snapshot).toBe(r.snapshot);
    // --sha256 and --include are refused where they mean nothing.
    expect((await tfs(['import', local, '--sha256', sha256Hex(weights)])).code).toBe(2);
    expect((await tfs(['import', url, '--include', '*.json'])).code).toBe(2);
  });

  it('tfs import / convert civitai://: files checked against the API, CIVITAI_TOKEN only to the API', async () => {
    const weights = new Uint8Array(
      await fsp.readFile(path.join(DIFFUSERS, 'unet', 'diffusion_pytorch_model.safetensors')),
    );
    const config = new TextEncoder().encode('{"_class_name":"UNet2DConditionModel"}\n');
    const cdn = await server({ '/a': { body: weights, etag: '"a"' }, '/b': { body: config } });
    closers.push(cdn.close);
    const apiRoutes: Record<string, Route> = {};
    const api = await server(apiRoutes);
    closers.push(api.close);
    const file = (name: string, bytes: Uint8Array, n: string, primary: boolean) => ({
      id: n === 'a' ? 1 : 2,
      name,
      type: 'Model',
      sizeKB: bytes.length / 1024,
      metadata: { format: 'SafeTensor', size: 'full', fp: 'fp32' },
      hashes: { SHA256: sha256Hex(bytes).toUpperCase(), CRC32: '00000000' },
      downloadUrl: `${api.url}/api/download/models/77/${n}`,
      primary,
    });
    apiRoutes['/api/v1/model-versions/77'] = {
      body: new TextEncoder().encode(
        JSON.stringify({
          id: 77,
          modelId: 7,
          name: 'v1.0',
          baseModel: 'SD 1.5',
          model: { name: 'Tiny', type: 'Checkpoint' },
          files: [file('tiny.safetensors', weights, 'a', true), file('config.json', config, 'b', false)],
        }),
      ),
    };
    apiRoutes['/api/download/models/77/a'] = { body: new Uint8Array(0), redirect: `${cdn.url}/a` };
    apiRoutes['/api/download/models/77/b'] = { body: new Uint8Array(0), redirect: `${cdn.url}/b` };
    const env = { TENSORFS_CIVITAI_ENDPOINT: api.url, CIVITAI_TOKEN: 'civ_secret_token_123' };
    const i = await tfs(['import', 'civitai://77', '--json'], env);
    expect(i.code, i.stderr).toBe(0);
    const r = JSON.parse(i.stdout);
    expect(r).toMatchObject({ ref: 'civitai/77', files: 2, source: { kind: 'civitai', versionId: 77, modelId: 7 } });
    expect(api.log.every((l) => l.authorization === 'Bearer civ_secret_token_123')).toBe(true);
    expect(cdn.log.length).toBeGreaterThan(0);
    expect(cdn.log.every((l) => l.authorization === undefined)).toBe(true);
    expect(i.stdout).not.toContain('civ_secret_token_123');
    // A model page URL, one file by --include, converted.
    const c = await tfs(
      [
        'convert',
        `https://civitai.com/models/7/tiny?modelVersionId=77`,
        '--include',
        'tiny.safetensors',
        '--name',
        'civ/tiny',
        '--threads',
        '1',
        '--json',
      ],
      env,
    );
    expect(c.code, c.stderr).toBe(0);
    expect(JSON.parse(c.stdout)).toMatchObject({
      ref: 'civ/tiny',
      converter: 'single-file',
      source: { kind: 'civitai' },
    });
    expect(JSON.parse(c.stdout).source.files.map((f: { name: string }) => f.name)).toEqual(['tiny.safetensors']);
  });
});
