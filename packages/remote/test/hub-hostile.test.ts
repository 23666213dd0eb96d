/**
 * The hub under a hostile user (issue 24 §2): every answer an error body, ranges and headers
 * checked, bytes verified on the way out, upload sessions owned by their token and bounded,
 * early answers that do not leave the sender blocked.
 */
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { ERROR_CODES, type ObjectId, isTensorFSError } from '@tensorfs/format';
import { bytesOf, idOf, objectFile, tempDir } from '@tensorfs/testkit';
import { describe, expect, it, vi } from 'vitest';
import {
  FolderOrigin,
  HubOrigin,
  type Origin,
  StoreOrigin,
  parseTokensConfig,
  pull,
  push,
  serveHub,
} from '../src/index.js';
import { after, newStore, storeWith } from './helpers.js';

const TOKEN = 'hub-test-token-123456';
const OTHER = 'other-writer-token-99';

async function started(options: Parameters<typeof serveHub>[1] = {}, backend?: Origin) {
  const { store, id } = await storeWith('team/model');
  const h = await serveHub(backend ?? new StoreOrigin(store), options);
  after(() => h.close());
  const m = await store.getManifest(id);
  const e = m.entries.find((x) => x.path === 'unet/weights.bin')!;
  const obj = e.kind === 'file' ? e.records[0]!.digest : id;
  return { url: h.url, port: h.port, hub: h, store, id, obj };
}

/** One GET/HEAD with node:http: status, headers, how many body bytes came and whether the body completed. */
function get(
  url: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; headers: http.IncomingHttpHeaders; bytes: Buffer; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { connection: 'close', ...headers } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      const done = () =>
        resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(parts), complete: res.complete });
      res.on('end', done);
      res.on('error', done);
      res.on('aborted', done);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Sends `text` on a raw socket; resolves with everything the server sent until it closed (or `waitMs`). */
function raw(port: number, text: string | Buffer, waitMs = 5000): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    const got: Buffer[] = [];
    const t = setTimeout(() => {
      s.destroy();
      resolve({ text: Buffer.concat(got).toString('latin1'), closed: false });
    }, waitMs);
    s.on('data', (c) => got.push(c));
    s.on('close', () => {
      clearTimeout(t);
      resolve({ text: Buffer.concat(got).toString('latin1'), closed: true });
    });
    s.on('error', () => {});
    s.on('connect', () => s.write(text));
    s.once('error', reject);
  });
}

/** The error body of a raw answer (after the blank line). */
function errorOf(answer: string): { code: string; message: string; details: { rule?: string } } {
  const body = answer.slice(answer.indexOf('\r\n\r\n') + 4);
  return (JSON.parse(body) as { error: { code: string; message: string; details: { rule?: string } } }).error;
}

const auth = (token: string) => ({ authorization: `Bearer ${token}` });

