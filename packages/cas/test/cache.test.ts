/**
 * The cache (docs/store.md "Cache"): saved and cached refs, use recorded in memory and flushed in
 * batches, the listing's exclusive bytes, and eviction least recently used first under a budget,
 * never of what a saved ref, a root or a live lease (a writer's or a reader's) reaches.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { LocalStore, parseDuration, parseSize } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import { bytesOf, expectCode, expectCodeSync, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const BASE = 400_000;
const OWN = 100_000;

/** Sum of the sizes of every file under `objects/` (walked here, not by the store). */
function objectFolderBytes(root: string): number {
  let n = 0;
  for (const name of readdirSync(join(root, 'objects'), { recursive: true }) as string[]) {
    const st = statSync(join(root, 'objects', name));
    if (st.isFile()) n += st.size;
  }
  return n;
}

/** A folder holding the shared `base.bin` and a model's own `own.bin` (seed `i`). */
function model(i: number): string {
  const d = join(tempDir(), `m${i}`);
  mkdirSync(d);
  writeFileSync(join(d, 'base.bin'), bytesOf(BASE, 1));
  writeFileSync(join(d, 'own.bin'), bytesOf(OWN, 10 + i));
  return d;
}

/** Imports `n` models (sharing base.bin) as refs m0..m(n-1) and marks them cached. */
async function cachedModels(s: LocalStore, n: number): Promise<{ ids: ObjectId[]; manifests: number[] }> {
  const ids: ObjectId[] = [];
  const manifests: number[] = [];
  for (let i = 0; i < n; i++) {
    const { snapshot } = await s.importPath(model(i));
    await s.setRef(`m${i}`, snapshot, { cached: true });
    ids.push(snapshot);
    manifests.push(await s.objectSize(snapshot));
  }
  return { ids, manifests };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const READER = fileURLToPath(new URL('./reader-child.mjs', import.meta.url));

/** A reading process (reader-child.mjs): its stdout lines awaited one by one, stdin to steer it. */
function startReader(root: string, ref: string, object: ObjectId) {
  const child = spawn(process.execPath, [READER, root, ref, object], { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => {
    err += String(d);
  });
  const exit = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    child,
    exit,
    send: (line: string) => child.stdin.write(`${line}\n`),
    /** The next line; it must match `want`. */
    async line(want: string | RegExp): Promise<string> {
      const { value, done } = await lines.next();
      if (done) throw new Error(`reader ended: ${err}`);
      if (typeof want === 'string') expect(value).toBe(want);
      else expect(value).toMatch(want);
      return value as string;
    },
  };
}

describe('saved and cached refs', () => {
  it('refs are saved by default; cached only when asked; a saved ref stays saved; pin and unpin move them', async () => {
    const s = await LocalStore.open(tempDir());
    const { snapshot: a } = await s.importPath(model(0), { name: 'saved' });
    const { snapshot: b } = await s.importPath(model(1));
    expect(await s.isCached('saved')).toBe(false);
    await s.setRef('c', b, { cached: true });
    expect(await s.isCached('c')).toBe(true);
    // A cached set of a saved ref (a pull-through fetch of something saved) keeps it saved.
    await s.setRef('saved', a, { cached: true });
    expect(await s.isCached('saved')).toBe(false);
    // A plain set of a cached ref saves it.
    await s.setRef('c', a);
    expect(await s.isCached('c')).toBe(false);
    expect(await s.unpin('c')).toBe(false);
    expect(await s.isCached('c')).toBe(true);
    expect(await s.unpin('c')).toBe(true);
    expect(await s.pin('c')).toBe(true);
    expect(await s.isCached('c')).toBe(false);
    expect(await s.pin('c')).toBe(false);
    await expectCode(s.pin('nope'), 'not_found');
    await expectCode(s.unpin('nope'), 'not_found');
    await expectCode(s.setRef('c', a, { cached: 'yes' as unknown as boolean }), 'invalid_argument');
    // Deleting a cached ref drops its mark: the same name set again is saved.
    await s.unpin('c');
    await s.deleteRef('c');
    await s.setRef('c', b);
    expect(await s.isCached('c')).toBe(false);
    await s.close();
  });

  it('a ref rewritten behind the store (another id in its file) reads as saved', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const { snapshot: a } = await s.importPath(model(0));
    const { snapshot: b } = await s.importPath(model(1), { name: 'other' });
    await s.setRef('c', a, { cached: true });
    writeFileSync(join(root, 'refs', 'c'), `${b}\n`);
    expect(await s.isCached('c')).toBe(false);
    const r = await s.prune({ maxBytes: 0 });
    expect(r.evicted).toEqual([]);
    expect(await s.getRef('c')).toBe(b);
    await s.close();
  });
});

