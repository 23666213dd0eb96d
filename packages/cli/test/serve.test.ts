/** `tfs serve` options and the hub's failures as a user sees them (issue 24 §2). Run `pnpm build` first. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesOf } from '@tensorfs/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { tfs, tfsServe, tfsSync } from './remote-servers.js';

const dirs: string[] = [];
/** tmpfs mounts made by a test, unmounted after it. */
const mounts: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'tfs-serve-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const m of mounts.splice(0)) execFileSync('umount', ['-l', m]);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('tfs serve --tokens', () => {
  it('refuses a tokens file naming a token twice, an unknown key or anonymous.write (exit 2, naming the entry)', () => {
    const cases: [unknown, RegExp][] = [
      [
        {
          tokens: [
            { token: 'first-token-123', read: ['*'] },
            { token: 'first-token-123', write: ['*'] },
          ],
        },
        /tokens\[1\] names the same token as tokens\[0\]/,
      ],
      [{ tokens: [{ token: 'first-token-123', writes: ['*'] }] }, /tokens\[0\]: unknown key "writes"/],
      [{ tokens: [], anonymous: { read: ['*'], write: ['*'] } }, /anonymous: "write" is not allowed/],
    ];
    for (const [file, text] of cases) {
      const d = temp();
      const tokens = join(d, 'tokens.json');
      writeFileSync(tokens, JSON.stringify(file));
      const r = tfsSync(['serve', '--port', '0', '--store', join(d, 'store'), '--tokens', tokens]);
      expect([r.code, r.stderr]).toEqual([2, expect.stringMatching(text)]);
      expect(r.stdout).not.toContain('serving');
    }
  });
});

describe('tfs serve on a full disk', () => {
  it('a push of a small new object ends io (exit 11) within seconds, not unavailable after a minute', async () => {
    const mnt = temp();
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', mnt]);
    mounts.push(mnt);
    const hubStore = join(mnt, 'store');
    const tokens = join(temp(), 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ tokens: [{ token: 'writer-token-123456', read: ['*'], write: ['*'] }] }));
    const hub = await tfsServe(['--store', hubStore, '--tokens', tokens]);
    try {
      // Fill what is left of the disk.
      try {
        writeFileSync(join(mnt, 'filler'), Buffer.alloc(32 << 20));
      } catch {
        // ENOSPC: full, as wanted
      }
      const src = temp();
      writeFileSync(join(src, 'small.bin'), bytesOf(4 << 20, 7));
      const a = join(temp(), 'a');
      expect(tfsSync(['import', src, '--name', 'team/small', '--store', a]).code).toBe(0);
      const started = Date.now();
      const p = await tfs(['push', hub.url, 'team/small', '--store', a, '--json'], {
        TENSORFS_TOKEN: 'writer-token-123456',
      });
      const ms = Date.now() - started;
      expect([p.code, JSON.parse(p.stderr.trim().split('\n').at(-1)!).error.code]).toEqual([11, 'io']);
      expect(ms, p.stderr).toBeLessThan(20_000);
    } finally {
      await hub.stop('SIGTERM');
    }
  }, 120_000);
});
