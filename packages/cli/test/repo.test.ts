/**
 * Repositories end to end through the built CLI (`pnpm build` first): two variants and a README
 * uploaded as a draft branch to a folder origin, S3 (moto_server) and the hub (`tfs serve`),
 * pulled back into other stores by repository id; `--variant` required exactly when a tree has
 * several; a tag made and refused when moved; `tfs log`; revisions by tree id and by revision
 * document id; older refs still readable; failed uploads leave the branch where it was.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { safetensorsBytes } from '@tensorfs/testkit';
import { type Running, startMoto, tfs, tfsServe, tfsSync } from './remote-servers.js';

const dirs: string[] = [];
const running: Running[] = [];
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'tfs-cli-repo-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const README = Buffer.from('# acme/m\n\nTwo variants of one tiny model.\n');
const sha = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

function json(s: string) {
  return JSON.parse(s.trim().split('\n').pop()!);
}

function errOf(s: string) {
  return JSON.parse(s.trim().split('\n').pop()!).error as { code: string; details: Record<string, unknown> };
}

function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}

/** A store with checkpoints local/int8 and local/bf16, and a folder: both variants' headers + README. */
function source(): { store: string; folder: string; headers: { int8: Buffer; bf16: Buffer } } {
  const work = temp();
  const store = join(work, 'store');
  const int8 = join(work, 'int8.safetensors');
  const bf16 = join(work, 'bf16.safetensors');
  writeFileSync(
    int8,
    safetensorsBytes([
      { name: 'embed.weight', dtype: 'I8', shape: [64, 16], data: bytes(1024, 1) },
      { name: 'head.weight', dtype: 'I8', shape: [16, 16], data: bytes(256, 2) },
    ]),
  );
  writeFileSync(
    bf16,
    safetensorsBytes([
      { name: 'embed.weight', dtype: 'BF16', shape: [64, 16], data: bytes(2048, 3) },
      { name: 'head.weight', dtype: 'BF16', shape: [16, 16], data: bytes(512, 4) },
    ]),
  );
  for (const [file, name] of [
    [int8, 'local/int8'],
    [bf16, 'local/bf16'],
  ] as const) {
    const c = tfsSync(['convert', file, '--name', name, '--store', store, '--threads', '1']);
    expect(c.code, c.stderr).toBe(0);
  }
  const folder = join(work, 'folder');
  mkdirSync(folder);
  writeFileSync(join(folder, 'README.md'), README);
  for (const v of ['int8', 'bf16']) {
    const e = tfsSync(['export', `local/${v}`, folder, '--cozytensors', '--variant', `model.${v}`, '--store', store]);
    expect(e.code, e.stderr).toBe(0);
  }
  const headers = {
    int8: readFileSync(join(folder, 'model.int8.cozytensors')),
    bf16: readFileSync(join(folder, 'model.bf16.cozytensors')),
  };
  return { store, folder, headers };
}

/**
 * The whole story against one origin: upload a draft, log, pull back by repository id (the
 * whole tree, then one variant), `--variant` required exactly when several, a tag made and
 * refused when moved, download, revisions by tree and revision id, and failed uploads that
 * leave the branch where it was.
 */
