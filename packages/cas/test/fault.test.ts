/**
 * Fault tests with real processes: a child working on the store is SIGKILLed at random points
 * (during import, ref updates or GC); afterwards the store must verify clean with data, and every
 * snapshot committed before the kill must read back byte-exact. Several importers and a GC running
 * at once must not lose a root or corrupt anything.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalStore } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import { describe, expect, it } from 'vitest';
import { bytesOf, tempDir } from '@tensorfs/testkit';

const CHILD = fileURLToPath(new URL('./fault-child.mjs', import.meta.url));
const SLOW = process.env.TENSORFS_SLOW === '1';

/** Two overlapping trees, and their snapshot ids (computed in a scratch store). */
async function trees(): Promise<{ srcs: string[]; ids: ObjectId[] }> {
  const base = tempDir();
  const a = join(base, 'a');
  const b = join(base, 'b');
  mkdirSync(join(b, 'x'), { recursive: true });
  mkdirSync(a);
  for (const d of [a, b]) writeFileSync(join(d, 'shared.bin'), bytesOf(3 << 20, 1));
  writeFileSync(join(a, 'a.bin'), bytesOf(2 << 20, 2));
  writeFileSync(join(b, 'b.bin'), bytesOf(2 << 20, 3));
  writeFileSync(join(b, 'x', 'y.json'), '{"y":1}');
  const scratch = await LocalStore.open(tempDir());
  const ids = [(await scratch.importPath(a)).snapshot, (await scratch.importPath(b)).snapshot];
  await scratch.close();
  return { srcs: [a, b], ids };
}

function files(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const p = join(dir, name);
    if (statSync(p).isFile()) out.set(relative(dir, p), readFileSync(p));
  }
  return out;
}

/** Exports `id` and compares it file by file with `src`. */
async function expectExact(store: LocalStore, id: ObjectId, src: string): Promise<void> {
  const out = tempDir('tfs-export-');
  await store.exportSnapshot(id, out, { verify: true });
  const want = files(src);
  const got = files(out);
  expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
  for (const [k, v] of want) expect(Buffer.compare(got.get(k)!, v), k).toBe(0);
}

function start(args: string[]): { child: ChildProcess; lines: string[]; exited: Promise<void> } {
  const child = spawn(process.execPath, [CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let buf = '';
  let err = '';
  child.stdout!.on('data', (d) => {
    buf += d;
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts);
  });
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<void>((resolve, reject) =>
    child.on('exit', (code, signal) =>
      code === 0 || signal === 'SIGKILL' ? resolve() : reject(new Error(`child failed (${code ?? signal}): ${err}`)),
    ),
  );
  return { child, lines, exited };
}

/** Everything a ref or root names must be intact and be one of the known trees, byte-exact. */
async function checkStore(root: string, srcs: string[], ids: ObjectId[]): Promise<LocalStore> {
  const store = await LocalStore.open(root);
  const v = await store.verify({ data: true });
  expect(v.missing).toEqual([]);
  expect(v.corrupt).toEqual([]);
  const checked = new Set<ObjectId>();
  for (const r of await store.listRefs()) {
    const k = ids.indexOf(r.id);
    expect(k, `${r.name} names an unknown snapshot`).toBeGreaterThanOrEqual(0);
    if (!checked.has(r.id)) await expectExact(store, r.id, srcs[k]!);
    checked.add(r.id);
  }
  return store;
}

describe('fault injection (SIGKILL)', () => {
  it(`a store killed at random points in import, ref update and GC stays consistent (${SLOW ? 50 : 6} trials)`, async () => {
    const { srcs, ids } = await trees();
    const trials = SLOW ? 50 : 6;
    let killedMidway = 0;
    for (let t = 0; t < trials; t++) {
      const root = tempDir();
      // Far more rounds than fit before the kill: every trial dies somewhere in import, ref
      // update or GC, after a random number of committed rounds.
      const run = start(['cycle', root, srcs[0]!, srcs[1]!, '100000']);
      const delay = 50 + Math.floor(Math.random() * (SLOW ? 2500 : 1500));
      const timer = setTimeout(() => run.child.kill('SIGKILL'), delay);
      await run.exited;
      clearTimeout(timer);
      if (!run.lines.includes('done')) killedMidway++;
      const store = await checkStore(root, srcs, ids);
      // Every ref committed before the kill and not yet deleted by the child is still there.
      const committed = run.lines.filter((l) => l.startsWith('committed ')).map((l) => l.split(' '));
      const last = committed.length - 1;
      for (const [, name, id, k] of committed.slice(Math.max(0, last - 1))) {
        expect(await store.getRef(name!), name).toBe(id);
        expect(id).toBe(ids[Number(k)]);
      }
      const moved = run.lines.filter((l) => l.startsWith('moved ')).map((l) => l.split(' ')[1]);
      if (moved.length > 0) expect(ids).toContain(await store.getRef('moving'));
      // A GC after the crash only removes garbage; everything named still reads back exactly.
      await store.gc({ graceMs: 0 });
      await store.close();
      await (await checkStore(root, srcs, ids)).close();
    }
    expect(killedMidway).toBe(trials);
  }, 600_000);

  it('several importers of overlapping trees while GC runs: no corruption, no lost root', async () => {
    const { srcs, ids } = await trees();
    const root = tempDir();
    const s = await LocalStore.open(root);
    const rooted = (await s.importPath(srcs[1]!)).snapshot;
    await s.addRoot(rooted, 'kept by the test');
    await s.close();
    const rounds = SLOW ? 12 : 4;
    const gc = start(['gc', root, '100000']);
    const importers = [0, 1, 2].map((i) =>
      start(['import', root, `p${i}`, String(rounds), srcs[i % 2]!, srcs[(i + 1) % 2]!]),
    );
    await Promise.all(importers.map((p) => p.exited));
    gc.child.kill('SIGKILL');
    await gc.exited;
    for (const p of importers) expect(p.lines.at(-1)).toBe('done');
    expect(gc.lines.length).toBeGreaterThan(0);
    // The GC really removed garbage while the imports ran.
    const during = gc.lines.filter((l) => l.startsWith('gc ')).reduce((n, l) => n + Number(l.split(' ')[1]), 0);
    expect(during).toBeGreaterThan(0);
    const store = await checkStore(root, srcs, ids);
    expect((await store.listRefs()).length).toBe(3 * rounds);
    expect((await store.listRoots()).map((r) => r.id)).toEqual([rooted]);
    await expectExact(store, rooted, srcs[1]!);
    // A last GC leaves exactly what refs and roots reach: every orphan is gone, nothing else.
    await store.gc({ graceMs: 0 });
    expect((await store.usage()).objects).toBe((await store.verify()).objects);
    await store.close();
    await (await checkStore(root, srcs, ids)).close();
  }, 300_000);
});
