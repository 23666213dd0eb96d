/** `tfs serve` speaking the Hugging Face API, and `--upstream`/`--offline` pull-through, as a user runs them. Run `pnpm build` first. */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesOf } from '@tensorfs/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { tfsServe, tfsSync } from './remote-servers.js';

const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'tfs-serve-hf-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('tfs serve and the Hugging Face API', () => {
  it('refuses --offline or --upstream-token-file without --upstream (exit 2)', () => {
    const d = temp();
    for (const extra of [['--offline'], ['--upstream-token-file', join(d, 'nope')]]) {
      const r = tfsSync(['serve', '--port', '0', '--store', join(d, 'store'), ...extra]);
      expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('need --upstream')]);
    }
  });

  it('chains: a hub pulling through from another tfs serve, with its own token, then the upstream stopped; --offline fetches nothing', async () => {
    const src = temp();
    mkdirSync(join(src, 'm'));
    const weights = bytesOf(3 << 20, 9);
    writeFileSync(join(src, 'm', 'weights.bin'), weights);
    writeFileSync(join(src, 'm', 'config.json'), '{"a":1}\n');
    const upStore = join(temp(), 'up');
    expect(tfsSync(['import', join(src, 'm'), '--name', 'team/m', '--store', upStore]).code).toBe(0);
    const d = temp();
    const tokens = join(d, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ tokens: [{ token: 'upstream-token-1234', read: ['*'] }] }));
    const upTokenFile = join(d, 'hf-token');
    writeFileSync(upTokenFile, 'upstream-token-1234\n');
    // The offline hub's store exists (read-only serving needs one) and holds another repository.
    mkdirSync(join(src, 'other'));
    writeFileSync(join(src, 'other', 'x.txt'), 'x\n');
    expect(tfsSync(['import', join(src, 'other'), '--name', 'team/other', '--store', join(d, 'off')]).code).toBe(0);
    const up = await tfsServe(['--store', upStore, '--tokens', tokens]);
    const down = await tfsServe([
      '--store',
      join(d, 'down'),
      '--upstream',
      up.url,
      '--upstream-token-file',
      upTokenFile,
    ]);
    const offline = await tfsServe(['--store', join(d, 'off'), '--upstream', up.url, '--offline']);
    try {
      const r = await fetch(`${down.url}/team/m/resolve/main/weights.bin`);
      expect(r.status).toBe(200);
      expect(Buffer.from(await r.arrayBuffer()).equals(Buffer.from(weights))).toBe(true);
      const missing = await fetch(`${offline.url}/team/m/resolve/main/weights.bin`);
      expect([missing.status, missing.headers.get('x-error-code')]).toEqual([404, 'RepoNotFound']);
      await up.stop('SIGTERM');
      const again = await fetch(`${down.url}/team/m/resolve/main/weights.bin`, { method: 'HEAD' });
      expect(again.headers.get('x-linked-size')).toBe(String(weights.length));
    } finally {
      await up.stop('SIGTERM');
      await down.stop('SIGTERM');
      await offline.stop('SIGTERM');
    }
  }, 60_000);
});
