/**
 * Faults from a misbehaving origin: each ends in a retry or a clear error, nothing unverified is
 * admitted or named, and the token never appears in an error.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { type ObjectId, isTensorFSError } from '@tensorfs/format';
import { beforeEach, describe, expect, it } from 'vitest';
import { FolderOrigin, HubOrigin, type Origin, StaticHttpOrigin, pull, serveHub } from '../src/index.js';
import { type FaultServer, startFaultServer } from './fault-server.js';
import { tempDir } from '@tensorfs/testkit';
import { after, newStore, partFile, sampleFiles, storeWith } from './helpers.js';

const TOKEN = 'secret-fault-token-4242';
const errors: unknown[] = [];

let folder: string;
let snapshot: ObjectId;
let big: string; // hex of the 300 000-byte object
let server: FaultServer;

beforeEach(async () => {
  errors.length = 0;
  const { store, id } = await storeWith('team/model');
  snapshot = id;
  folder = join(tempDir(), 'origin');
  const { push } = await import('../src/index.js');
  await push(store, new FolderOrigin(folder), 'team/model');
  const m = await store.getManifest(id);
  const e = m.entries.find((x) => x.path === 'unet/weights.bin')!;
  big = e.kind === 'file' ? e.records[0]!.digest.slice(7) : '';
  server = await startFaultServer(folder);
  after(() => server.close());
  after(() => {
    for (const err of errors) {
      const text = `${String((err as Error).message)}\n${String((err as Error).stack)}\n${JSON.stringify(isTensorFSError(err) ? err.toJSON() : err)}`;
      expect(text).not.toContain(TOKEN);
    }
  });
});

function origin(url = server.url, extra: Partial<ConstructorParameters<typeof StaticHttpOrigin>[1]> = {}): Origin {
  return new StaticHttpOrigin(url, { credential: TOKEN, readTimeoutMs: 400, baseDelayMs: 5, retries: 3, ...extra });
}

const isBig = (path: string) => path.startsWith(`/chunks/${big}`);

/** Extra pull options of the transfer-fault runs (see the `describe.each` below). */
let pullExtra: { memoryLimit?: number } = {};

/** Pulls into a new store; returns the store and the result or the error code. */
async function tryPull(o: Origin = origin()) {
  const store = await newStore();
  try {
    const r = await pull(store, o, 'team/model', { backoffMs: 5, maxAttempts: 4, ...pullExtra });
    return { store, r, code: 'ok' as string };
  } catch (err) {
    errors.push(err);
    if (!isTensorFSError(err)) throw err;
    return { store, r: undefined, code: err.code as string, err };
  }
}

async function expectComplete(p: Awaited<ReturnType<typeof tryPull>>) {
  expect(p.code).toBe('ok');
  expect(await p.store.getRef('team/model')).toBe(snapshot);
  expect((await p.store.verify({ data: true })).corrupt).toEqual([]);
}

async function expectNothingNamed(p: Awaited<ReturnType<typeof tryPull>>) {
  expect(await p.store.getRef('team/model')).toBeNull();
  expect(await p.store.has(`sha256:${big}`)).toBe(false);
}

