import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import { describe, expect, it } from 'vitest';
import { blobEntry, bytesOf, expectCode, objectFile, tempDir } from '@tensorfs/testkit';

async function storeWithSnapshot() {
  const root = tempDir();
  const src = tempDir();
  mkdirSync(join(src, 'm'));
  writeFileSync(join(src, 'm', 'a.bin'), bytesOf(2_500_000, 1));
  writeFileSync(join(src, 'm', 'b.bin'), bytesOf(1000, 2));
  const s = await LocalStore.open(root);
  const r = await s.importPath(join(src, 'm'), { name: 'main' });
  return { root, src, s, snapshot: r.snapshot };
}

describe('gc', () => {
  it('sweeps only unreachable objects older than the grace period; dryRun removes nothing', async () => {
    const { root, s, snapshot } = await storeWithSnapshot();
    const orphan = (await s.put(bytesOf(777, 9))).id;
    const rooted = (await s.put(bytesOf(100, 10))).id;
    await s.addRoot(rooted, 'keep');
    const lease = await s.lease();
    const leased = (await s.put(bytesOf(55, 11), { lease })).id;
    expect((await s.gc()).removed).toBe(0);
    const dry = await s.gc({ dryRun: true, graceMs: 0 });
    expect(dry).toMatchObject({ removed: 1, bytes: 777, dryRun: true });
    expect(existsSync(objectFile(root, orphan))).toBe(true);
    const before = (await s.usage()).objects;
    const res = await s.gc({ graceMs: 0 });
    expect(res).toMatchObject({ removed: 1, bytes: 777, kept: before - 1 });
    expect(existsSync(objectFile(root, orphan))).toBe(false);
    for (const id of [rooted, leased, snapshot]) expect(await s.has(id)).toBe(true);
    await lease.release();
    expect((await s.gc({ graceMs: 0 })).removed).toBe(1);
    await s.removeRoot(rooted);
    await s.deleteRef('main');
    const all = await s.gc({ graceMs: 0 });
    expect(all.kept).toBe(0);
    expect((await s.usage()).objects).toBe(0);
    await s.close();
  });

  it('keeps what a manifest object names (a format fact, nothing registered), and verifies it', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const a = (await s.put(bytesOf(50, 1))).id;
    const b = (await s.put(bytesOf(50, 2))).id;
    const list = await s.putManifest({ entries: [blobEntry('a', a, 50), blobEntry('b', b, 50)] });
    await s.setRef('list', list);
    const orphan = (await s.put(bytesOf(50, 3))).id;
    expect((await s.gc({ graceMs: 0 })).removed).toBe(1);
    expect(await s.has(orphan)).toBe(false);
    for (const id of [a, b, list]) expect(await s.has(id)).toBe(true);
    rmSync(objectFile(root, b));
    expect((await s.verify()).missing).toEqual([b]);
    await s.close();
  });

  it('removes temps left by dead writers of this host, keeps live ones', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const dead = spawnSync(process.execPath, ['-e', 'process.exit(0)']).pid!;
    const host = hostname()
      .replace(/[^A-Za-z0-9.-]/g, '_')
      .slice(0, 64);
    writeFileSync(join(root, 'tmp', `${host}-${dead}-0123456789abcdef.tmp`), 'x');
    writeFileSync(join(root, 'tmp', `${host}-${process.pid}-0123456789abcdef.tmp`), 'y');
    expect((await s.gc({ dryRun: true })).temps).toBe(1);
    expect((await s.gc()).temps).toBe(1);
    expect(readdirSync(join(root, 'tmp'))).toEqual([`${host}-${process.pid}-0123456789abcdef.tmp`]);
    await s.close();
  });
});

describe('verify', () => {
  it('is clean on a healthy store, with and without data', async () => {
    const { s } = await storeWithSnapshot();
    const v = await s.verify({ data: true });
    expect(v.missing).toEqual([]);
    expect(v.corrupt).toEqual([]);
    expect(v.objects).toBe(v.rehashed);
    expect(v.objects).toBeGreaterThan(2);
    const sampled = await s.verify({ data: true, sample: 0.5 });
    expect(sampled.rehashed).toBeLessThanOrEqual(sampled.objects);
    await expectCode(s.verify({ sample: 0 }), 'invalid_argument');
    await s.close();
  });

  it('reports missing, truncated and flipped objects by id; readers then refuse them', async () => {
    const root = tempDir();
    const s = await LocalStore.open(root);
    const parts = [bytesOf(300, 1), bytesOf(400, 2), bytesOf(500, 3), bytesOf(1000, 2)];
    const ids: ObjectId[] = [];
    for (const p of parts) ids.push((await s.put(p)).id);
    const a = {
      path: 'a',
      kind: 'file' as const,
      mode: 0o644,
      size: 1200,
      profile: 'safetensors-v1' as const,
      records: parts.slice(0, 3).map((p, i) => ({ digest: ids[i]!, length: p.length })),
    };
    const b = {
      path: 'b',
      kind: 'file' as const,
      mode: 0o644,
      size: 1000,
      profile: 'blob-v1' as const,
      records: [{ digest: ids[3]!, length: 1000 }],
    };
    const snapshot = await s.putManifest({ entries: [a, b] });
    await s.setRef('main', snapshot);
    const gone = ids[0]!;
    const short = ids[1]!;
    const flipped = ids[3]!;
    rmSync(objectFile(root, gone));
    chmodSync(objectFile(root, short), 0o644);
    truncateSync(objectFile(root, short), 10);
    chmodSync(objectFile(root, flipped), 0o644);
    const bytes = bytesOf(1000, 2);
    bytes[500]! ^= 0x80;
    writeFileSync(objectFile(root, flipped), bytes);
    const quick = await s.verify();
    expect(quick.missing).toEqual([gone]);
    expect(quick.corrupt).toEqual([short]);
    const full = await s.verify({ data: true });
    expect(full.missing).toEqual([gone]);
    expect(full.corrupt).toEqual([short, flipped].sort());
    await expectCode(s.readObject(flipped), 'corrupt');
    await expectCode(s.recordsSource(b.records).read(0, 10), 'corrupt');
    await expectCode(s.exportSnapshot(snapshot, join(tempDir(), 'o')), 'not_found');
    // a good copy heals the quarantine
    expect((await s.put(bytesOf(1000, 2))).written).toBe(true);
    expect((await s.verify({ data: true })).corrupt).toEqual([short]);
    await s.close();
  });
});

describe('usage', () => {
  it('reports logical and stored bytes and the dedup ratio', async () => {
    const { s, src } = await storeWithSnapshot();
    writeFileSync(join(src, 'm', 'c.bin'), bytesOf(2_500_000, 1));
    await s.importPath(join(src, 'm'), { name: 'copy' });
    const u = await s.usage();
    expect(u.refs.map((r) => r.name)).toEqual(['copy', 'main']);
    expect(u.refs[1]!.logicalBytes).toBe(2_501_000);
    expect(u.refs[0]!.logicalBytes).toBe(5_001_000);
    expect(u.logicalBytes).toBe(7_502_000);
    expect(u.storedBytes).toBeGreaterThan(2_501_000);
    expect(u.storedBytes).toBeLessThan(2_510_000);
    expect(u.dedupRatio).toBeCloseTo(7_502_000 / u.storedBytes, 5);
    await s.close();
  });
});
