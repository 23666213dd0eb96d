// A file's stamp (device, inode, size, mtime, ctime, type): what every importer compares to say a
// source changed while it was read. One implementation, exported for the local source adapter.
import { stampChange, stampOf } from '@tensorfs/cas';
import { expectCodeSync, tempDir } from '@tensorfs/testkit';
import { lstatSync, renameSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('stampOf / stampChange', () => {
  it('names the first field that differs, in the order type, inode, size, mtime, ctime', () => {
    const dir = tempDir();
    const a = join(dir, 'a');
    writeFileSync(a, 'abc');
    const before = stampOf(lstatSync(a, { bigint: true }));
    expect(before.regular).toBe(true);
    expect(before.symlink).toBe(false);
    expect(before.size).toBe(3n);
    expect(stampChange(before, stampOf(lstatSync(a, { bigint: true })))).toBeNull();

    utimesSync(a, new Date(1_000_000), new Date(2_000_000));
    const touched = stampOf(lstatSync(a, { bigint: true }));
    expect(touched.mtimeNs).toBe(2_000_000_000_000n);
    expect(stampChange(before, touched)).toBe('mtime');
    // utimes moves ctime too; with mtime put back, ctime is what is left.
    expect(stampChange(before, { ...touched, mtimeNs: before.mtimeNs })).toBe('ctime');

    writeFileSync(a, 'abcd');
    expect(stampChange(before, stampOf(lstatSync(a, { bigint: true })))).toBe('size');

    const b = join(dir, 'b');
    writeFileSync(b, 'xyz');
    renameSync(b, a);
    expect(stampChange(before, stampOf(lstatSync(a, { bigint: true })))).toBe('inode');

    symlinkSync('a', join(dir, 'l'));
    const link = stampOf(lstatSync(join(dir, 'l'), { bigint: true }));
    expect(link.symlink).toBe(true);
    expect(stampChange(before, link)).toBe('type');
  });

  it('refuses what is not a bigint stat result or a stamp (invalid_argument, store.argument)', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'a'), 'x');
    for (const bad of [null, 5, 'a', {}, lstatSync(join(dir, 'a'))]) {
      expectCodeSync(() => stampOf(bad as never), 'invalid_argument', 'store.argument');
    }
    const s = stampOf(lstatSync(join(dir, 'a'), { bigint: true }));
    expectCodeSync(() => stampChange(null as never, s), 'invalid_argument', 'store.argument');
    expectCodeSync(() => stampChange(s, 7 as never), 'invalid_argument', 'store.argument');
  });
});
