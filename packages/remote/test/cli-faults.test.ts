/**
 * The fault suite through the built CLI (`pnpm build` first): SIGKILL mid-pull then resume, and
 * the token never printed in any output of any faulty pull.
 */
import { spawn, spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { FolderOrigin, push } from '../src/index.js';
import { type Fault, type FaultServer, startFaultServer } from './fault-server.js';
import { bytesOf, tempDir } from '@tensorfs/testkit';
import { after, partFile, storeWith } from './helpers.js';

const BIN = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));
const TOKEN = 'cli-secret-token-99887766';
const BIG = 24 << 20;

let server: FaultServer;
let bigHex: string;
let folder: string;

/** Runs the built `tfs`; a run still going after `limitMs` is killed and reported as a hang. */
function run(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  limitMs = 60_000,
): Promise<{ code: number | null; out: string; ms: number; hung: boolean }> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const p = spawn(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH, TENSORFS_TOKEN: TOKEN, ...env },
    });
    let out = '';
    let hung = false;
    const watchdog = setTimeout(() => {
      hung = true;
      p.kill('SIGKILL');
    }, limitMs);
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.on('close', (code) => {
      clearTimeout(watchdog);
      resolve({ code, out, ms: Date.now() - t0, hung });
    });
  });
}

beforeEach(async () => {
  const { store, id } = await storeWith('team/model', { 'big.bin': bytesOf(BIG, 3), 'small.json': bytesOf(100, 4) });
  folder = join(tempDir(), 'origin');
  await push(store, new FolderOrigin(folder), 'team/model');
  const m = await store.getManifest(id);
  const e = m.entries.find((x) => x.path === 'big.bin')!;
  bigHex = e.kind === 'file' ? e.records[0]!.digest.slice(7) : '';
  server = await startFaultServer(folder);
  after(() => server.close());
});

describe('tfs pull under faults', () => {
  it('SIGKILL mid-transfer, pull again: it resumes with Range and verify --data is clean', async () => {
    server.fault = (r) => (r.path === `/chunks/${bigHex}` ? { kind: 'throttle', bytesPerSecond: 6 << 20 } : undefined);
    const store = join(tempDir(), 'store');
    const p = spawn(process.execPath, [BIN, 'pull', server.url, 'team/model', '--store', store, '--json'], {
      env: { PATH: process.env.PATH, TENSORFS_TOKEN: TOKEN },
      stdio: 'ignore',
    });
    const exited = new Promise((r) => p.once('exit', r));
    const deadline = Date.now() + 60_000;
    let part: string | undefined;
    while (!((part = partFile(store, bigHex)) && statSync(part).size >= 4 << 20)) {
      if (Date.now() > deadline) throw new Error('the pull never got going');
      await new Promise((r) => setTimeout(r, 25));
    }
    p.kill('SIGKILL');
    await exited;
    const kept = statSync(part).size;
    // Named after the writer, now dead: the next pull takes it over.
    expect(part, `${p.pid}`).toMatch(new RegExp(`-${p.pid}\\.part$`));
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(BIG);
    // Nothing is named after the kill.
    const ls = spawnSync(process.execPath, [BIN, 'ls', '--store', store, '--json'], { encoding: 'utf8' });
    expect(JSON.parse(ls.stdout).refs).toEqual([]);

    server.fault = () => undefined;
    const again = await run(['pull', server.url, 'team/model', '--store', store, '--json']);
    expect(again.code, again.out).toBe(0);
    const stats = JSON.parse(again.out.trim().split('\n').pop()!);
    expect(stats.bytes.resumed).toBe(kept);
    expect(stats.bytes.fetched).toBe(stats.bytes.total - stats.bytes.present - kept);
    expect(stats.bytes.present).toBeLessThan(1000); // the manifest, admitted by the killed run
    const ranges = server.seen.filter((r) => r.path === `/chunks/${bigHex}`).map((r) => r.headers.range);
    expect(ranges.at(-1)).toBe(`bytes=${kept}-`);
    expect(partFile(store, bigHex)).toBeUndefined();
    const verify = await run(['verify', '--data', '--store', store, '--json']);
    expect(verify.code, verify.out).toBe(0);
  });

  it('Ctrl-C (SIGINT) mid-transfer exits 12 and names nothing', async () => {
    server.fault = (r) => (r.path === `/chunks/${bigHex}` ? { kind: 'throttle', bytesPerSecond: 4 << 20 } : undefined);
    const store = join(tempDir(), 'store');
    const p = spawn(process.execPath, [BIN, 'pull', server.url, 'team/model', '--store', store, '--json'], {
      env: { PATH: process.env.PATH, TENSORFS_TOKEN: TOKEN },
    });
    let err = '';
    p.stderr.on('data', (d) => (err += d));
    const exited = new Promise<number | null>((r) => p.once('exit', (code) => r(code)));
    const deadline = Date.now() + 60_000;
    while (partFile(store, bigHex) === undefined) {
      if (Date.now() > deadline) throw new Error('the pull never got going');
      await new Promise((r) => setTimeout(r, 25));
    }
    await new Promise((r) => setTimeout(r, 300));
    p.kill('SIGINT');
    expect(await exited).toBe(12);
    expect(JSON.parse(err.trim().split('\n').pop()!).error.code).toBe('cancelled');
    expect(err).not.toContain(TOKEN);
    const ls = spawnSync(process.execPath, [BIN, 'ls', '--store', store, '--json'], { encoding: 'utf8' });
    expect(JSON.parse(ls.stdout).refs).toEqual([]);
  });

  it('never prints the token, whatever the origin does', async () => {
    const echo = JSON.stringify({ error: { code: 'denied', message: `bad token ${TOKEN}`, details: { rule: TOKEN } } });
    const faults: Fault[] = [
      { kind: 'status', status: 403, body: echo },
      { kind: 'status', status: 500, body: echo },
      { kind: 'status', status: 404, body: echo },
      { kind: 'flip', index: 5 },
      { kind: 'redirect', location: '/loop' },
      { kind: 'status', status: 429, retryAfter: '100000' },
    ];
    // Each fault has an origin of its own, so the retries and backoffs of all twelve runs overlap.
    await Promise.all(
      faults.map(async (f) => {
        const origin = await startFaultServer(folder);
        after(() => origin.close());
        origin.fault = (r) => (r.path.startsWith('/chunks/') || r.path === '/loop' ? f : undefined);
        for (const json of [[], ['--json']]) {
          const r = await run(['pull', origin.url, 'team/model', '--store', join(tempDir(), 's'), ...json]);
          const what = `${JSON.stringify(f)} ${json.join('')}: ${r.ms} ms\n${r.out}`;
          expect(r.hung, `hung: ${what}`).toBe(false);
          expect(r.code, what).not.toBe(0);
          expect(r.out, what).not.toContain(TOKEN);
          expect(r.out, what).toMatch(/error|"code"/);
        }
        const chunks = origin.seen.filter((x) => x.path.startsWith('/chunks/'));
        expect(chunks.length).toBeGreaterThan(0);
        for (const r of chunks) expect(r.headers.authorization).toBe(`Bearer ${TOKEN}`);
      }),
    );
  }, 240_000);
});
