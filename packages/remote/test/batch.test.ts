import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LocalStore } from '@tensorfs/cas';
import { type ObjectId, isTensorFSError } from '@tensorfs/format';
import { describe, expect, it } from 'vitest';
import { HubOrigin, type Origin, StoreOrigin, pull, serveHub } from '../src/index.js';
import { bytesOf, idOf } from '@tensorfs/testkit';
import { after, storeWith } from './helpers.js';

/** `count` small files of distinct bytes (each one object). */
function smallFiles(count: number, size = 1000): Record<string, Uint8Array> {
  const files: Record<string, Uint8Array> = {};
  for (let i = 0; i < count; i++) files[`shard/${String(i).padStart(4, '0')}.bin`] = bytesOf(size + (i % 7), 100 + i);
  return files;
}

/** A hub over `backend` that records every request line (method + path). */
async function hubOver(backend: Origin): Promise<{ origin: HubOrigin; requests: string[] }> {
  const requests: string[] = [];
  const hub = await serveHub(backend, {
    log: (line) => requests.push(line.split(' ').slice(0, 2).join(' ')),
  });
  const origin = new HubOrigin(hub.url, { retries: 1, baseDelayMs: 1 });
  after(async () => {
    await origin.close();
    await hub.close();
  });
  return { origin, requests };
}

/** A backend whose `read` of object `id` goes through `edit` (wrong bytes, a cut body...). */
function tampered(
  store: LocalStore,
  edit: (id: ObjectId, body: AsyncIterable<Uint8Array>, call: number) => AsyncIterable<Uint8Array> | null,
): Origin {
  const base = new StoreOrigin(store);
  const calls = new Map<ObjectId, number>();
  return Object.assign(Object.create(base), {
    read: async (id: ObjectId, offset: number, o?: { signal?: AbortSignal }) => {
      const r = await base.read(id, offset, o);
      const n = (calls.get(id) ?? 0) + 1;
      calls.set(id, n);
      const body = edit(id, r.body, n);
      return body === null ? r : { ...r, body };
    },
  });
}

async function* cut(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  for await (const c of body) {
    yield c.subarray(0, c.length >> 1);
    throw new Error('backend failed mid-object');
  }
}

/**
 * A hub over `store` behind a proxy that lies about `liar`'s bytes (one byte flipped) in batch
 * answers and single reads while `lie(n)` says so (`n`: the how-manieth answer carrying it). The hub
 * verifies what it serves, so a lying hub is simulated on the wire between it and the client.
 */
