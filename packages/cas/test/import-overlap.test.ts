// First import writes object temps while their records hash (issue 16): the temps are published
// only after their digest is known and their bytes are synced, are discarded when the object turns
// out present, are never written on a re-import, and never outlive a failed import.
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalStore, fileSha256Ref } from '@tensorfs/cas';
import { expectCode, idOf, safetensorsBytes, storedObjects, tempDir } from '@tensorfs/testkit';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Objects } from '../src/store/objects.js';

const MiB = 1024 * 1024;

/** A safetensors file of U8 tensors with the given bytes; returns the file and each record's bytes. */
function safetensors(file: string, tensors: Uint8Array[]): Uint8Array[] {
  const bytes = safetensorsBytes(tensors.map((data, i) => ({ name: `t${i}`, data })));
  writeFileSync(file, bytes);
  return [bytes.subarray(0, bytes.length - tensors.reduce((n, t) => n + t.length, 0)), ...tensors];
}

/** `n` bytes, distinct per `seed` (cheap to make at tens of MiB). */
function filled(n: number, seed: number): Uint8Array {
  const b = Buffer.alloc(n, seed);
  b.writeUInt32LE((seed * 2654435761) >>> 0, 0);
  return b;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('first import overlaps hashing and writing', () => {
  it('writes every record of a new store early, publishes them all, leaves no temp', async () => {
    const dir = tempDir();
    const file = join(dir, 'm.safetensors');
    const records = safetensors(file, [filled(3 * MiB, 1), filled(2 * MiB, 2), filled(1 * MiB, 3)]);
    const fill = vi.spyOn(Objects.prototype, 'fillTempFrom');
    const root = tempDir();
    const s = await LocalStore.open(root);
    let atFirstRecord = -1;
    const r = await s.importPath(file, {
      name: 'm',
      onProgress: (p) => {
        if (p.done > 0 && atFirstRecord < 0) atFirstRecord = fill.mock.calls.length;
      },
    });
    // Every tensor's temp was started before the first record's digest was acted on; the header
    // (a small record) is admitted with the group of small records instead.
    expect(atFirstRecord).toBe(records.length - 1);
    expect(fill).toHaveBeenCalledTimes(records.length - 1);
    expect(r.objectsWritten).toBe(records.length);
    expect(r.bytesWritten).toBe(records.reduce((n, b) => n + b.length, 0));
    // The records and the snapshot: no whole-file SHA-256 list unless asked for (fileSha256).
    expect(await storedObjects(root)).toEqual(
      new Set([...records.map((b) => idOf(b)), r.snapshot].map((id) => id.slice(7))),
    );
    expect(await s.getRef(fileSha256Ref(r.snapshot))).toBeNull();
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
    expect((await s.verify()).corrupt).toEqual([]);
    await s.close();
  });

  it('writes no temp at all when re-importing a file the store has', async () => {
    const dir = tempDir();
    const file = join(dir, 'm.safetensors');
    safetensors(file, [filled(2 * MiB, 4), filled(2 * MiB, 5)]);
    const root = tempDir();
    const s = await LocalStore.open(root);
    const first = await s.importPath(file, { name: 'm' });
    const fill = vi.spyOn(Objects.prototype, 'fillTemp');
    const fillFrom = vi.spyOn(Objects.prototype, 'fillTempFrom');
    const again = await s.importPath(file, { name: 'm' });
    expect(again.snapshot).toBe(first.snapshot);
    expect(again.bytesWritten).toBe(0);
    expect(fill).not.toHaveBeenCalled();
    expect(fillFrom).not.toHaveBeenCalled();
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
    await s.close();
  });

  it('discards an early temp whose object turns out present (a repeated tensor)', async () => {
    const dir = tempDir();
    const file = join(dir, 'm.safetensors');
    const same = filled(2 * MiB, 6);
    const records = safetensors(file, [same, filled(1 * MiB, 7), same]);
    const root = tempDir();
    const s = await LocalStore.open(root);
    const r = await s.importPath(file, { name: 'm' });
    expect(r.objectsWritten).toBe(3);
    // The records and the snapshot: no whole-file SHA-256 list unless asked for (fileSha256).
    expect(await storedObjects(root)).toEqual(
      new Set([...records.map((b) => idOf(b)), r.snapshot].map((id) => id.slice(7))),
    );
    expect(await s.getRef(fileSha256Ref(r.snapshot))).toBeNull();
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
    expect((await s.verify()).corrupt).toEqual([]);
    await s.close();
  });

  it('an import cancelled with early temps in flight leaves no temp and no ref', async () => {
    const dir = tempDir();
    const file = join(dir, 'm.safetensors');
    // Two 64 MiB read batches: the second is read (and written early) before the first is decided.
    safetensors(file, [filled(30 * MiB, 8), filled(30 * MiB, 9), filled(30 * MiB, 10)]);
    const root = tempDir();
    const s = await LocalStore.open(root);
    const fill = vi.spyOn(Objects.prototype, 'fillTempFrom');
    const ac = new AbortController();
    await expectCode(
      s.importPath(file, { name: 'm', threads: 2, signal: ac.signal, onProgress: () => ac.abort() }),
      'cancelled',
    );
    expect(fill.mock.calls.length).toBeGreaterThanOrEqual(3); // t0, t1 and t2 early (the header goes with the small group)
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
    expect(await s.getRef('m')).toBeNull();
    // Whatever was published before the abort is whole.
    expect((await s.verify()).corrupt).toEqual([]);
    await s.close();
  });
});