describe('cache listing', () => {
  it('stored and exclusive bytes per cached ref; a base shared with a saved ref is exclusive to none', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root, { graceMs: 0 });
    const { ids, manifests } = await cachedModels(s, 3);
    const l1 = await s.cacheList();
    expect(l1.storedBytes).toBe(objectFolderBytes(root));
    expect(l1.storedBytes).toBe(BASE + 3 * OWN + manifests.reduce((a, b) => a + b, 0));
    // The base is shared by three cached refs: exclusive to none, but evictable (with all three).
    expect(l1.refs.map((r) => [r.name, r.id, r.storedBytes, r.exclusiveBytes, r.objects])).toEqual(
      [0, 1, 2].map((i) => [`m${i}`, ids[i], BASE + OWN + manifests[i]!, OWN + manifests[i]!, 3]),
    );
    expect(l1.evictableBytes).toBe(l1.storedBytes);
    // A saved ref reaching the base: it is no longer evictable at all.
    const { snapshot } = await s.importPath(model(9), { name: 'keep' });
    const keepBytes = OWN + (await s.objectSize(snapshot));
    const l2 = await s.cacheList();
    expect(l2.evictableBytes).toBe(3 * OWN + manifests.reduce((a, b) => a + b, 0));
    expect(l2.storedBytes).toBe(l1.storedBytes + keepBytes);
    await s.close();
  });
});

