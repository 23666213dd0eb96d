/**
 * `tfs pull`, `push`, `serve` and `remote` end to end through the built CLI, against a folder,
 * nginx over a folder, the hub (`tfs serve`) and S3 (moto_server). Run `pnpm build` first.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { safetensorsBytes } from '@tensorfs/testkit';
import { type Running, startMoto, startNginx, tfs, tfsServe, tfsSync } from './remote-servers.js';

const dirs: string[] = [];
const running: Running[] = [];
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'tfs-cli-remote-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function rnd(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}

const FILES: Record<string, Buffer> = {
  'unet/w.bin': rnd(200_000, 1),
  'text/enc.bin': rnd(50_000, 2),
  'model.json': Buffer.from('{"a":1}\n'),
};

/** A store holding FILES as `team/model`. */
function sourceStore(): string {
  const src = temp();
  for (const [p, b] of Object.entries(FILES)) {
    mkdirSync(dirname(join(src, p)), { recursive: true });
    writeFileSync(join(src, p), b);
  }
  const store = join(temp(), 'a');
  const r = tfsSync(['import', src, '--name', 'team/model', '--store', store]);
  expect(r.code, r.stderr).toBe(0);
  return store;
}

function json(s: string) {
  return JSON.parse(s.trim().split('\n').pop()!);
}

/** Pulls `team/model` from `origin` into a new store and checks every byte. */
async function pullAndCheck(origin: string, env: NodeJS.ProcessEnv = {}) {
  const store = join(temp(), 'b');
  const r = await tfs(['pull', origin, 'team/model', '--store', store, '--json'], env);
  expect(r.code, r.stderr).toBe(0);
  const stats = json(r.stdout);
  expect(stats.objects).toEqual({ total: 4, present: 0, fetched: 4 });
  expect(tfsSync(['verify', '--data', '--store', store]).code).toBe(0);
  const out = temp();
  expect(tfsSync(['export', 'team/model', out, '--store', store]).code).toBe(0);
  for (const [p, b] of Object.entries(FILES)) expect(readFileSync(join(out, p)).equals(b)).toBe(true);
  // Pulling again fetches nothing.
  const again = await tfs(['pull', origin, 'team/model', '--store', store, '--json'], env);
  expect(json(again.stdout).objects).toEqual({ total: 4, present: 4, fetched: 0 });
  return stats;
}

