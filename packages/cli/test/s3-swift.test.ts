/**
 * `tfs push`, `pull` and `serve --objects` against OpenStack Swift's s3api (real SigV4, no
 * conditional writes), through the built CLI: a hub keeping refs on its own disk over the bucket,
 * the direct push refused before any upload, denials and missing buckets named, and stderr
 * carrying only TensorFS's own lines. Run `pnpm build` first.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import { S3Origin } from '@tensorfs/remote';
import { SWIFT_ACCESS_KEY, type S3Service, bytesOf, idOf, startS3 } from '@tensorfs/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BIN, tfs, tfsSync } from './remote-servers.js';

const MiB = 1 << 20;
const BUCKET = 'tfs-cli-swift';
const TOKEN = 'tok-swift-cli-0123456789';
const WRONG = 'wrong-secret-plugh';

const dirs: string[] = [];
const procs: ChildProcess[] = [];
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'tfs-cli-swift-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const p of procs.splice(0)) {
    if (p.exitCode === null && p.signalCode === null) {
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM');
      await exited;
    }
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

let swift: S3Service;
beforeAll(async () => {
  swift = await startS3('swift', BUCKET);
}, 120_000);
afterAll(async () => {
  await swift?.stop();
});

/**
 * Every stderr line is TensorFS's: `error[<code>]: …` and its indented continuation lines, or with
 * `--json` one `{"error":{"code",…}}` line.
 */
function onlyTensorFSLines(stderr: string): void {
  const ours = (l: string) => {
    if (/^error\[[a-z_]+\]: /.test(l) || /^ {2}\S/.test(l)) return true;
    try {
      return typeof JSON.parse(l).error.code === 'string';
    } catch {
      return false;
    }
  };
  const lines = stderr.split('\n').filter((l) => l !== '');
  expect(lines.length).toBeGreaterThan(0);
  expect(lines.filter((l) => !ours(l))).toEqual([]);
}

/** `tfs serve` with its stderr kept; resolves with the URL, or with the exit code if it stops first. */
function serve(args: string[], env: NodeJS.ProcessEnv) {
  const proc = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--json', ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
  });
  procs.push(proc);
  let out = '';
  let err = '';
  proc.stderr.on('data', (d) => (err += d));
  const started = new Promise<{ url?: string; code?: number | null }>((resolve) => {
    proc.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve({ url: JSON.parse(out.split('\n')[0]!).url });
    });
    proc.once('exit', (code) => resolve({ code }));
  });
  return { proc, started, stderr: () => err };
}

/** A store holding `files` as `name`. */
function storeWith(name: string, files: Record<string, Uint8Array>): string {
  const src = temp();
  for (const [f, b] of Object.entries(files)) writeFileSync(join(src, f), b);
  const store = join(temp(), 'store');
  const r = tfsSync(['import', src, '--name', name, '--store', store]);
  expect(r.code, r.stderr).toBe(0);
  return store;
}

/** The SHA-256 of what the bucket holds for `id`, read straight from its `chunks/`. */
async function storedDigest(prefix: string, id: ObjectId): Promise<string> {
  const o = new S3Origin(`s3://${BUCKET}/${prefix}`, { env: swift.env, refsElsewhere: true });
  try {
    const r = await o.read(id, 0);
    const h = createHash('sha256');
    for await (const c of r.body) h.update(c);
    return `sha256:${h.digest('hex')}`;
  } finally {
    await o.close();
  }
}

