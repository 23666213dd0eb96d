// The store's read-into path (open, fstat and close as direct syscalls): the same refusals as
// every other read — missing, wrong length (then quarantined), quarantined.
import { truncateSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { describe, expect, it } from 'vitest';
import { bytesOf, expectCode, tempDir } from '@tensorfs/testkit';

function objectFile(root: string, id: string): string {
  const hex = id.slice(7);
  return join(root, 'objects', 'sha256', hex.slice(0, 2), hex.slice(2, 4), hex);
}

describe('recordsSource.readInto', () => {
  it('refuses missing, shortened and then quarantined objects', async () => {
    const root = join(tempDir(), 'store');
    const s = await LocalStore.open(root);
    const a = bytesOf(100);
    const b = bytesOf(50);
    const ida = (await s.put(a)).id;
    const idb = (await s.put(b)).id;
    const src = s.recordsSource([
      { digest: ida, length: 100 },
      { digest: idb, length: 50 },
    ]);
    const target = new Uint8Array(150);
    await src.readInto(0, target);
    expect(Buffer.from(target)).toEqual(Buffer.concat([a, b]));
    truncateSync(objectFile(root, idb), 49);
    await expectCode(src.readInto(90, new Uint8Array(20)), 'corrupt');
    // The wrong length quarantined it: refused from now on, whatever range is asked.
    await expectCode(src.readInto(100, new Uint8Array(1)), 'corrupt');
    unlinkSync(objectFile(root, ida));
    await expectCode(src.readInto(0, new Uint8Array(1)), 'not_found');
    await s.close();
  });
});
