/** `tfs serve` speaking the Hugging Face API, and `--upstream`/`--offline` pull-through, as a user runs them. Run `pnpm build` first. */
import { createHash } from 'node:crypto';
import { mkdtempSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { bytesOf, safetensorsBytes } from '@tensorfs/testkit';
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

  it('a multi-record file imported with tfs import --file-sha256: its first HEAD on a read-only hub answers at once with the SHA-256 recorded at import', async () => {
    const d = temp();
    mkdirSync(join(d, 'm'));
    // 72 MiB in 9 tensors: 10 records, so no object id is the file's SHA-256.
    const tensors = Array.from({ length: 9 }, (_, i) => ({
      name: `layer.${i}.weight`,
      data: bytesOf(8 << 20, 40 + i),
    }));
    const file = join(d, 'm', 'model.safetensors');
    writeFileSync(file, safetensorsBytes(tensors));
    const expected = /([0-9a-f]{64})\s*$/.exec(
      execFileSync('openssl', ['dgst', '-sha256', file], { encoding: 'utf8' }),
    )![1];
    const store = join(d, 'store');
    // --file-sha256: the import records the file's SHA-256 (a plain import leaves it to the hub).
    expect(tfsSync(['import', join(d, 'm'), '--name', 'team/big', '--file-sha256', '--store', store]).code).toBe(0);
    // Proof that the HEAD reads no tensor byte: one tensor's object is moved away (a hash pass
    // would fail on it; only the GET needs it).
    const hex = createHash('sha256').update(tensors[4]!.data).digest('hex');
    const object = join(store, 'objects', 'sha256', hex.slice(0, 2), hex.slice(2, 4), hex);
    renameSync(object, `${object}.away`);
    // No tokens: the hub opens the store read-only and cannot keep anything it computes.
    const hub = await tfsServe(['--store', store]);
    try {
      const t0 = performance.now();
      const head = await fetch(`${hub.url}/team/big/resolve/main/model.safetensors`, { method: 'HEAD' });
      const ms = performance.now() - t0;
      expect(head.status).toBe(200);
      expect(head.headers.get('x-linked-etag')).toBe(`"${expected}"`);
      expect(head.headers.get('x-linked-size')).toBe(String(statSync(file).size));
      expect(ms).toBeLessThan(1000);
    } finally {
      await hub.stop('SIGTERM');
    }
  }, 60_000);
});