describe('use recording', () => {
  it('reads cost no write until the flush; the flush writes the newest use in one transaction', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root, { useFlushMs: 3_600_000 });
    await cachedModels(s, 1);
    const lastUse = () => {
      const db = new Database(join(root, 'metadata.sqlite3'), { readonly: true });
      try {
        return db.prepare("SELECT last_use_ms FROM cached_refs WHERE name = 'm0'").pluck().get() as number;
      } finally {
        db.close();
      }
    };
    const before = lastUse();
    await sleep(5);
    const id = await s.resolve('m0');
    for (let i = 0; i < 100; i++) await s.readObject(id);
    expect(lastUse()).toBe(before);
    s.flushUse();
    expect(lastUse()).toBeGreaterThan(before);
    await s.close();
  });

  it('close writes what was recorded', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root, { useFlushMs: 3_600_000 });
    await cachedModels(s, 2);
    await sleep(5);
    await s.resolve('m0');
    await s.close();
    const t = await LocalStore.open(root);
    const l = await t.cacheList();
    expect(l.refs.map((r) => r.name)).toEqual(['m1', 'm0']);
    await t.close();
  });

  it('resolving and reading a saved ref does not wait for the write lock another process holds', {
    timeout: 60_000,
  }, async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const { snapshot } = await s.importPath(model(0), { name: 'saved' });
    await s.close();
    // Another process takes the write lock and keeps it for 10 s.
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const D = require('better-sqlite3'); const db = new D(process.argv[1]); db.exec('BEGIN IMMEDIATE');
         console.log('locked'); setTimeout(() => { db.exec('COMMIT'); console.log('released'); }, 10000);`,
        join(root, 'metadata.sqlite3'),
      ],
      { cwd: fileURLToPath(new URL('..', import.meta.url)), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const lines = createInterface({ input: holder.stdout })[Symbol.asyncIterator]();
    expect((await lines.next()).value).toBe('locked');
    const lockHeld = () => {
      const probe = new Database(join(root, 'metadata.sqlite3'), { timeout: 0 });
      try {
        probe.exec('BEGIN IMMEDIATE');
        probe.exec('ROLLBACK');
        return false;
      } catch (err) {
        if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
        return true;
      } finally {
        probe.close();
      }
    };
    const t = await LocalStore.open(root, { readOnly: true, recordUse: true });
    try {
      // The saved ref is not cached: nothing to lease, so no write transaction to wait for (one
      // used to check the cached_refs row under the lock, which blocked the thread until the
      // holder let go).
      expect(await t.resolve('saved')).toBe(snapshot);
      const m = await t.getManifest(snapshot);
      const file = m.entries.find((e) => e.kind === 'file')!;
      expect(file.kind === 'file' && (await t.recordsSource(file.records).read(0, 1)).length).toBe(1);
      expect(lockHeld()).toBe(true);
    } finally {
      await t.close();
      holder.kill();
    }
  });
});

describe('prune', () => {
  it('evicts least recently used first until within the budget; exact bytes; the store verifies', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root, { useFlushMs: 0 });
    const { ids, manifests } = await cachedModels(s, 4);
    // Use order: m2 oldest, then m0, m3, m1 (resolving is use).
    for (const n of ['m2', 'm0', 'm3', 'm1']) {
      await sleep(3);
      await s.resolve(n);
    }
    const stored = objectFolderBytes(root);
    expect(stored).toBe(BASE + 4 * OWN + manifests.reduce((a, b) => a + b, 0));
    // Room for everything but two models' own bytes: m2 and m0 go.
    const budget = stored - OWN - manifests[2]! - OWN - manifests[0]!;
    const dry = await s.prune({ maxBytes: budget, dryRun: true });
    expect(dry.evicted.map((e) => [e.name, e.bytes])).toEqual([
      ['m2', OWN + manifests[2]!],
      ['m0', OWN + manifests[0]!],
    ]);
    expect(objectFolderBytes(root)).toBe(stored);
    const r = await s.prune({ maxBytes: budget });
    expect(r.evicted.map((e) => e.name)).toEqual(['m2', 'm0']);
    expect(r.bytes).toBe(OWN + manifests[2]! + OWN + manifests[0]!);
    expect(r.storedBefore).toBe(stored);
    expect(r.storedAfter).toBe(budget);
    expect(r.withinBudget).toBe(true);
    expect(objectFolderBytes(root)).toBe(budget);
    expect(await s.getRef('m2')).toBeNull();
    expect(await s.getRef('m0')).toBeNull();
    expect((await s.listRefs()).map((x) => x.id)).toEqual([ids[1], ids[3]]);
    const v = await s.verify({ data: true, all: true });
    expect(v.missing).toEqual([]);
    expect(v.corrupt).toEqual([]);
    // The last cached ref takes the base with it; a budget of 0 empties the cache.
    const all = await s.prune({ maxBytes: 0 });
    expect(all.evicted.map((e) => e.name)).toEqual(['m3', 'm1']);
    expect(all.bytes).toBe(budget);
    expect(objectFolderBytes(root)).toBe(0);
    await s.close();
  });

  it('never evicts what a saved ref or a root reaches; an object shared with a saved ref stays', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const { manifests } = await cachedModels(s, 2);
    const { snapshot: saved } = await s.importPath(model(7), { name: 'saved' });
    await s.addRoot((await s.getRef('m1'))!, 'keep m1');
    const r = await s.prune({ maxBytes: 0 });
    // m1 frees nothing (the root keeps all of it): it is not evicted, it would only lose its name.
    expect(r.evicted.map((e) => [e.name, e.bytes])).toEqual([['m0', OWN + manifests[0]!]]);
    expect(r.withinBudget).toBe(false);
    expect(await s.isCached('m1')).toBe(true);
    // The base stays for the saved ref.
    expect(objectFolderBytes(root)).toBe(BASE + OWN + (await s.objectSize(saved)) + OWN + manifests[1]!);
    expect((await s.verify({ data: true })).missing).toEqual([]);
    await s.close();
  });

  it('a reader in another process (its reader lease) keeps the cached ref it reads', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root, { useFlushMs: 0 });
    const { ids } = await cachedModels(s, 2);
    const reader = await LocalStore.open(root, { readOnly: true, recordUse: true });
    expect(await reader.resolve('m0')).toBe(ids[0]);
    const r = await s.prune({ maxBytes: 0 });
    expect(r.evicted.map((e) => e.name)).toEqual(['m1']);
    expect(await s.getRef('m0')).toBe(ids[0]);
    expect((await reader.readObject(ids[0]!, { verify: true })).length).toBeGreaterThan(0);
    // Reader gone (its lease released at close): m0 is evictable again.
    await reader.close();
    const again = await s.prune({ maxBytes: 0 });
    expect(again.evicted.map((e) => e.name)).toEqual(['m0']);
    expect(objectFolderBytes(root)).toBe(0);
    await s.close();
  });

  it('a reader in another process keeps the cached model and the cached object it reads until it closes; a killed one keeps nothing', {
    timeout: 60_000,
  }, async () => {
    const root = tempDir();
    const s = await LocalStore.open(root, { useFlushMs: 0 });
    const { ids, manifests } = await cachedModels(s, 2);
    const objectBytes = bytesOf(300_000, 77);
    const { id: object } = await s.put(objectBytes);
    await s.addCachedObjects([object], 'test');
    const before = objectFolderBytes(root);
    const reader = startReader(root, 'm0', object);
    await reader.line('holding');
    // Prune to 0 while the other process holds m0 and the object open: only m1 goes.
    const r = await s.prune({ maxBytes: 0 });
    expect(r.evicted.map((e) => e.name)).toEqual(['m1']);
    expect(r.bytes).toBe(OWN + manifests[1]!);
    expect(objectFolderBytes(root)).toBe(before - r.bytes);
    expect(await s.getRef('m0')).toBe(ids[0]);
    expect(await s.has(object)).toBe(true);
    // The read completes with exact bytes.
    reader.send('go');
    const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
    expect(await reader.line(/^file base\.bin /)).toBe(`file base.bin ${sha(bytesOf(BASE, 1))} ${BASE}`);
    expect(await reader.line(/^file own\.bin /)).toBe(`file own.bin ${sha(bytesOf(OWN, 10))} ${OWN}`);
    expect(await reader.line(/^object /)).toBe(`object ${sha(objectBytes)} ${objectBytes.length}`);
    // Still held after the read (until the reader closes).
    expect((await s.prune({ maxBytes: 0 })).evicted).toEqual([]);
    reader.send('close');
    await reader.line('closed');
    expect(await reader.exit).toBe(0);
    const after = await s.prune({ maxBytes: 0 });
    expect(after.evicted.map((e) => e.name).sort()).toEqual(['m0', object].sort());
    expect(objectFolderBytes(root)).toBe(0);
    // A reader killed while holding (SIGKILL: no close) holds nothing: its lease is a dead process's.
    const { ids: again } = await cachedModels(s, 1);
    const { id: object2 } = await s.put(objectBytes);
    await s.addCachedObjects([object2], 'test');
    const killed = startReader(root, 'm0', object2);
    await killed.line('holding');
    expect((await s.prune({ maxBytes: 0 })).evicted).toEqual([]);
    killed.child.kill('SIGKILL');
    await killed.exit;
    const last = await s.prune({ maxBytes: 0 });
    expect(last.evicted.map((e) => e.id).sort()).toEqual([again[0]!, object2].sort());
    expect(objectFolderBytes(root)).toBe(0);
    await s.close();
  });

  it('never evicts what a writer lease claims', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const { ids } = await cachedModels(s, 1);
    const lease = await s.lease({ purpose: 'test' });
    lease.add([ids[0]!]);
    expect((await s.prune({ maxBytes: 0 })).evicted).toEqual([]);
    await lease.release();
    expect((await s.prune({ maxBytes: 0 })).evicted.map((e) => e.name)).toEqual(['m0']);
    await s.close();
  });

  it('--older-than evicts what was not used for that long, whatever the budget', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root, { useFlushMs: 0 });
    await cachedModels(s, 3);
    await sleep(60);
    await s.resolve('m1');
    const r = await s.prune({ olderThanMs: 40 });
    expect(r.evicted.map((e) => e.name)).toEqual(['m0', 'm2']);
    expect(r.maxBytes).toBeNull();
    expect(r.withinBudget).toBe(true);
    expect((await s.listRefs()).map((x) => x.name)).toEqual(['m1']);
    await s.close();
  });

  it('cached objects (fetched on read): GC keeps them, prune evicts them by last use', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root, { graceMs: 0, useFlushMs: 0 });
    const a = (await s.put(bytesOf(5000, 1))).id;
    const b = (await s.put(bytesOf(7000, 2))).id;
    const garbage = (await s.put(bytesOf(3000, 3))).id;
    await s.addCachedObjects([a, b], 'hub test');
    await sleep(3);
    await s.readObject(a);
    const gc = await s.gc();
    expect(gc.removed).toBe(1);
    expect(await s.has(garbage)).toBe(false);
    const l = await s.cacheList();
    expect(l.objects.map((o) => [o.id, o.size, o.origin])).toEqual([
      [b, 7000, 'hub test'],
      [a, 5000, 'hub test'],
    ]);
    const r = await s.prune({ maxBytes: 5000 });
    expect(r.evicted.map((e) => [e.kind, e.id, e.bytes])).toEqual([['object', b, 7000]]);
    expect(await s.has(b)).toBe(false);
    expect(await s.has(a)).toBe(true);
    expect(objectFolderBytes(root)).toBe(5000);
    await s.close();
  });

  it('refuses without a limit, and bad limits', async () => {
    const s = await LocalStore.open(tempDir());
    expect((await expectCode(s.prune({}), 'invalid_argument')).details.rule).toBe('cache.no_limit');
    expect((await expectCode(s.prune({ maxBytes: -1 }), 'invalid_argument')).details.rule).toBe('cache.bad_limit');
    await s.close();
  });
});

describe('sizes and durations', () => {
  it('parses binary sizes and durations; refuses the rest', () => {
    expect(parseSize('50G')).toBe(50 * 1024 ** 3);
    expect(parseSize('800M')).toBe(800 * 1024 ** 2);
    expect(parseSize('1.5GiB')).toBe(1.5 * 1024 ** 3);
    expect(parseSize('64k')).toBe(65536);
    expect(parseSize('4096')).toBe(4096);
    expect(parseSize('10B')).toBe(10);
    expect(parseDuration('7d')).toBe(7 * 86_400_000);
    expect(parseDuration('90')).toBe(90_000);
    expect(parseDuration('15m')).toBe(900_000);
    for (const bad of ['', 'G', '-1G', '5X', '1e9']) {
      expect(expectCodeSync(() => parseSize(bad), 'invalid_argument').details.rule).toBe('cache.bad_size');
    }
    expect(expectCodeSync(() => parseDuration('1y'), 'invalid_argument').details.rule).toBe('cache.bad_duration');
  });
});