async function story(origin: string, env: NodeJS.ProcessEnv = {}, authorOf = (name: string) => name) {
  const src = source();
  const up = await tfs(
    ['upload', src.folder, 'acme/m@draft', '--to', origin, '--message', 'first draft', '--store', src.store, '--json'],
    { TENSORFS_AUTHOR: 'alice', ...env },
  );
  expect(up.code, up.stderr).toBe(0);
  const u = json(up.stdout);
  expect(u).toMatchObject({ repo: 'acme/m', branch: 'draft', previous: null, files: 3, variants: ['bf16', 'int8'] });
  expect(u.sent.objects.sent).toBe(u.sent.objects.total);
  expect(u.sent.objects.sent).toBeGreaterThan(4);

  // The same folder again: a new revision (a new move), nothing new on the wire but the revision document.
  const again = await tfs(
    ['upload', src.folder, 'acme/m@draft', '--to', origin, '--message', 'again', '--store', src.store, '--json'],
    { TENSORFS_AUTHOR: 'bob', ...env },
  );
  expect(again.code, again.stderr).toBe(0);
  const a2 = json(again.stdout);
  expect(a2.tree).toBe(u.tree);
  expect(a2.previous).toBe(u.commit);
  expect(a2.commit).not.toBe(u.commit);
  expect(a2.sent.objects.sent).toBe(0);

  // The log: both moves, newest first.
  const log = await tfs(['log', 'acme/m@draft', '--from', origin, '--json'], env);
  expect(log.code, log.stderr).toBe(0);
  const entries = json(log.stdout).entries;
  expect(entries.map((e: Record<string, unknown>) => [e.commit, e.previous, e.target, e.author, e.message])).toEqual([
    [a2.commit, u.commit, u.tree, authorOf('bob'), 'again'],
    [u.commit, null, u.tree, authorOf('alice'), 'first draft'],
  ]);
  expect(entries[0].time).toBeGreaterThanOrEqual(entries[1].time);
  const human = await tfs(['log', 'acme/m@draft', '--from', origin], env);
  expect(human.stdout.split('\n')[0]).toContain(
    `${authorOf('bob')}\t${u.commit} -> ${a2.commit}\ttree ${u.tree}\tagain`,
  );

  // A stale --expected is a conflict (exit 7) and the branch stays.
  const stale = await tfs(
    ['upload', src.folder, 'acme/m@draft', '--to', origin, '--expected', u.commit, '--store', src.store, '--json'],
    env,
  );
  expect(stale.code).toBe(7);
  expect(errOf(stale.stderr).code).toBe('conflict');

  // Pulled back into another store by repository id: the same branch, the same head.
  const b = join(temp(), 'b');
  const pull = await tfs(['pull', origin, 'acme/m@draft', '--store', b, '--json'], env);
  expect(pull.code, pull.stderr).toBe(0);
  const p = json(pull.stdout);
  expect(p).toMatchObject({ repo: 'acme/m', revision: 'draft', kind: 'branch', name: '_branches/acme/m/draft' });
  expect(p.id).toBe(a2.commit);
  expect(tfsSync(['verify', '--data', '--store', b]).code).toBe(0);
  const localLog = json(tfsSync(['log', 'acme/m@draft', '--store', b, '--json']).stdout).entries;
  expect(localLog.map((e: { commit: string }) => e.commit)).toEqual([a2.commit, u.commit]);

  // Several variants: --variant is required, and the error lists them.
  const noVariant = tfsSync(['tensors', 'acme/m@draft', '--store', b, '--json']);
  expect(noVariant.code).toBe(2);
  expect(errOf(noVariant.stderr)).toMatchObject({
    code: 'invalid_argument',
    details: { rule: 'repo.variant_required', variants: ['bf16', 'int8'] },
  });
  const int8 = tfsSync(['tensors', 'acme/m@draft', '--variant', 'int8', '--store', b, '--json']);
  expect(int8.code, int8.stderr).toBe(0);
  expect(json(int8.stdout).tensors.map((t: { name: string; dtype: string }) => [t.name, t.dtype])).toEqual([
    ['embed.weight', 'I8'],
    ['head.weight', 'I8'],
  ]);
  const unknown = tfsSync(['tensors', 'acme/m@draft', '--variant', 'fp4', '--store', b, '--json']);
  expect(unknown.code).toBe(6);
  expect(errOf(unknown.stderr).details.rule).toBe('repo.no_such_variant');
  const cat = tfsSync(['cat', 'acme/m@draft', 'head.weight', '--variant', 'bf16', '--store', b]);
  expect(cat.code, cat.stderr).toBe(0);

  // By tree id and by revision document id.
  const byTree = tfsSync(['ls', `acme/m@${u.tree}`, '--store', b, '--json']);
  expect(byTree.code, byTree.stderr).toBe(0);
  const listing = json(byTree.stdout);
  expect(listing.variants).toEqual(['bf16', 'int8']);
  expect(
    listing.entries.map((e: { path: string; size: number; variant?: string }) => [e.path, e.size, e.variant ?? null]),
  ).toEqual([
    ['README.md', README.length, null],
    ['model.bf16.cozytensors', src.headers.bf16.length, 'bf16'],
    ['model.int8.cozytensors', src.headers.int8.length, 'int8'],
  ]);
  const byCommit = tfsSync(['tensors', `acme/m@${a2.commit}`, '--variant', 'bf16', '--store', b, '--json']);
  expect(byCommit.code, byCommit.stderr).toBe(0);
  expect(json(byCommit.stdout).tensors.map((t: { dtype: string }) => t.dtype)).toEqual(['BF16', 'BF16']);

  // One variant pulled: a smaller local tree, where the variant is chosen without --variant.
  const c = join(temp(), 'c');
  const one = await tfs(['pull', origin, 'acme/m@draft', '--variant', 'int8', '--store', c, '--json'], env);
  expect(one.code, one.stderr).toBe(0);
  expect(json(one.stdout).variant).toBe('int8');
  const cTensors = tfsSync(['tensors', 'acme/m@draft', '--store', c, '--json']);
  expect(cTensors.code, cTensors.stderr).toBe(0);
  expect(json(cTensors.stdout).tensors.map((t: { dtype: string }) => t.dtype)).toEqual(['I8', 'I8']);
  const cLs = json(tfsSync(['ls', 'acme/m@draft', '--store', c, '--json']).stdout);
  expect(cLs.entries.map((e: { path: string }) => e.path)).toEqual(['README.md', 'model.int8.cozytensors']);

  // A tag on the origin: made once, refused when moved (exit 7), pulled as the same tag.
  const tag = await tfs(['tag', `acme/m@${u.commit}`, 'v1', '--to', origin, '--json'], env);
  expect(tag.code, tag.stderr).toBe(0);
  const moved = await tfs(['tag', 'acme/m@draft', 'v1', '--to', origin, '--json'], env);
  expect(moved.code).toBe(7);
  expect(errOf(moved.stderr)).toMatchObject({ code: 'conflict', details: { rule: 'repo.tag_exists' } });
  const d = join(temp(), 'd');
  const pt = await tfs(['pull', origin, 'acme/m@v1', '--store', d, '--json'], env);
  expect(pt.code, pt.stderr).toBe(0);
  expect(json(pt.stdout)).toMatchObject({ kind: 'tag', name: '_tags/acme/m/v1' });
  const ls = json(tfsSync(['ls', '--store', d, '--json']).stdout);
  expect(ls.repositories).toEqual([
    { repo: 'acme/m', branches: [], tags: [{ name: 'v1', head: json(pt.stdout).remoteId }] },
  ]);

  // Download: every file byte-exact, each variant with its chunks.
  const out = join(temp(), 'out');
  const dl = await tfs(
    ['download', 'acme/m@draft', out, '--from', origin, '--store', join(temp(), 'e'), '--json'],
    env,
  );
  expect(dl.code, dl.stderr).toBe(0);
  expect(readFileSync(join(out, 'README.md')).equals(README)).toBe(true);
  expect(readFileSync(join(out, 'model.int8.cozytensors')).equals(src.headers.int8)).toBe(true);
  expect(readFileSync(join(out, 'model.bf16.cozytensors')).equals(src.headers.bf16)).toBe(true);
  for (const f of readdirSync(join(out, 'chunks'))) {
    expect(sha(readFileSync(join(out, 'chunks', f)))).toBe(`sha256:${f}`);
  }
  // --file: one file only.
  const one2 = join(temp(), 'one');
  const df = await tfs(
    ['download', 'acme/m@draft', one2, '--file', 'README.md', '--from', origin, '--store', join(temp(), 'f')],
    env,
  );
  expect(df.code, df.stderr).toBe(0);
  expect(readdirSync(one2)).toEqual(['README.md']);

  // A header whose objects are nowhere: not_found naming them, and the branch stays.
  const bare = join(temp(), 'bare');
  mkdirSync(bare);
  writeFileSync(join(bare, 'model.cozytensors'), src.headers.int8);
  const fresh = join(temp(), 'fresh');
  const missing = await tfs(['upload', bare, 'acme/m@draft', '--to', origin, '--store', fresh, '--json'], env);
  expect(missing.code).toBe(6);
  const me = errOf(missing.stderr);
  expect(me.code).toBe('not_found');
  expect(me.details.rule).toBe('repo.missing_objects');
  expect((me.details.missing as string[]).length).toBeGreaterThan(0);
  const after = json((await tfs(['log', 'acme/m@draft', '--from', origin, '--json'], env)).stdout).entries;
  expect(after[0].commit).toBe(a2.commit);
  return { src, u, a2 };
}