describe('tfs against Swift s3api', () => {
  it('a > 64 MiB object pushed through a --refs hub lands with the right bytes and pulls back byte-exact', async () => {
    const big = bytesOf(64 * MiB + 12345, 41);
    const bigId = idOf(big);
    const a = storeWith('team/big', { 'model.bin': big, 'config.json': bytesOf(200, 3) });
    const dir = temp();
    writeFileSync(
      join(dir, 'tokens.json'),
      JSON.stringify({ tokens: [{ token: TOKEN, read: ['*'], write: ['team/*'] }] }),
    );
    const hub = serve(
      ['--objects', `s3://${BUCKET}/models`, '--refs', join(dir, 'refs'), '--tokens', join(dir, 'tokens.json')],
      swift.env,
    );
    const { url } = await hub.started;
    expect(url, hub.stderr()).toBeDefined();
    const p = await tfs(['push', url!, 'team/big', '--store', a, '--json'], { TENSORFS_TOKEN: TOKEN });
    expect(p.code, p.stderr).toBe(0);
    expect(p.stderr).toBe('');
    expect(await storedDigest('models', bigId)).toBe(bigId);
    const b = join(temp(), 'b');
    const q = await tfs(['pull', url!, 'team/big', '--store', b, '--json'], { TENSORFS_TOKEN: TOKEN });
    expect(q.code, q.stderr).toBe(0);
    expect(q.stderr).toBe('');
    const store = await LocalStore.open(b, { readOnly: true });
    try {
      expect(Buffer.compare(Buffer.from(await store.readObject(bigId, { verify: true })), big)).toBe(0);
    } finally {
      await store.close();
    }
    expect(hub.stderr()).toBe('');
  }, 240_000);

  it('a direct push is refused before any upload, naming what is missing and the remedy', async () => {
    const a = storeWith('team/model', { 'w.bin': bytesOf(100_000, 5) });
    const p = await tfs(['push', `s3://${BUCKET}/direct`, 'team/model', '--store', a], swift.env);
    expect(p.code).toBe(5);
    expect(p.stderr).toContain('refuses If-None-Match: *');
    expect(p.stderr).toContain(`tfs serve --objects s3://${BUCKET}/direct/ --refs DIR`);
    onlyTensorFSLines(p.stderr);
    const listing = await tfs(['pull', `s3://${BUCKET}/direct`, 'team/model', '--store', join(temp(), 'c')], swift.env);
    expect(listing.code).toBe(6);
    const o = new S3Origin(`s3://${BUCKET}/direct`, { env: swift.env, refsElsewhere: true });
    try {
      expect(await o.lacks([idOf(bytesOf(100_000, 5))])).toHaveLength(1);
    } finally {
      await o.close();
    }
  });

  it('a wrong secret is denied for push, pull and hub start-up, naming the key id and the code, never the secret', async () => {
    const env = { ...swift.env, AWS_SECRET_ACCESS_KEY: WRONG };
    const a = storeWith('team/model', { 'w.bin': bytesOf(1000, 6) });
    const started = Date.now();
    const hub = serve(['--objects', `s3://${BUCKET}/models`], env);
    expect(await hub.started).toEqual({ code: 8 });
    expect(Date.now() - started).toBeLessThan(20_000);
    const push = await tfs(['push', `s3://${BUCKET}/x`, 'team/model', '--store', a], env);
    const pull = await tfs(['pull', `s3://${BUCKET}/x`, 'team/model', '--store', join(temp(), 'b')], env);
    for (const [what, r] of [
      ['serve', { code: 8, stderr: hub.stderr() }],
      ['push', push],
      ['pull', pull],
    ] as const) {
      expect(r.code, what).toBe(8);
      expect(r.stderr, what).toContain(`access key id ${SWIFT_ACCESS_KEY} (SignatureDoesNotMatch)`);
      expect(r.stderr, what).not.toContain(WRONG);
      onlyTensorFSLines(r.stderr);
    }
  });

  it('a missing bucket is named: not_found for pull and hub start-up', async () => {
    const pull = await tfs(['pull', 's3://tfs-no-bucket/x', 'team/model', '--store', join(temp(), 'b')], swift.env);
    expect(pull.code).toBe(6);
    expect(pull.stderr).toContain('bucket tfs-no-bucket does not exist');
    onlyTensorFSLines(pull.stderr);
    const hub = serve(['--objects', 's3://tfs-no-bucket/x'], swift.env);
    expect(await hub.started).toEqual({ code: 6 });
    expect(hub.stderr()).toContain('bucket tfs-no-bucket does not exist');
    onlyTensorFSLines(hub.stderr());
  });

  it('no AWS configuration is invalid_argument naming what is missing', async () => {
    const home = temp();
    const env = {
      HOME: home,
      AWS_ENDPOINT_URL: swift.env.AWS_ENDPOINT_URL,
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_SHARED_CREDENTIALS_FILE: join(home, 'none'),
      AWS_CONFIG_FILE: join(home, 'none'),
    };
    const pull = await tfs(['pull', `s3://${BUCKET}/x`, 'team/model', '--store', join(temp(), 'b')], env);
    expect(pull.code).toBe(2);
    expect(pull.stderr).toContain('AWS_ACCESS_KEY_ID');
    onlyTensorFSLines(pull.stderr);
    const hub = serve(['--objects', `s3://${BUCKET}/x`], env);
    expect(await hub.started).toEqual({ code: 2 });
    onlyTensorFSLines(hub.stderr());
  });
});
