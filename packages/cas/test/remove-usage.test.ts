/**
 * `LocalStore.remove` (a ref and, at once, what only it reached) and the exclusive/shared figures
 * of `usage`: exact bytes, the same protections as GC (other refs, roots, live leases, the grace
 * period), and a concurrent importer of the same bytes racing removals.
 */
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { blobEntry, bytesOf, expectCode, objectFile, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const SHARED = 300_000;
const ONLY_A = 200_000;
const ONLY_B = 100_000;

/** Two folders sharing `shared.bin`: A adds `a.bin`, B adds `b.bin` (each file one record). */
function trees(): { a: string; b: string } {
  const base = tempDir();
  const a = join(base, 'a');
  const b = join(base, 'b');
  mkdirSync(a);
  mkdirSync(b);
  for (const d of [a, b]) writeFileSync(join(d, 'shared.bin'), bytesOf(SHARED, 1));
  writeFileSync(join(a, 'a.bin'), bytesOf(ONLY_A, 2));
  writeFileSync(join(b, 'b.bin'), bytesOf(ONLY_B, 3));
  return { a, b };
}

/** Sum of the sizes of every file under `objects/` (walked here, not by the store). */
function objectFolderBytes(root: string): number {
  let n = 0;
  for (const name of readdirSync(join(root, 'objects'), { recursive: true }) as string[]) {
    const st = statSync(join(root, 'objects', name));
    if (st.isFile()) n += st.size;
  }
  return n;
}

async function setup(graceMs = 0) {
  const root = tempDir();
  const t = trees();
  const s = await LocalStore.open(root, { graceMs });
  const a = (await s.importPath(t.a, { name: 'a' })).snapshot;
  const b = (await s.importPath(t.b, { name: 'b' })).snapshot;
  // Each file is one record (the sizes below assume it).
  for (const id of [a, b]) {
    for (const e of (await s.getManifest(id)).entries) if (e.kind === 'file') expect(e.records).toHaveLength(1);
  }
  const aManifest = await s.objectSize(a);
  const bManifest = await s.objectSize(b);
  return { root, t, s, a, b, aManifest, bManifest };
}

describe('usage: exclusive and shared bytes', () => {
  it('splits each ref into what only it keeps and what others keep too; totals add up to the files', async () => {
    const { root, s, a, b, aManifest, bManifest } = await setup();
    const orphan = (await s.put(bytesOf(777, 9))).id;
    const u = await s.usage();
    expect(u.storedBytes).toBe(objectFolderBytes(root));
    expect(u.storedBytes).toBe(SHARED + ONLY_A + ONLY_B + aManifest + bManifest + 777);
    expect(u.objects).toBe(6);
    expect(u.unreferencedBytes).toBe(777);
    expect(u.refs).toEqual([
      {
        name: 'a',
        id: a,
        logicalBytes: SHARED + ONLY_A,
        storedBytes: SHARED + ONLY_A + aManifest,
        objects: 3,
        exclusiveBytes: ONLY_A + aManifest,
        sharedBytes: SHARED,
      },
      {
        name: 'b',
        id: b,
        logicalBytes: SHARED + ONLY_B,
        storedBytes: SHARED + ONLY_B + bManifest,
        objects: 3,
        exclusiveBytes: ONLY_B + bManifest,
        sharedBytes: SHARED,
      },
    ]);
    // Another ref naming the same snapshot: nothing of it is either ref's alone.
    await s.setRef('a2', a);
    const v = await s.usage();
    expect(v.refs.find((r) => r.name === 'a')).toMatchObject({
      exclusiveBytes: 0,
      sharedBytes: v.refs[0]!.storedBytes,
    });
    expect(v.refs.find((r) => r.name === 'a2')).toMatchObject({ exclusiveBytes: 0 });
    expect(v.refs.find((r) => r.name === 'b')).toMatchObject({ exclusiveBytes: ONLY_B + bManifest });
    await s.deleteRef('a2');
    expect(await s.has(orphan)).toBe(true);
    await s.close();
  });

  it('counts what a root or a live lease holds as shared', async () => {
    const { s, a, b } = await setup();
    const aBin = (await s.getManifest(a)).entries.find((e) => e.path === 'a.bin');
    if (aBin?.kind !== 'file') throw new Error('a.bin missing');
    await s.addRoot(aBin.records[0]!.digest, 'keep a.bin');
    const lease = await s.lease();
    lease.add([a]);
    const ref = (await s.usage()).refs.find((r) => r.name === 'a')!;
    expect(ref.exclusiveBytes).toBe(0);
    expect(ref.sharedBytes).toBe(ref.storedBytes);
    await lease.release();
    const after = (await s.usage()).refs.find((r) => r.name === 'a')!;
    expect(after.exclusiveBytes).toBe(await s.objectSize(a));
    // A root naming a ref's own snapshot: nothing of that ref is its alone.
    expect((await s.usage()).refs.find((r) => r.name === 'b')!.exclusiveBytes).toBeGreaterThan(0);
    await s.addRoot(b, 'keep b');
    expect((await s.usage()).refs.find((r) => r.name === 'b')!.exclusiveBytes).toBe(0);
    await s.close();
  });
});

describe('remove', () => {
  it('deletes the ref and frees exactly its exclusive bytes; what another ref reaches stays', async () => {
    const { root, t, s, a, b, aManifest } = await setup();
    const exclusive = (await s.usage()).refs.find((r) => r.name === 'a')!.exclusiveBytes;
    const r = await s.remove('a');
    expect(r).toEqual({
      name: 'a',
      id: a,
      removed: 2,
      bytes: ONLY_A + aManifest,
      shared: 1,
      sharedBytes: SHARED,
      left: 0,
      leftBytes: 0,
      keptObjects: false,
    });
    expect(r.bytes).toBe(exclusive);
    expect(await s.getRef('a')).toBeNull();
    expect(await s.has(a)).toBe(false);
    expect(await s.verify({ data: true })).toMatchObject({ missing: [], corrupt: [] });
    expect(await s.has(b)).toBe(true);
    const u = await s.usage();
    expect(u.storedBytes).toBe(objectFolderBytes(root));
    expect(u.refs.map((x) => x.name)).toEqual(['b']);
    expect(u.refs[0]!.exclusiveBytes).toBe(u.storedBytes);
    // Importing it again writes just what went.
    const again = await s.importPath(t.a, { name: 'a' });
    expect(again).toMatchObject({ snapshot: a, bytesWritten: ONLY_A });
    await s.close();
  });

  it('leaves objects younger than the grace period for GC, and keepObjects leaves all to GC', async () => {
    const { s, a, aManifest } = await setup(3600_000);
    const r = await s.remove('a');
    expect(r).toMatchObject({ removed: 0, bytes: 0, shared: 1, left: 2, leftBytes: ONLY_A + aManifest });
    expect(await s.has(a)).toBe(true);
    expect((await s.gc({ graceMs: 0 })).bytes).toBe(ONLY_A + aManifest);
    const k = await s.remove('b', { keepObjects: true });
    expect(k).toMatchObject({ name: 'b', removed: 0, bytes: 0, keptObjects: true });
    expect(await s.getRef('b')).toBeNull();
    expect((await s.gc({ graceMs: 0 })).removed).toBe(3);
    await s.close();
  });

  it('keeps what a root or a live lease holds', async () => {
    const { root, s, a, aManifest } = await setup();
    const aBin = (await s.getManifest(a)).entries.find((e) => e.path === 'a.bin');
    if (aBin?.kind !== 'file') throw new Error('a.bin missing');
    const rooted = aBin.records[0]!.digest;
    await s.addRoot(rooted, 'keep');
    const lease = await s.lease();
    lease.add([a]);
    const r = await s.remove('a');
    expect(r).toMatchObject({ removed: 0, bytes: 0, shared: 3, sharedBytes: SHARED + ONLY_A + aManifest });
    for (const id of [a, rooted]) expect(statSync(objectFile(root, id)).isFile()).toBe(true);
    await lease.release();
    await s.close();
  });

  it('refuses with the right codes and changes nothing', async () => {
    const { root, s, a, b } = await setup();
    await expectCode(s.remove('nope'), 'not_found');
    await expectCode(s.remove('a', { expected: b }), 'conflict');
    await expectCode(s.remove('../a'), 'invalid_argument');
    expect(await s.getRef('a')).toBe(a);
    // Another ref whose target is missing: what it keeps alive is unknown, so nothing goes.
    await s.setRef('c', b);
    rmSync(objectFile(root, b));
    const bytesBefore = objectFolderBytes(root);
    const err = await expectCode(s.remove('a'), 'corrupt');
    expect(err.details).toMatchObject({ rule: 'gc.missing_root', ref: 'a' });
    expect(await s.getRef('a')).toBe(a);
    expect(objectFolderBytes(root)).toBe(bytesBefore);
    await s.close();
  });

  it('never removes what a concurrent import of the same bytes commits, over several rounds', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root, { graceMs: 0 });
    const other = await LocalStore.open(root, { graceMs: 0 });
    // Other refs make each removal's mark take a while: the window in which the importer claims
    // objects and sets its ref after the mark, which only the sweep's re-checks (ref log, leases) see.
    for (let i = 0; i < 40; i++) {
      const blob = (await s.put(bytesOf(64, 1000 + i))).id;
      await s.setRef(`filler/${i}`, await s.putManifest({ entries: [blobEntry('f', blob, 64)] }));
    }
    const ROUNDS = 8;
    for (let i = 0; i < ROUNDS; i++) {
      // Bytes no ref holds yet: at the mark they are the victim's alone.
      const src = tempDir();
      writeFileSync(join(src, 'w.bin'), bytesOf(150_000, 50 + i));
      writeFileSync(join(src, 'c.json'), `{"round":${i}}`);
      await s.importPath(src, { name: `victim/${i}`, threads: 1 });
      const [imported, removed] = await Promise.all([
        other.importPath(src, { name: `race/${i}`, threads: 1 }),
        s.remove(`victim/${i}`),
      ]);
      expect(await other.getRef(`race/${i}`)).toBe(imported.snapshot);
      expect(removed.id).toBe(imported.snapshot);
    }
    const refs = await s.listRefs();
    expect(refs.filter((r) => !r.name.startsWith('filler/')).map((r) => r.name)).toEqual(
      Array.from({ length: ROUNDS }, (_, i) => `race/${i}`),
    );
    expect(await s.verify({ data: true })).toMatchObject({ missing: [], corrupt: [] });
    await other.close();
    await s.close();
  });
});
