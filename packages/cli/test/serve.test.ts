/** `tfs serve` options and the hub's failures as a user sees them (issue 24 §2). Run `pnpm build` first. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tfsSync } from './remote-servers.js';

const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'tfs-serve-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
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
