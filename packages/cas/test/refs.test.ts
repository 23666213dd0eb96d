import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalStore, validateRefName } from '@tensorfs/cas';
import { encodeManifest } from '@tensorfs/format';
import { describe, expect, it } from 'vitest';
import { bytesOf, idOf, expectCode, tempDir } from '@tensorfs/testkit';

describe('refs', () => {
  it('get, set with compare-and-swap, list, delete', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const a = (await s.put(bytesOf(10, 1))).id;
    const b = (await s.put(bytesOf(10, 2))).id;
    expect(await s.getRef('local/example')).toBeNull();
    await s.setRef('local/example', a, { expected: null });
    expect(readFileSync(join(root, 'refs', 'local', 'example'), 'utf8')).toBe(`${a}\n`);
    await expectCode(s.setRef('local/example', b, { expected: null }), 'conflict');
    const e = await expectCode(s.setRef('local/example', b, { expected: b }), 'conflict');
    expect(e.details).toMatchObject({ ref: 'local/example', expected: b, actual: a });
    await s.setRef('local/example', b, { expected: a });
    await s.setRef('main', a);
    writeFileSync(join(root, 'refs', '.DS_Store'), 'junk');
    writeFileSync(join(root, 'refs', 'local', 'example~'), 'junk');
    expect(await s.getRef('local/example')).toBe(b);
    expect(await s.resolve('local/example')).toBe(b);
    expect(await s.resolve(a)).toBe(a);
    expect(await s.listRefs()).toEqual([
      { name: 'local/example', id: b },
      { name: 'main', id: a },
    ]);
    await expectCode(s.deleteRef('main', { expected: b }), 'conflict');
    await s.deleteRef('main', { expected: a });
    await s.deleteRef('local/example');
    rmSync(join(root, 'refs', '.DS_Store'));
    rmSync(join(root, 'refs', 'local'), { recursive: true });
    await expectCode(s.deleteRef('main'), 'not_found');
    await expectCode(s.resolve('main'), 'not_found');
    await expectCode(s.resolve(idOf(bytesOf(3))), 'not_found');
    expect(await s.listRefs()).toEqual([]);
    expect(readdirSync(join(root, 'refs'))).toEqual([]);
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
    await s.close();
  });

  it('validates names: no escape from refs/, no temp or lock names', () => {
    for (const bad of [
      '',
      '/abs',
      'a/../b',
      '..',
      'a//b',
      'a/',
      '.hidden',
      'x.lock',
      'x.tmp',
      'sp ace',
      'a\\b',
      'é',
      'a'.repeat(201),
    ]) {
      expect(() => validateRefName(bad), bad).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    }
    for (const ok of ['main', 'local/example', 'org/model-v1.2_x', '_x']) expect(validateRefName(ok)).toBe(ok);
  });

  it('refuses a ref to a missing object, a snapshot with missing objects, and a namespace clash', async () => {
    const s = await LocalStore.open(tempDir());
    await expectCode(s.setRef('main', idOf(bytesOf(1))), 'not_found');
    const present = bytesOf(100, 1);
    await s.put(present);
    const manifest = encodeManifest({
      entries: [
        {
          path: 'a.bin',
          kind: 'file',
          mode: 0o644,
          size: 200,
          profile: 'safetensors-v1',
          records: [
            { digest: idOf(present), length: 100 },
            { digest: idOf(bytesOf(100, 2)), length: 100 },
          ],
        },
      ],
    });
    const m = (await s.put(manifest)).id;
    const e = await expectCode(s.setRef('main', m), 'not_found');
    expect(e.details.missing).toEqual([idOf(bytesOf(100, 2))]);
    await expectCode(s.addRoot(m, 'test'), 'not_found');
    await s.put(bytesOf(100, 2));
    await s.setRef('a', m);
    await expectCode(s.setRef('a/b', m), 'conflict');
    await s.setRef('c/d', m);
    await expectCode(s.setRef('c', m), 'conflict');
    await s.close();
  });

  it('compare-and-swap is race-free across connections: exactly one of N racers wins', async () => {
    const root = tempDir();
    const stores = await Promise.all(Array.from({ length: 4 }, () => LocalStore.open(root)));
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await stores[0]!.put(bytesOf(8, i + 10))).id);
    const outcomes = await Promise.allSettled(
      stores.map((s, i) => s.setRef('race', ids[i]! as `sha256:${string}`, { expected: null })),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled').length).toBe(1);
    for (const o of outcomes) if (o.status === 'rejected') expect((o.reason as { code: string }).code).toBe('conflict');
    const winner = outcomes.findIndex((o) => o.status === 'fulfilled');
    expect(await stores[3]!.getRef('race')).toBe(ids[winner]);
    for (const s of stores) await s.close();
  });
});

describe('roots and leases', () => {
  it('adds, lists and removes roots with a reason', async () => {
    const s = await LocalStore.open(tempDir());
    const id = (await s.put(bytesOf(4))).id;
    await expectCode(s.addRoot(id, ''), 'invalid_argument');
    await s.addRoot(id, 'pinned by test');
    expect((await s.listRoots()).map((r) => [r.id, r.reason])).toEqual([[id, 'pinned by test']]);
    await s.removeRoot(id);
    await expectCode(s.removeRoot(id), 'not_found');
    expect(await s.listRoots()).toEqual([]);
    await s.close();
  });

  it('an expired or released lease refuses new claims and ref commits', async () => {
    const s = await LocalStore.open(tempDir());
    const lease = await s.lease({ ttlMs: 50, keepAlive: false });
    const { id } = await s.put(bytesOf(9), { lease });
    await new Promise((r) => setTimeout(r, 80));
    expect(() => lease.add([id])).toThrow(expect.objectContaining({ code: 'conflict' }));
    await expectCode(lease.renew(), 'conflict');
    await expectCode(s.put(bytesOf(10), { lease }), 'conflict');
    await expectCode(s.setRef('main', id, { lease }), 'conflict');
    expect(await s.getRef('main')).toBeNull();
    const l2 = await s.lease();
    await l2.release();
    await l2.release();
    expect(() => l2.add([id])).toThrow(expect.objectContaining({ code: 'conflict' }));
    await s.close();
  });
});