describe('tfs push / pull', () => {
  it('through a folder origin', async () => {
    const a = sourceStore();
    const origin = join(temp(), 'origin');
    const p = await tfs(['push', origin, 'team/model', '--store', a, '--json']);
    expect(p.code, p.stderr).toBe(0);
    expect(json(p.stdout).objects).toEqual({ total: 4, present: 0, sent: 4 });
    await pullAndCheck(origin);
    await pullAndCheck(`file://${origin}`);
    const conflict = await tfs(['push', origin, 'team/model', '--store', a, '--expected', 'none', '--json']);
    expect(conflict.code).toBe(7);
    expect(json(conflict.stderr).error.code).toBe('conflict');
  });

  it('through nginx serving a portable folder (static HTTP origin)', async () => {
    const a = sourceStore();
    const folder = join(temp(), 'site');
    expect((await tfs(['push', folder, 'team/model', '--store', a])).code).toBe(0);
    const nginx = await startNginx(folder);
    running.push(nginx);
    await pullAndCheck(nginx.url);
    // A static origin is read-only.
    const p = await tfs(['push', nginx.url, 'team/model', '--store', a, '--json']);
    expect(p.code).toBe(5);
    const missing = await tfs(['pull', nginx.url, 'team/none', '--store', join(temp(), 'c'), '--json']);
    expect(missing.code).toBe(6);
  });

  it('through the hub (tfs serve) with scoped tokens, then SIGTERM', async () => {
    const a = sourceStore();
    const hubStore = join(temp(), 'hub');
    expect(tfsSync(['ls', '--store', hubStore]).code).not.toBe(0); // no store yet: serve creates it
    const tokens = join(temp(), 'tokens.json');
    writeFileSync(
      tokens,
      JSON.stringify({
        tokens: [
          { token: 'writer-token-123456', read: ['*'], write: ['team/*'] },
          { token: 'reader-token-123456', read: ['team/*'] },
        ],
      }),
    );
    const hub = await tfsServe(['--store', hubStore, '--tokens', tokens]);
    running.push(hub);
    const anon = await tfs(['push', hub.url, 'team/model', '--store', a, '--json']);
    expect(anon.code).toBe(8);
    const reader = await tfs(['push', hub.url, 'team/model', '--store', a, '--json'], {
      TENSORFS_TOKEN: 'reader-token-123456',
    });
    expect(reader.code).toBe(8);
    const tokenFile = join(temp(), 'token');
    writeFileSync(tokenFile, 'writer-token-123456\n');
    const p = await tfs(['push', hub.url, 'team/model', '--store', a, '--token-file', tokenFile, '--json']);
    expect(p.code, p.stderr).toBe(0);
    expect(json(p.stdout).objects.sent).toBe(4);
    // Write scope is per ref glob: this token may not move a ref outside team/.
    const outside = await tfs(['push', hub.url, 'team/model', '--name', 'other/model', '--store', a], {
      TENSORFS_TOKEN: 'writer-token-123456',
    });
    expect(outside.code).toBe(8);
    expect((await tfs(['pull', hub.url, 'team/model', '--store', join(temp(), 'x')])).code).toBe(8);
    await pullAndCheck(hub.url, { TENSORFS_TOKEN: 'reader-token-123456' });
    expect(await hub.stop('SIGTERM')).toBe(0);
  });

  it('a --token-file that names a folder is a local error about the file, not denied', async () => {
    const a = sourceStore();
    const hub = await tfsServe(['--store', a]);
    running.push(hub);
    const folder = temp();
    for (const argv of [
      ['push', hub.url, 'team/model', '--name', 'team/copy', '--store', a, '--token-file', folder],
      ['pull', hub.url, 'team/model', '--store', join(temp(), 'x'), '--token-file', folder],
      ['cat', 'team/model', 'model.safetensors', '--from', hub.url, '--store', a, '--token-file', folder],
    ]) {
      const r = await tfs(argv);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe('error[invalid_argument]: the token file is a folder; name the file holding the token\n');
      const j = await tfs([...argv, '--json']);
      expect(j.code).toBe(2);
      expect(JSON.parse(j.stderr).error).toMatchObject({
        code: 'invalid_argument',
        details: { rule: 'cli.token_file_not_file' },
      });
    }
    const missing = await tfs([
      'pull',
      hub.url,
      'team/model',
      '--store',
      join(temp(), 'y'),
      '--token-file',
      join(folder, 'nope'),
    ]);
    expect(missing.code).toBe(6);
    expect(missing.stderr).toBe('error[not_found]: the token file does not exist\n');
  });

  it('a hub without a tokens file is anonymous and read-only', async () => {
    const a = sourceStore();
    const hub = await tfsServe(['--store', a]);
    running.push(hub);
    await pullAndCheck(hub.url);
    const p = await tfs(['push', hub.url, 'team/model', '--name', 'team/copy', '--store', a, '--json']);
    expect(p.code).toBe(8);
  });

  describe('S3 (moto_server)', () => {
    let moto: Running & { env: NodeJS.ProcessEnv };
    beforeAll(async () => {
      moto = await startMoto('tfs-cli');
    }, 60_000);
    afterAll(async () => {
      await moto?.stop();
    });

    it('push and pull against s3://, and a stateless hub over the bucket', async () => {
      const a = sourceStore();
      const p = await tfs(['push', 's3://tfs-cli/direct', 'team/model', '--store', a, '--json'], moto.env);
      expect(p.code, p.stderr).toBe(0);
      await pullAndCheck('s3://tfs-cli/direct', moto.env);
      const hub = await tfsServe(['--objects', 's3://tfs-cli/direct'], moto.env);
      running.push(hub);
      await pullAndCheck(hub.url);
    });

    it("stderr carries only TensorFS's lines: no SDK Node-version warning, no abort-listener warning", async () => {
      // Forty objects: pushes run sixteen requests at once under one signal.
      const files = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`f${i}.bin`, rnd(3000 + i, 50 + i)]));
      const src = temp();
      for (const [f, b] of Object.entries(files)) writeFileSync(join(src, f), b);
      const a = join(temp(), 'a');
      expect(tfsSync(['import', src, '--name', 'team/many', '--store', a]).code).toBe(0);
      const p = await tfs(['push', 's3://tfs-cli/quiet', 'team/many', '--store', a], moto.env);
      expect(p.code, p.stderr).toBe(0);
      expect(p.stderr).toBe('');
      const q = await tfs(['pull', 's3://tfs-cli/quiet', 'team/many', '--store', join(temp(), 'b')], moto.env);
      expect(q.code, q.stderr).toBe(0);
      expect(q.stderr).toBe('');
    });

    it('a pull from a missing bucket names the bucket, not a missing ref', async () => {
      const q = await tfs(['pull', 's3://tfs-no-bucket/x', 'team/model', '--store', join(temp(), 'b')], moto.env);
      expect(q.code).toBe(6);
      expect(q.stderr).toBe('error[not_found]: s3 origin: read ref failed: bucket tfs-no-bucket does not exist\n');
    });
  });
});

