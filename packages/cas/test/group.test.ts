// Group commit (issue 24): many small objects admitted together hold a bounded number of
// descriptors, publish exactly the objects asked for (present ones and duplicates once), leave
// no temp, and do so alike with syncfs and with the per-file fallback (TENSORFS_GROUP_SYNC=files).
import { readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { bytesOf, idOf, storedObjects, tempDir } from '@tensorfs/testkit';
import { afterEach, describe, expect, it, vi } from 'vitest';

/** Descriptors of this process open on files under `dir`. */
function openUnder(dir: string): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir)) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe.each(['default', 'files'])('putBatch as one group (%s durability)', (mode) => {
  it('admits 3,000 small objects once each, never holding their temps open', async () => {
    if (mode === 'files') vi.stubEnv('TENSORFS_GROUP_SYNC', 'files');
    const root = tempDir();
    const s = await LocalStore.open(root);
    const items = Array.from({ length: 3000 }, (_, i) => bytesOf(40 + (i % 7), i + 1));
    const first = await s.put(items[5]!);
    expect(first.written).toBe(true);
    let peak = 0;
    const timer = setInterval(() => {
      peak = Math.max(peak, openUnder(join(root, 'tmp')));
    }, 5);
    const lease = await s.lease();
    const out = await s.putBatch(
      [...items, items[7]!].map((bytes) => ({ bytes })),
      { lease },
    );
    clearInterval(timer);
    peak = Math.max(peak, openUnder(join(root, 'tmp')));
    expect(peak).toBeLessThanOrEqual(4);
    expect(out.length).toBe(3001);
    const written = out.filter((o) => o.ok && o.result.written).length;
    // All but the one already present and the repeated one.
    expect(written).toBe(2999);
    expect(out[5]).toEqual({ ok: true, result: { id: idOf(items[5]!), length: items[5]!.length, written: false } });
    expect(out[3000]).toEqual({ ok: true, result: { id: idOf(items[7]!), length: items[7]!.length, written: false } });
    expect(await storedObjects(root)).toEqual(new Set(items.map((b) => idOf(b).slice(7))));
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
    for (const k of [0, 1234, 2999])
      expect(Buffer.from(await s.readObject(idOf(items[k]!), { verify: true }))).toEqual(Buffer.from(items[k]!));
    await lease.release();
    await s.close();
  });
});
