/**
 * Real-process races of issue 11: `tfs` (the built dist/bin.js) runs while this process swaps,
 * rewrites or signals at the moment /proc shows the child holding a given file open. Files are
 * 150 MB with TENSORFS_SLOW=1 (the sizes of the report), 24 MB otherwise.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const SLOW = process.env.TENSORFS_SLOW === '1';
const BIG = (SLOW ? 150 : 24) << 20;

const dirs: string[] = [];
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'tfs-cli-race-'));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function bigFile(file: string, seed: number): void {
  const chunk = Buffer.alloc(1 << 20);
  const fd = openSync(file, 'w');
  for (let i = 0; i < BIG >> 20; i++) {
    chunk.fill((seed * 31 + i) & 0xff);
    chunk.writeUInt32LE(i, 0);
    writeSync(fd, chunk);
  }
  closeSync(fd);
}

interface Run {
  child: ChildProcess;
  done: Promise<{ code: number | null; err: string }>;
}

function tfs(args: string[]): Run {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  const done = new Promise<{ code: number | null; err: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, err })),
  );
  return { child, done };
}

/** Resolves once the child has a file open whose path satisfies `match` (false if it exits first). */
async function whenOpen(run: Run, match: (path: string) => boolean): Promise<boolean> {
  let exited = false;
  void run.done.then(() => (exited = true));
  while (!exited) {
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${run.child.pid}/fd`);
    } catch {
      // not there yet, or gone
    }
    for (const fd of fds) {
      try {
        if (match(readlinkSync(`/proc/${run.child.pid}/fd/${fd}`))) return true;
      } catch {
        // closed meanwhile
      }
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  return false;
}

/** A folder with big.bin and z.txt, a store, and a file outside the folder. */
function tree() {
  const base = temp();
  const src = join(base, 'model');
  mkdirSync(src);
  bigFile(join(src, 'big.bin'), 1);
  writeFileSync(join(src, 'z.txt'), 'inside\n');
  const outside = join(base, 'secret.txt');
  writeFileSync(outside, 'outside secret\n');
  return { src, outside, store: join(base, 'store') };
}

function refOf(store: string, name: string): string | null {
  const r = spawnSync(process.execPath, [BIN, 'ref', 'get', name, '--store', store], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

describe('tfs import against a concurrent writer (real processes)', () => {
  it('z.txt swapped for a symlink to outside while big.bin is hashed: exit 7, no ref', async () => {
    const { src, outside, store } = tree();
    const run = tfs(['import', src, '--name', 'local/m', '--store', store]);
    expect(await whenOpen(run, (p) => p.endsWith('/big.bin'))).toBe(true);
    rmSync(join(src, 'z.txt'));
    symlinkSync(outside, join(src, 'z.txt'));
    const r = await run.done;
    expect(r.code, r.err).toBe(7);
    expect(r.err).toContain('z.txt changed while it was being imported');
    expect(refOf(store, 'local/m')).toBeNull();
  }, 120_000);

  it('z.txt swapped for a FIFO while big.bin is hashed: exit 7 at once, no hang', async () => {
    const { src, store } = tree();
    const run = tfs(['import', src, '--name', 'local/m', '--store', store]);
    expect(await whenOpen(run, (p) => p.endsWith('/big.bin'))).toBe(true);
    rmSync(join(src, 'z.txt'));
    expect(spawnSync('mkfifo', [join(src, 'z.txt')]).status).toBe(0);
    const timer = setTimeout(() => run.child.kill('SIGKILL'), 60_000);
    const r = await run.done;
    clearTimeout(timer);
    expect(r.code, r.err).toBe(7);
    expect(refOf(store, 'local/m')).toBeNull();
  }, 120_000);

  it('a big blob rewritten in place while it is read: exit 7 (conflict, not corrupt), no ref', async () => {
    const base = temp();
    const file = join(base, 'weights.bin');
    bigFile(file, 2);
    const store = join(base, 'store');
    const run = tfs(['import', file, '--name', 'local/w', '--store', store]);
    expect(await whenOpen(run, (p) => p.endsWith('/weights.bin'))).toBe(true);
    const fd = openSync(file, 'r+');
    writeSync(fd, Buffer.alloc(1 << 20, 0xee), 0, 1 << 20, BIG - (4 << 20));
    closeSync(fd);
    const r = await run.done;
    expect(r.code, r.err).toBe(7);
    expect(refOf(store, 'local/w')).toBeNull();
  }, 120_000);
});

describe('signals (real processes)', () => {
  it('Ctrl-C during verify --data exits 12; SIGTERM during export exits 12 and leaves no temp', async () => {
    const { src, store } = tree();
    expect(spawnSync(process.execPath, [BIN, 'import', src, '--name', 'local/m', '--store', store]).status).toBe(0);
    const v = tfs(['verify', '--data', '--store', store]);
    expect(await whenOpen(v, (p) => p.includes('/objects/sha256/'))).toBe(true);
    v.child.kill('SIGINT');
    const vr = await v.done;
    expect(vr.code, vr.err).toBe(12);
    expect(vr.err).toMatch(/^error\[cancelled\]: /);
    const out = join(temp(), 'out');
    const e = tfs(['export', 'local/m', out, '--store', store]);
    // Export writes each file to a hidden sibling temp (`.<name>.<host>-<pid>-<hex>.tmp`) first.
    expect(await whenOpen(e, (p) => p.startsWith(out) && p.endsWith('.tmp'))).toBe(true);
    e.child.kill('SIGTERM');
    const er = await e.done;
    expect(er.code, er.err).toBe(12);
    expect(readdirSync(out).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  }, 120_000);
});
