import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';

/** A free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * moto's own `moto_server` serves each request on a thread and checks `If-Match`/`If-None-Match`
 * before it writes, without a lock: under load two racing conditional writes can both succeed,
 * which S3 itself never allows (seen once among six simultaneous ref writers). The tests are of
 * our compare-and-swap, not of moto's locking, so moto runs serially: the same app, one request
 * at a time.
 */
const SERIAL_MOTO = [
  'import sys',
  'from werkzeug.serving import run_simple',
  'from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app',
  "run_simple('127.0.0.1', int(sys.argv[1]), DomainDispatcherApplication(create_backend_app), threaded=False)",
].join('\n');

/** A running moto S3 server with one bucket, and the AWS environment that points at it. */
export interface Moto {
  proc: ChildProcess;
  env: NodeJS.ProcessEnv;
  bucket: string;
  /** Stops the server (SIGTERM) and resolves with its exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts moto (`python3 -m pip install 'moto[server]'`) on a loopback port and creates `bucket`.
 * Fails, never skips, when moto is missing.
 */
export async function startMoto(bucket: string): Promise<Moto> {
  const port = await freePort();
  const proc = spawn('python3', ['-c', SERIAL_MOTO, String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  const failed = new Promise<never>((_, reject) => {
    proc.once('error', (e) => reject(new Error(`moto is required for the S3 tests: ${e.message}`)));
    proc.once('exit', () => reject(new Error(`moto is required for the S3 tests: ${stderr.slice(-500)}`)));
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await Promise.race([fetch(`${endpoint}/moto-api/`), failed]);
      break;
    } catch (err) {
      if (String(err).includes('moto is required')) throw err;
      if (Date.now() > deadline) throw new Error(`moto did not start: ${stderr.slice(-500)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const r = await fetch(`${endpoint}/${bucket}`, { method: 'PUT' });
  if (r.status !== 200) throw new Error(`moto: cannot create bucket ${bucket} (${r.status})`);
  return {
    proc,
    bucket,
    env: {
      AWS_ENDPOINT_URL: endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'testing',
      AWS_SECRET_ACCESS_KEY: 'testing',
    },
    stop: async (signal = 'SIGTERM') => {
      if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
      const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));
      proc.kill(signal);
      return exited;
    },
  };
}
