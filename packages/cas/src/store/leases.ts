/**
 * Leases: what an in-flight writer has admitted (or found present) but not yet made reachable from
 * a ref or root. GC keeps every object of a live lease. A lease expires unless renewed; by default
 * it renews itself every third of its TTL while the process lives, so a crashed writer's lease
 * lapses and GC may then collect its orphans.
 */
import { randomBytes } from 'node:crypto';
import { type ObjectId, TensorFSError, parseObjectId } from '@tensorfs/format';
import { type Db, immediate } from './db.js';
import { HOST, pidAlive } from './fsutil.js';

import type { Lease } from '@tensorfs/format/store';

export { DEFAULT_LEASE_TTL_MS, type Lease, type LeaseOptions } from '@tensorfs/format/store';

/** Throws `conflict` unless lease `id` exists and has not expired (call inside a transaction). */
export function assertLeaseLive(db: Db, id: string): void {
  const expires = db.prepare('SELECT expires_ms FROM leases WHERE id = ?').pluck().get(id) as number | undefined;
  if (expires === undefined || expires <= Date.now()) {
    throw new TensorFSError('conflict', 'lease expired or released', {
      details: { rule: 'store.lease_dead', lease: id },
    });
  }
}

/** A lease row in SQLite. */
export class DbLease implements Lease {
  readonly id = randomBytes(16).toString('hex');
  private timer: NodeJS.Timeout | undefined;
  private released = false;

  constructor(
    private readonly db: Db,
    private readonly ttlMs: number,
    purpose: string,
    keepAlive: boolean,
  ) {
    if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) {
      throw new TensorFSError('invalid_argument', 'lease ttlMs must be a positive integer', {
        details: { rule: 'store.lease_ttl', actual: ttlMs },
      });
    }
    const now = Date.now();
    immediate(db, () => {
      db.prepare('INSERT INTO leases(id, purpose, host, pid, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?)').run(
        this.id,
        purpose.slice(0, 200),
        HOST,
        process.pid,
        now,
        now + ttlMs,
      );
    });
    if (keepAlive) {
      this.timer = setInterval(
        () => {
          this.renew().catch(() => this.stop());
        },
        Math.max(1, Math.floor(ttlMs / 3)),
      );
      this.timer.unref();
    }
  }

  add(ids: readonly ObjectId[]): void {
    for (const id of ids) parseObjectId(id);
    immediate(this.db, () => {
      assertLeaseLive(this.db, this.id);
      const ins = this.db.prepare('INSERT INTO lease_claims(lease_id, object_id) VALUES (?, ?)');
      for (const id of ids) ins.run(this.id, id);
    });
  }

  async renew(): Promise<void> {
    immediate(this.db, () => {
      assertLeaseLive(this.db, this.id);
      this.db.prepare('UPDATE leases SET expires_ms = ? WHERE id = ?').run(Date.now() + this.ttlMs, this.id);
    });
  }

  async release(): Promise<void> {
    this.stop();
    if (this.released) return;
    this.released = true;
    immediate(this.db, () => {
      this.db.prepare('DELETE FROM leases WHERE id = ?').run(this.id);
    });
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

/**
 * The claim sequence: the largest `seq` ever given to a claim (AUTOINCREMENT's record, which
 * deleting rows never lowers), so every claim made after it is read has a larger one. Claims get
 * their `seq` in commit order: the write lock serializes them.
 */
export function claimSeq(db: Db): number {
  const seq = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'lease_claims'").pluck().get() as
    | number
    | undefined;
  return seq ?? 0;
}

/** Object ids claimed by live leases, and the claim sequence read before them (GC marks them). */
export function leaseClaims(db: Db, now = Date.now()): { objects: Set<ObjectId>; seq: number } {
  // The sequence first: a claim committed after it is read is found by claimedSince(seq).
  const seq = claimSeq(db);
  const rows = db
    .prepare('SELECT c.object_id FROM lease_claims c JOIN leases l ON l.id = c.lease_id WHERE l.expires_ms > ?')
    .pluck()
    .all(now) as ObjectId[];
  return { objects: new Set(rows), seq };
}

/** Object ids claimed by live leases (GC marks them). */
export function leasedObjects(db: Db, now = Date.now()): Set<ObjectId> {
  return leaseClaims(db, now).objects;
}

/**
 * Object ids claimed by a live lease after claim sequence `seq` (a range of the table's primary
 * key: the cost is the claims since, not the table), read under the write lock by a sweep.
 */
export function claimedSince(db: Db, seq: number, now = Date.now()): ObjectId[] {
  return db
    .prepare(
      'SELECT c.object_id FROM lease_claims c JOIN leases l ON l.id = c.lease_id WHERE c.seq > ? AND l.expires_ms > ?',
    )
    .pluck()
    .all(seq, now) as ObjectId[];
}

/**
 * Removes expired leases and leases of dead processes on this host (their claims go with them):
 * a killed importer's orphans become collectable at once instead of after its TTL.
 */
export function pruneLeases(db: Db, now = Date.now()): number {
  return immediate(db, () => {
    const local = db.prepare('SELECT id, pid FROM leases WHERE host = ? AND pid != ?').all(HOST, process.pid) as {
      id: string;
      pid: number;
    }[];
    const del = db.prepare('DELETE FROM leases WHERE id = ?');
    let n = 0;
    for (const l of local) if (!pidAlive(l.pid)) n += del.run(l.id).changes;
    return n + db.prepare('DELETE FROM leases WHERE expires_ms <= ?').run(now).changes;
  });
}
