import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { s3ConfigFromEnv } from '../src/index.js';

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

/** A running moto_server with a bucket, and the AWS environment that points at it. */
export interface Moto {
  env: NodeJS.ProcessEnv;
  bucket: string;
  stop(): Promise<void>;
}

/** Starts `moto_server` on a loopback port (fails clearly if it is not installed). */
export async function startMoto(bucket = 'tfs-test'): Promise<Moto> {
  const port = await freePort();
  let proc: ChildProcess;
  try {
    proc = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    throw new Error(`moto_server is required for the S3 tests and could not be started: ${String(err)}`);
  }
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  const spawnError = new Promise<never>((_, reject) =>
    proc.once('error', (err) => reject(new Error(`moto_server is required for the S3 tests: ${err.message}`))),
  );
  const env: NodeJS.ProcessEnv = {
    AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'testing',
    AWS_SECRET_ACCESS_KEY: 'testing',
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const r = await Promise.race([fetch(`http://127.0.0.1:${port}/moto-api/`), spawnError]);
      if (r.status < 500) break;
    } catch (err) {
      if (String(err).includes('moto_server is required')) throw err;
      if (Date.now() > deadline) throw new Error(`moto_server did not start: ${stderr.slice(-500)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const client = new S3Client({
    ...s3ConfigFromEnv(env),
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
  });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  client.destroy();
  return {
    env,
    bucket,
    stop: async () => {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    },
  };
}
