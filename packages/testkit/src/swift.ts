import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort, startMoto } from './moto.js';

const run = promisify(execFile);

/** Debian's Swift runs on the system Python (the servers' `#!` line), whatever `python3` is on PATH. */
const PY = '/usr/bin/python3';

/** The S3 key pair tempauth knows (`user_test_tester = testing .admin`): access key `test:tester`. */
export const SWIFT_ACCESS_KEY = 'test:tester';
export const SWIFT_SECRET = 'testing';
/** A second tempauth user (same secret) without rights on the bucket: its requests are `AccessDenied`. */
export const SWIFT_UNPRIVILEGED_KEY = 'test:reader';

/** A running all-in-one OpenStack Swift with its `s3api` middleware, one bucket, and the AWS environment for it. */
export interface Swift {
  env: NodeJS.ProcessEnv;
  bucket: string;
  /** The proxy's URL (`http://127.0.0.1:PORT`). */
  endpoint: string;
  /** Where the object server keeps its files (`…/node/d1/objects/…`). */
  devices: string;
  /** How long the start took, in milliseconds. */
  startMs: number;
  /** Stops every process (their process groups) and removes the storage. */
  stop(): Promise<void>;
}

/** Options of {@link startSwift}. */
export interface SwiftOptions {
  /** Keep the storage on a loop-mounted ext4 image even when the temp folder takes user xattrs. */
  loopImage?: boolean;
}

// Builds the three rings (one device, one replica) with the library `swift-ring-builder` uses: one
// Python start instead of nine.
const RINGS = `
import sys
from swift.common.ring import RingBuilder
d = sys.argv[1]
for name, port in zip(['account', 'container', 'object'], sys.argv[2:5]):
    b = RingBuilder(4, 1, 0)
    b.add_dev({'id': 0, 'region': 1, 'zone': 1, 'ip': '127.0.0.1', 'port': int(port), 'device': 'd1', 'weight': 1.0})
    b.rebalance()
    b.get_ring().save('%s/%s.ring.gz' % (d, name))
`;

const XATTR = `
import os, sys
p = os.path.join(sys.argv[1], '.xattr-probe')
open(p, 'w').close()
try:
    os.setxattr(p, 'user.tfs', b'1')
finally:
    os.unlink(p)
`;

function serverConf(kind: string, dir: string, devices: string, port: number): string {
  return [
    '[DEFAULT]',
    `devices = ${devices}`,
    'mount_check = false',
    'bind_ip = 127.0.0.1',
    `bind_port = ${port}`,
    // One process (no fork, so no switch to the `swift` user), as whoever runs the tests.
    'workers = 0',
    `user = ${userInfo().username}`,
    `swift_dir = ${dir}`,
    'log_level = WARNING',
    '[pipeline:main]',
    `pipeline = ${kind}-server`,
    `[app:${kind}-server]`,
    `use = egg:swift#${kind}`,
    `[${kind}-replicator]`,
    `[${kind}-auditor]`,
    '',
  ].join('\n');
}

function proxyConf(dir: string, port: number, memcached: number): string {
  // Pipeline name → egg entry point.
  const filters: [string, string][] = [
    ['catch_errors', 'catch_errors'],
    ['gatekeeper', 'gatekeeper'],
    ['healthcheck', 'healthcheck'],
    ['proxy-logging', 'proxy_logging'],
    ['listing_formats', 'listing_formats'],
    ['copy', 'copy'],
    ['slo', 'slo'],
    ['dlo', 'dlo'],
  ];
  return [
    '[DEFAULT]',
    'bind_ip = 127.0.0.1',
    `bind_port = ${port}`,
    'workers = 0',
    `user = ${userInfo().username}`,
    `swift_dir = ${dir}`,
    'log_level = WARNING',
    '[pipeline:main]',
    'pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats s3api tempauth copy slo dlo proxy-logging proxy-server',
    '[app:proxy-server]',
    'use = egg:swift#proxy',
    'account_autocreate = true',
    '[filter:tempauth]',
    'use = egg:swift#tempauth',
    `user_test_tester = ${SWIFT_SECRET} .admin`,
    // A user of the same account without the admin role: signs correctly, may touch nothing.
    `user_test_reader = ${SWIFT_SECRET}`,
    '[filter:s3api]',
    'use = egg:swift#s3api',
    '[filter:cache]',
    'use = egg:swift#memcache',
    `memcache_servers = 127.0.0.1:${memcached}`,
    ...filters.flatMap(([name, egg]) => [`[filter:${name}]`, `use = egg:swift#${egg}`]),
    '',
  ].join('\n');
}

