import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { bytesOf, expectCode, idOf, objectFile, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

/** The part file of `key`, named after this process (`<key>.<host>-<pid>.part`). */
const partOf = (root: string, key: string) =>
  join(
    root,
    'tmp',
    `${key}.${
      hostname()
        .replace(/[^A-Za-z0-9.-]/g, '_')
        .slice(0, 64) || 'host'
    }-${process.pid}.part`,
  );

async function open(): Promise<{ store: LocalStore; root: string }> {
  const root = join(tempDir(), 'store');
  return { store: await LocalStore.open(root), root };
}

describe('LocalStore.openPart (adopt a received file)', () => {
  it('hashes while written and adopts the file as the object: no copy, part name gone, read-only', async () => {
    const { store, root } = await open();
    const bytes = bytesOf(5_000_000, 3);
    const id = idOf(bytes);
    const part = await store.openPart('pull-a', { expectedLength: bytes.length });
    for (let at = 0; at < bytes.length; at += 1_000_000) await part.write(bytes.subarray(at, at + 1_000_000));
    const partFile = partOf(root, 'pull-a');
    const ino = statSync(partFile).ino;
    const lease = await store.lease();
    expect(await part.commit({ expected: id, lease })).toEqual({ id, length: bytes.length, written: true });
    const st = statSync(objectFile(root, id));
    // The very file that was received is the object (link + unlink of the part name).
    expect(st.ino).toBe(ino);
    expect(st.nlink).toBe(1);
    expect(st.mode & 0o777).toBe(0o444);
    expect(existsSync(partFile)).toBe(false);
    expect(Buffer.compare(readFileSync(objectFile(root, id)), Buffer.from(bytes))).toBe(0);
    await lease.release();
    expect((await store.verify({ data: true })).corrupt).toEqual([]);
    await store.close();
  });

  it('resumes a part left by an earlier run (rehashing its prefix) and completes it', async () => {
    const { store, root } = await open();
    const bytes = bytesOf(300_000, 4);
    const id = idOf(bytes);
    const first = await store.openPart('pull-b', { expectedLength: bytes.length });
    await first.write(bytes.subarray(0, 123_457));
    await first.close();
    expect(statSync(partOf(root, 'pull-b')).size).toBe(123_457);
    const again = await store.openPart('pull-b', { expectedLength: bytes.length });
    expect(again.length).toBe(123_457);
    await again.write(bytes.subarray(123_457));
    expect((await again.commit({ expected: id })).written).toBe(true);
    expect(Buffer.compare(Buffer.from(await store.readObject(id, { verify: true })), Buffer.from(bytes))).toBe(0);
    await store.close();
  });

  it('never publishes wrong bytes: `corrupt`, the part removed, the object absent', async () => {
    const { store, root } = await open();
    const bytes = bytesOf(200_000, 5);
    const wrong = bytes.slice();
    wrong[77_777]! ^= 1;
    const part = await store.openPart('pull-c', { expectedLength: bytes.length });
    await part.write(wrong);
    const err = await expectCode(part.commit({ expected: idOf(bytes) }), 'corrupt');
    expect(err.details).toMatchObject({ rule: 'store.digest_mismatch', expected: idOf(bytes), actual: idOf(wrong) });
    expect(await store.has(idOf(bytes))).toBe(false);
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
    await store.close();
  });

  it('refuses an incomplete part, bytes past its length, a bad key; a longer leftover is dropped', async () => {
    const { store, root } = await open();
    const bytes = bytesOf(1000, 6);
    const part = await store.openPart('pull-d', { expectedLength: 1000 });
    await part.write(bytes.subarray(0, 999));
    expect((await expectCode(part.commit({ expected: idOf(bytes) }), 'invalid_argument')).details.rule).toBe(
      'store.part_incomplete',
    );
    expect((await expectCode(part.write(bytes.subarray(0, 2)), 'corrupt')).details.rule).toBe('store.part_too_long');
    await part.close();
    // Reopened for a shorter object: the leftover is longer, so it starts empty.
    const shorter = await store.openPart('pull-d', { expectedLength: 10 });
    expect(shorter.length).toBe(0);
    await shorter.discard();
    expect(existsSync(partOf(root, 'pull-d'))).toBe(false);
    await expectCode(store.openPart('../x', { expectedLength: 1 }), 'invalid_argument');
    await expectCode(store.openPart('A', { expectedLength: 1 }), 'invalid_argument');
    await store.close();
  });

  it('gives chunks back (done) once written and hashed; copied ones at once, unsent ones on discard', async () => {
    const { store } = await open();
    const bytes = bytesOf(9 << 20, 8);
    const part = await store.openPart('pull-d', { expectedLength: bytes.length });
    const events: string[] = [];
    // Shared memory, handed over: it stays readable here, and comes back only once the part is done with it.
    const shared = new Uint8Array(new SharedArrayBuffer(4 << 20));
    shared.set(bytes.subarray(0, 4 << 20));
    // (Given back only once written and hashed: scribbling over it then changes nothing.)
    await part.write(shared, {
      handOver: true,
      done: () => {
        events.push('shared');
        shared.fill(0x5a);
      },
    });
    events.push('written');
    await part.write(bytes.subarray(4 << 20, 8 << 20), { done: () => events.push('copied') });
    events.push('written 2');
    await part.write(bytes.subarray(8 << 20), { handOver: true, done: () => events.push('tail') });
    await part.commit({ expected: idOf(bytes) });
    expect(events.slice(0, 2)).toEqual(['written', 'copied']);
    expect(events.sort()).toEqual(['copied', 'shared', 'tail', 'written', 'written 2']);
    expect(shared.byteLength).toBe(4 << 20);
    const other = await store.openPart('pull-d2', { expectedLength: 10 });
    let back = 0;
    await other.write(new Uint8Array(new SharedArrayBuffer(4)), { handOver: true, done: () => back++ });
    await other.discard();
    expect(back).toBe(1);
    await store.close();
  });

  it('an object already present wins: the part is dropped, the stored file untouched', async () => {
    const { store, root } = await open();
    const bytes = bytesOf(50_000, 7);
    const { id } = await store.put(bytes);
    const ino = statSync(objectFile(root, id)).ino;
    const part = await store.openPart('pull-e', { expectedLength: bytes.length });
    await part.write(bytes);
    expect(await part.commit({ expected: id })).toEqual({ id, length: bytes.length, written: false });
    expect(statSync(objectFile(root, id)).ino).toBe(ino);
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
    await store.close();
  });
});

describe('LocalStore.putBatch (batched durability)', () => {
  it('admits good items, refuses only the one that does not match, skips present ones', async () => {
    const { store, root } = await open();
    const a = bytesOf(10_000, 1);
    const b = bytesOf(20_000, 2);
    const c = bytesOf(30_000, 3);
    const lying = bytesOf(30_000, 4);
    await store.put(a);
    const lease = await store.lease();
    const out = await store.putBatch(
      [
        { bytes: a, expected: idOf(a) },
        { bytes: b, expected: idOf(b) },
        { bytes: lying, expected: idOf(c) },
        { bytes: [c.subarray(0, 5), c.subarray(5)] },
        { bytes: b },
      ],
      { lease },
    );
    expect(out.map((o) => (o.ok ? o.result : o.error.code))).toEqual([
      { id: idOf(a), length: a.length, written: false },
      { id: idOf(b), length: b.length, written: true },
      'corrupt',
      { id: idOf(c), length: c.length, written: true },
      { id: idOf(b), length: b.length, written: false },
    ]);
    expect(await store.has(idOf(lying))).toBe(false);
    for (const x of [a, b, c]) expect(await store.readObject(idOf(x), { verify: true })).toEqual(x);
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
    await lease.release();
    await store.close();
  });
});
