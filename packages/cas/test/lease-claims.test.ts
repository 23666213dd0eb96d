/**
 * Lease claims are rows appended in arrival order (`lease_claims`, keyed by an increasing `seq`):
 * GC's sweep (and a prune's) learns the claims made since its mark by sequence under the write
 * lock, instead of asking an index by object per candidate. These fail on a sweep that skips the
 * catch-up, on one that catches up once but not per batch or call, and on a sequence that reuses
 * numbers once the rows above the mark's are deleted (no AUTOINCREMENT).
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { bytesOf, expectCode, storedObjects, tempDir } from '@tensorfs/testkit';
import { MIGRATIONS, SCHEMA_VERSION, openDb } from '../src/store/db.js';
import { HOST } from '../src/store/fsutil.js';
import { collect, markLive, sweep } from '../src/store/gc.js';
import { layoutOf, objectPath } from '../src/store/layout.js';
import { DbLease, claimSeq } from '../src/store/leases.js';
import { Objects } from '../src/store/objects.js';
import { type PruneContext, prune } from '../src/store/prune.js';
import { readRefSync } from '../src/store/refs.js';

/** A store holding `n` distinct objects no ref names, and a connection of its own to it. */
async function setup(n: number) {
  const root = tempDir();
  const s = await LocalStore.open(root);
  const ids: ObjectId[] = [];
  for (let i = 0; i < n; i++) ids.push((await s.put(bytesOf(40, 900 + i))).id);
  await s.close();
  const layout = layoutOf(root);
  const db = openDb(layout.db, false);
  const objects = new Objects(layout, db, false);
  const ctx = { db, layout, objects, tops: async (): Promise<ObjectId[]> => [] };
  const lease = () => new DbLease(db, 60_000, 'test', false);
  const rows = (leaseId: string) =>
    db.prepare('SELECT COUNT(*) FROM lease_claims WHERE lease_id = ?').pluck().get(leaseId) as number;
  const there = (id: ObjectId) => existsSync(objectPath(layout, id));
  return { root, layout, db, objects, ctx, ids, lease, rows, there };
}

