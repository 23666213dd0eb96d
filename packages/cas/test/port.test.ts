// The store port's contract, run against the local store and the in-memory one (testkit): the
// same results and the same error codes, so code written against `Store` works on either.
import { openStore, type Store } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import { blobEntry, bytesOf, expectCode, idOf, MemoryStore, tempDir } from '@tensorfs/testkit';
import { afterEach, describe, expect, it } from 'vitest';

const KINDS: Record<string, () => Promise<Store & { close?(): Promise<void> }>> = {
  local: () => openStore(tempDir()),
  memory: async () => new MemoryStore(),
};

describe.each(Object.keys(KINDS))('the Store port (%s)', (kind) => {
  let s: Store & { close?(): Promise<void> };
  afterEach(async () => {
    await s?.close?.();
  });
  const open = async () => (s = await KINDS[kind]!());

  it('stores and reads objects by content', async () => {
    await open();
    const data = bytesOf(1000, 1);
    const r = await s.put([data.subarray(0, 10), data.subarray(10)]);
    expect(r).toEqual({ id: idOf(data), length: 1000, written: true });
    expect((await s.put(data)).written).toBe(false);
    expect(await s.has(r.id)).toBe(true);
    expect(await s.readObject(r.id, { verify: true })).toEqual(data);
    expect(await s.readObjectRange(r.id, 990, 10)).toEqual(data.subarray(990));
    async function* chunks() {
      yield data.subarray(0, 500);
      yield data.subarray(500);
    }
    expect((await s.putStream(chunks(), { expected: r.id })).id).toBe(r.id);
    const other = bytesOf(77, 2);
    async function* one() {
      yield other;
    }
    expect(await s.putStream(one(), { expectedLength: 77 })).toEqual({ id: idOf(other), length: 77, written: true });
  });

  it('refuses with the same codes', async () => {
    await open();
    const data = bytesOf(100, 3);
    const { id } = await s.put(data);
    await expectCode(s.has('sha256:XYZ' as ObjectId), 'invalid_argument');
    await expectCode(s.readObject(idOf(bytesOf(5, 9))), 'not_found');
    await expectCode(s.readObjectRange(id, 99, 2), 'invalid_argument');
    await expectCode(s.put(bytesOf(5, 4), { expected: idOf(bytesOf(6, 4)) }), 'corrupt');
    async function* chunks() {
      yield bytesOf(5, 5);
    }
    await expectCode(s.putStream(chunks(), { expectedLength: 6 }), 'corrupt');
    await expectCode(s.getManifest(id), 'malformed');
    await expectCode(s.resolve('nope'), 'not_found');
    await expectCode(s.resolve(idOf(bytesOf(5, 9))), 'not_found');
    await expectCode(s.getRef('../x'), 'invalid_argument');
    await expectCode(s.recordsSource([{ digest: id, length: 101 }]).read(0, 1), 'corrupt');
    await expectCode(s.recordsSource([{ digest: id, length: 100 }]).read(50, 51), 'invalid_argument');
  });

  it('reads a file across its records', async () => {
    await open();
    const a = bytesOf(300, 6);
    const b = bytesOf(200, 7);
    const records = [
      { digest: (await s.put(a)).id, length: 300 },
      { digest: (await s.put(b)).id, length: 200 },
    ];
    const src = s.recordsSource(records, { verify: true });
    expect(src.size).toBe(500);
    expect(await src.read(290, 20)).toEqual(Uint8Array.from([...a.subarray(290), ...b.subarray(0, 10)]));
    const target = new Uint8Array(500);
    await src.readInto(0, target);
    expect(target).toEqual(Uint8Array.from([...a, ...b]));
  });

  it('keeps snapshots and moves refs by compare-and-swap', async () => {
    await open();
    const a = (await s.put(bytesOf(10, 8))).id;
    const m = await s.putManifest({ entries: [blobEntry('a', a, 10)] });
    expect(await s.getManifest(m)).toEqual({ entries: [blobEntry('a', a, 10)] });
    expect(await s.getRef('main')).toBeNull();
    await s.setRef('main', m, { expected: null });
    expect(await s.resolve('main')).toBe(m);
    expect(await s.resolve(m)).toBe(m);
    await expectCode(s.setRef('main', a, { expected: null }), 'conflict');
    await expectCode(s.setRef('main', a, { expected: a }), 'conflict');
    await s.setRef('main', a, { expected: m });
    expect(await s.getRef('main')).toBe(a);
    const ghost = idOf(bytesOf(11, 8));
    const dangling = await s.putManifest({ entries: [blobEntry('g', ghost, 11)] });
    const e = await expectCode(s.setRef('other', dangling), 'not_found');
    expect(e.details.missing).toEqual([ghost]);
    expect(await s.getRef('other')).toBeNull();
  });

  it('claims objects for a lease; a released lease is conflict', async () => {
    await open();
    const lease = await s.lease({ purpose: 'test', keepAlive: false });
    const { id } = await s.put(bytesOf(20, 9), { lease });
    const m = await s.putManifest({ entries: [blobEntry('x', id, 20)] }, { lease });
    await s.setRef('leased', m, { lease });
    await lease.release();
    await expectCode(s.put(bytesOf(21, 9), { lease }), 'conflict');
    await expectCode(s.setRef('leased', m, { lease }), 'conflict');
    await expectCode(lease.renew(), 'conflict');
  });
});
