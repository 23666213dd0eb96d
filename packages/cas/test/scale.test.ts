// The store's whole-store passes (listing, GC, verify, usage, existence checks) after they became
// synchronous per folder (issue 24 §1, the store at scale): what they count and refuse is what it
// was, strays in objects/ are still ignored, quarantine still hides an object, and a cancelled
// pass is `cancelled`.
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import { blobEntry, bytesOf, expectCode, objectFile, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const HEX = (c: string) => c.repeat(64);

describe('whole-store passes', () => {
  it('count only object files: strays, folders, misplaced names and dangling links are not objects', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const kept = (await s.put(bytesOf(40, 1))).id;
    const orphan = (await s.put(bytesOf(30, 2))).id;
    await s.setRef('main', await s.putManifest({ entries: [blobEntry('a', kept, 40)] }));
    const objects = join(root, 'objects', 'sha256');
    // A name in the wrong prefix folder, a folder named like an object, a stray file, a dangling
    // link named like an object, a non-hex prefix folder: none is an object.
    const k = HEX('a');
    mkdirSync(join(objects, 'ab', 'cd'), { recursive: true });
    writeFileSync(join(objects, 'ab', 'cd', k), 'misplaced');
    mkdirSync(join(objects, 'bb', 'bb', HEX('b')), { recursive: true });
    writeFileSync(join(objects, 'bb', 'bb', 'notes.txt'), 'stray');
    symlinkSync(join(root, 'nowhere'), join(objects, 'bb', 'bb', HEX('b').slice(0, 63) + 'c'));
    mkdirSync(join(objects, 'zz'), { recursive: true });
    writeFileSync(join(objects, 'zz', HEX('c')), 'x');
    const u = await s.usage();
    expect(u.objects).toBe(3); // kept, orphan, the manifest
    const dry = await s.gc({ dryRun: true, graceMs: 0 });
    expect(dry).toMatchObject({ removed: 1, bytes: 30, kept: 2, dryRun: true });
    const all = await s.verify({ all: true, data: true });
    expect(all).toMatchObject({ objects: 3, rehashed: 3, missing: [], corrupt: [], unreadable: [] });
    expect((await s.gc({ graceMs: 0 })).removed).toBe(1);
    expect(await s.has(orphan)).toBe(false);
    expect(await s.has(kept)).toBe(true);
    await s.close();
  });

  it('counts a symlink to an object file as the object (GC stats what the mark did not reach)', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const bytes = bytesOf(64, 3);
    const id = (await s.put(bytes)).id;
    // Replace the object with a link to a copy elsewhere (a restore that links instead of copying).
    const file = objectFile(root, id);
    const elsewhere = join(tempDir(), 'copy');
    writeFileSync(elsewhere, bytes);
    rmSync(file);
    symlinkSync(elsewhere, file);
    expect((await s.usage()).objects).toBe(1);
    expect(await s.gc({ dryRun: true, graceMs: 0 })).toMatchObject({ removed: 1, bytes: 64, kept: 0 });
    await s.close();
  });

  it('lacks(): absent and quarantined ids, in the order given; a bad id is invalid_argument', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const batch = await s.putBatch(Array.from({ length: 600 }, (_, i) => ({ bytes: bytesOf(20, 100 + i) })));
    const ids: ObjectId[] = batch.map((b) => (b.ok ? b.result.id : expect.fail(b.error.message)));
    const absent = `sha256:${HEX('e')}` as ObjectId;
    const ask = [ids[599]!, absent, ...ids.slice(0, 300), ids[7]!];
    expect(await s.lacks(ask)).toEqual([absent]);
    // Quarantine one (a flipped byte found by verify): it is lacking too, wherever it stands.
    const bad = ids[7]!;
    chmodSync(objectFile(root, bad), 0o644);
    writeFileSync(objectFile(root, bad), bytesOf(20, 999));
    await s.setRef('all', await s.putManifest({ entries: ids.map((id, i) => blobEntry(`f${1000 + i}`, id, 20)) }));
    expect((await s.verify({ data: true })).corrupt).toEqual([bad]);
    expect(await s.lacks(ask)).toEqual([absent, bad, bad]);
    expect(await s.has(bad)).toBe(false);
    await expectCode(s.lacks([ids[0]!, 'sha256:xyz' as ObjectId]), 'invalid_argument');
    // A path that cannot be told (a prefix folder that is a file) is io, not "absent".
    const used = new Set(ids.map((id) => id.slice(7, 9)));
    const free = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0')).find((p) => !used.has(p))!;
    const blocked = `sha256:${free.repeat(32)}` as ObjectId;
    writeFileSync(join(root, 'objects', 'sha256', free), 'not a folder');
    await expectCode(s.lacks([ids[1]!, blocked]), 'io');
    rmSync(join(root, 'objects', 'sha256', free));
    // A good copy lifts the quarantine: nothing but the absent id is lacking.
    await s.put(bytesOf(20, 100 + 7));
    expect(await s.lacks(ask)).toEqual([absent]);
    await s.close();
  });

  it('a cancelled GC, verify or usage is cancelled, and removes nothing', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const items = Array.from({ length: 300 }, (_, i) => ({ bytes: bytesOf(16, 5000 + i) }));
    await s.putBatch(items);
    const ac = new AbortController();
    ac.abort();
    await expectCode(s.gc({ graceMs: 0, signal: ac.signal }), 'cancelled');
    await expectCode(s.verify({ all: true, data: true, signal: ac.signal }), 'cancelled');
    await expectCode(s.usage({ signal: ac.signal }), 'cancelled');
    expect((await s.usage()).objects).toBe(300);
    await s.close();
  });

  it('verify reads a large object in pieces and a small one whole, and finds a flipped byte in either', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const big = (await s.put(bytesOf(200_000, 1))).id; // above the one-read size
    const small = (await s.put(bytesOf(1000, 2))).id;
    await s.setRef(
      'main',
      await s.putManifest({ entries: [blobEntry('big', big, 200_000), blobEntry('small', small, 1000)] }),
    );
    expect((await s.verify({ data: true })).corrupt).toEqual([]);
    for (const [id, n, seed] of [
      [big, 200_000, 1],
      [small, 1000, 2],
    ] as const) {
      const b = bytesOf(n, seed);
      b[n - 1]! ^= 1;
      chmodSync(objectFile(root, id), 0o644);
      writeFileSync(objectFile(root, id), b);
    }
    expect((await s.verify({ data: true })).corrupt).toEqual([big, small].sort());
    await expectCode(s.readObject(small), 'corrupt');
    await s.close();
  });
});