describe('hub answers (issue 24 §2 items 10, 11, 12, 13)', () => {
  it('an unsatisfiable range is 416 with Content-Range and the error body', async () => {
    const { url, obj } = await started();
    for (const range of ['bytes=999999-', 'bytes=9-3', 'bytes=-0', 'bytes=300000-']) {
      const r = await fetch(`${url}/v1/objects/${obj.slice(7)}`, { headers: { range } });
      expect([range, r.status, r.headers.get('content-range')]).toEqual([range, 416, 'bytes */300000']);
      expect(r.headers.get('cache-control') ?? '').not.toContain('immutable');
      const body = (await r.json()) as { error: { code: string; details: { rule: string } } };
      expect([range, body.error.code, body.error.details.rule]).toEqual([
        range,
        'invalid_argument',
        'hub.range_unsatisfiable',
      ]);
    }
  });

  it('a request without Host and a request Node cannot parse get 400 with the error body', async () => {
    const { port } = await started();
    const noHost = await raw(port, 'GET /v1 HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(noHost.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(errorOf(noHost.text)).toMatchObject({ code: 'invalid_argument', details: { rule: 'hub.no_host' } });
    const garbage = await raw(port, 'GET /v1 HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n');
    expect(garbage.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(errorOf(garbage.text)).toMatchObject({ code: 'invalid_argument', details: { rule: 'hub.bad_request' } });
  });

  it('every non-2xx of the API carries the error body', async () => {
    const { url, obj } = await started({ tokens: { tokens: [{ token: TOKEN, read: ['*'], write: ['*'] }] } });
    const cases: [string, RequestInit][] = [
      [`/v1/objects/${obj.slice(7)}`, { headers: { ...auth(TOKEN), range: 'bytes=5-1' } }],
      [`/v1/objects/${obj.slice(7)}`, { method: 'DELETE', headers: auth(TOKEN) }],
      [`/v1/refs`, { method: 'POST', headers: auth(TOKEN) }],
      [`/v1/uploads/${'a'.repeat(64)}/complete`, { method: 'POST', headers: auth(TOKEN) }],
    ];
    for (const [path, init] of cases) {
      const r = await fetch(`${url}${path}`, init);
      expect(r.status).toBeGreaterThanOrEqual(400);
      const body = (await r.json()) as { error: { code: string } };
      expect(ERROR_CODES).toContain(body.error.code);
    }
  });

  it('the Authorization scheme is case-insensitive', async () => {
    const { url } = await started({ tokens: { tokens: [{ token: TOKEN, read: ['*'] }] } });
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      const r = await fetch(`${url}/v1/refs/team/model`, { headers: { authorization: `${scheme} ${TOKEN}` } });
      expect([scheme, r.status]).toEqual([scheme, 200]);
    }
    const r = await fetch(`${url}/v1/refs/team/model`, { headers: { authorization: `Basic ${TOKEN}` } });
    expect(r.status).toBe(401);
  });

  it('an upload part without ?offset= or with a non-decimal one is 400 hub.bad_part', async () => {
    const { url } = await started({ tokens: { tokens: [{ token: TOKEN, read: ['*'], write: ['*'] }] } });
    const bytes = bytesOf(1000, 3);
    const hex = idOf(bytes).slice(7);
    const open = await fetch(`${url}/v1/uploads/${hex}`, {
      method: 'POST',
      headers: auth(TOKEN),
      body: JSON.stringify({ length: 1000 }),
    });
    expect(await open.json()).toMatchObject({ offset: 0, stored: false });
    for (const q of ['', '?offset=', '?offset=0x1f4', '?offset=1e3', '?offset=+0', '?offset=-0', '?offset= 0']) {
      const r = await fetch(`${url}/v1/uploads/${hex}${q}`, {
        method: 'PUT',
        headers: auth(TOKEN),
        body: bytes.subarray(0, 10),
      });
      const body = (await r.json()) as { error: { details: { rule: string } } };
      expect([q, r.status, body.error.details.rule]).toEqual([q, 400, 'hub.bad_part']);
    }
    // Nothing was appended by the refused parts: the session still stands at 0.
    const again = await fetch(`${url}/v1/uploads/${hex}`, {
      method: 'POST',
      headers: auth(TOKEN),
      body: JSON.stringify({ length: 1000 }),
    });
    expect(await again.json()).toMatchObject({ offset: 0 });
  });

  it('a tokens file naming a token twice, an unknown key or anonymous.write is refused, naming the entry', () => {
    const refuse = (v: unknown, text: RegExp) => {
      let err: unknown;
      try {
        parseTokensConfig(v);
      } catch (e) {
        err = e;
      }
      expect(isTensorFSError(err)).toBe(true);
      expect((err as { code: string }).code).toBe('invalid_argument');
      expect((err as { details: { rule: string } }).details.rule).toBe('hub.bad_tokens_file');
      expect((err as Error).message).toMatch(text);
    };
    refuse(
      {
        tokens: [
          { token: TOKEN, read: ['*'] },
          { token: TOKEN, write: ['*'] },
        ],
      },
      /tokens\[1\].*same token as tokens\[0\]/,
    );
    refuse({ tokens: [{ token: TOKEN, reads: ['*'] }] }, /tokens\[0\].*unknown key "reads"/);
    refuse({ tokens: [], anonymus: { read: ['*'] } }, /unknown key "anonymus"/);
    refuse({ tokens: [], anonymous: { read: ['*'], write: ['*'] } }, /anonymous.*"write"/);
    refuse({ tokens: [], anonymous: { read: 'x' } }, /anonymous.*"read"/);
    expect(parseTokensConfig({ tokens: [{ token: TOKEN, read: ['*'] }], anonymous: { read: ['p/*'] } })).toEqual({
      tokens: [{ token: TOKEN, read: ['*'] }],
      anonymous: { read: ['p/*'] },
    });
  });
});

describe('hub objects on damaged storage (issue 24 §2 items 2, 8)', () => {
  it('never completes a response whose bytes do not hash to the id; quarantines it; corrupt afterwards', async () => {
    const { url, store, obj } = await started();
    const hex = obj.slice(7);
    // A good object: GET is immutable, HEAD (which verifies nothing) is not.
    const good = await get(`${url}/v1/objects/${hex}`);
    expect([good.status, good.complete, good.bytes.length]).toEqual([200, true, 300_000]);
    expect(good.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const head = await get(`${url}/v1/objects/${hex}`, {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['cache-control']).toBe('no-cache');
    // Bit rot: one byte flipped in the middle of the stored file.
    const file = objectFile(store.root, obj);
    const bytes = readFileSync(file);
    bytes[150_000] = (bytes[150_000] ?? 0) ^ 0x20;
    chmodSync(file, 0o644);
    writeFileSync(file, bytes);
    const bad = await get(`${url}/v1/objects/${hex}`);
    expect(bad.status).toBe(200);
    expect(bad.headers['content-length']).toBe('300000');
    expect(bad.complete).toBe(false);
    expect(bad.bytes.length).toBeLessThan(300_000);
    // Afterwards: corrupt, for GET, a range and HEAD; the store no longer has it.
    for (const [h, m] of [
      [{}, 'GET'],
      [{ range: 'bytes=0-9' }, 'GET'],
      [{}, 'HEAD'],
    ] as const) {
      const r = await fetch(`${url}/v1/objects/${hex}`, { method: m, headers: h });
      expect([m, r.status]).toEqual([m, 422]);
      expect(r.headers.get('cache-control') ?? '').not.toContain('immutable');
      if (m === 'GET') {
        const e = (await r.json()) as { error: { code: string; details: { rule: string; digest: string } } };
        expect(e.error).toMatchObject({ code: 'corrupt', details: { rule: 'hub.corrupt_object', digest: obj } });
      }
    }
    // The hub cuts the response first and then asks the store to quarantine (the in-memory
    // refusal above is immediate): the store's move may land just after.
    await vi.waitFor(async () => expect(await store.has(obj)).toBe(false), { timeout: 5000 });
    expect((await store.verify({ data: true })).corrupt).toContain(obj);
  });

  it('a range of a damaged object is cut before its last byte too (the whole object is verified)', async () => {
    const { url, store, obj } = await started();
    const file = objectFile(store.root, obj);
    const bytes = readFileSync(file);
    // Damage outside the asked range.
    bytes[299_000] = (bytes[299_000] ?? 0) ^ 1;
    chmodSync(file, 0o644);
    writeFileSync(file, bytes);
    const r = await get(`${url}/v1/objects/${obj.slice(7)}`, { range: 'bytes=1000-1999' });
    expect(r.status).toBe(206);
    expect(r.complete).toBe(false);
    expect(r.bytes.length).toBeLessThan(1000);
    expect((await fetch(`${url}/v1/objects/${obj.slice(7)}`)).status).toBe(422);
  });

  it('a batch never completes a frame whose bytes do not hash to its id', async () => {
    const { url, store, obj } = await started();
    const file = objectFile(store.root, obj);
    const bytes = readFileSync(file);
    bytes[10] = (bytes[10] ?? 0) ^ 1;
    chmodSync(file, 0o644);
    writeFileSync(file, bytes);
    const got = await new Promise<{ n: number; complete: boolean }>((resolve, reject) => {
      const req = http.request(`${url}/v1/objects/batch`, { method: 'POST' }, (res) => {
        let n = 0;
        res.on('data', (c: Buffer) => {
          n += c.length;
        });
        const done = () => resolve({ n, complete: res.complete });
        res.on('end', done);
        res.on('aborted', done);
        res.on('error', done);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ ids: [obj] }));
    });
    expect(got.complete).toBe(false);
    expect(got.n).toBeLessThan(40 + 300_000);
  });

  it('an object file replaced by a folder is 500 io for HEAD and GET, and a pull says io', async () => {
    const { url, store, obj } = await started();
    const file = objectFile(store.root, obj);
    rmSync(file, { force: true });
    mkdirSync(file);
    const head = await get(`${url}/v1/objects/${obj.slice(7)}`, {}, 'HEAD');
    expect(head.status).toBe(500);
    const r = await fetch(`${url}/v1/objects/${obj.slice(7)}`);
    expect(r.status).toBe(500);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('io');
    const local = await newStore();
    const origin = new HubOrigin(url, { retries: 4, baseDelayMs: 1 });
    after(() => origin.close());
    const err = await pull(local, origin, 'team/model', { name: 'got' }).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('io');
    expect(await local.getRef('got')).toBe(null);
  });
});

describe('hub early answers (issue 24 §2 item 9)', () => {
  it('after a 413 for a JSON body over the limit the hub closes, so the sender is not left blocked', async () => {
    const { port } = await started({ tokens: { tokens: [{ token: TOKEN, read: ['*'], write: ['*'] }] } });
    const total = 64 << 20;
    const result = await new Promise<{ text: string; closed: boolean; wrote: boolean }>((resolve) => {
      const s = connect(port, '127.0.0.1');
      const got: Buffer[] = [];
      let wrote = false;
      const t = setTimeout(() => {
        s.destroy();
        resolve({ text: Buffer.concat(got).toString('latin1'), closed: false, wrote });
      }, 15_000);
      s.on('data', (c) => got.push(c));
      s.on('error', () => {});
      s.on('close', () => {
        clearTimeout(t);
        resolve({ text: Buffer.concat(got).toString('latin1'), closed: true, wrote });
      });
      s.on('connect', () => {
        s.write(
          `POST /v1/objects/lacks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Length: ${total}\r\n\r\n`,
        );
        const chunk = Buffer.alloc(1 << 20, 0x20);
        let sent = 0;
        const pump = () => {
          while (sent < total) {
            sent += chunk.length;
            if (!s.write(chunk)) return void s.once('drain', pump);
          }
          wrote = true;
        };
        pump();
      });
    });
    expect(result.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(errorOf(result.text).details.rule).toBe('hub.body_too_large');
    expect(result.closed).toBe(true);
  });
});

describe('hub upload sessions (issue 24 §2 items 4, 5)', () => {
  const tokens = {
    tokens: [
      { token: TOKEN, read: ['*'], write: ['b/*'] },
      { token: OTHER, read: ['*'], write: ['a/*'] },
    ],
  };

  it('three simultaneous pushes of one object over 64 MiB under different names all succeed, counts never negative', async () => {
    const big = bytesOf((64 << 20) + 3_000_000, 21);
    const { store, id } = await storeWith('src/big', { 'big.bin': big });
    const h = await serveHub(new StoreOrigin(await newStore()), {
      tokens: { tokens: [{ token: TOKEN, read: ['*'], write: ['*'] }] },
    });
    after(() => h.close());
    const results = await Promise.all(
      ['one/a', 'two/b', 'three/c'].map(async (name) => {
        const origin = new HubOrigin(h.url, { credential: TOKEN, multipart: { partBytes: 4 << 20 } });
        after(() => origin.close());
        const seen: number[] = [];
        const r = await push(store, origin, 'src/big', {
          name,
          onProgress: (p) => seen.push(p.done),
        });
        return { r, seen };
      }),
    );
    for (const { r, seen } of results) {
      expect(r.id).toBe(id);
      expect(r.bytes.present).toBeGreaterThanOrEqual(0);
      expect(r.bytes.sent).toBeGreaterThanOrEqual(0);
      expect(r.bytes.sent).toBeLessThanOrEqual(r.bytes.total);
      expect(r.bytes.sent + r.bytes.present).toBe(r.bytes.total);
      expect(seen.every((n) => n >= 0 && n <= r.bytes.total)).toBe(true);
    }
    const check = new HubOrigin(h.url, { credential: TOKEN });
    after(() => check.close());
    for (const name of ['one/a', 'two/b', 'three/c']) expect(await check.getRef(name)).toBe(id);
  }, 120_000);

  it('a session belongs to its token: another writer cannot open, append to or complete it, nor block it', async () => {
    const { url } = await started({ tokens });
    const bytes = bytesOf(3000, 9);
    const hex = idOf(bytes).slice(7);
    const post = (token: string, length: number) =>
      fetch(`${url}/v1/uploads/${hex}`, { method: 'POST', headers: auth(token), body: JSON.stringify({ length }) });
    // The a/* writer opens a 5-byte session for the object first and appends to it.
    expect(await (await post(OTHER, 5)).json()).toMatchObject({ offset: 0, stored: false });
    expect(
      (await fetch(`${url}/v1/uploads/${hex}?offset=0`, { method: 'PUT', headers: auth(OTHER), body: 'abcde' })).status,
    ).toBe(200);
    // The b/* writer's own session is untouched by it: its own length, offset 0.
    expect(await (await post(TOKEN, 3000)).json()).toMatchObject({ offset: 0, stored: false, length: 3000 });
    const part = await fetch(`${url}/v1/uploads/${hex}?offset=0`, {
      method: 'PUT',
      headers: auth(TOKEN),
      body: bytes,
    });
    expect(await part.json()).toMatchObject({ offset: 3000 });
    // The other writer cannot append to or complete the b/* writer's session: its own 5-byte
    // session is full (a part past it is too long), and completing it is its own wrong bytes.
    expect(
      (await fetch(`${url}/v1/uploads/${hex}?offset=5`, { method: 'PUT', headers: auth(OTHER), body: 'x' })).status,
    ).toBe(400);
    expect((await fetch(`${url}/v1/uploads/${hex}/complete`, { method: 'POST', headers: auth(OTHER) })).status).toBe(
      422,
    );
    expect((await fetch(`${url}/v1/uploads/${hex}/complete`, { method: 'POST', headers: auth(TOKEN) })).status).toBe(
      201,
    );
    // A DELETE by the other writer drops only its own session.
    expect((await fetch(`${url}/v1/uploads/${hex}`, { method: 'DELETE', headers: auth(OTHER) })).status).toBe(200);
  });

  it('a push by the b/* writer succeeds while the a/* writer holds a session for the same object', async () => {
    const big = bytesOf((64 << 20) + 1000, 22);
    const { store, id } = await storeWith('src/big', { 'big.bin': big });
    const h = await serveHub(new StoreOrigin(await newStore()), { tokens });
    after(() => h.close());
    const blob = (await store.getManifest(id)).entries.find((e) => e.path === 'big.bin')!;
    const oid = blob.kind === 'file' ? blob.records[0]!.digest : id;
    const r = await fetch(`${h.url}/v1/uploads/${oid.slice(7)}`, {
      method: 'POST',
      headers: auth(OTHER),
      body: JSON.stringify({ length: 5 }),
    });
    expect(r.status).toBe(200);
    // ...and keeps re-opening it while the b/* writer pushes.
    let pushing = true;
    const pester = (async () => {
      while (pushing) {
        await fetch(`${h.url}/v1/uploads/${oid.slice(7)}`, {
          method: 'POST',
          headers: auth(OTHER),
          body: JSON.stringify({ length: 5 }),
        });
      }
    })();
    const origin = new HubOrigin(h.url, { credential: TOKEN, multipart: { partBytes: 4 << 20 } });
    after(() => origin.close());
    const res = await push(store, origin, 'src/big', { name: 'b/model' }).finally(() => {
      pushing = false;
    });
    await pester;
    expect(res.id).toBe(id);
    expect(await origin.getRef('b/model')).toBe(id);
  }, 120_000);

  it('open sessions and declared bytes per token are bounded (limit_exceeded with the bound)', async () => {
    const { url } = await started({ tokens, maxUploadSessions: 3, maxUploadBytes: 1_000_000 });
    const open = (token: string, n: number, length: number) =>
      fetch(`${url}/v1/uploads/${idOf(bytesOf(10, 100 + n)).slice(7)}`, {
        method: 'POST',
        headers: auth(token),
        body: JSON.stringify({ length }),
      });
    for (let i = 0; i < 3; i++) expect((await open(TOKEN, i, 10)).status).toBe(200);
    // Re-opening one of its own sessions is not a new one.
    expect((await open(TOKEN, 0, 10)).status).toBe(200);
    const fourth = await open(TOKEN, 3, 10);
    expect(fourth.status).toBe(413);
    expect(((await fourth.json()) as { error: unknown }).error).toMatchObject({
      code: 'limit_exceeded',
      details: { rule: 'hub.upload_sessions', limit: 3 },
    });
    // The other token is not affected by the first one's sessions, but its own bytes are bounded.
    expect((await open(OTHER, 0, 600_000)).status).toBe(200);
    const over = await open(OTHER, 1, 600_000);
    expect(over.status).toBe(413);
    expect(((await over.json()) as { error: unknown }).error).toMatchObject({
      code: 'limit_exceeded',
      details: { rule: 'hub.upload_bytes', limit: 1_000_000 },
    });
    // Dropping a session frees its place.
    await fetch(`${url}/v1/uploads/${idOf(bytesOf(10, 100)).slice(7)}`, { method: 'DELETE', headers: auth(TOKEN) });
    expect((await open(TOKEN, 3, 10)).status).toBe(200);
  });
});

export type { ObjectId };

describe('a folder origin whose ref is a folder (issue 24 "Also seen")', () => {
  it('is corrupt ref.not_regular, as the hub and the local store call it', async () => {
    const root = join(tempDir(), 'origin');
    mkdirSync(join(root, 'refs', 'team', 'model'), { recursive: true });
    const origin = new FolderOrigin(root);
    const err = await origin.getRef('team/model').catch((e: unknown) => e);
    expect(isTensorFSError(err)).toBe(true);
    expect([(err as { code: string }).code, (err as { details: { rule: string } }).details.rule]).toEqual([
      'corrupt',
      'ref.not_regular',
    ]);
  });
});
