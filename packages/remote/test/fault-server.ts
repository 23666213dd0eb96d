/**
 * A misbehaving static HTTP origin for fault tests: a raw-socket HTTP/1.1 server over a portable
 * folder (`chunks/<hex>`, `refs/<name>`), where each request may be answered with a fault.
 */
import { readFileSync } from 'node:fs';
import { type Server, type Socket, createServer } from 'node:net';
import { join } from 'node:path';

/** One request as the server saw it. */
export interface Seen {
  method: string;
  path: string;
  headers: Record<string, string>;
}

/** What to do with a request: a fault, or undefined for a correct answer. */
export type Fault =
  | { kind: 'truncate'; at: number } // Content-Length of the full answer, then close after `at` bytes
  | { kind: 'reset'; at: number } // TCP reset after `at` bytes
  | { kind: 'stall'; at: number } // send `at` bytes, then nothing
  | { kind: 'flip'; index: number } // right length, one wrong byte
  | { kind: 'long-length'; extra: number } // Content-Length larger than the body; close after the body
  | { kind: 'ignore-range' } // 200 with the whole body, whatever Range says
  | { kind: 'status'; status: number; retryAfter?: string; body?: string }
  | { kind: 'redirect'; location: string; status?: number }
  | { kind: 'throttle'; bytesPerSecond: number };

/** A running fault server. */
export interface FaultServer {
  url: string;
  seen: Seen[];
  /** Decides the fault of each request (called in order). */
  fault: (req: Seen, n: number) => Fault | undefined;
  close(): Promise<void>;
}

function parseHead(text: string): Seen {
  const [line, ...rest] = text.split('\r\n');
  const [method, path] = line!.split(' ');
  const headers: Record<string, string> = {};
  for (const h of rest) {
    const i = h.indexOf(':');
    if (i > 0) headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
  }
  return { method: method!, path: decodeURIComponent(path!), headers };
}

/** Serves `root` with faults decided by `fault` (settable later). */
export async function startFaultServer(root: string): Promise<FaultServer> {
  const sockets = new Set<Socket>();
  const state: FaultServer = {
    url: '',
    seen: [],
    fault: () => undefined,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server: Server = createServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => {});
    let buf = Buffer.alloc(0);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const req = parseHead(buf.subarray(0, end).toString('latin1'));
      buf = Buffer.alloc(0);
      state.seen.push(req);
      void answer(sock, req, state.fault(req, state.seen.length - 1), root);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  state.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return state;
}

function head(status: number, headers: Record<string, string | number>): string {
  const reason: Record<number, string> = { 200: 'OK', 206: 'Partial Content', 404: 'Not Found', 302: 'Found' };
  let s = `HTTP/1.1 ${status} ${reason[status] ?? 'Status'}\r\nConnection: close\r\n`;
  for (const [k, v] of Object.entries(headers)) s += `${k}: ${v}\r\n`;
  return `${s}\r\n`;
}

async function answer(sock: Socket, req: Seen, fault: Fault | undefined, root: string): Promise<void> {
  if (fault?.kind === 'status') {
    const body = fault.body ?? '';
    sock.end(
      head(fault.status, {
        'Content-Length': Buffer.byteLength(body),
        ...(fault.retryAfter ? { 'Retry-After': fault.retryAfter } : {}),
      }) + body,
    );
    return;
  }
  if (fault?.kind === 'redirect') {
    sock.end(head(fault.status ?? 302, { Location: fault.location, 'Content-Length': 0 }));
    return;
  }
  let file: Buffer;
  try {
    file = readFileSync(
      join(
        root,
        ...req.path
          .split('?')[0]!
          .split('/')
          .filter((p) => p && p !== '..'),
      ),
    );
  } catch {
    sock.end(head(404, { 'Content-Length': 0 }));
    return;
  }
  let status = 200;
  let body = file;
  const headers: Record<string, string | number> = { 'Accept-Ranges': 'bytes' };
  const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  if (m && fault?.kind !== 'ignore-range') {
    const start = Number(m[1]);
    if (start >= file.length) {
      sock.end(head(416, { 'Content-Range': `bytes */${file.length}`, 'Content-Length': 0 }));
      return;
    }
    status = 206;
    body = file.subarray(start);
    headers['Content-Range'] = `bytes ${start}-${file.length - 1}/${file.length}`;
  }
  if (fault?.kind === 'flip') {
    body = Buffer.from(body);
    body[Math.min(fault.index, body.length - 1)]! ^= 0xff;
  }
  headers['Content-Length'] = body.length + (fault?.kind === 'long-length' ? fault.extra : 0);
  if (req.method === 'HEAD') {
    sock.end(head(status, headers));
    return;
  }
  sock.write(head(status, headers));
  switch (fault?.kind) {
    case 'truncate':
      sock.end(body.subarray(0, fault.at));
      return;
    case 'reset':
      sock.write(body.subarray(0, fault.at), () => sock.resetAndDestroy());
      return;
    case 'stall':
      sock.write(body.subarray(0, fault.at));
      return; // never ends; the client's read timeout must fire
    case 'throttle': {
      const step = Math.max(1024, Math.floor(fault.bytesPerSecond / 20));
      for (let off = 0; off < body.length && !sock.destroyed; off += step) {
        sock.write(body.subarray(off, off + step));
        await new Promise((r) => setTimeout(r, 50));
      }
      sock.end();
      return;
    }
    default:
      sock.end(body);
  }
}
