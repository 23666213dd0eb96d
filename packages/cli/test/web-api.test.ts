import * as fsp from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalStore } from '@tensorfs/cas';
import { ERROR_CODES, type ErrorCode, HTTP_STATUS, TensorFSError } from '@tensorfs/format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadGrant, webHandler } from '../src/index.js';

const SAMPLE = fileURLToPath(new URL('../../../samples/tiny-model/', import.meta.url));

describe('webHandler JSON', () => {
  let dir: string;
  let store: LocalStore;
  let server: http.Server;
  let base: string;
  const grants: Record<string, ReadGrant> = { 'all-token': true, 'base-token': (ref) => ref === 'base' };

  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-web-api-'));
    store = await LocalStore.open(path.join(dir, 'store'));
    await store.importPath(SAMPLE, { name: 'base', threads: 1 });
    await store.importPath(path.join(SAMPLE, 'diffusers'), { name: 'other', threads: 1 });
    const handle = webHandler(store, {
      authorize: (req) => grants[(req.headers.authorization ?? '').replace(/^Bearer /, '')] ?? false,
    });
    server = http.createServer((req, res) => {
      void handle(req, res).then((done) => {
        if (!done) res.writeHead(404).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await store.close();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  const get = async (route: string, token?: string) => {
    const res = await fetch(`${base}${route}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & { error?: { code: string } } };
  };

  it('refuses the JSON without a token, serves the page to anyone', async () => {
    expect((await get('/api/refs')).status).toBe(401);
    expect((await get('/api/refs')).body.error?.code).toBe('denied');
    const page = await fetch(`${base}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<script src="/app.js"></script>');
  });

  it('lists refs with sizes and sharing; a ref page; a diff', async () => {
    const { status, body } = await get('/api/refs', 'all-token');
    expect(status).toBe(200);
    expect(body.problems).toEqual([]);
    const refs = body.refs as {
      name: string;
      kind: string;
      logical: number;
      stored: number;
      shared: { ref: string; bytes: number }[];
    }[];
    expect(refs.map((r) => [r.name, r.kind])).toEqual([
      ['base', 'snapshot'],
      ['other', 'snapshot'],
    ]);
    // base holds the diffusers folder too: everything of `other` but its manifest is shared.
    const other = refs[1]!;
    const manifest = (await store.readObject(await store.resolve('other'))).length;
    expect(other.shared).toEqual([{ ref: 'base', bytes: other.stored - manifest }]);
    const ref = await get('/api/ref?name=other', 'all-token');
    const tensors = ref.body.tensors as { file: string; name: string; encoding: string }[];
    expect(tensors.map((t) => `${t.file}:${t.name}`)).toEqual([
      'text_encoder/model.safetensors.index.json:text_model.embeddings.token_embedding.weight',
      'text_encoder/model.safetensors.index.json:text_model.final_layer_norm.bias',
      'text_encoder/model.safetensors.index.json:text_model.final_layer_norm.weight',
      'unet/diffusion_pytorch_model.safetensors:conv_in.bias',
      'unet/diffusion_pytorch_model.safetensors:conv_in.weight',
      'unet/diffusion_pytorch_model.safetensors:conv_out.weight',
    ]);
    expect((ref.body.configs as { path: string }[]).map((c) => c.path)).toEqual([
      'model_index.json',
      'scheduler/scheduler_config.json',
      'text_encoder/config.json',
      'tokenizer/vocab.json',
      'unet/config.json',
    ]);
    const diff = await get('/api/diff?a=base&b=base', 'all-token');
    expect((diff.body.tensors as { unchanged: number }).unchanged).toBe(18);
    expect((await get('/api/diff?a=base', 'all-token')).body.error?.code).toBe('invalid_argument');
  });

  it('a token limited to some refs sees only those, by name or id', async () => {
    const { body } = await get('/api/refs', 'base-token');
    expect((body.refs as { name: string; shared: unknown[] }[]).map((r) => [r.name, r.shared])).toEqual([['base', []]]);
    expect((await get('/api/ref?name=base', 'base-token')).status).toBe(200);
    const denied = await get('/api/ref?name=other', 'base-token');
    expect([denied.status, denied.body.error?.code]).toEqual([403, 'denied']);
    const otherId = await store.resolve('other');
    expect((await get(`/api/ref?name=${otherId}`, 'base-token')).body.error?.code).toBe('denied');
    expect((await get(`/api/diff?a=base&b=${otherId}`, 'base-token')).body.error?.code).toBe('denied');
    const baseId = await store.resolve('base');
    expect((await get(`/api/ref?name=${baseId}`, 'base-token')).status).toBe(200);
  });

  it('answers each family with the hub status (HTTP_STATUS, spec/v1/remote.md)', async () => {
    // A store whose ref `fail/<family>` fails with that family.
    const failing = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'resolve') {
          return async (ref: string) => {
            if (!ref.startsWith('fail/')) return target.resolve(ref);
            const code = ref.slice(5) as ErrorCode;
            throw new TensorFSError(code, `failed: ${code}`, { details: { rule: 'test.fail' } });
          };
        }
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const handle = webHandler(failing);
    const srv = http.createServer((req, res) => void handle(req, res));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    try {
      const at = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
      const seen: Record<string, [number, string, string | null]> = {};
      for (const code of ERROR_CODES) {
        const res = await fetch(`${at}/api/ref?name=fail/${code}`);
        const body = (await res.json()) as { error: { code: string } };
        seen[code] = [res.status, body.error.code, res.headers.get('retry-after')];
      }
      expect(seen).toEqual({
        invalid_argument: [400, 'invalid_argument', null],
        malformed: [400, 'malformed', null],
        corrupt: [422, 'corrupt', null],
        unsupported: [501, 'unsupported', null],
        not_found: [404, 'not_found', null],
        conflict: [409, 'conflict', null],
        denied: [403, 'denied', null],
        unavailable: [503, 'unavailable', '1'],
        limit_exceeded: [413, 'limit_exceeded', null],
        io: [500, 'io', null],
        cancelled: [503, 'cancelled', '1'],
        internal: [500, 'internal', null],
      });
      for (const code of ERROR_CODES) expect([code, seen[code]![0]]).toEqual([code, HTTP_STATUS[code]]);
    } finally {
      await new Promise((r) => srv.close(r));
    }
  });
});

describe('webHandler with bad refs beside good ones', () => {
  let dir: string;
  let store: LocalStore;
  let server: http.Server;
  let base: string;
  let good: string;
  let damaged: string;
  const gone = `sha256:${'7'.repeat(64)}`;

  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-web-bad-'));
    store = await LocalStore.open(path.join(dir, 'store'));
    const src = path.join(dir, 'src');
    await fsp.mkdir(path.join(src, 'a'), { recursive: true });
    await fsp.mkdir(path.join(src, 'b'), { recursive: true });
    await fsp.writeFile(path.join(src, 'a', 'config.json'), '{"model":"good"}\n');
    await fsp.writeFile(path.join(src, 'b', 'config.json'), '{"model":"damaged"}\n');
    good = (await store.importPath(path.join(src, 'a'), { name: 'good' })).snapshot;
    damaged = (await store.importPath(path.join(src, 'b'), { name: 'damaged' })).snapshot;
    // damaged: its manifest's last byte flipped; gone: names an object the store never held;
    // garbage: not an id; link: a symlink in refs/.
    const hex = damaged.slice('sha256:'.length);
    const file = path.join(store.root, 'objects', 'sha256', hex.slice(0, 2), hex.slice(2, 4), hex);
    const bytes = await fsp.readFile(file);
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 1;
    await fsp.chmod(file, 0o644);
    await fsp.writeFile(file, bytes);
    const refs = path.join(store.root, 'refs');
    await fsp.writeFile(path.join(refs, 'gone'), `${gone}\n`);
    await fsp.writeFile(path.join(refs, 'garbage'), 'not an id\n');
    await fsp.writeFile(path.join(dir, 'elsewhere'), `${good}\n`);
    await fsp.symlink(path.join(dir, 'elsewhere'), path.join(refs, 'link'));
    const grants: Record<string, ReadGrant> = {
      'all-token': true,
      'some-token': (ref) => ref === 'good' || ref === 'gone',
    };
    const handle = webHandler(store, {
      authorize: (req) => grants[(req.headers.authorization ?? '').replace(/^Bearer /, '')] ?? false,
    });
    server = http.createServer((req, res) => void handle(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await store.close();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  const get = async (route: string, token: string) => {
    const res = await fetch(`${base}${route}`, { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('lists the good ref and names each bad one with its problem (as tfs ls does)', async () => {
    const { status, body } = await get('/api/refs', 'all-token');
    expect(status).toBe(200);
    expect((body.refs as { name: string; id: string; kind: string }[]).map((r) => [r.name, r.id, r.kind])).toEqual([
      ['good', good, 'snapshot'],
    ]);
    const problems = body.problems as { name: string; id?: string; code: string; rule: string; message: string }[];
    expect(problems.map(({ message: _, ...p }) => p)).toEqual([
      { name: 'damaged', id: damaged, code: 'corrupt', rule: 'store.digest' },
      { name: 'garbage', code: 'corrupt', rule: 'ref.content' },
      { name: 'gone', id: gone, code: 'corrupt', rule: 'ref.target_missing' },
      { name: 'link', code: 'corrupt', rule: 'ref.not_regular' },
    ]);
    for (const p of problems) expect(p.message).not.toContain(dir);
    // The good ref's page and a compare of it still answer.
    expect((await get('/api/ref?name=good', 'all-token')).status).toBe(200);
    expect((await get('/api/diff?a=good&b=good', 'all-token')).status).toBe(200);
  });

  it('a token limited to some refs sees only their problems, and resolves through the good ones', async () => {
    const { body } = await get('/api/refs', 'some-token');
    expect((body.refs as { name: string }[]).map((r) => r.name)).toEqual(['good']);
    expect((body.problems as { name: string; rule: string }[]).map((p) => [p.name, p.rule])).toEqual([
      ['gone', 'ref.target_missing'],
    ]);
    expect((await get('/api/ref?name=good', 'some-token')).status).toBe(200);
    expect((await get(`/api/ref?name=${good}`, 'some-token')).status).toBe(200);
    const other = await get(`/api/ref?name=${damaged}`, 'some-token');
    expect([other.status, (other.body.error as { code: string }).code]).toEqual([403, 'denied']);
  });
});

describe('/api/refs at scale (issue 24 §2 item 7)', () => {
  it('reads each distinct head once, lists at most 32 sharers, and never blocks the event loop for long', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-web-scale-'));
    const store = await LocalStore.open(path.join(dir, 'store'));
    try {
      // Four snapshots sharing one file, named by 2,000 refs.
      const ids: Awaited<ReturnType<LocalStore['importPath']>>['snapshot'][] = [];
      for (let k = 0; k < 4; k++) {
        const src = path.join(dir, `src${k}`);
        await fsp.mkdir(src);
        await fsp.writeFile(path.join(src, 'shared.bin'), Buffer.alloc(5000, 7));
        await fsp.writeFile(path.join(src, 'own.bin'), Buffer.alloc(1000 + k, k));
        ids.push((await store.importPath(src, { name: `base/${k}`, threads: 1 })).snapshot);
      }
      for (let i = 0; i < 1996; i++) await store.setRef(`r/${String(i).padStart(4, '0')}`, ids[i % 4]!);
      let reads = 0;
      const counted = new Proxy(store, {
        get(target, prop, receiver) {
          if (prop === 'readObject') {
            return (...args: Parameters<LocalStore['readObject']>) => {
              reads++;
              return target.readObject(...args);
            };
          }
          const value = Reflect.get(target, prop, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const handle = webHandler(counted);
      const server = http.createServer((req, res) => {
        void handle(req, res).then((done) => {
          if (!done) res.writeHead(404).end();
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      try {
        // The longest the event loop went without running a 5 ms timer while the listing ran.
        let last = Date.now();
        let longest = 0;
        const tick = setInterval(() => {
          const now = Date.now();
          longest = Math.max(longest, now - last);
          last = now;
        }, 5);
        let apiDone = 0;
        const api = fetch(`${base}/api/refs`).then(async (r) => {
          const v = (await r.json()) as { refs: { name: string; shared: { ref: string; bytes: number }[] }[] };
          apiDone = Date.now();
          return v;
        });
        const page = await fetch(`${base}/`);
        const pageDone = Date.now();
        expect(page.status).toBe(200);
        const body = await api;
        clearInterval(tick);
        expect(body.refs.length).toBe(2000);
        // One read per distinct head, not one per ref.
        expect(reads).toBeLessThanOrEqual(4);
        for (const r of body.refs) expect(r.shared.length).toBeLessThanOrEqual(32);
        // base/0 shares its manifest and both files with every r/ ref naming the same snapshot, and
        // the shared file with the others.
        const b0 = body.refs.find((r) => r.name === 'base/0')!;
        expect(b0.shared.find((s) => s.ref === 'base/1')?.bytes).toBe(5000);
        expect(pageDone).toBeLessThanOrEqual(apiDone);
        expect(longest).toBeLessThan(1000);
      } finally {
        await new Promise((r) => server.close(r));
      }
    } finally {
      await store.close();
      await fsp.rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