async function usableXattrs(dir: string): Promise<boolean> {
  try {
    await run(PY, ['-c', XATTR, dir]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts memcached and Swift's proxy (`s3api` + `tempauth`), account, container and object servers
 * on free loopback ports, storage in a temp folder (on a loop-mounted ext4 image made here when
 * that folder takes no user xattrs), waits until a bucket can be created, and creates `bucket`.
 * Fails, never skips, when Swift is not installed (`scripts/ensure-system.sh` installs it).
 */
export async function startSwift(bucket: string, options: SwiftOptions = {}): Promise<Swift> {
  const t0 = Date.now();
  const dir = await mkdtemp(path.join(tmpdir(), 'tfs-swift-'));
  const devices = path.join(dir, 'node');
  mkdirSync(path.join(devices, 'd1'), { recursive: true });
  const procs: ChildProcess[] = [];
  let mounted = false;
  let logs = '';
  const stop = async () => {
    await Promise.all(
      procs.map(async (p) => {
        if (p.exitCode !== null || p.signalCode !== null || p.pid === undefined) return;
        const exited = new Promise<void>((res) => p.once('exit', () => res()));
        try {
          process.kill(-p.pid, 'SIGTERM');
        } catch {
          return;
        }
        const late = setTimeout(() => {
          try {
            process.kill(-p.pid!, 'SIGKILL');
          } catch {}
        }, 3000);
        await exited;
        clearTimeout(late);
      }),
    );
    if (mounted) await run('umount', [path.join(devices, 'd1')]).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    if (options.loopImage || !(await usableXattrs(path.join(devices, 'd1')))) {
      const image = path.join(dir, 'd1.img');
      await run('truncate', ['-s', '1G', image]);
      await run('mkfs.ext4', ['-q', '-F', image]);
      await run('mount', ['-o', 'loop', image, path.join(devices, 'd1')]);
      mounted = true;
    }
    const [account, container, object, proxy, memcached] = await Promise.all([1, 2, 3, 4, 5].map(() => freePort()));
    writeFileSync(
      path.join(dir, 'swift.conf'),
      '[swift-hash]\nswift_hash_path_suffix = tfs-test\nswift_hash_path_prefix = tfs-test\n[storage-policy:0]\nname = Policy-0\ndefault = yes\n',
    );
    writeFileSync(path.join(dir, 'account-server.conf'), serverConf('account', dir, devices, account!));
    writeFileSync(path.join(dir, 'container-server.conf'), serverConf('container', dir, devices, container!));
    writeFileSync(path.join(dir, 'object-server.conf'), serverConf('object', dir, devices, object!));
    writeFileSync(path.join(dir, 'proxy-server.conf'), proxyConf(dir, proxy!, memcached!));
    const start = (cmd: string, args: string[]) => {
      const p = spawn(cmd, args, { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
      procs.push(p);
      p.stderr!.on('data', (d) => {
        logs = (logs + d).slice(-4000);
      });
      return new Promise<never>((_, reject) => {
        p.once('error', (e) => reject(new Error(`Swift is required for the S3 tests (${cmd}): ${e.message}`)));
        p.once('exit', (code) => reject(new Error(`${cmd} exited (${code}): ${logs.slice(-1500)}`)));
      });
    };
    const rings = run(PY, ['-c', RINGS, dir, String(account), String(container), String(object)]).catch((e) => {
      throw new Error(
        `Swift is required for the S3 tests (ring builder): ${String(e.stderr ?? e.message).slice(-800)}`,
      );
    });
    const failed = Promise.race([
      start('memcached', ['-l', '127.0.0.1', '-p', String(memcached), '-U', '0', '-u', 'root']),
      rings.then(() =>
        Promise.race(
          ['account', 'container', 'object', 'proxy'].map((k) =>
            start(`/usr/bin/swift-${k}-server`, [path.join(dir, `${k}-server.conf`)]),
          ),
        ),
      ),
    ]);
    failed.catch(() => {});
    const endpoint = `http://127.0.0.1:${proxy}`;
    const deadline = Date.now() + 120_000;
    // Ready when the bucket can be made: the proxy, tempauth, memcached and all three rings answer.
    for (;;) {
      const made = await Promise.race([createBucket(endpoint, bucket).catch(() => 0), failed]);
      if (made === 200) break;
      if (Date.now() > deadline) throw new Error(`Swift did not start: ${logs.slice(-1500)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    return {
      bucket,
      endpoint,
      devices,
      startMs: Date.now() - t0,
      env: {
        AWS_ENDPOINT_URL: endpoint,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: SWIFT_ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY: SWIFT_SECRET,
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Creates a bucket with a SigV4-signed PUT (the SDK is not a testkit dependency: signs by hand). */
async function createBucket(endpoint: string, bucket: string): Promise<number> {
  const { createHash, createHmac } = await import('node:crypto');
  const url = new URL(`${endpoint}/${bucket}`);
  const now = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
  const day = now.slice(0, 8);
  const empty = createHash('sha256').update('').digest('hex');
  const headers: Record<string, string> = { host: url.host, 'x-amz-content-sha256': empty, 'x-amz-date': now };
  const signed = Object.keys(headers).sort();
  const canonical = [
    'PUT',
    url.pathname,
    '',
    ...signed.map((h) => `${h}:${headers[h]}`),
    '',
    signed.join(';'),
    empty,
  ].join('\n');
  const scope = `${day}/us-east-1/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', now, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  let key: Buffer = createHmac('sha256', `AWS4${SWIFT_SECRET}`).update(day).digest();
  for (const part of ['us-east-1', 's3', 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  const sig = createHmac('sha256', key).update(toSign).digest('hex');
  const r = await fetch(url, {
    method: 'PUT',
    headers: {
      ...headers,
      authorization: `AWS4-HMAC-SHA256 Credential=${SWIFT_ACCESS_KEY}/${scope}, SignedHeaders=${signed.join(';')}, Signature=${sig}`,
    },
    signal: AbortSignal.timeout(5000),
  });
  await r.arrayBuffer();
  return r.status;
}

/** The S3 implementations the tests run against. */
export type S3Kind = 'moto' | 'swift';
/** The S3 services the shared S3 suites are parametrized over. */
export const S3_KINDS: readonly S3Kind[] = ['moto', 'swift'];

/** A running S3 service of either kind. */
export interface S3Service {
  kind: S3Kind;
  env: NodeJS.ProcessEnv;
  bucket: string;
  stop(): Promise<unknown>;
}

/** Starts moto or Swift with `bucket`. */
export async function startS3(kind: S3Kind, bucket: string): Promise<S3Service> {
  const s = kind === 'moto' ? await startMoto(bucket) : await startSwift(bucket);
  return { kind, env: s.env, bucket: s.bucket, stop: () => s.stop() };
}
