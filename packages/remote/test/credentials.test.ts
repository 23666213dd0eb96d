import { isTensorFSError } from '@tensorfs/format';
import { describe, expect, it } from 'vitest';
import { HubOrigin, StoreOrigin, type TokenProvider, pull, push, serveHub } from '../src/index.js';
import { after, newStore, storeWith } from './helpers.js';

const GOOD = 'good-token-000111222';
const STALE = 'stale-token-000111222';

async function hub() {
  const backing = await newStore();
  const seen: string[] = [];
  const h = await serveHub(new StoreOrigin(backing), {
    tokens: { tokens: [{ token: GOOD, read: ['*'], write: ['*'] }] },
    log: (line) => seen.push(line),
  });
  after(() => h.close());
  return { url: h.url, seen };
}

describe('credentials', () => {
  it('a function is asked afresh for every request', async () => {
    const { url, seen } = await hub();
    let calls = 0;
    const origin = new HubOrigin(url, {
      credential: () => {
        calls++;
        return GOOD;
      },
    });
    const { store } = await storeWith('team/model');
    await push(store, origin, 'team/model');
    const b = await newStore();
    await pull(b, origin, 'team/model');
    expect(calls).toBe(seen.length);
    expect(calls).toBeGreaterThanOrEqual(10);
  });

  it('a provider signs each request with the method, URL and payload digest, and may ask for a retry', async () => {
    const { url } = await hub();
    const calls: { method: string; url: string; digest?: string }[] = [];
    let current = STALE;
    const retries: number[] = [];
    const provider: TokenProvider = {
      headers(method, u, _headers, payloadDigest) {
        calls.push({ method, url: u, digest: payloadDigest });
        return { authorization: `Bearer ${current}` };
      },
      retry(status) {
        retries.push(status);
        current = GOOD;
        return true;
      },
    };
    const { store, id } = await storeWith('team/model');
    const r = await push(store, new HubOrigin(url, { credential: provider }), 'team/model');
    expect(r.id).toBe(id);
    expect(retries).toEqual([401]);
    const uploads = calls.filter((c) => c.method === 'PUT' && c.url.includes('/v1/objects/'));
    expect(uploads).toHaveLength(4);
    for (const u of uploads) expect(u.url).toContain(u.digest!.slice(7));
  });

  it('a rejected token is denied and the error does not carry it', async () => {
    const { url } = await hub();
    const { store } = await storeWith('team/model');
    const err = await push(store, new HubOrigin(url, { credential: STALE }), 'team/model').catch((e) => e);
    expect(isTensorFSError(err) && err.code).toBe('denied');
    expect(`${err.message}${err.stack}${JSON.stringify(err.toJSON())}`).not.toContain(STALE);
    const bad = await push(
      store,
      new HubOrigin(url, { credential: () => Promise.reject(new Error(STALE)) }),
      'team/model',
    ).catch((e) => e);
    expect(isTensorFSError(bad) && bad.code).toBe('denied');
    expect(JSON.stringify(bad.toJSON())).not.toContain(STALE);
  });
});