describe('tfs remote', () => {
  it('adds, lists, uses and removes named origins', async () => {
    const a = sourceStore();
    const origin = join(temp(), 'origin');
    const b = join(temp(), 'b');
    expect(tfsSync(['remote', 'add', 'shared', origin, '--store', a]).code).toBe(0);
    expect(tfsSync(['remote', 'add', 'shared', origin, '--store', a]).code).toBe(7);
    expect(tfsSync(['remote', 'add', 'bad', 'https://user:pw@example.invalid/', '--store', a]).code).toBe(2);
    const ls = tfsSync(['remote', 'ls', '--store', a, '--json']);
    expect(JSON.parse(ls.stdout)).toEqual({ remotes: [{ name: 'shared', url: origin }] });
    expect((await tfs(['push', 'shared', 'team/model', '--store', a])).code).toBe(0);
    expect(tfsSync(['remote', 'add', 'shared', origin, '--store', b]).code).toBe(0);
    expect((await tfs(['pull', 'shared', 'team/model', '--store', b])).code).toBe(0);
    expect(tfsSync(['remote', 'rm', 'shared', '--store', a]).code).toBe(0);
    expect(tfsSync(['remote', 'rm', 'shared', '--store', a]).code).toBe(6);
    expect(JSON.parse(tfsSync(['remote', 'ls', '--store', a, '--json']).stdout)).toEqual({ remotes: [] });
  });

  it('separates name and URL with a real tab, escaping only what is inside a field', () => {
    const a = sourceStore();
    const origin = join(temp(), 'origin');
    const odd = join(temp(), 'with\ttab');
    const add = tfsSync(['remote', 'add', 'shared', origin, '--store', a]);
    expect(add.code).toBe(0);
    expect(add.stdout).toBe(`shared\t${origin}\n`);
    expect(tfsSync(['remote', 'add', 'odd', odd, '--store', a]).code).toBe(0);
    const ls = tfsSync(['remote', 'ls', '--store', a]);
    expect(ls.code).toBe(0);
    // The separator is one byte 0x09; the tab inside the folder's name is escaped so it cannot forge a column.
    expect(Buffer.from(ls.stdout)).toEqual(Buffer.from(`odd\t${odd.replace('\t', '\\x09')}\nshared\t${origin}\n`));
  });
});

describe('tensor-level transfers', () => {
  const safetensors = (tensors: Record<string, Buffer>) =>
    safetensorsBytes(
      Object.entries(tensors).map(([name, data]) => ({ name, dtype: 'F32', shape: [data.length / 4], data })),
    );

  it('pull --tensors and cat --from move only what they read', async () => {
    const T = { 'a.attn.weight': rnd(200_000, 5), 'a.mlp.weight': rnd(400_000, 6) };
    const src = temp();
    writeFileSync(join(src, 'model.safetensors'), safetensors(T));
    const a = join(temp(), 'a');
    expect(tfsSync(['import', src, '--name', 'team/st', '--store', a]).code).toBe(0);
    const origin = join(temp(), 'origin');
    expect((await tfs(['push', origin, 'team/st', '--store', a])).code).toBe(0);

    const b = join(temp(), 'b');
    const p = await tfs(['pull', origin, 'team/st', '--tensors', '*.attn.*', '--store', b, '--json']);
    expect(p.code, p.stderr).toBe(0);
    expect(json(p.stdout).bytes.fetched).toBeLessThan(220_000);
    const ls = tfsSync(['tensors', 'team/st', '--store', b, '--json']);
    expect(ls.stdout).toContain('a.attn.weight');
    expect(ls.stdout).not.toContain('a.mlp.weight');

    const c = join(temp(), 'c');
    const out = join(temp(), 'mlp.bin');
    const cat = await tfs(['cat', '--from', origin, 'team/st', 'a.mlp.weight', '-o', out, '--store', c, '--json']);
    expect(cat.code, cat.stderr).toBe(0);
    expect(readFileSync(out).equals(T['a.mlp.weight'])).toBe(true);
    const fetched = json(cat.stdout).fetched;
    expect(fetched.bytes).toBeGreaterThanOrEqual(400_000);
    expect(fetched.bytes).toBeLessThan(410_000);
  });
});
