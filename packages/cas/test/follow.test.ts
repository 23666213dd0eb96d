import { appendFileSync, existsSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bytesOf, expectCode, idOf, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { followFile } from '../src/hash/follow.js';
import { LocalStore } from '@tensorfs/cas';
import { objectIdFromDigest } from '@tensorfs/format';

const hex = (d: Uint8Array) => objectIdFromDigest(d);

for (const thread of [true, false]) {
  describe(`followFile (${thread ? 'hashing thread' : 'calling thread'})`, () => {
    it('hashes a file as it grows, in whatever steps it is advanced', async () => {
      const path = join(tempDir(), 'grow.part');
      const bytes = bytesOf(9_000_123, 7);
      writeFileSync(path, '');
      const f = followFile(path, { thread });
      let written = 0;
      for (const end of [1, 4_194_304, 4_194_305, 8_388_608, bytes.length]) {
        appendFileSync(path, bytes.subarray(written, end));
        written = end;
        f.advance(end);
        f.advance(end - 1); // going back is ignored
      }
      expect(hex(await f.digest(bytes.length))).toBe(idOf(bytes));
      // Finished: a second digest is refused.
      await expect(f.digest(bytes.length)).rejects.toThrow();
    });

    it('starts again after reset, and digests up to the larger of advanced and asked', async () => {
      const path = join(tempDir(), 'reset.part');
      writeFileSync(path, bytesOf(5_000_000, 1));
      const f = followFile(path, { thread });
      f.advance(5_000_000);
      truncateSync(path, 0);
      const again = bytesOf(1_234_567, 2);
      writeFileSync(path, again);
      f.reset();
      f.advance(1000);
      expect(hex(await f.digest(again.length))).toBe(idOf(again));
    });

    it('reports a file shorter than advanced to as EOF, and a missing file by its errno', async () => {
      const path = join(tempDir(), 'short.part');
      writeFileSync(path, bytesOf(100, 1));
      const f = followFile(path, { thread });
      f.advance(100);
      await expect(f.digest(101)).rejects.toMatchObject({ code: 'EOF' });
      const gone = followFile(join(tempDir(), 'absent.part'), { thread });
      await expect(gone.digest(1)).rejects.toMatchObject({ code: 'ENOENT' });
    });

    it('the empty file', async () => {
      const path = join(tempDir(), 'empty.part');
      writeFileSync(path, '');
      expect(hex(await followFile(path, { thread }).digest(0))).toBe(idOf(new Uint8Array(0)));
    });
  });
}

describe('ObjectPart hashes what its file holds', () => {
  it('a part shortened behind its writer is refused (`io`), removed, and nothing is published', async () => {
    const root = join(tempDir(), 'store');
    const store = await LocalStore.open(root);
    const bytes = bytesOf(6_000_000, 9);
    const part = await store.openPart('pull-s', { expectedLength: bytes.length });
    await part.write(bytes.subarray(0, 5_000_000)); // past the 4 MiB flush: in the file now
    truncateSync(join(root, 'tmp', 'pull-s.part'), 1_000_000);
    await part.write(bytes.subarray(5_000_000));
    const err = await expectCode(part.commit({ expected: idOf(bytes) }), 'io');
    expect(err.details).toMatchObject({ op: 'read part back', errno: 'EOF', path: 'tmp/' });
    expect(await store.has(idOf(bytes))).toBe(false);
    expect(existsSync(join(root, 'tmp', 'pull-s.part'))).toBe(false);
    await store.close();
  });
});
