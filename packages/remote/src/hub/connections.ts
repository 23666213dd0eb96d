/**
 * Connections within the process's open-file limit. Every connection holds a descriptor, and so
 * does every object a request reads, the store's database and the upload sessions. Past the
 * budget the hub closes the kept-alive connection idle longest (clients open another when they
 * need it); when none is idle, the newcomer is answered `503` with `Retry-After` at once and
 * closed, so its descriptor is free again before the requests in flight need one. A request that
 * still meets `EMFILE` is answered `503` too (retry), not `500`.
 */
import { readFileSync } from 'node:fs';
import type * as http from 'node:http';
import type { Socket } from 'node:net';
import { TensorFSError } from '@tensorfs/format';
import { rawErrorAnswer } from './respond.js';

/** Descriptors kept for the process itself: stdio, the event loop, the store's database, logs. */
const RESERVED = 48;
/** Descriptors one request in flight may hold (the object it reads, a temp it writes). */
const PER_REQUEST = 2;
/** Fewest connections allowed, whatever the limit. */
const MIN_CONNECTIONS = 8;

/** The soft open-file limit of this process (`/proc/self/limits`), or 1024 where that cannot be read. */
export function openFileLimit(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    if (soft === 'unlimited') return Number.MAX_SAFE_INTEGER;
    const n = Number(soft);
    if (Number.isSafeInteger(n) && n > 0) return n;
  } catch {
    // not Linux: the common default below
  }
  return 1024;
}

/**
 * Connections the hub keeps open at once under an open-file limit of `limit` when up to
 * `maxConcurrent` requests run at once: what is left after the process's own descriptors and
 * those of the requests in flight, at least {@link MIN_CONNECTIONS}.
 */
export function connectionBudget(limit: number, maxConcurrent: number): number {
  return Math.max(MIN_CONNECTIONS, limit - RESERVED - PER_REQUEST * maxConcurrent);
}

/**
 * Keeps `server`'s open connections at most `budget` (see the module comment). Returns the test
 * for a connection already answered `503`: a request that still arrives on it is not served.
 */
export function boundConnections(server: http.Server, budget: number): (socket: Socket) => boolean {
  // Connections kept alive between requests, in the order they became idle: the one closed
  // first has waited longest. A new connection is not idle (its first request is on its way).
  const idle = new Set<Socket>();
  const refused = new WeakSet<Socket>();
  let open = 0;
  server.on('connection', (socket: Socket) => {
    open++;
    socket.once('close', () => {
      open--;
      idle.delete(socket);
    });
    if (open <= budget) return;
    const oldest = idle.values().next().value;
    if (oldest !== undefined) {
      idle.delete(oldest);
      oldest.destroy();
      return;
    }
    refused.add(socket);
    socket.on('error', () => {});
    socket.write(
      rawErrorAnswer(503, 'Service Unavailable', busy('the hub has too many connections'), { 'retry-after': '1' }),
    );
    socket.destroySoon();
  });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    idle.delete(socket);
    res.once('finish', () => {
      if (!socket.destroyed) idle.add(socket);
    });
  });
  return (socket) => refused.has(socket);
}

/** `err` as the hub answers it: out of descriptors (`EMFILE`, `ENFILE`) is `unavailable`, to retry. */
export function retryableWhenOutOfDescriptors(err: TensorFSError): TensorFSError {
  const errno = err.details.errno;
  return err.code === 'io' && (errno === 'EMFILE' || errno === 'ENFILE')
    ? busy('the hub is out of file descriptors', err)
    : err;
}

function busy(message: string, cause?: unknown): TensorFSError {
  return new TensorFSError('unavailable', message, { details: { rule: 'hub.busy' }, ...(cause ? { cause } : {}) });
}
