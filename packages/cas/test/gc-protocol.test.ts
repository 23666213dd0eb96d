/**
 * The GC sweep re-checks the epoch under the write lock: what a ref or root set between GC's mark
 * and its sweep reaches is added to the mark, so an object that just became reachable is never
 * unlinked (and a busy store cannot starve GC by forcing it to start over).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import { describe, expect, it } from 'vitest';
import { bumpEpoch, immediate, openDb } from '../src/store/db.js';
import { collect } from '../src/store/gc.js';
import { layoutOf, objectPath } from '../src/store/layout.js';
import { Objects } from '../src/store/objects.js';
import { bytesOf, tempDir } from '@tensorfs/testkit';

describe('GC protocol', () => {
  it('a ref set between mark and sweep is added to the mark: GC keeps what it names', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const x = (await s.put(bytesOf(100, 1))).id;
    const y = (await s.put(bytesOf(100, 2))).id;
    await s.close();
    const layout = layoutOf(root);
    const db = openDb(layout.db, false);
    const objects = new Objects(layout, db, false);
    let calls = 0;
    const tops = async (): Promise<ObjectId[]> => {
      calls++;
      if (calls === 1) {
        // Another process sets a ref to x right after this mark read the refs.
        immediate(db, () => bumpEpoch(db, x));
        return [];
      }
      return [x];
    };
    const r = await collect({ db, layout, objects, tops }, 0, {});
    expect(r.remarks).toBe(1);
    expect(r.removed).toBe(1);
    expect(existsSync(objectPath(layout, x))).toBe(true);
    expect(existsSync(objectPath(layout, y))).toBe(false);
    db.close();
    expect(existsSync(join(root, 'metadata.sqlite3'))).toBe(true);
  });
});
