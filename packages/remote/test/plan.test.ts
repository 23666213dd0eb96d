// A pull's missing-object planning at scale (issue 24 §1): what the store lacks of a snapshot's
// leaves is asked in a few `lacks` calls, not one existence check per leaf (a 100,000-leaf plan
// made 100,000 awaited checks, most of its time on a loaded machine), and the counts stay exact.
import { LocalStore } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import type { Store } from '@tensorfs/format/store';
import { blobEntry, bytesOf, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { StoreOrigin, pull } from '../src/index.js';
import { after } from './helpers.js';

const N = 4200;

/** `store` with its `has` and `lacks` calls counted (every other member passed through). */
function counting(store: LocalStore) {
  const calls = { has: [] as ObjectId[], lacks: [] as number[] };
  const proxy = new Proxy(store, {
    get(target, key) {
      if (key === 'has') {
        return (id: ObjectId, o?: object) => {
          calls.has.push(id);
          return target.has(id, o);
        };
      }
      if (key === 'lacks') {
        return (ids: ObjectId[], o?: object) => {
          calls.lacks.push(ids.length);
          return target.lacks(ids, o);
        };
      }
      const v = Reflect.get(target, key, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { store: proxy as unknown as Store, calls };
}

describe('pull planning', () => {
  it(`asks the store what it lacks of ${N} leaves in two calls, and fetches exactly the rest`, async () => {
    const a = await LocalStore.open(tempDir());
    const b = await LocalStore.open(tempDir());
    after(async () => {
      await a.close();
      await b.close();
    });
    const items = Array.from({ length: N }, (_, i) => ({ bytes: bytesOf(24, 10_000 + i) }));
    const ids = (await a.putBatch(items)).map((r) => (r.ok ? r.result.id : expect.fail(r.error.message)));
    const snapshot = await a.putManifest({
      entries: ids.map((id, i) => blobEntry(`f${String(i).padStart(5, '0')}`, id, 24)),
    });
    await a.setRef('big', snapshot);
    // The destination holds all but every 420th object already.
    await b.putBatch(items.filter((_, i) => i % 420 !== 0));
    const { store, calls } = counting(b);
    const r = await pull(store, new StoreOrigin(a), 'big');
    expect(r.objects).toEqual({ total: N + 1, present: N - 10, fetched: 11 });
    expect(r.bytes.present).toBe((N - 10) * 24);
    const leaves = new Set(ids);
    expect(calls.has.filter((id) => leaves.has(id))).toEqual([]);
    // 4,096 a call: 4,200 leaves are two.
    expect(calls.lacks).toEqual([4096, N - 4096]);
    expect(await b.lacks(ids)).toEqual([]);
    expect(await b.resolve('big')).toBe(snapshot);
  }, 180_000);
});
