// The storage contract's conformance suite against the local store (and a read-only open of it).
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { openStore } from '@tensorfs/cas';
import { expectConformant, outcomes, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

describe('the storage contract over the local store', () => {
  it('passes every check, with a symlink and a garbage file planted in refs/', async () => {
    const root = tempDir();
    const store = await openStore(root);
    try {
      let n = 0;
      const report = await expectConformant({
        name: 'local store (cas)',
        store,
        plantBadRef: async (name) => {
          const file = join(root, 'refs', ...name.split('/'));
          mkdirSync(dirname(file), { recursive: true });
          // One symlink, then garbage content: both are named, neither fails the listing.
          if (n++ % 2 === 0) symlinkSync('/etc/passwd', file);
          else writeFileSync(file, 'garbage\n');
        },
      });
      const o = outcomes(report);
      expect(Object.values(o).filter((x) => x === 'passed')).toHaveLength(report.results.length - 1);
      expect(o['absent capabilities: their calls are refused unsupported']).toBe('not applicable');
      const listing = await store.scanRefs();
      expect(listing.problems.map((p) => p.rule)).toEqual(['ref.not_regular']);
    } finally {
      await store.close();
    }
  });
});
