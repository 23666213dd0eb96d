import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RefFolder } from '@tensorfs/cas';
import { bytesOf, expectCode, idOf, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

describe('RefFolder (refs without objects, the store compare-and-swap)', () => {
  it('moves refs by compare-and-swap, names no object it must hold, and keeps them across reopen', async () => {
    const root = join(tempDir('tfs-refs-'), 'refs-dir');
    const a = idOf(bytesOf(10, 1));
    const b = idOf(bytesOf(10, 2));
    const f = await RefFolder.open(root);
    // Neither object exists anywhere here: the folder holds refs only.
    await f.setRef('team/model', a, null);
    await expectCode(f.setRef('team/model', b, null), 'conflict');
    await expectCode(f.setRef('team/model', b, b), 'conflict');
    await f.setRef('team/model', b, a);
    expect(await f.getRef('team/model')).toBe(b);
    expect(await f.getRef('team/other')).toBeNull();
    // Racing writers from one starting point: exactly one wins.
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => f.setRef('race', a, null)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    await f.close();
    expect(readFileSync(join(root, 'refs', 'team', 'model'), 'utf8')).toBe(`${b}\n`);
    mkdirSync(join(root, 'refs', 'team', 'model.d', 'x'), { recursive: true });
    const g = await RefFolder.open(root);
    const scan = await g.scanRefs();
    expect(scan.refs).toEqual([
      { name: 'race', id: a },
      { name: 'team/model', id: b },
    ]);
    expect(scan.problems).toEqual([]);
    await expectCode(g.setRef('bad name/..', a, null), 'invalid_argument');
    await g.close();
  });
});
