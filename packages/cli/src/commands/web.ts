/**
 * `tfs web`: the web page of a store on loopback, read-only (what `tfs serve` mounts at `/`).
 */
import { once } from 'node:events';
import http from 'node:http';
import { LocalStore } from '@tensorfs/cas';
import { TensorFSError } from '@tensorfs/format';
import { defineCommand } from '../command.js';
import { webHandler } from '../web/handler.js';

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** `tfs web [--port N] [--host H] [--token T]`. */
export const webCommand = defineCommand<{ port: number; host: string; token?: string }>({
  command: 'web',
  describe: 'Serve the read-only web page of the store (refs, tensors, compare, open local files) on loopback',
  builder: (y) =>
    y
      .option('port', { type: 'number', default: 8080, describe: 'TCP port (0: any free port)' })
      .option('host', { type: 'string', default: '127.0.0.1', describe: 'loopback address to listen on' })
      .option('token', {
        type: 'string',
        describe: 'require this bearer token for the JSON (the page reads #token=...)',
      }),
  handler: async (args, ctx) => {
    if (!LOOPBACK.has(args.host)) {
      throw new TensorFSError(
        'invalid_argument',
        'tfs web listens on loopback only (use tfs serve to publish a store)',
        {
          details: { rule: 'cli.web_loopback', host: args.host },
        },
      );
    }
    if (!Number.isInteger(args.port) || args.port < 0 || args.port > 65535) {
      throw new TensorFSError('invalid_argument', 'the port must be an integer from 0 to 65535', {
        details: { rule: 'cli.port', actual: String(args.port) },
      });
    }
    const store = await LocalStore.open(ctx.existingStoreDir(), { readOnly: true });
    const token = args.token;
    const handle = webHandler(
      store,
      token ? { authorize: (req) => req.headers.authorization === `Bearer ${token}` } : {},
    );
    const server = http.createServer((req, res) => {
      handle(req, res)
        .then((done) => {
          if (!done) {
            res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
            res.end('not found\n');
          }
        })
        .catch(() => {
          if (!res.headersSent) res.writeHead(500);
          res.end();
        });
    });
    try {
      server.listen(args.port, args.host);
      await Promise.race([once(server, 'listening'), once(server, 'error').then(([e]) => Promise.reject(e))]).catch(
        (e) => {
          throw new TensorFSError('unavailable', 'cannot listen on that port', {
            details: { rule: 'cli.listen', port: args.port, reason: (e as NodeJS.ErrnoException).code ?? 'unknown' },
          });
        },
      );
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : args.port;
      const host = args.host.includes(':') ? `[${args.host}]` : args.host;
      ctx.result({ url: `http://${host}:${port}/` }, () => `serving http://${host}:${port}/ (Ctrl-C to stop)`);
      await new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve();
        ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      });
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await store.close();
    }
  },
});