// Each fault twice: the large object read into memory (through undici), and streamed into a
// store part (memoryLimit below its size), read by the raw reader (one connection per read).
describe.each([
  { path: 'into memory', extra: {}, connection: 'keep-alive' },
  { path: 'into a part (raw reads)', extra: { memoryLimit: 100_000 }, connection: 'close' },
])('transfer faults, $path', ({ extra, connection }) => {
  beforeEach(() => {
    pullExtra = extra;
    after(() => {
      pullExtra = {};
      // Every read of the large object went the expected way.
      for (const r of server.seen.filter((x) => isBig(x.path))) expect(r.headers.connection).toBe(connection);
    });
  });

  it('a truncated body resumes with Range from the bytes received', async () => {
    let n = 0;
    server.fault = (r) => (isBig(r.path) && n++ === 0 ? { kind: 'truncate', at: 100_000 } : undefined);
    await expectComplete(await tryPull());
    expect(server.seen.filter((r) => isBig(r.path)).map((r) => r.headers.range)).toEqual([undefined, 'bytes=100000-']);
  });

  it('a reset mid-object resumes', async () => {
    let n = 0;
    server.fault = (r) => (isBig(r.path) && n++ === 0 ? { kind: 'reset', at: 65_536 } : undefined);
    await expectComplete(await tryPull());
    const ranges = server.seen.filter((r) => isBig(r.path)).map((r) => r.headers.range);
    expect(ranges[0]).toBeUndefined();
    expect(ranges[1]).toMatch(/^bytes=\d+-$/);
    expect(Number(/\d+/.exec(ranges[1]!)![0])).toBeGreaterThan(0);
  });

  it('a stall hits the read timeout and resumes', async () => {
    let n = 0;
    server.fault = (r) => (isBig(r.path) && n++ === 0 ? { kind: 'stall', at: 1000 } : undefined);
    await expectComplete(await tryPull());
    expect(server.seen.filter((r) => isBig(r.path)).map((r) => r.headers.range)).toEqual([undefined, 'bytes=1000-']);
  });

  it('a Content-Length that disagrees with the object is retried, then the right bytes admitted', async () => {
    let n = 0;
    server.fault = (r) => (isBig(r.path) && n++ === 0 ? { kind: 'long-length', extra: 10 } : undefined);
    await expectComplete(await tryPull());
  });

  it('a Range the origin ignores (200, not 206) restarts the object from its first byte', async () => {
    let n = 0;
    server.fault = (r) => {
      if (!isBig(r.path)) return undefined;
      n++;
      return n === 1 ? { kind: 'truncate', at: 100_000 } : { kind: 'ignore-range' };
    };
    const p = await tryPull();
    await expectComplete(p);
    expect(p.r!.bytes.fetched).toBeGreaterThanOrEqual(400_000); // 100 000 discarded, then all 300 000
  });

  it('wrong bytes with the right length are corrupt: not admitted, nothing named', async () => {
    server.fault = (r) => (isBig(r.path) ? { kind: 'flip', index: 12_345 } : undefined);
    const p = await tryPull();
    expect(p.code).toBe('corrupt');
    await expectNothingNamed(p);
  });

  it('wrong bytes once, then right ones: the object is fetched again and admitted', async () => {
    let n = 0;
    server.fault = (r) => (isBig(r.path) && n++ === 0 ? { kind: 'flip', index: 7 } : undefined);
    await expectComplete(await tryPull());
  });

  it('5xx and 429 are retried, honouring Retry-After', async () => {
    let n = 0;
    server.fault = (r) => {
      if (!isBig(r.path)) return undefined;
      n++;
      if (n === 1) return { kind: 'status', status: 503, retryAfter: '1' };
      if (n === 2) return { kind: 'status', status: 429, retryAfter: '0' };
      return undefined;
    };
    const t0 = Date.now();
    await expectComplete(await tryPull());
    expect(Date.now() - t0).toBeGreaterThanOrEqual(950);
  });

  it('a server that keeps failing ends in unavailable, with nothing named', async () => {
    server.fault = (r) => (isBig(r.path) ? { kind: 'status', status: 500, body: `{"error":"${TOKEN}"}` } : undefined);
    const p = await tryPull();
    expect(p.code).toBe('unavailable');
    await expectNothingNamed(p);
  });

  it('a redirect loop is unavailable (http.redirect_loop)', async () => {
    server.fault = (r) => (r.path.startsWith('/refs/') ? { kind: 'redirect', location: r.path } : undefined);
    const p = await tryPull();
    expect(p.code).toBe('unavailable');
    expect(isTensorFSError(p.err) && p.err.details.rule).toBe('http.redirect_loop');
  });

  it('the token goes to the first origin only: dropped on a cross-origin redirect, kept on a same-origin one', async () => {
    const mirror = await startFaultServer(folder);
    after(() => mirror.close());
    server.fault = (r) => {
      if (r.path.startsWith('/chunks/') && r.path !== `/chunks/${big}`)
        return { kind: 'redirect', location: `${mirror.url}${r.path}` };
      if (r.path === `/chunks/${big}`) return { kind: 'redirect', location: `/chunks/${big}?same=1`, status: 307 };
      return undefined;
    };
    await expectComplete(await tryPull());
    expect(mirror.seen.length).toBeGreaterThan(0);
    for (const r of mirror.seen) expect(r.headers.authorization).toBeUndefined();
    for (const r of server.seen) expect(r.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(server.seen.some((r) => r.path.endsWith('?same=1'))).toBe(true);
  });
});

describe('a hub that lies', () => {
  it('about holding an object: the pull fails not_found and names nothing', async () => {
    const backend = new FolderOrigin(folder);
    const { rmSync } = await import('node:fs');
    rmSync(join(folder, 'chunks', big));
    const liar: Origin = Object.assign(Object.create(backend), { lacks: async () => [] });
    const hub = await serveHub(liar);
    after(() => hub.close());
    const p = await tryPull(new HubOrigin(hub.url, { credential: TOKEN, baseDelayMs: 5, retries: 1 }));
    expect(p.code).toBe('not_found');
    await expectNothingNamed(p);
  });

  it('about an object’s bytes (another object of the same length): corrupt, never admitted', async () => {
    const { readFileSync, writeFileSync } = await import('node:fs');
    const good = readFileSync(join(folder, 'chunks', big));
    const other = Buffer.from(sampleFiles(77)['unet/weights.bin']!);
    expect(other.length).toBe(good.length);
    writeFileSync(join(folder, 'chunks', big), other);
    const hub = await serveHub(new FolderOrigin(folder));
    after(() => hub.close());
    const p = await tryPull(new HubOrigin(hub.url, { credential: TOKEN, baseDelayMs: 5, retries: 1 }));
    expect(p.code).toBe('corrupt');
    await expectNothingNamed(p);
  });
});

describe('cancellation', () => {
  it('an abort mid-transfer is cancelled: nothing named, the part kept for the next pull', async () => {
    server.fault = (r) => (isBig(r.path) ? { kind: 'throttle', bytesPerSecond: 200_000 } : undefined);
    const store = await newStore();
    const parts = tempDir();
    const ctl = new AbortController();
    // Abort once 50 000 bytes of the large object have arrived.
    const base = origin();
    let got = 0;
    const counting: Origin = Object.assign(Object.create(base), {
      read: async (id: ObjectId, offset: number, o?: { signal?: AbortSignal }) => {
        const r = await base.read(id, offset, o);
        if (id !== `sha256:${big}`) return r;
        const body = r.body;
        return {
          ...r,
          body: (async function* () {
            for await (const c of body) {
              got += c.length;
              yield c;
              if (got >= 50_000) ctl.abort();
            }
          })(),
        };
      },
    });
    const pending = pull(store, counting, 'team/model', {
      partsDir: parts,
      memoryLimit: 100_000,
      signal: ctl.signal,
      backoffMs: 5,
    });
    const err = await pending.catch((e) => e);
    errors.push(err);
    expect(isTensorFSError(err) && err.code).toBe('cancelled');
    expect(await store.getRef('team/model')).toBeNull();
    // The local store keeps the part in its own tmp/ (adopted as the object once verified).
    const kept = statSync(partFile(store.root, big)!).size;
    expect(kept).toBeGreaterThan(0);
    server.fault = () => undefined;
    const r = await pull(store, origin(), 'team/model', { partsDir: parts, memoryLimit: 100_000 });
    expect(r.bytes.resumed).toBe(kept);
    expect((await store.verify({ data: true })).corrupt).toEqual([]);
  });
});
