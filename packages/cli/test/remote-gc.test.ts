// `tfs gc <origin>` (issue 27 item 7) through the built CLI: a folder origin (--dry-run exact, then
// the sweep), and a `tfs serve` hub swept by a token with `"admin": true` (a token without it is
// refused, exit 8). Run `pnpm build` first.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Running, tfs, tfsServe, tfsSync } from './remote-servers.js';

const dirs: string[] = [];
const running: Running[] = [];
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'tfs-cli-gc-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function json(s: string) {
  return JSON.parse(s.trim().split('\n').pop()!);
}

/** A store holding one small snapshot as `team/model`. */
function sourceStore(): string {
  const src = temp();
  writeFileSync(join(src, 'w.bin'), Buffer.alloc(70_000, 7));
  writeFileSync(join(src, 'config.json'), '{"a":1}\n');
  const store = join(temp(), 'a');
  const r = tfsSync(['import', src, '--name', 'team/model', '--store', store]);
  expect(r.code, r.stderr).toBe(0);
  return store;
}

/** Writes an object no ref reaches into a folder origin's chunks/, `ageS` seconds old. */
function orphan(origin: string, bytes: Buffer, ageS: number): string {
  const hex = createHash('sha256').update(bytes).digest('hex');
  const p = join(origin, 'chunks', hex);
  writeFileSync(p, bytes);
  const t = new Date(Date.now() - ageS * 1000);
  utimesSync(p, t, t);
  return `sha256:${hex}`;
}

describe('tfs gc <origin>', () => {
  it('folder origin: --dry-run says exactly what would go and its bytes; then the sweep removes it', async () => {
    const store = sourceStore();
    const origin = join(temp(), 'origin');
    expect((await tfs(['push', origin, 'team/model', '--store', store])).code).toBe(0);
    const kept = readdirSync(join(origin, 'chunks')).length;
    const old = orphan(origin, Buffer.alloc(3333, 1), 7200);
    orphan(origin, Buffer.alloc(2222, 2), 10); // young: kept
    const dry = await tfs(['gc', origin, '--dry-run', '--json', '--store', store]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(json(dry.stdout)).toMatchObject({ dryRun: true, refs: 1, removed: 1, bytes: 3333, young: 1, ids: [old] });
    expect(readdirSync(join(origin, 'chunks')).length).toBe(kept + 2);
    const text = await tfs(['gc', origin, '--dry-run', '--store', store]);
    expect(text.stdout).toContain(`would remove 1 objects (3.3 KiB, 3333 B)`);
    expect(text.stdout).toContain(`would remove ${old}`);
    const real = await tfs(['gc', origin, '--json', '--store', store]);
    expect(json(real.stdout)).toMatchObject({ dryRun: false, removed: 1, bytes: 3333, kept: kept + 1 });
    expect(readdirSync(join(origin, 'chunks')).length).toBe(kept + 1);
    const pulled = join(temp(), 'b');
    expect((await tfs(['pull', origin, 'team/model', '--store', pulled])).code).toBe(0);
    expect(tfsSync(['verify', '--data', '--store', pulled]).code).toBe(0);
  });

  it('hub: an admin token sweeps the hub store; a token without the scope is denied', async () => {
    const store = sourceStore();
    const hubStore = join(temp(), 'hub');
    const d = temp();
    const tokens = join(d, 'tokens.json');
    writeFileSync(
      tokens,
      JSON.stringify({
        tokens: [
          { token: 'admin-token-123456', read: ['*'], write: ['*'], admin: true },
          { token: 'writer-token-123456', read: ['*'], write: ['*'] },
        ],
      }),
    );
    writeFileSync(join(d, 'admin'), 'admin-token-123456\n');
    writeFileSync(join(d, 'writer'), 'writer-token-123456\n');
    mkdirSync(hubStore, { recursive: true });
    const hub = await tfsServe(['--store', hubStore, '--tokens', tokens]);
    running.push(hub);
    expect((await tfs(['push', hub.url, 'team/model', '--store', store, '--token-file', join(d, 'writer')])).code).toBe(
      0,
    );
    const denied = await tfs(['gc', hub.url, '--json', '--token-file', join(d, 'writer'), '--store', store]);
    expect(denied.code).toBe(8);
    expect(JSON.parse(denied.stderr).error).toMatchObject({ code: 'denied', details: { rule: 'hub.admin_required' } });
    // A second version moves the ref: the first version's manifest and config no ref reaches.
    const src2 = temp();
    writeFileSync(join(src2, 'w.bin'), Buffer.alloc(70_000, 7));
    writeFileSync(join(src2, 'config.json'), '{"a":2}\n');
    expect(tfsSync(['import', src2, '--name', 'team/model', '--store', store]).code).toBe(0);
    expect((await tfs(['push', hub.url, 'team/model', '--store', store, '--token-file', join(d, 'writer')])).code).toBe(
      0,
    );
    const admin = ['--token-file', join(d, 'admin'), '--store', store];
    const dry = await tfs(['gc', hub.url, '--dry-run', '--json', '--grace', '0', ...admin]);
    expect(dry.code, dry.stderr).toBe(0);
    const would = json(dry.stdout);
    expect(would).toMatchObject({ dryRun: true, refs: 1, removed: 2 });
    const real = json((await tfs(['gc', hub.url, '--json', '--grace', '0', ...admin])).stdout);
    expect(real).toMatchObject({ dryRun: false, removed: 2, bytes: would.bytes });
    expect(json((await tfs(['gc', hub.url, '--json', '--grace', '0', ...admin])).stdout)).toMatchObject({ removed: 0 });
    const pulled = join(temp(), 'b');
    expect(
      (await tfs(['pull', hub.url, 'team/model', '--store', pulled, '--token-file', join(d, 'writer')])).code,
    ).toBe(0);
    expect(tfsSync(['verify', '--data', '--store', pulled]).code).toBe(0);
  });
});