describe('lease claims', () => {
  it('an object a live lease claims while GC marks (after the refs were read) is kept', async () => {
    const { db, objects, ctx, ids, lease, there } = await setup(3);
    const [x, y, z] = ids as [ObjectId, ObjectId, ObjectId];
    const l = lease();
    let calls = 0;
    const tops = async (): Promise<ObjectId[]> => {
      // A writer claims x (its dedup decision) right after the mark read the refs and roots.
      if (calls++ === 0) expect(objects.present(x, l.id, 40)).toBe(40);
      return [];
    };
    const r = await collect({ ...ctx, tops }, 0, {});
    expect(r).toMatchObject({ removed: 2, remarks: 0 });
    expect([there(x), there(y), there(z)]).toEqual([true, false, false]);
    await l.release();
    db.close();
  });

  it('the sweep learns claims by sequence at every batch, after the rows above its mark went, and keeps what it saw', async () => {
    const { db, objects, ctx, ids, lease, there } = await setup(6);
    const [p, q, x, y, w, v] = ids as [ObjectId, ObjectId, ObjectId, ObjectId, ObjectId, ObjectId];
    const first = lease();
    first.add([p, q]);
    const state = await markLive(ctx, ctx.tops);
    expect(state.marked).toEqual(new Set([p, q]));
    expect(state.claims).toBe(claimSeq(db));
    // The rows at the top of the sequence go: a new claim must still be numbered above the mark's.
    await first.release();
    const second = lease();
    expect(objects.present(x, second.id, 40)).toBe(40);
    expect(db.prepare('SELECT seq FROM lease_claims WHERE object_id = ?').pluck().get(x)).toBeGreaterThan(state.claims);
    expect(sweep(ctx, state, [{ id: p }, { id: x }, { id: y }], 0)).toMatchObject({ removed: 1 });
    // p: claimed by a lease live at the mark, kept though that lease ended (keeping more is safe).
    expect([there(p), there(x), there(y)]).toEqual([true, true, false]);
    // A later sweep call over the same state learns the claims made since the last batch.
    expect(objects.presentMany([{ id: w, length: 40 }], second.id)).toEqual([40]);
    expect(sweep(ctx, state, [{ id: w }, { id: v }], 0)).toMatchObject({ removed: 1 });
    expect([there(w), there(v)]).toEqual([true, false]);
    expect(state.claims).toBe(claimSeq(db));
    await second.release();
    db.close();
  });

  it('a claim made while a sweep of several batches runs is seen by the batch after it', async () => {
    // Batches of 128: 300 candidates. The last one is claimed while the first batch runs (in its
    // transaction, under its lock), after that batch's catch-up: only the third batch's can see it.
    const { db, objects, ctx, ids, lease, there } = await setup(300);
    const l = lease();
    const last = ids[299]!;
    const state = await markLive(ctx, ctx.tops);
    let claimed = false;
    const candidates = ids.map((id, i) =>
      i !== 0
        ? { id }
        : {
            get id(): ObjectId {
              if (!claimed) {
                claimed = true;
                expect(objects.present(last, l.id, 40)).toBe(40);
              }
              return id;
            },
          },
    );
    expect(sweep(ctx, state, candidates, 0)).toMatchObject({ removed: 299 });
    expect(claimed).toBe(true);
    expect(there(last)).toBe(true);
    expect(ids.filter(there)).toEqual([last]);
    await l.release();
    db.close();
  });

  it('a prune keeps a cached ref whose id a lease claimed after its mark, and its objects', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const src = join(tempDir(), 'm');
    mkdirSync(src);
    writeFileSync(join(src, 'w.bin'), bytesOf(5000, 7));
    const { snapshot } = await s.importPath(src);
    await s.setRef('m', snapshot, { cached: true });
    await s.close();
    const layout = layoutOf(root);
    const db = openDb(layout.db, false);
    const objects = new Objects(layout, db, false);
    const reader = new DbLease(db, 60_000, 'reader', false);
    const before = await storedObjects(root);
    const ctx = {
      db,
      layout,
      objects,
      tops: async (): Promise<ObjectId[]> => [],
      // Listed after the prune read the live leases' claims: a reader takes the ref meanwhile.
      refs: async () => {
        reader.add([snapshot]);
        return [{ name: 'm', id: snapshot }];
      },
      roots: (): ObjectId[] => [],
      flushUse: () => {},
    };
    const r = await prune(ctx satisfies PruneContext, { maxBytes: 0 });
    expect(r).toMatchObject({ removed: 0, left: 0 });
    expect(r.evicted).toEqual([]);
    expect(readRefSync(layout, 'm')).toBe(snapshot);
    expect(await storedObjects(root)).toEqual(before);
    await reader.release();
    db.close();
  });

  it('repeated claims by one lease are rows of their own, all removed at release; GC keeps the object', async () => {
    const { db, objects, ctx, ids, lease, rows, there } = await setup(3);
    const [x, y, z] = ids as [ObjectId, ObjectId, ObjectId];
    const a = lease();
    const b = lease();
    expect(objects.present(x, a.id, 40)).toBe(40);
    expect(objects.present(x, a.id, 40)).toBe(40);
    expect(
      objects.presentMany(
        [
          { id: x, length: 40 },
          { id: y, length: 40 },
        ],
        a.id,
      ),
    ).toEqual([40, 40]);
    expect(rows(a.id)).toBe(4);
    b.add([x, x]);
    expect(rows(b.id)).toBe(2);
    await a.release();
    expect(rows(a.id)).toBe(0);
    expect(rows(b.id)).toBe(2);
    expect(await collect(ctx, 0, {})).toMatchObject({ removed: 2 });
    expect([there(x), there(y), there(z)]).toEqual([true, false, false]);
    await b.release();
    expect(db.prepare('SELECT COUNT(*) FROM lease_claims').pluck().get()).toBe(0);
    db.close();
  });

  it('a store of the previous schema migrates and keeps its live leases’ claims; a newer one is refused', async () => {
    const { root, layout, db, ids, there } = await setup(4);
    const [x, y, z, u] = ids as [ObjectId, ObjectId, ObjectId, ObjectId];
    db.close();
    for (const f of ['', '-wal', '-shm']) rmSync(join(root, `metadata.sqlite3${f}`), { force: true });
    const old = new Database(layout.db);
    for (const m of MIGRATIONS.slice(0, SCHEMA_VERSION - 1)) old.exec(m);
    old.pragma(`user_version = ${SCHEMA_VERSION - 1}`);
    const lease = old.prepare(
      'INSERT INTO leases(id, purpose, host, pid, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?)',
    );
    const now = Date.now();
    lease.run('live', 'import', HOST, process.pid, now, now + 3600_000);
    lease.run('expired', 'import', HOST, process.pid, now - 7200_000, now - 3600_000);
    const claim = old.prepare('INSERT INTO lease_objects(lease_id, object_id) VALUES (?, ?)');
    claim.run('live', x);
    claim.run('live', y);
    claim.run('expired', z);
    old.close();
    const s = await LocalStore.open(root, { graceMs: 0 });
    const meta = new Database(layout.db, { readonly: true });
    expect(meta.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(
      meta.prepare("SELECT name FROM sqlite_master WHERE name GLOB 'lease_*' ORDER BY name").pluck().all(),
    ).toEqual(['lease_claims', 'lease_claims_by_lease']);
    const moved = meta.prepare('SELECT lease_id, object_id FROM lease_claims ORDER BY lease_id, object_id').all();
    expect(moved).toEqual([
      { lease_id: 'expired', object_id: z },
      ...[x, y].sort().map((o) => ({ lease_id: 'live', object_id: o })),
    ]);
    meta.close();
    expect(await s.gc()).toMatchObject({ removed: 2 });
    expect([there(x), there(y), there(z), there(u)]).toEqual([true, true, false, false]);
    await s.close();
    // A build older than this store's schema refuses it (as this build refuses a newer one).
    const newer = new Database(layout.db);
    newer.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    newer.close();
    const e = await expectCode(LocalStore.open(root), 'unsupported');
    expect(e.details).toEqual({ rule: 'metadata.newer_schema', actual: SCHEMA_VERSION + 1, limit: SCHEMA_VERSION });
  });
});
