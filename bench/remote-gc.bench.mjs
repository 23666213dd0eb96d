// Remote GC time for 10,000 objects on moto (issue 27 item 7): a bucket holding one snapshot that
// reaches 5,000 small objects and 5,000 objects no ref reaches. Ours: `gcOrigin` (list with ages,
// mark from the refs, decide) as `--dry-run`, then the real sweep (5,000 deletions in batches of
// 1,000). Baseline, same run: listing the bucket's objects through the SDK the way `aws s3 ls
// --recursive` does (ListObjectsV2 pages, nothing else) — the floor any sweep pays.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { LocalStore } from '@tensorfs/cas';
import { S3Origin, gcOrigin, push } from '@tensorfs/remote';
import { median, report } from './lib.mjs';

// The SDK @tensorfs/remote depends on (the repository root does not).
const sdkPath = createRequire(fileURLToPath(new URL('../packages/remote/package.json', import.meta.url))).resolve(
  '@aws-sdk/client-s3',
);
const { ListObjectsV2Command, PutObjectCommand, S3Client } = await import(pathToFileURL(sdkPath).href);

/** moto on a free loopback port with one bucket (moto_server, as the tests run it). */
async function startMoto(bucket) {
  const port = await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const p = srv.address().port;
      srv.close(() => resolve(p));
    });
  });
  // The same serial moto app the tests run (see packages/testkit/src/moto.ts).
  const app = [
    'import sys',
    'from werkzeug.serving import run_simple',
    'from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app',
    "run_simple('127.0.0.1', int(sys.argv[1]), DomainDispatcherApplication(create_backend_app), threaded=False)",
  ].join('\n');
  const proc = spawn('python3', ['-c', app, String(port)], { stdio: 'ignore' });
  const endpoint = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      await fetch(`${endpoint}/moto-api/`);
      break;
    } catch {
      if (i > 300) throw new Error('moto did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await fetch(`${endpoint}/${bucket}`, { method: 'PUT' });
  return {
    bucket,
    env: {
      AWS_ENDPOINT_URL: endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'testing',
      AWS_SECRET_ACCESS_KEY: 'testing',
    },
    stop: () => proc.kill('SIGTERM'),
  };
}

const N = 10_000;
const moto = await startMoto('tfs-bench-gc');
const dir = mkdtempSync(join(tmpdir(), 'tfs-bench-rgc-'));
try {
  const store = await LocalStore.open(join(dir, 'store'));
  const items = Array.from({ length: N }, () => ({ bytes: randomBytes(64) }));
  const out = await store.putBatch(items);
  const records = out.map((o) => ({ digest: o.result.id, length: o.result.length }));
  const reach = records.slice(0, N / 2);
  const id = await store.putManifest({
    entries: reach.map((r, i) => ({
      path: `f${String(i).padStart(5, '0')}.bin`,
      kind: 'file',
      mode: 0o644,
      size: 64,
      profile: 'blob-v1',
      records: [r],
    })),
  });
  await store.setRef('bench/many', id);
  const origin = new S3Origin(`s3://${moto.bucket}/gc`, { env: moto.env });
  const t0 = performance.now();
  console.log('pushing the reachable half');
  await push(store, origin, 'bench/many');
  console.log(`pushed in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // The unreachable half, straight into the bucket (as a removed ref would leave them).
  const client = new S3Client({
    endpoint: moto.env.AWS_ENDPOINT_URL,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
  });
  let next = N / 2;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < N) {
        const k = next++;
        await client.send(
          new PutObjectCommand({
            Bucket: moto.bucket,
            Key: `gc/chunks/${records[k].digest.slice(7)}`,
            Body: items[k].bytes,
          }),
        );
      }
    }),
  );
  console.log(`filled the bucket with ${N + 1} objects in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const list = async () => {
    let token;
    let n = 0;
    do {
      const page = await client.send(
        new ListObjectsV2Command({ Bucket: moto.bucket, Prefix: 'gc/chunks/', ContinuationToken: token }),
      );
      n += page.Contents?.length ?? 0;
      token = page.NextContinuationToken;
    } while (token);
    return n;
  };
  const ours = [];
  const base = [];
  for (let i = 0; i < 3; i++) {
    let t = performance.now();
    const n = await list();
    base.push(performance.now() - t);
    if (n !== N + 1) throw new Error(`listed ${n}`);
    t = performance.now();
    const dry = await gcOrigin(origin, { graceMs: 0, dryRun: true });
    ours.push(performance.now() - t);
    if (dry.removed !== N / 2 || dry.bytes !== (N / 2) * 64) throw new Error(`dry run: ${JSON.stringify(dry)}`);
  }
  report('remote gc --dry-run, 10k objects (moto)', median(ours), 'SDK listing', median(base));
  let t = performance.now();
  const real = await gcOrigin(origin, { graceMs: 0 });
  const sweep = performance.now() - t;
  t = performance.now();
  const left = await list();
  const after = performance.now() - t;
  if (real.removed !== N / 2 || left !== N / 2 + 1) throw new Error(`sweep: ${JSON.stringify(real)} left ${left}`);
  report(
    'remote gc (sweeps 5k of 10k objects, moto)',
    sweep,
    'SDK listing of 10k',
    median(base),
    `listing after: ${after.toFixed(0)} ms`,
  );
  client.destroy();
  await origin.close();
  await store.close();
} finally {
  await moto.stop();
  rmSync(dir, { recursive: true, force: true });
}
