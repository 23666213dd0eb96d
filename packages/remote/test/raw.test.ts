/**
 * The raw reader (large object GETs over plain HTTP): exact bytes in whole 4 MiB chunks of
 * reusable shared memory, the framings it handles and refuses, and every way an exchange can end
 * early — each a clear error after the bytes that did arrive.
 */
import { type Server, type Socket, createServer } from 'node:net';
import { isTensorFSError } from '@tensorfs/format';
import { acceptedCounter, bytesOf } from '@tensorfs/testkit';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { HttpClient } from '../src/http.js';
import { RAW_CHUNK, RawFramingError, parseResponseHead, rawGet, resetRawPool } from '../src/raw.js';
import { after } from './helpers.js';

/** What a scripted server saw of one request. */
interface Seen {
  head: string;
}

/** A loopback server answering each connection with `answer(socket, requestHead)`. */
async function serve(answer: (sock: Socket, head: string, n: number) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => {});
    let buf = '';
    let answered = false;
    sock.on('data', (d) => {
      if (answered) return;
      buf += d.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      answered = true;
      seen.push({ head: buf.slice(0, end) });
      answer(sock, buf.slice(0, end), seen.length - 1);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, seen };
}

/** Serves `body` with a Content-Length (and `extra` raw bytes after it). */
function okWith(body: Uint8Array, extra = ''): (sock: Socket) => void {
  return (sock) => {
    sock.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`);
    sock.end(Buffer.concat([body, Buffer.from(extra)]));
  };
}

/** Reads a body; returns its chunks. */
async function drain(body: AsyncIterable<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const c of body) out.push(c);
  return out;
}

/** Reads a body until it fails; returns the bytes before the failure and the failure. */
async function drainToFailure(body: AsyncIterable<Uint8Array>): Promise<{ bytes: number; err: unknown }> {
  let bytes = 0;
  try {
    for await (const c of body) bytes += c.length;
  } catch (err) {
    return { bytes, err };
  }
  return { bytes, err: undefined };
}

const OPTS = { timeoutMs: 2000 };

describe('raw reads', () => {
  it('delivers the exact bytes in whole 4 MiB chunks of shared memory, reused once given back', async () => {
    resetRawPool();
    vi.useFakeTimers({ toFake: ['setTimeout', 'Date'] });
    after(() => {
      vi.useRealTimers();
    });
    const body = bytesOf(2 * RAW_CHUNK + 12_345, 9);
    const { url, seen } = await serve(okWith(body));
    const res = await rawGet(`${url}/chunks/abc?x=1`, { 'user-agent': 't', range: 'bytes=0-' }, OPTS);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-length']).toBe(String(body.length));
    const chunks = await drain(res.body);
    expect(chunks.map((c) => c.length)).toEqual([RAW_CHUNK, RAW_CHUNK, 12_345]);
    expect(Buffer.concat(chunks).equals(Buffer.from(body))).toBe(true);
    expect(chunks.map((c) => c.buffer instanceof SharedArrayBuffer)).toEqual([true, true, false]);
    // The request: path and query, our headers, and a connection never reused.
    expect(seen[0]!.head.split('\r\n')[0]).toBe('GET /chunks/abc?x=1 HTTP/1.1');
    expect(seen[0]!.head).toMatch(/\r\nconnection: close\r\n/);
    expect(seen[0]!.head).toMatch(/\r\nrange: bytes=0-(\r\n|$)/);
    // Given back, a buffer is read into again.
    for (const c of chunks) res.body.recycle(c);
    const again = await rawGet(url, {}, OPTS);
    const next = await drain(again.body);
    expect(chunks.some((c) => c.buffer === next[0]!.buffer)).toBe(true);
    expect(Buffer.concat(next).equals(Buffer.from(body))).toBe(true);
    // Once none was taken for 5 s, the pool lets its buffers go.
    for (const c of next) res.body.recycle(c);
    vi.advanceTimersByTime(11_000);
    const later = await drain((await rawGet(url, {}, OPTS)).body);
    expect([...chunks, ...next].some((c) => later.some((l) => l.buffer === c.buffer))).toBe(false);
    // A chunk given back twice comes back once: two reads never share a buffer.
    res.body.recycle(later[0]!);
    res.body.recycle(later[0]!);
    const a = await rawGet(url, {}, OPTS);
    const b = await rawGet(url, {}, OPTS);
    const [ca, cb] = await Promise.all([drain(a.body), drain(b.body)]);
    expect(ca[0]!.buffer).not.toBe(cb[0]!.buffer);
    expect(Buffer.concat(ca).equals(Buffer.from(body))).toBe(true);
    expect(Buffer.concat(cb).equals(Buffer.from(body))).toBe(true);
  });

  it('small bodies, bodies that came with the head, empty ones, and bytes past the length', async () => {
    for (const n of [0, 1, 100, 70_000]) {
      const body = bytesOf(n, n + 1);
      const { url } = await serve((sock) =>
        sock.end(
          Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${n}\r\n\r\n`), body, Buffer.from('JUNK')]),
        ),
      );
      const res = await rawGet(url, {}, OPTS);
      const got = await drain(res.body);
      expect(Buffer.concat(got).equals(Buffer.from(body))).toBe(true);
      // Small bodies are read into memory of their own, never a pooled 4 MiB.
      for (const c of got) expect(c.buffer).not.toBeInstanceOf(SharedArrayBuffer);
    }
    const { url } = await serve((sock) => sock.end('HTTP/1.1 204 No Content\r\n\r\n'));
    const res = await rawGet(url, {}, OPTS);
    expect(res.statusCode).toBe(204);
    expect(await drain(res.body)).toEqual([]);
  });

  it('a body without a length ends with the connection', async () => {
    const body = bytesOf(200_000, 3);
    const { url } = await serve((sock) => {
      sock.write('HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\n\r\n');
      sock.end(body);
    });
    const res = await rawGet(url, {}, OPTS);
    expect(res.statusCode).toBe(404);
    expect(Buffer.concat(await drain(res.body)).equals(Buffer.from(body))).toBe(true);
  });

  it('chunked and interim answers are left to undici (RawFramingError)', async () => {
    for (const head of [
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
      'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n',
    ]) {
      const { url } = await serve((sock) => sock.end(head));
      await expect(rawGet(url, {}, OPTS)).rejects.toBeInstanceOf(RawFramingError);
    }
    expect(() => rawGet('https://127.0.0.1:1/', {}, OPTS)).toThrow(RawFramingError);
  });

  it('malformed heads are unavailable (http.bad_response)', async () => {
    for (const head of [
      'HTTP/2 200 OK\r\n\r\n',
      'HTTP/1.1 20 OK\r\n\r\n',
      'HTTP/1.1 200 OK\r\n folded: line\r\n\r\n',
      'HTTP/1.1 200 OK\r\nno colon\r\n\r\n',
      'HTTP/1.1 200 OK\r\nbad name: x\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello',
      'HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 1e3\r\n\r\n',
      `HTTP/1.1 200 OK\r\nx: ${'a'.repeat(20_000)}\r\n\r\n`,
    ]) {
      const { url } = await serve((sock) => sock.end(head));
      const err = await rawGet(url, {}, OPTS).then(
        () => undefined,
        (e) => e,
      );
      expect(isTensorFSError(err) && [err.code, err.details.rule]).toEqual(['unavailable', 'http.bad_response']);
    }
  });

  it('a connection closed before the body ends: the bytes that came, then unavailable (http.short_body)', async () => {
    const body = bytesOf(RAW_CHUNK + 1000, 4);
    const { url } = await serve((sock) => {
      sock.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`);
      sock.end(body.subarray(0, RAW_CHUNK + 10));
    });
    const res = await rawGet(url, {}, OPTS);
    const r = await drainToFailure(res.body);
    expect(r.bytes).toBe(RAW_CHUNK + 10);
    expect(isTensorFSError(r.err) && [r.err.code, r.err.details.rule]).toEqual(['unavailable', 'http.short_body']);
  });

  it('a reset: the bytes that came, then a failure; a refused connection rejects', async () => {
    const { url } = await serve((sock) => {
      sock.write('HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n');
      sock.write(Buffer.alloc(5000, 7), () => sock.resetAndDestroy());
    });
    const res = await rawGet(url, {}, OPTS);
    const r = await drainToFailure(res.body);
    expect(r.bytes).toBe(5000);
    // (Seen as the socket's error, or as the connection ending short: both are retried.)
    const e = r.err as { code?: string; details?: { rule?: string } };
    expect(e.code === 'ECONNRESET' || e.details?.rule === 'http.short_body').toBe(true);
    const closed = await serve((sock) => sock.destroy());
    await expect(rawGet(closed.url, {}, OPTS)).rejects.toMatchObject({ code: 'ECONNRESET' });
    await expect(rawGet('http://127.0.0.1:1/', {}, OPTS)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('a stall: unavailable (http.read_timeout), in the head or in the body', async () => {
    const quiet = await serve(() => {});
    const err = await rawGet(quiet.url, {}, { timeoutMs: 150 }).then(
      () => undefined,
      (e) => e,
    );
    expect(isTensorFSError(err) && err.details.rule).toBe('http.read_timeout');
    const { url } = await serve((sock) => sock.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc'));
    const res = await rawGet(url, {}, { timeoutMs: 150 });
    const r = await drainToFailure(res.body);
    expect(r.bytes).toBe(3);
    expect(isTensorFSError(r.err) && r.err.details.rule).toBe('http.read_timeout');
  });

  it('a head trickled a byte at a time is a timeout too, however steady', async () => {
    const head = 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n';
    const { url } = await serve((sock) => {
      let i = 0;
      const t = setInterval(() => {
        if (sock.destroyed || i >= head.length) return clearInterval(t);
        sock.write(head[i++]!);
      }, 20);
      sock.on('close', () => clearInterval(t));
    });
    const t0 = Date.now();
    const err = await rawGet(url, {}, { timeoutMs: 300 }).then(
      () => undefined,
      (e) => e,
    );
    expect(isTensorFSError(err) && err.details.rule).toBe('http.read_timeout');
    expect(Date.now() - t0).toBeLessThan(1500);
  });

  it('a slow consumer pauses the socket, never times out, and gets every byte', async () => {
    const body = bytesOf(12 * RAW_CHUNK, 5);
    let serverSock: Socket | undefined;
    const { url } = await serve((sock) => {
      serverSock = sock;
      okWith(body)(sock);
    });
    const res = await rawGet(url, {}, { timeoutMs: 500 });
    const it = res.body[Symbol.asyncIterator]();
    const first = await it.next();
    // Not read for three times the timeout: the reader holds two chunks and stops reading.
    await new Promise((r) => setTimeout(r, 1500));
    expect(serverSock!.writableLength).toBeGreaterThan(0);
    const rest: Uint8Array[] = [first.value as Uint8Array];
    for (let n = await it.next(); !n.done; n = await it.next()) rest.push(n.value);
    expect(Buffer.concat(rest).equals(Buffer.from(body))).toBe(true);
  });

  it('an abort ends the exchange; a consumer that stops early closes the connection', async () => {
    const { url } = await serve((sock) => sock.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc'));
    const ctl = new AbortController();
    const res = await rawGet(url, {}, { timeoutMs: 5000, signal: ctl.signal });
    const pending = drainToFailure(res.body);
    ctl.abort();
    expect(((await pending).err as Error).name).toBe('AbortError');
    const aborted = new AbortController();
    aborted.abort();
    await expect(rawGet(url, {}, { timeoutMs: 5000, signal: aborted.signal })).rejects.toMatchObject({
      name: 'AbortError',
    });
    let closed!: Promise<unknown>;
    const big = await serve((sock) => {
      closed = new Promise((r) => sock.on('close', r));
      okWith(bytesOf(3 * RAW_CHUNK, 1))(sock);
    });
    const r2 = await rawGet(big.url, {}, OPTS);
    for await (const _ of r2.body) break;
    // The server sees the connection close (the test times out otherwise).
    await closed;
  });

  it('refuses request headers that would split the request (invalid_argument)', async () => {
    for (const h of [{ 'x-a': 'v\r\nInjected: 1' }, { 'bad name': 'v' }, { 'x-b': 'a\0b' }] as Record<
      string,
      string
    >[]) {
      const err = await rawGet('http://127.0.0.1:1/', h, OPTS).then(
        () => undefined,
        (e) => e,
      );
      expect(isTensorFSError(err) && [err.code, err.details.rule]).toEqual(['invalid_argument', 'http.bad_header']);
    }
  });
});

describe('HttpClient with raw reads', () => {
  it('large GETs over http go raw; others, and every request with rawReads: false, through undici', async () => {
    const body = bytesOf(100_000, 2);
    const { url, seen } = await serve(okWith(body));
    const client = new HttpClient();
    for (const large of [true, false]) {
      const res = await client.send({ method: 'GET', url, large });
      expect(Buffer.concat(await drain(res.body)).equals(Buffer.from(body))).toBe(true);
    }
    const plain = new HttpClient({ rawReads: false });
    await drain((await plain.send({ method: 'GET', url, large: true })).body);
    const connection = seen.map((s) => /\r\nconnection: ([^\r]*)/i.exec(s.head)?.[1]);
    expect(connection).toEqual(['close', 'keep-alive', 'keep-alive']);
  });

  it('a proxy or mock agent installed globally gets large reads too', async () => {
    const { MockAgent, getGlobalDispatcher, setGlobalDispatcher } = await import('undici');
    const before = getGlobalDispatcher();
    const mock = new MockAgent();
    mock.get('http://mocked.invalid').intercept({ path: '/obj' }).reply(200, 'from the mock');
    setGlobalDispatcher(mock);
    try {
      const res = await new HttpClient().send({ method: 'GET', url: 'http://mocked.invalid/obj', large: true });
      expect(Buffer.concat(await drain(res.body)).toString()).toBe('from the mock');
    } finally {
      setGlobalDispatcher(before);
      await mock.close();
    }
  });

  it('a header that would split the request fails invalid_argument at once, raw or not', async () => {
    const { url, seen } = await serve(okWith(Buffer.from('ok')));
    const client = new HttpClient({ baseDelayMs: 1 });
    for (const [large, rule] of [
      [true, 'http.bad_header'],
      [false, 'http.bad_request'],
    ] as const) {
      const err = await client.send({ method: 'GET', url, large, headers: { 'x-a': 'v\r\nInjected: 1' } }).then(
        () => undefined,
        (e) => e,
      );
      expect(isTensorFSError(err) && [err.code, err.details.rule]).toEqual(['invalid_argument', rule]);
    }
    expect(seen).toEqual([]);
  });

  it('an origin answering chunked is read through undici from then on', async () => {
    const { url, seen } = await serve((sock) =>
      sock.end('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n'),
    );
    const client = new HttpClient();
    for (let k = 0; k < 2; k++) {
      const res = await client.send({ method: 'GET', url, large: true });
      expect(Buffer.concat(await drain(res.body)).toString()).toBe('hello');
    }
    // The first raw attempt, then undici for the retry and the second request.
    expect(seen.map((s) => /\r\nconnection: ([^\r]*)/i.exec(s.head)?.[1])).toEqual([
      'close',
      'keep-alive',
      'keep-alive',
    ]);
  });

  it('retries a raw 503 with Retry-After, and maps a raw 404 like any other', async () => {
    const { url } = await serve((sock, _h, n) => {
      if (n === 0) sock.end('HTTP/1.1 503 Busy\r\nRetry-After: 0\r\nContent-Length: 2\r\n\r\nno');
      else if (n === 1)
        sock.end(
          'HTTP/1.1 404 Not Found\r\nContent-Length: 58\r\n\r\n{"error":{"code":"not_found","message":"no such object x"}}',
        );
      else okWith(Buffer.from('ok'))(sock);
    });
    const client = new HttpClient({ baseDelayMs: 1 });
    const err = await client.send({ method: 'GET', url, large: true }).then(
      () => undefined,
      (e) => e,
    );
    expect(isTensorFSError(err) && err.code).toBe('not_found');
    const res = await client.send({ method: 'GET', url, large: true });
    expect(Buffer.concat(await drain(res.body)).toString()).toBe('ok');
  });
});

describe('response heads (property)', () => {
  it('any text parses to a status and headers or is unavailable (http.bad_response)', () => {
    const counter = acceptedCounter();
    const line = fc.stringMatching(/^[ -~\t]{0,30}$/);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.array(line, { maxLength: 6 }).map((l) => ['HTTP/1.1 200 OK', ...l].join('\r\n')),
          fc
            .tuple(fc.integer({ min: 0, max: 999 }), fc.array(fc.tuple(line, line), { maxLength: 4 }))
            .map(([s, hs]) => [`HTTP/1.0 ${s} X`, ...hs.map(([k, v]) => `${k}:${v}`)].join('\r\n')),
        ),
        (text) => {
          try {
            const { statusCode, headers } = parseResponseHead(text);
            expect(statusCode).toBeGreaterThanOrEqual(100);
            expect(statusCode).toBeLessThanOrEqual(999);
            for (const k of Object.keys(headers)) expect(k).toBe(k.toLowerCase());
            counter.accept();
          } catch (err) {
            if (!isTensorFSError(err)) throw err;
            expect([err.code, err.details.rule]).toEqual(['unavailable', 'http.bad_response']);
          }
        },
      ),
      { numRuns: 3000 },
    );
    counter.assertFloor(100);
  });
});
