// What one setRef does does not grow with what else the store holds (issue 24 §1, the store at
// scale): the SQL statements it runs (and the rows they return or change), the file-system calls
// it makes and the objects it checks are the same in a store of 3 other objects and 1 other ref
// as in one of 10,000 other objects, all claimed by a live lease, and 1,000 other refs (half of
// them cached, each in the ref log). Counted, not timed.
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { LocalStore } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import type { Lease } from '@tensorfs/format/store';
import { blobEntry, bytesOf, tempDir } from '@tensorfs/testkit';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const fsCjs = require('node:fs') as Record<string, unknown>;
const fspCjs = require('node:fs/promises') as Record<string, unknown>;

/** File-system functions counted (sync, then promise-returning). */
const FS_SYNC = [
  'existsSync',
  'statSync',
  'lstatSync',
  'fstatSync',
  'openSync',
  'readSync',
  'readFileSync',
  'readdirSync',
  'writeFileSync',
  'writeSync',
  'renameSync',
  'fsyncSync',
  'fdatasyncSync',
  'closeSync',
  'mkdirSync',
  'unlinkSync',
  'utimesSync',
];
const FS_PROMISES = ['open', 'readdir', 'stat', 'lstat', 'readFile', 'access', 'opendir'];

type Patch = { on: Record<string, unknown>; name: string; was: unknown };

/** Everything `fn` does through SQLite and node:fs, in order (SQL) and by count (fs). */
async function workOf(fn: () => Promise<void>): Promise<{ sql: string[]; fs: Record<string, number> }> {
  const sql: string[] = [];
  const fs: Record<string, number> = {};
  const patches: Patch[] = [];
  const wrap = (on: Record<string, unknown>, name: string, make: (was: (...a: unknown[]) => unknown) => unknown) => {
    const was = on[name] as (...a: unknown[]) => unknown;
    patches.push({ on, name, was });
    on[name] = make(was);
  };
  const scratch = new Database(':memory:');
  const statement = Object.getPrototypeOf(scratch.prepare('SELECT 1')) as Record<string, unknown>;
  scratch.close();
  type Stmt = { source: string };
  wrap(
    statement,
    'run',
    (was) =>
      function (this: Stmt, ...a: unknown[]) {
        const r = was.apply(this, a) as { changes: number };
        sql.push(`run ${this.source} → ${r.changes} changed`);
        return r;
      },
  );
  wrap(
    statement,
    'get',
    (was) =>
      function (this: Stmt, ...a: unknown[]) {
        const r = was.apply(this, a);
        sql.push(`get ${this.source} → ${r === undefined ? 'none' : 'a row'}`);
        return r;
      },
  );
  wrap(
    statement,
    'all',
    (was) =>
      function (this: Stmt, ...a: unknown[]) {
        const r = was.apply(this, a) as unknown[];
        sql.push(`all ${this.source} → ${r.length} rows`);
        return r;
      },
  );
  wrap(
    statement,
    'iterate',
    (was) =>
      function* (this: Stmt, ...a: unknown[]) {
        let n = 0;
        for (const row of was.apply(this, a) as Iterable<unknown>) {
          n++;
          yield row;
        }
        sql.push(`iterate ${this.source} → ${n} rows`);
      },
  );
  wrap(
    Database.prototype as unknown as Record<string, unknown>,
    'exec',
    (was) =>
      function (this: unknown, source: string) {
        sql.push(`exec ${source}`);
        return was.call(this, source);
      },
  );
  const count = (on: Record<string, unknown>, prefix: string, name: string) =>
    wrap(
      on,
      name,
      (was) =>
        function (this: unknown, ...a: unknown[]) {
          fs[prefix + name] = (fs[prefix + name] ?? 0) + 1;
          return was.apply(this, a);
        },
    );
  for (const name of FS_SYNC) count(fsCjs, '', name);
  for (const name of FS_PROMISES) count(fspCjs, 'promises.', name);
  syncBuiltinESMExports();
  try {
    await fn();
  } finally {
    for (const p of patches.reverse()) p.on[p.name] = p.was;
    syncBuiltinESMExports();
  }
  return { sql, fs };
}

const file = (i: number) => bytesOf(24, 1_000_000 + i);

/** A store holding `objects` unrelated objects under a live lease and `refs` unrelated refs. */
async function storeWith(objects: number, refs: number): Promise<{ s: LocalStore; lease: Lease }> {
  const s = await LocalStore.open(tempDir());
  const lease = await s.lease({ purpose: 'build' });
  const ids: ObjectId[] = [];
  for (let at = 0; at < objects; at += 4096) {
    const items = [];
    for (let i = at; i < Math.min(objects, at + 4096); i++) items.push({ bytes: bytesOf(16, 7 + i) });
    for (const r of await s.putBatch(items, { lease })) ids.push(r.ok ? r.result.id : expect.fail(r.error.message));
  }
  for (let r = 0; r < refs; r++) {
    const entries = Array.from({ length: 3 }, (_, k) => blobEntry(`u${k}.${r}`, ids[(r * 3 + k) % objects]!, 16));
    const snap = await s.putManifest({ entries }, { lease });
    // In the measured ref's own folder, half of them cached: nothing of theirs may be visited.
    await s.setRef(`measured/other-${r}`, snap, { cached: r % 2 === 1 });
  }
  return { s, lease };
}

/** The work of setting a new ref to a 100-file snapshot, then compare-and-swapping it to another. */
async function setRefWork(s: LocalStore, lease: Lease) {
  const ids: ObjectId[] = [];
  for (const r of await s.putBatch(
    Array.from({ length: 101 }, (_, i) => ({ bytes: file(i) })),
    { lease },
  )) {
    ids.push(r.ok ? r.result.id : expect.fail(r.error.message));
  }
  const first = await s.putManifest(
    { entries: ids.slice(0, 100).map((id, i) => blobEntry(`f${100 + i}`, id, 24)) },
    { lease },
  );
  const second = await s.putManifest(
    { entries: ids.slice(1, 101).map((id, i) => blobEntry(`f${100 + i}`, id, 24)) },
    { lease },
  );
  const create = await workOf(() => s.setRef('measured/ref', first, { expected: null, lease }));
  const swap = await workOf(() => s.setRef('measured/ref', second, { expected: first, lease, cached: true }));
  expect(await s.getRef('measured/ref')).toBe(second);
  return { create, swap };
}

describe('setRef at scale', () => {
  it('does the same work whatever else the store holds: statements, rows, fs calls, existence checks', async () => {
    const small = await storeWith(3, 1);
    const big = await storeWith(10_000, 1_000);
    const a = await setRefWork(small.s, small.lease);
    const b = await setRefWork(big.s, big.lease);
    // The closure check: the snapshot and its 100 objects, one existence check each.
    expect(a.create.fs.existsSync).toBe(101);
    expect(a.swap.fs.existsSync).toBe(101);
    // The ref log and the cached-refs table are each visited once, by key.
    expect(a.create.sql.filter((q) => q.includes('ref_log'))).toEqual([
      'run INSERT INTO ref_log(epoch, id, created_ms) VALUES (?, ?, ?) → 1 changed',
    ]);
    expect(b).toEqual(a);
    for (const { s, lease } of [small, big]) {
      await lease.release();
      await s.close();
    }
  }, 300_000);
});