describe('tfs upload / pull / tag / log / download', () => {
  it('through a folder origin', async () => {
    const origin = join(temp(), 'origin');
    await story(origin);
  }, 240_000);

  it('through the hub (tfs serve)', async () => {
    const hubStore = join(temp(), 'hub');
    const tokens = join(temp(), 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ tokens: [{ token: 'writer-token-123456', read: ['*'], write: ['*'] }] }));
    const hub = await tfsServe(['--store', hubStore, '--tokens', tokens]);
    running.push(hub);
    // On a hub the author is the token's owner id (16 hex digits of its SHA-256), which the hub checks.
    const owner = createHash('sha256').update('writer-token-123456').digest('hex').slice(0, 16);
    await story(hub.url, { TENSORFS_TOKEN: 'writer-token-123456' }, () => owner);
  }, 240_000);

  describe('S3 (moto_server)', () => {
    let moto: Running & { env: NodeJS.ProcessEnv };
    beforeAll(async () => {
      moto = await startMoto('tfs-repo');
    }, 60_000);
    afterAll(async () => {
      await moto?.stop();
    });
    it('through s3://', async () => {
      await story('s3://tfs-repo/models', moto.env);
    }, 240_000);
  });

  it('locally, with the origin from TENSORFS_ENDPOINT, and older refs still readable', async () => {
    const src = source();
    const up = tfsSync(['upload', src.folder, 'acme/m', '--store', src.store, '--json']);
    expect(up.code, up.stderr).toBe(0);
    const u = json(up.stdout);
    expect(u.branch).toBe('main');
    // The local main branch is the ref acme/m itself.
    expect(json(tfsSync(['ref', 'get', 'acme/m', '--store', src.store, '--json']).stdout).id).toBe(u.commit);
    // An older ref is a repository's main: readable bare and as @main.
    const plain = temp();
    writeFileSync(join(plain, 'notes.txt'), 'old\n');
    expect(tfsSync(['import', plain, '--name', 'team/old', '--store', src.store]).code).toBe(0);
    const old = json(tfsSync(['ls', 'team/old@main', '--store', src.store, '--json']).stdout);
    expect(old.entries.map((e: { path: string }) => e.path)).toEqual(['notes.txt']);
    const repos = json(tfsSync(['ls', '--store', src.store, '--json']).stdout).repositories;
    expect(repos.map((r: { repo: string }) => r.repo)).toEqual(expect.arrayContaining(['acme/m', 'team/old']));
    // A local tag, then refused when moved.
    expect(tfsSync(['tag', 'acme/m', 'v1', '--store', src.store]).code).toBe(0);
    expect(tfsSync(['tag', 'acme/m@main', 'v1', '--store', src.store]).code).toBe(7);
    // Pull with the origin omitted: TENSORFS_ENDPOINT names it.
    const origin = join(temp(), 'origin');
    const pushed = await tfs(['push', origin, 'acme/m@main', '--store', src.store, '--json']);
    expect(pushed.code, pushed.stderr).toBe(0);
    const b = join(temp(), 'b');
    const p = await tfs(['pull', 'acme/m', '--store', b, '--json'], { TENSORFS_ENDPOINT: origin });
    expect(p.code, p.stderr).toBe(0);
    expect(json(p.stdout)).toMatchObject({ name: 'acme/m', id: u.commit });
    const none = await tfs(['pull', 'acme/m', '--store', join(temp(), 'c'), '--json']);
    expect(none.code).toBe(2);
    expect(errOf(none.stderr).details.rule).toBe('cli.no_origin');
    expect(existsSync(join(b, 'refs', 'acme', 'm'))).toBe(true);
  }, 120_000);

  it('bind and diff read one variant of a repository tree (--variant), and refuse to guess among several', () => {
    const src = source();
    expect(tfsSync(['upload', src.folder, 'acme/v', '--store', src.store]).code).toBe(0);
    for (const argv of [
      ['diff', 'acme/v', 'acme/v'],
      ['bind', 'acme/v', '--lane', 'gpt2+none'],
    ]) {
      const guess = tfsSync([...argv, '--store', src.store, '--json']);
      expect(guess.code, argv[0]).toBe(2);
      expect(errOf(guess.stderr)).toMatchObject({
        code: 'invalid_argument',
        details: { rule: 'repo.variant_required' },
      });
    }
    const d = tfsSync(['diff', 'acme/v', 'acme/v', '--variant', 'int8', '--store', src.store, '--json']);
    expect(d.code, d.stderr).toBe(0);
    const diff = json(d.stdout);
    expect(diff.tensors.unchanged).toBe(2);
    const b = tfsSync(['bind', 'acme/v', '--lane', 'gpt2+none', '--variant', 'bf16', '--store', src.store, '--json']);
    // The tiny model is not GPT-2: a refusal naming the first tensor, from the bf16 variant's header.
    expect(json(b.stdout)).toMatchObject({ verdict: 'refuse' });
    const wrong = tfsSync([
      'bind',
      'acme/v',
      '--lane',
      'gpt2+none',
      '--variant',
      'fp8',
      '--store',
      src.store,
      '--json',
    ]);
    expect(errOf(wrong.stderr)).toMatchObject({ code: 'not_found', details: { rule: 'repo.no_such_variant' } });
  }, 120_000);

  it('has --help on every new verb', () => {
    for (const verb of ['upload', 'tag', 'log', 'download']) {
      const h = tfsSync([verb, '--help']);
      expect(h.code, verb).toBe(0);
      expect(h.stdout).toContain('--json');
    }
  });
});
