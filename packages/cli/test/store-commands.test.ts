import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bytesOf, safetensorsBytes, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { defaultRefName } from '../src/commands/store.js';
import { tfs as run } from './helpers.js';

const temp = () => tempDir('tfs-cli-');

async function tfs(store: string, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await run([...argv, '--store', store]);
  return { code: r.code, out: r.stdout, err: r.stderr };
}

async function json(store: string, ...argv: string[]) {
  const r = await tfs(store, ...argv, '--json');
  expect(r.code, r.err).toBe(0);
  return JSON.parse(r.out);
}

describe('tfs store commands', () => {
  it('import, ls, ref, export, verify, gc and du end to end', async () => {
    const store = join(temp(), 'store');
    const src = join(temp(), 'my model');
    mkdirSync(join(src, 'sub'), { recursive: true });
    const big = new Uint8Array(1 << 20).map((_, i) => (i * 7) & 0xff);
    writeFileSync(join(src, 'w.bin'), big);
    writeFileSync(join(src, 'sub', 'c.json'), '{}');

    const imp = await json(store, 'import', src);
    expect(imp).toMatchObject({ ref: 'local/my_model', files: 2, bytes: big.length + 2 });
    expect(imp.snapshot).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect((await tfs(store, 'import', src, '--expected', 'none')).code).toBe(7);
    const again = await json(store, 'import', src, '--name', 'other', '--expected', 'none');
    expect(again).toMatchObject({ snapshot: imp.snapshot, bytesWritten: 0, objectsWritten: 0 });

    expect((await json(store, 'ls')).refs).toEqual([
      { name: 'local/my_model', id: imp.snapshot, kind: 'snapshot' },
      { name: 'other', id: imp.snapshot, kind: 'snapshot' },
    ]);
    const listing = await json(store, 'ls', 'other');
    expect(listing.entries.map((e: { path: string }) => e.path)).toEqual(['sub/c.json', 'w.bin']);
    expect((await tfs(store, 'ls')).out).toContain('local/my_model');

    expect(await json(store, 'ref', 'get', 'other')).toEqual({ name: 'other', id: imp.snapshot });
    expect((await tfs(store, 'ref', 'get', 'nope')).code).toBe(6);
    expect((await tfs(store, 'ref', 'set', 'x', 'other', '--expected', 'none')).code).toBe(0);
    expect((await tfs(store, 'ref', 'set', 'x', 'other', '--expected', 'none')).code).toBe(7);
    expect((await tfs(store, 'ref', 'set', '../x', 'other')).code).toBe(2);
    const none = await tfs(store, 'ref', 'rm', 'x', '--expected', 'none');
    expect(none.code).toBe(2); // 'none' is no id a ref could hold: refused, nothing deleted
    expect((await tfs(store, 'ref', 'get', 'x')).code).toBe(0);
    expect((await tfs(store, 'ref', 'rm', 'x')).code).toBe(0);
    expect((await tfs(store, 'ref', 'rm', 'x')).code).toBe(6);

    const out = join(temp(), 'out');
    expect(await json(store, 'export', 'other', out, '--verify')).toMatchObject({ files: 2, bytes: big.length + 2 });
    expect(Buffer.compare(readFileSync(join(out, 'w.bin')), Buffer.from(big))).toBe(0);

    expect(await json(store, 'verify', '--data')).toMatchObject({ missing: [], corrupt: [] });
    expect(await json(store, 'du')).toMatchObject({ logicalBytes: big.length + 2 });
    expect(await json(store, 'gc', '--dry-run', '--grace', '0')).toMatchObject({ removed: 0, dryRun: true });

    const record = listing.entries.find((e: { path: string }) => e.path === 'w.bin');
    expect(record.records).toBe(1);
    const m = await json(store, 'ls', imp.snapshot);
    expect(m.snapshot).toBe(imp.snapshot);
    // flip a byte in the big object: verify --data exits 4 (corrupt) and names it
    const { LocalStore } = await import('@tensorfs/cas');
    const s = await LocalStore.open(store);
    const manifest = await s.getManifest(imp.snapshot);
    await s.close();
    const entry = manifest.entries.find((e) => e.path === 'w.bin');
    if (entry?.kind !== 'file') throw new Error('w.bin missing');
    const hex = entry.records[0]!.digest.slice(7);
    const file = join(store, 'objects', 'sha256', hex.slice(0, 2), hex.slice(2, 4), hex);
    chmodSync(file, 0o644);
    const bad = Buffer.from(big);
    bad[12345]! ^= 1;
    writeFileSync(file, bad);
    // export rehashes by default: the flipped byte is caught (exit 4) and nothing is left behind
    const o1 = join(temp(), 'o1');
    expect((await tfs(store, 'export', 'other', o1)).code).toBe(4);
    expect(existsSync(join(o1, 'w.bin'))).toBe(false);
    const v = await tfs(store, 'verify', '--data', '--json');
    expect(v.code).toBe(4);
    expect(JSON.parse(v.out).corrupt).toEqual([entry.records[0]!.digest]);
    expect((await tfs(store, 'export', 'other', join(temp(), 'o2'))).code).toBe(4);
  });

  it('import records whole-file SHA-256s only with --file-sha256 (one more hash pass)', async () => {
    const store = join(temp(), 'store');
    const file = join(temp(), 'm.safetensors');
    const model = safetensorsBytes([
      { name: 'a', data: bytesOf(300_000, 1) },
      { name: 'b', data: bytesOf(300_000, 2) },
    ]);
    writeFileSync(file, model);
    const lists = join(store, 'refs', '_hf', 'sha256');
    const plain = await json(store, 'import', file, '--name', 'plain');
    expect(existsSync(lists)).toBe(false);
    const asked = await json(store, 'import', file, '--name', 'asked', '--file-sha256');
    expect(asked.snapshot).toBe(plain.snapshot);
    expect(readdirSync(lists)).toEqual([plain.snapshot.slice(7)]);
    const hex = readFileSync(join(lists, plain.snapshot.slice(7)), 'utf8')
      .trim()
      .slice('sha256:'.length);
    const list = readFileSync(join(store, 'objects', 'sha256', hex.slice(0, 2), hex.slice(2, 4), hex), 'utf8');
    expect(list).toMatch(new RegExp(` ${createHash('sha256').update(model).digest('hex')}\n$`));
    expect((await tfs(store, 'import', '--help')).out).toContain('--file-sha256');
  });

  it('names imports after the base name, made ref-safe', () => {
    expect(defaultRefName('/x/Llama 3.1 (8B)')).toBe('local/Llama_3.1__8B_');
    expect(defaultRefName('/x/.hidden')).toBe('local/hidden');
    expect(defaultRefName('/x/a.lock')).toBe('local/a_lock');
  });

  it('read-only commands on a missing store are not_found', async () => {
    expect((await tfs(join(temp(), 'none'), 'ls')).code).toBe(6);
  });
});
