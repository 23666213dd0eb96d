import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { describe, expect, it } from 'vitest';
import { tempDir } from '@tensorfs/testkit';

describe('import sorts paths in manifest order (UTF-8 bytes)', () => {
  it('imports a folder holding \\uE000.txt and 😀.txt (UTF-16 order differs from byte order)', async () => {
    const src = join(tempDir(), 'tree');
    mkdirSync(src);
    // U+E000 (private use) is EE 80 80 in UTF-8, U+1F600 is F0 9F 98 80: byte order puts U+E000
    // first, UTF-16 code units (0xE000 vs 0xD83D) put the emoji first.
    writeFileSync(join(src, '\uE000.txt'), 'a');
    writeFileSync(join(src, '😀.txt'), 'b');
    writeFileSync(join(src, 'z.txt'), 'c');
    const s = await LocalStore.open(tempDir());
    try {
      const r = await s.importPath(src, { name: 'local/unicode' });
      const m = await s.getManifest(r.snapshot);
      expect(m.entries.map((e) => e.path)).toEqual(['z.txt', '\uE000.txt', '😀.txt']);
    } finally {
      await s.close();
    }
  });
});