async function lyingHub(
  store: LocalStore,
  liar: ObjectId,
  lie: (n: number) => boolean,
): Promise<{ origin: HubOrigin; requests: string[] }> {
  const requests: string[] = [];
  const hub = await serveHub(new StoreOrigin(store), {
    log: (line) => requests.push(line.split(' ').slice(0, 2).join(' ')),
  });
  let n = 0;
  const proxy = http.createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    const up = await fetch(`${hub.url}${req.url}`, {
      method: req.method,
      headers: { 'content-type': String(req.headers['content-type'] ?? 'application/octet-stream') },
      ...(parts.length > 0 ? { body: Buffer.concat(parts) } : {}),
    });
    const body = Buffer.from(await up.arrayBuffer());
    if (req.url === '/v1/objects/batch') {
      // Walk the frames; flip the first byte of the liar's.
      for (let at = 0; at + 40 <= body.length; ) {
        const id = `sha256:${body.subarray(at, at + 32).toString('hex')}`;
        const len = body.readBigUInt64BE(at + 32);
        if (len === 0xffff_ffff_ffff_ffffn) {
          at += 40;
          continue;
        }
        if (id === liar && lie(++n)) body[at + 40]! ^= 0xff;
        at += 40 + Number(len);
      }
    } else if (req.url === `/v1/objects/${liar.slice(7)}` && up.status === 200 && lie(++n)) body[0]! ^= 0xff;
    const headers: Record<string, string> = {};
    up.headers.forEach((v, k) => {
      if (k !== 'content-length' && k !== 'transfer-encoding' && k !== 'connection') headers[k] = v;
    });
    res.writeHead(up.status, { ...headers, 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const origin = new HubOrigin(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, {
    retries: 1,
    baseDelayMs: 1,
  });
  after(async () => {
    await origin.close();
    await new Promise((r) => proxy.close(r));
    await hub.close();
  });
  return { origin, requests };
}

const count = (requests: string[], line: string) => requests.filter((r) => r === line).length;

describe('batched reads of small objects (POST /v1/objects/batch)', () => {
  it('pulls 300 small objects in a handful of requests, every one verified', async () => {
    const files = smallFiles(300);
    const { store: a } = await storeWith('team/small', files);
    const { origin, requests } = await hubOver(new StoreOrigin(a));
    const { store: b } = await storeWith('other', { 'x.bin': bytesOf(10, 9) });
    const r = await pull(b, origin, 'team/small', { backoffMs: 1 });
    expect(r.objects).toEqual({ total: 301, present: 0, fetched: 301 });
    // 300 leaves in groups of at most 256: 2 batches, and no object fetched alone.
    expect(count(requests, 'POST /v1/objects/batch')).toBe(2);
    expect(requests.filter((l) => l.startsWith('GET /v1/objects/')).length).toBe(1); // the manifest
    const some = files['shard/0123.bin']!;
    expect(await b.readObject(idOf(some), { verify: true })).toEqual(some);
    const v = await b.verify({ data: true });
    expect(v.corrupt).toEqual([]);
    for (const bytes of Object.values(files)) expect(await b.has(idOf(bytes))).toBe(true);
  });

  it('a lying batch: the object with wrong bytes is refetched alone, the others are kept from the batch', async () => {
    const files = smallFiles(40);
    const { store: a } = await storeWith('team/small', files);
    const liar = idOf(files['shard/0013.bin']!);
    // Wrong bytes (right length) for one object, the first time it is read (inside the batch).
    const { origin, requests } = await lyingHub(a, liar, (n) => n === 1);
    const { store: b } = await storeWith('other', { 'x.bin': bytesOf(10, 9) });
    const r = await pull(b, origin, 'team/small', { backoffMs: 1 });
    expect(r.objects.fetched).toBe(41);
    expect(count(requests, 'POST /v1/objects/batch')).toBe(1);
    expect(count(requests, `GET /v1/objects/${liar.slice(7)}`)).toBe(1);
    expect(await b.readObject(liar, { verify: true })).toEqual(files['shard/0013.bin']);
    expect((await b.verify({ data: true })).corrupt).toEqual([]);
  });

  it('a hub that keeps lying about one object: `corrupt` naming it, the others admitted, nothing named', async () => {
    const files = smallFiles(40);
    const { store: a } = await storeWith('team/small', files);
    const liar = idOf(files['shard/0021.bin']!);
    const { origin } = await lyingHub(a, liar, () => true);
    const { store: b } = await storeWith('other', { 'x.bin': bytesOf(10, 9) });
    const err = await pull(b, origin, 'team/small', { backoffMs: 1 }).catch((e) => e);
    expect(isTensorFSError(err) && err.code).toBe('corrupt');
    expect(err.details.digest ?? err.details.expected).toBe(liar);
    expect(await b.getRef('team/small')).toBeNull();
    expect(await b.has(liar)).toBe(false);
    for (const [p, bytes] of Object.entries(files))
      if (p !== 'shard/0021.bin') expect(await b.has(idOf(bytes))).toBe(true);
  });

  it('a batch cut mid-answer: what arrived is kept, the rest is fetched alone', async () => {
    const files = smallFiles(40);
    const { store: a } = await storeWith('team/small', files);
    const victim = idOf(files['shard/0010.bin']!);
    const { origin, requests } = await hubOver(
      tampered(a, (id, body, n) => (id === victim && n === 1 ? cut(body) : null)),
    );
    const { store: b } = await storeWith('other', { 'x.bin': bytesOf(10, 9) });
    const r = await pull(b, origin, 'team/small', { backoffMs: 1 });
    expect(r.objects.fetched).toBe(41);
    expect(count(requests, 'POST /v1/objects/batch')).toBe(1);
    // Objects before the cut came in the batch; the victim and everything after it came alone.
    const alone = requests.filter((l) => l.startsWith('GET /v1/objects/')).length - 1; // minus the manifest
    expect(alone).toBeGreaterThanOrEqual(1);
    expect(alone).toBeLessThan(40);
    expect(count(requests, `GET /v1/objects/${victim.slice(7)}`)).toBe(1);
    expect((await b.verify({ data: true })).corrupt).toEqual([]);
    for (const bytes of Object.values(files)) expect(await b.has(idOf(bytes))).toBe(true);
  });

  it('the route: ids validated, absent objects marked, read scope required', async () => {
    const { store: a } = await storeWith('team/small', smallFiles(3));
    const hub = await serveHub(new StoreOrigin(a), {
      tokens: { tokens: [{ token: 'tok-batch-0123456789', read: ['*'] }] },
    });
    after(() => hub.close());
    const post = (body: string, auth = true) =>
      fetch(`${hub.url}/v1/objects/batch`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(auth ? { authorization: 'Bearer tok-batch-0123456789' } : {}),
        },
        body,
      });
    expect((await post('{"ids":["nope"]}')).status).toBe(400);
    expect((await post(JSON.stringify({ ids: [] }), false)).status).toBe(401);
    const present = idOf(bytesOf(1001, 101));
    const absent = idOf(bytesOf(5, 5));
    const res = await post(JSON.stringify({ ids: [absent, present] }));
    expect(res.status).toBe(200);
    const body = Buffer.from(await res.arrayBuffer());
    expect(body.length).toBe(40 + 40 + 1001);
    expect(body.subarray(0, 32).toString('hex')).toBe(absent.slice(7));
    expect(body.readBigUInt64BE(32)).toBe(0xffff_ffff_ffff_ffffn);
    expect(body.subarray(40, 72).toString('hex')).toBe(present.slice(7));
    expect(body.readBigUInt64BE(72)).toBe(1001n);
    expect(idOf(body.subarray(80))).toBe(present);
  });
});
