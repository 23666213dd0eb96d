/**
 * The cache through the built CLI: `tfs pull --cache`, `tfs cache ls|prune`, `tfs pin|unpin`,
 * `TENSORFS_CACHE_MAX` applied after every cached pull, the serving-host scenario of issue 27,
 * and a prune killed mid-way (SIGKILL) leaving only extra objects. Run `pnpm build` first.
 */
import { spawn } from 'node:child_process';
import { createCipheriv, createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import { MemoryStore } from '@tensorfs/format/store';
import { serveHub } from '@tensorfs/remote';
import { TensorWriter, commit, openModel } from '@tensorfs/tensors';
import { bytesOf } from '@tensorfs/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, type Running, tfs, tfsServe } from './remote-servers.js';

const dirs: string[] = [];
const running: Running[] = [];
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'tfs-cli-cache-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const MiB = 1024 * 1024;

/** Sum of the sizes of every file under `objects/`, walked here. */
function objectFolderBytes(store: string): number {
  let n = 0;
  for (const name of readdirSync(join(store, 'objects'), { recursive: true }) as string[]) {
    const st = statSync(join(store, 'objects', name));
    if (st.isFile()) n += st.size;
  }
  return n;
}

/** `n` bytes from `seed`, deterministic and cheap (an AES-CTR keystream: GiB/s). */
function seeded(n: number, seed: number): Buffer {
  const key = createHash('sha256').update(`seed ${seed}`).digest();
  return createCipheriv('aes-128-ctr', key.subarray(0, 16), key.subarray(16)).update(Buffer.alloc(n));
}

/** Where the store keeps object `id`. */
function objectFile(store: string, id: ObjectId): string {
  const hex = id.slice(7);
  return join(store, 'objects', 'sha256', hex.slice(0, 2), hex.slice(2, 4), hex);
}

/** Object files now (a prune may be unlinking some while this counts). */
function objectFiles(store: string): number {
  let n = 0;
  for (const name of readdirSync(join(store, 'objects'), { recursive: true }) as string[]) {
    try {
      if (statSync(join(store, 'objects', name)).isFile()) n++;
    } catch {
      // unlinked since the listing
    }
  }
  return n;
}

async function ok(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = await tfs([...args, '--json'], env);
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}

/** A folder holding `base.bin` (shared by every model) and the model's own `own.bin`. */
function modelFolder(base: number, own: number, seed: number): string {
  const d = join(temp(), `m${seed}`);
  mkdirSync(d);
  writeFileSync(join(d, 'base.bin'), bytesOf(base, 1));
  writeFileSync(join(d, 'own.bin'), bytesOf(own, 100 + seed));
  return d;
}

describe('tfs cache, pin, unpin', () => {
  it('pull --cache marks the ref cached; cache ls lists it with exact bytes; pin and unpin move it', async () => {
    const src = join(temp(), 'src');
    for (const i of [0, 1]) await ok(['import', modelFolder(300_000, 100_000, i), '--name', `m${i}`, '--store', src]);
    const srcDu = await ok(['du', '--store', src]);
    const hub = await tfsServe(['--store', src]);
    running.push(hub);
    const store = join(temp(), 'store');
    const p = await ok(['pull', hub.url, 'm0', '--cache', '--store', store]);
    expect(p.cached).toBe(true);
    expect(p.pruned).toBeUndefined();
    await ok(['pull', hub.url, 'm1', '--store', store]);
    const ls = await ok(['cache', 'ls', '--store', store]);
    const m0 = srcDu.refs.find((r: { name: string }) => r.name === 'm0');
    const m1 = srcDu.refs.find((r: { name: string }) => r.name === 'm1');
    expect(ls.refs.map((r: Record<string, unknown>) => [r.name, r.id, r.storedBytes, r.exclusiveBytes])).toEqual([
      ['m0', m0.id, m0.storedBytes, m0.exclusiveBytes],
    ]);
    expect(ls.objects).toEqual([]);
    expect(ls.evictableBytes).toBe(m0.exclusiveBytes);
    expect(ls.storedBytes).toBe(objectFolderBytes(store));
    expect(await ok(['pin', 'm0', '--store', store])).toEqual({ ref: 'm0', cached: false, changed: true });
    expect((await ok(['cache', 'ls', '--store', store])).refs).toEqual([]);
    expect(await ok(['pin', 'm0', '--store', store])).toEqual({ ref: 'm0', cached: false, changed: false });
    expect(await ok(['unpin', 'm1', '--store', store])).toEqual({ ref: 'm1', cached: true, changed: true });
    const dry = await ok(['cache', 'prune', '--max-size', '0', '--dry-run', '--store', store]);
    expect(dry.evicted.map((e: { name: string; bytes: number }) => [e.name, e.bytes])).toEqual([
      ['m1', m1.exclusiveBytes],
    ]);
    expect(objectFolderBytes(store)).toBe(dry.storedBefore);
    const r = await ok(['cache', 'prune', '--max-size', '0', '--store', store]);
    expect(r.bytes).toBe(m1.exclusiveBytes);
    expect(objectFolderBytes(store)).toBe(m0.storedBytes);
    // m0 is saved now: it stays whatever the budget.
    expect((await ok(['ls', '--store', store])).refs.map((x: { name: string }) => x.name)).toEqual(['m0']);
    const none = await tfs(['cache', 'prune', '--store', store, '--json']);
    expect(none.code).toBe(2);
    expect(JSON.parse(none.stderr).error.details.rule).toBe('cache.no_limit');
    const bad = await tfs(['cache', 'prune', '--max-size', '12Q', '--store', store, '--json']);
    expect(JSON.parse(bad.stderr).error.details.rule).toBe('cache.bad_size');
    const missing = await tfs(['pin', 'nope', '--store', store, '--json']);
    expect(missing.code).toBe(6);
  });

  it('the serving host: budget 1 GiB, five cached pulls of 320 MiB models sharing a base, one saved; LRU eviction after each pull', {
    timeout: 600_000,
  }, async () => {
    // The size: six 320 MiB models (a 128 MiB base every model shares, 192 MiB of its
    // own), made in memory from seeded bytes and served by a hub on loopback; the host pulls
    // them through the CLI under TENSORFS_CACHE_MAX=1G and is checked with exact bytes and
    // verify --data after every pull.
    const t0 = Date.now();
    const BUDGET = 1024 * MiB;
    const TENSOR = 64 * MiB; // one object each (the planner's largest)
    const origin = new MemoryStore();
    const base = [seeded(TENSOR, 1), seeded(TENSOR, 2)];
    const models = new Map<string, Set<ObjectId>>();
    let first: Awaited<ReturnType<typeof openModel>> | undefined;
    for (const i of [0, 1, 2, 3, 4, 5]) {
      const w = new TensorWriter(origin, 'model.safetensors');
      // The base: written once, then inherited (its objects kept, nothing hashed again).
      for (const [k, b] of base.entries()) {
        if (first === undefined) await w.add(`base.${k}`, 'U8', [TENSOR], b);
        else await w.inherit(first.get(`base.${k}`));
      }
      for (const k of [0, 1, 2]) await w.add(`own.${k}`, 'U8', [TENSOR], seeded(TENSOR, 100 + i * 10 + k));
      const entry = await w.finish();
      const { snapshot } = await commit(origin, { put: [entry], ref: `team/m${i}` });
      await w.close();
      first ??= await openModel(origin, 'team/m0');
      if (entry.kind !== 'file') throw new Error('not a file');
      models.set(`team/m${i}`, new Set([snapshot, ...entry.records.map((r) => r.digest)]));
    }
    const size = (id: ObjectId) => origin.objects.get(id)!.length;
    // Shared: the base tensors and the header (same names, dtypes and shapes in every model).
    const all = [...models.values()];
    const shared = [...all[0]!].filter((id) => all.every((m) => m.has(id)));
    const baseBytes = shared.reduce((n, id) => n + size(id), 0);
    const own = (name: string) => [...models.get(name)!].filter((id) => !shared.includes(id));
    const ownBytes = (name: string) => own(name).reduce((n, id) => n + size(id), 0);
    expect(baseBytes - 2 * TENSOR).toBeLessThan(4096); // the base tensors and one small header
    for (const name of models.keys()) {
      expect(ownBytes(name) - 3 * TENSOR).toBeGreaterThan(0); // three tensors and a manifest
      expect(ownBytes(name) - 3 * TENSOR).toBeLessThan(4096);
      expect(baseBytes + ownBytes(name)).toBeGreaterThan(320 * MiB);
    }
    const hub = await serveHub(origin, {});
    try {
      const made = Date.now();
      const store = join(temp(), 'host');
      const env = { TENSORFS_CACHE_MAX: '1G' };
      let verifyMs = 0;
      let pullMs = 0;
      const expectExactly = async (names: string[]) => {
        const du = await ok(['du', '--store', store]);
        const expected = baseBytes + names.reduce((n, m) => n + ownBytes(m), 0);
        expect(du.storedBytes).toBe(expected);
        expect(objectFolderBytes(store)).toBe(expected);
        expect(du.storedBytes).toBeLessThanOrEqual(BUDGET);
        expect(du.refs.map((r: { name: string }) => r.name).sort()).toEqual([...names].sort());
        expect(du.unreferencedBytes).toBe(0);
        const v0 = Date.now();
        const v = await ok(['verify', '--data', '--all', '--store', store]);
        verifyMs += Date.now() - v0;
        expect([v.missing, v.corrupt]).toEqual([[], []]);
        // What was evicted is gone: no object only an evicted model held is left.
        for (const name of models.keys()) {
          if (names.includes(name)) continue;
          for (const id of own(name)) expect(existsSync(objectFile(store, id))).toBe(false);
        }
      };
      // A read of a model: one of its own tensors, whole, to a file (exact bytes checked).
      const read = async (name: string) => {
        const out = join(temp(), 'tensor.bin');
        await ok(['cat', name, 'own.1', '-o', out, '--store', store]);
        const i = Number(name.slice(-1));
        expect(readFileSync(out).equals(seeded(TENSOR, 100 + i * 10 + 1))).toBe(true);
        rmSync(out);
      };
      // The saved model (shares the base).
      const p0 = Date.now();
      await ok(['pull', hub.url, 'team/m5', '--store', store], env);
      pullMs += Date.now() - p0;
      await expectExactly(['team/m5']);
      const pulled: string[][] = [];
      for (const [i, readAfter] of [
        [0, null],
        [1, null],
        [2, 'team/m0'],
        [3, 'team/m2'],
        [4, null],
      ] as const) {
        const p0 = Date.now();
        const r = await ok(['pull', hub.url, `team/m${i}`, '--cache', '--store', store], env);
        pullMs += Date.now() - p0;
        pulled.push(r.pruned.evicted.map((e: { name: string }) => e.name));
        expect(r.pruned.withinBudget).toBe(true);
        expect(r.pruned.storedAfter).toBeLessThanOrEqual(BUDGET);
        expect(r.pruned.bytes).toBe(
          r.pruned.evicted.reduce((n: number, e: { name: string }) => n + ownBytes(e.name), 0),
        );
        const present = ['team/m5', ...[0, 1, 2, 3, 4].filter((k) => k <= i).map((k) => `team/m${k}`)].filter(
          (m) => !pulled.flat().includes(m),
        );
        await expectExactly(present);
        if (readAfter !== null) await read(readAfter);
      }
      // 128 MiB base + 192 MiB saved + 192 MiB per cached model: three cached models fit in 1 GiB.
      // Use order: m0 pulled, m1 pulled, m2 pulled, m0 read, m3 pulled (m1 evicted), m2 read,
      // m4 pulled (m0 evicted: m2 was read after it).
      expect(pulled).toEqual([[], [], [], ['team/m1'], ['team/m0']]);
      const ls = await ok(['cache', 'ls', '--store', store]);
      // Least recently used first: m3 (pulled), m2 (read after it), m4 (pulled last).
      expect(ls.refs.map((r: { name: string }) => r.name)).toEqual(['team/m3', 'team/m2', 'team/m4']);
      console.log(
        `serving host: models made in ${made - t0} ms, then ${Date.now() - made} ms: six pulls ${pullMs} ms, six verify --data ${verifyMs} ms`,
      );
    } finally {
      await hub.close();
    }
  });

  it('a prune killed mid-way (SIGKILL) leaves only extra objects; the next prune finishes', {
    timeout: 300_000,
  }, async () => {
    const store = join(temp(), 'store');
    const models = 10;
    const files = 100;
    // Set up through the API (one process), then prune through the CLI.
    const s = await LocalStore.open(store);
    for (let m = 0; m < models; m++) {
      const d = join(temp(), `many${m}`);
      mkdirSync(d);
      for (let f = 0; f < files; f++) writeFileSync(join(d, `f${f}.bin`), bytesOf(2048, m * 1000 + f + 7));
      await s.importPath(d, { name: `c${m}` });
      await s.unpin(`c${m}`);
    }
    await s.importPath(modelFolder(4096, 4096, 99), { name: 'saved' });
    await s.close();
    for (const killAt of ['refs', 'objects'] as const) {
      const objectsBefore = objectFiles(store);
      const refsBefore = readdirSync(join(store, 'refs')).length;
      const child = spawn(process.execPath, [BIN, 'cache', 'prune', '--max-size', '0', '--store', store], {
        env: { PATH: process.env.PATH, HOME: process.env.HOME },
      });
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      // Kill once the prune has visibly started: a ref gone, or objects going.
      for (;;) {
        const started =
          killAt === 'refs' ? readdirSync(join(store, 'refs')).length < refsBefore : objectFiles(store) < objectsBefore;
        if (started || child.exitCode !== null) break;
        await new Promise((r) => setTimeout(r, 2));
      }
      child.kill('SIGKILL');
      await exited;
      expect(child.signalCode).toBe('SIGKILL');
      // Every ref left names a whole, intact closure (verify reads every object refs reach).
      const v = await ok(['verify', '--data', '--store', store]);
      expect([v.missing, v.corrupt]).toEqual([[], []]);
    }
    const done = await ok(['cache', 'prune', '--max-size', '0', '--store', store]);
    expect(done.withinBudget).toBe(false);
    // What an interrupted prune left unreferenced GC takes; only the saved ref remains.
    await ok(['gc', '--grace', '0', '--store', store]);
    expect((await ok(['ls', '--store', store])).refs.map((r: { name: string }) => r.name)).toEqual(['saved']);
    const du = await ok(['du', '--store', store]);
    expect(du.storedBytes).toBe(du.refs[0].storedBytes);
    expect(objectFolderBytes(store)).toBe(du.storedBytes);
  });
});
