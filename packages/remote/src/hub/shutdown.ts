/** Listening and a graceful close: stop accepting, let requests finish, then cut what is left. */
import type * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { TensorFSError } from '@tensorfs/format';
import type { Concurrency } from './limits.js';

/**
 * Tracks connections that have not started a request yet (a browser opens some in advance): Node
 * does not count them as idle, so a graceful close would wait its whole grace behind them.
 */
export function trackUnused(server: http.Server): Set<Socket> {
  const unused = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    unused.add(socket);
    socket.once('close', () => unused.delete(socket));
  });
  server.on('request', (req: http.IncomingMessage) => unused.delete(req.socket));
  return unused;
}

/**
 * Listens on `host:port`; `unavailable` (`hub.listen`) when it cannot. Once listening, an error
 * of the listening socket (an `accept` that failed: `EMFILE` when the process is out of
 * descriptors, the kernel having closed that one connection) goes to `onError`, and the hub
 * keeps serving.
 */
export async function listen(
  server: http.Server,
  port: number,
  host: string,
  onError: (err: Error & { code?: string }) => void = () => {},
): Promise<AddressInfo> {
  await new Promise<void>((resolve, reject) => {
    const failed = (err: Error & { code?: string }) =>
      reject(
        new TensorFSError('unavailable', 'the hub cannot listen', {
          details: { rule: 'hub.listen', errno: err.code },
        }),
      );
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      server.on('error', onError);
      resolve();
    });
  });
  return server.address() as AddressInfo;
}

/** A close that drains in-flight requests for up to `graceMs`, then runs `cleanup`. */
export function closer(
  server: http.Server,
  unused: Set<Socket>,
  load: Concurrency,
  cleanup: () => Promise<void>,
): (graceMs?: number) => Promise<void> {
  let closing: Promise<void> | undefined;
  return (graceMs = 10_000) => {
    closing ??= new Promise<void>((resolve) => {
      server.close(() => {
        void cleanup().finally(resolve);
      });
      server.closeIdleConnections();
      for (const socket of unused) socket.destroy();
      const force = setTimeout(() => server.closeAllConnections(), graceMs);
      force.unref();
      load.whenIdle(() => server.closeIdleConnections());
    });
    return closing;
  };
}
