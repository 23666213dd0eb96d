import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectCode, tempDir } from '@tensorfs/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { groupStrategy } from '../src/store/group.js';

const temps: string[] = [];
const PATH = process.env.PATH;
afterEach(() => {
  process.env.PATH = PATH;
  for (const t of temps.splice(0)) rmSync(t, { recursive: true, force: true });
});

describe('the group-commit probe', () => {
  it('fails its caller once and probes again next time (a failed sync -f is not remembered)', async () => {
    const root = tempDir('tfs-probe-');
    temps.push(root);
    const bin = join(root, 'bin');
    const tmp = join(root, 'tmp');
    mkdirSync(bin);
    mkdirSync(tmp);
    // A `sync` that fails while the marker exists, then runs the real one.
    const marker = join(root, 'fail');
    writeFileSync(marker, '');
    writeFileSync(
      join(bin, 'sync'),
      `#!/bin/sh\nif [ -e '${marker}' ]; then echo 'sync: error syncing' >&2; exit 1; fi\nexec /bin/sync "$@"\n`,
    );
    chmodSync(join(bin, 'sync'), 0o755);
    process.env.PATH = `${bin}:${PATH}`;
    await expectCode(groupStrategy(tmp), 'io');
    rmSync(marker);
    expect(existsSync(marker)).toBe(false);
    expect(['syncfs', 'files']).toContain(await groupStrategy(tmp));
  });
});
