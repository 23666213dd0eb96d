import { readFileSync, readdirSync, rmSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { bytesOf, expectCode, idOf, objectFile, sameBytes, tempDir } from '@tensorfs/testkit';
import { MIGRATIONS } from '../src/store/db.js';

describe('LocalStore.open', () => {
  it('creates the layout and a WAL metadata database, and reopens', async () => {
    const root = join(tempDir(), 'store');
    const s = await LocalStore.open(root);
    for (const d of ['objects/sha256', 'tmp', 'refs']) expect(statSync(join(root, d)).isDirectory()).toBe(true);
    expect(readFileSync(join(root, 'metadata.sqlite3')).subarray(0, 15).toString()).toBe('SQLite format 3');
    await s.close();
    const again = await LocalStore.open(root);
    expect(await again.listRefs()).toEqual([]);
    await again.close();
  });

  it('read-only: a missing store is not_found and every mutation is denied', async () => {
    const root = tempDir();
    await expectCode(LocalStore.open(join(root, 'none'), { readOnly: true }), 'not_found');
    const rw = await LocalStore.open(root);
    const { id } = await rw.put(bytesOf(10));
    await rw.close();
    const ro = await LocalStore.open(root, { readOnly: true });
    expect(await ro.readObject(id)).toEqual(bytesOf(10));
    await expectCode(ro.put(bytesOf(11)), 'denied');
    await expectCode(ro.setRef('main', id), 'denied');
    await expectCode(ro.gc(), 'denied');
    await ro.close();
  });

  it('migrates a store of an older schema on open', async () => {
    const root = tempDir();
    await (await LocalStore.open(root)).close();
    for (const f of ['', '-wal', '-shm']) rmSync(join(root, `metadata.sqlite3${f}`), { force: true });
    // A store of schema version 1: only the first migration ran.
    const db = new Database(join(root, 'metadata.sqlite3'));
    db.exec(MIGRATIONS[0]!);
    db.pragma('user_version = 1');
    db.close();
    const s = await LocalStore.open(root);
    const { id } = await s.put(bytesOf(3));
    await s.setRef('main', id);
    await s.close();
    const check = new Database(join(root, 'metadata.sqlite3'), { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(4);
    expect(check.prepare('SELECT id FROM ref_log').pluck().all()).toEqual([id]);
    // Every ref of an older store is saved: no row marks one cached.
    expect(check.prepare('SELECT COUNT(*) FROM cached_refs').pluck().get()).toBe(0);
    check.close();
  });

  it('a store written by a newer schema is unsupported', async () => {
    const root = tempDir();
    await (await LocalStore.open(root)).close();
    const db = new Database(join(root, 'metadata.sqlite3'));
    db.pragma('user_version = 99');
    db.close();
    const e = await expectCode(LocalStore.open(root), 'unsupported');
    expect(e.details).toMatchObject({ actual: 99 });
  });

  it('defaultRoot honours TENSORFS_HOME', () => {
    const prev = process.env.TENSORFS_HOME;
    process.env.TENSORFS_HOME = '/x/y';
    expect(LocalStore.defaultRoot()).toBe('/x/y');
    delete process.env.TENSORFS_HOME;
    expect(LocalStore.defaultRoot()).toMatch(/\.cache\/tensorfs$/);
    if (prev !== undefined) process.env.TENSORFS_HOME = prev;
  });
});

describe('objects', () => {
  it('admits bytes under their SHA-256, read-only, and a present object costs no write', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const data = bytesOf(100_000, 3);
    const r = await s.put(data);
    expect(r).toEqual({ id: idOf(data), length: data.length, written: true });
    const file = objectFile(root, r.id);
    const st = statSync(file);
    expect(st.mode & 0o777).toBe(0o444);
    const again = await s.put([data.subarray(0, 10), data.subarray(10)]);
    expect(again).toEqual({ id: r.id, length: data.length, written: false });
    expect(statSync(file).ino).toBe(st.ino);
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
    expect(await s.has(r.id)).toBe(true);
    expect(await s.objectSize(r.id)).toBe(data.length);
    expect(sameBytes(await s.readObject(r.id, { verify: true }), data)).toBe(true);
    expect(await s.readObjectRange(r.id, 5, 7)).toEqual(data.subarray(5, 12));
    await expectCode(s.readObjectRange(r.id, data.length - 1, 2), 'invalid_argument');
    await s.close();
  });

  it('refuses bytes that do not match `expected`, and bad ids', async () => {
    const s = await LocalStore.open(tempDir());
    const e = await expectCode(s.put(bytesOf(5), { expected: idOf(bytesOf(6)) }), 'corrupt');
    expect(e.details.actual).toBe(idOf(bytesOf(5)));
    expect(await s.has(idOf(bytesOf(5)))).toBe(false);
    await expectCode(s.has('sha256:XYZ' as never), 'invalid_argument');
    await expectCode(s.objectSize(idOf(bytesOf(7))), 'not_found');
    await expectCode(s.readObject(idOf(bytesOf(7))), 'not_found');
    await s.close();
  });

  it('putStream checks length and digest before publishing and leaves no temp', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const data = bytesOf(3 << 20, 9);
    async function* chunks() {
      for (let i = 0; i < data.length; i += 1 << 20) yield data.subarray(i, i + (1 << 20));
    }
    await expectCode(s.putStream(chunks(), { expected: idOf(data), expectedLength: data.length - 1 }), 'corrupt');
    await expectCode(s.putStream(chunks(), { expected: idOf(bytesOf(1)) }), 'corrupt');
    await expectCode(s.putStream(chunks(), { expectedLength: data.length + 1 }), 'corrupt');
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
    expect(await s.has(idOf(data))).toBe(false);
    expect(await s.putStream(chunks(), { expected: idOf(data), expectedLength: data.length })).toEqual({
      id: idOf(data),
      length: data.length,
      written: true,
    });
    let pulled = 0;
    async function* counted() {
      pulled++;
      yield data;
    }
    expect((await s.putStream(counted(), { expected: idOf(data) })).written).toBe(false);
    expect(pulled).toBe(0);
    expect((await s.putStream(counted())).written).toBe(false);
    await s.close();
  });

  it('many concurrent admissions of one object all succeed and publish it once', async () => {
    const root = tempDir();
    const stores = await Promise.all([LocalStore.open(root), LocalStore.open(root)]);
    const data = bytesOf(1 << 20, 4);
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => stores[i % 2]!.put(data)));
    expect(new Set(results.map((r) => r.id))).toEqual(new Set([idOf(data)]));
    expect(results.filter((r) => r.written).length).toBe(1);
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
    expect(sameBytes(readFileSync(objectFile(root, idOf(data))), data)).toBe(true);
    for (const s of stores) await s.close();
  });

  it('a flipped byte is refused on verified reads and quarantined; a good copy heals it', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const data = bytesOf(4096, 5);
    const { id } = await s.put(data);
    const file = objectFile(root, id);
    chmodSync(file, 0o644);
    const bad = Buffer.from(data);
    bad[100]! ^= 1;
    writeFileSync(file, bad);
    await expectCode(s.readObject(id, { verify: true }), 'corrupt');
    await expectCode(s.readObject(id), 'corrupt');
    expect(await s.has(id)).toBe(false);
    expect((await s.put(data)).written).toBe(true);
    expect(await s.readObject(id, { verify: true })).toEqual(data);
    await s.close();
  });

  it('streams an object in chunks; verify withholds the last chunk of a corrupt object', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const data = bytesOf(10_000, 8);
    const { id } = await s.put(data);
    const got: Uint8Array[] = [];
    for await (const c of s.objectStream(id, { chunkSize: 4096, verify: true })) got.push(c);
    expect(got.map((c) => c.length)).toEqual([4096, 4096, 1808]);
    expect(sameBytes(Buffer.concat(got), data)).toBe(true);
    const file = objectFile(root, id);
    chmodSync(file, 0o644);
    const bad = Buffer.from(data);
    bad[9999]! ^= 4;
    writeFileSync(file, bad);
    const seen: number[] = [];
    const drain = async () => {
      for await (const c of s.objectStream(id, { chunkSize: 4096, verify: true })) seen.push(c.length);
    };
    await expectCode(drain(), 'corrupt');
    expect(seen).toEqual([4096, 4096]);
    await expectCode(s.readObject(id), 'corrupt');
    await s.close();
  });

  it('recordsSource reads across records and length-checks every piece', async () => {
    const s = await LocalStore.open(tempDir());
    const parts = [bytesOf(10, 1), bytesOf(0, 1), bytesOf(300, 2), bytesOf(7, 3)];
    const records = [];
    for (const p of parts) records.push({ digest: (await s.put(p)).id, length: p.length });
    const whole = Buffer.concat(parts);
    const src = s.recordsSource(records, { verify: true });
    expect(src.size).toBe(whole.length);
    for (const [off, len] of [
      [0, 317],
      [5, 10],
      [9, 2],
      [310, 7],
      [316, 1],
      [317, 0],
      [0, 0],
    ] as const) {
      expect(Buffer.from(await src.read(off, len))).toEqual(whole.subarray(off, off + len));
      const target = new Uint8Array(len + 4).fill(0xaa);
      await src.readInto(off, target.subarray(2, 2 + len));
      expect(Buffer.from(target.subarray(2, 2 + len))).toEqual(whole.subarray(off, off + len));
      expect([target[0], target[1], target[len + 2], target[len + 3]]).toEqual([0xaa, 0xaa, 0xaa, 0xaa]);
    }
    await expectCode(src.read(300, 18), 'invalid_argument');
    await expectCode(src.readInto(300, new Uint8Array(18)), 'invalid_argument');
    const lying = s.recordsSource([{ digest: records[2]!.digest, length: 301 }]);
    await expectCode(lying.read(0, 1), 'corrupt');
    await expectCode(lying.readInto(0, new Uint8Array(1)), 'corrupt');
    await s.close();
  });
});
