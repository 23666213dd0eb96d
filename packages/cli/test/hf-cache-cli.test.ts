/** `tfs import <Hugging Face cache>` and `tfs export --hf-cache` on the command line: options, output, exit codes. */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { tfs } from './helpers.js';

const C1 = 'c'.repeat(40);
const C2 = 'd'.repeat(40);
const gitId = (b: string) =>
  createHash('sha1')
    .update(`blob ${Buffer.byteLength(b)}\0`)
    .update(b)
    .digest('hex');

/** A cache with one repository: `config.json` in both commits, `extra.txt` only in C1. */
function cache(): string {
  const hub = tempDir();
  const repo = join(hub, 'models--org--m');
  mkdirSync(join(repo, 'blobs'), { recursive: true });
  for (const [commit, files] of [
    [C1, { 'config.json': '{}\n', 'extra.txt': 'x\n' }],
    [C2, { 'config.json': '{}\n' }],
  ] as const) {
    mkdirSync(join(repo, 'snapshots', commit), { recursive: true });
    for (const [path, text] of Object.entries(files)) {
      writeFileSync(join(repo, 'blobs', gitId(text)), text);
      symlinkSync(`../../blobs/${gitId(text)}`, join(repo, 'snapshots', commit, path));
    }
  }
  mkdirSync(join(repo, 'refs'));
  writeFileSync(join(repo, 'refs', 'main'), C2);
  return hub;
}

describe('tfs import / export --hf-cache (command line)', () => {
  it('prints each commit, the partial snapshot and the dedup; export writes the cache back', async () => {
    const hub = cache();
    const store = join(tempDir(), 's');
    const r = await tfs(['--store', store, 'import', hub]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^org/m ${C1} -> sha256:[0-9a-f]{64} \\[tag hf-cccccccccccc\\]: 2 files, `));
    expect(lines[1]).toMatch(new RegExp(`^org/m ${C2} -> sha256:[0-9a-f]{64} \\[main\\]: 1 files, `));
    expect(lines[2]).toBe('  partial snapshot: imported what is there; 1 file(s) missing: extra.txt');
    expect(lines[3]).toMatch(
      /^Hugging Face cache: 5 B of blobs on disk; the store added 5 B \(2 new objects\), 1\.00x smaller$/,
    );
    const out = tempDir();
    const e = await tfs(['--store', store, 'export', 'org/m', out, '--hf-cache']);
    expect(e.code, e.stderr).toBe(0);
    expect(readFileSync(join(out, 'models--org--m', 'refs', 'main'), 'utf8')).toBe(C2);
    expect(readFileSync(join(out, 'models--org--m', 'snapshots', C2, 'config.json'), 'utf8')).toBe('{}\n');
  });

  it('refuses --name (the cache names its repositories) and other export modes with --hf-cache', async () => {
    const hub = cache();
    const store = join(tempDir(), 's');
    const r = await tfs(['--store', store, 'import', hub, '--name', 'x/y', '--json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stderr).error.details.rule).toBe('cli.hf_cache_name');
    expect((await tfs(['--store', store, 'import', hub])).code).toBe(0);
    const e = await tfs(['--store', store, 'export', 'org/m', tempDir(), '--hf-cache', '--portable', '--json']);
    expect(e.code).toBe(2);
    expect(JSON.parse(e.stderr).error.details.rule).toBe('cli.hf_cache_mode');
  });

  it('a damaged cache exits with its code and rule, and sets no ref', async () => {
    const hub = cache();
    writeFileSync(join(hub, 'models--org--m', 'blobs', gitId('{}\n')), '{]\n');
    const store = join(tempDir(), 's');
    const r = await tfs(['--store', store, 'import', hub, '--json']);
    expect(r.code).toBe(4);
    expect(JSON.parse(r.stderr).error).toMatchObject({ code: 'corrupt', details: { rule: 'hf_cache.blob_digest' } });
    const ls = await tfs(['--store', store, 'ls', '--json']);
    expect(JSON.parse(ls.stdout).refs).toEqual([]);
  });
});
