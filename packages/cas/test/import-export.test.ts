import {
  lstatSync,
  mkdirSync,
  rmSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  writeFileSync,
  chmodSync,
  readdirSync,
} from 'node:fs';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { describe, expect, it } from 'vitest';
import { bytesOf, expectCode, sameBytes, tempDir } from '@tensorfs/testkit';

function makeTree(dir: string): void {
  mkdirSync(join(dir, 'sub', 'deep'), { recursive: true });
  mkdirSync(join(dir, 'empty'));
  writeFileSync(join(dir, 'model.bin'), bytesOf(3_000_000, 1));
  writeFileSync(join(dir, 'sub', 'config.json'), '{"a":1}\n');
  writeFileSync(join(dir, 'sub', 'deep', 'zero'), new Uint8Array(0));
  writeFileSync(join(dir, 'run.sh'), '#!/bin/sh\necho hi\n');
  chmodSync(join(dir, 'run.sh'), 0o700);
  writeFileSync(join(dir, 'dup.bin'), bytesOf(3_000_000, 1));
  symlinkSync('sub/config.json', join(dir, 'link.json'));
  symlinkSync('../model.bin', join(dir, 'sub', 'up.bin'));
}

describe('import and export', () => {
  it('imports a folder, names it, exports it byte-exact with modes and symlinks', async () => {
    const src = join(tempDir(), 'tree');
    mkdirSync(src);
    makeTree(src);
    const root = tempDir();
    const s = await LocalStore.open(root);
    const seen: number[] = [];
    const r = await s.importPath(src, { name: 'local/tree', onProgress: (p) => seen.push(p.done) });
    expect(r.files).toBe(7);
    expect(r.bytes).toBe(6_000_000 + 8 + 18);
    expect(r.bytesWritten).toBeLessThan(3_100_000);
    expect(seen.at(-1)).toBe(r.bytes);
    expect(await s.getRef('local/tree')).toBe(r.snapshot);
    const m = await s.getManifest(r.snapshot);
    expect(m.entries.map((e) => e.path)).toEqual(
      ['dup.bin', 'link.json', 'model.bin', 'run.sh', 'sub/config.json', 'sub/deep/zero', 'sub/up.bin'].sort(),
    );
    expect(m.entries.length).toBe(7);
    const modes = Object.fromEntries(m.entries.map((e) => [e.path, e.kind === 'file' ? e.mode : e.target]));
    expect(modes).toMatchObject({
      'run.sh': 0o755,
      'model.bin': 0o644,
      'link.json': 'sub/config.json',
      'sub/up.bin': '../model.bin',
    });

    writeFileSync(join(src, 'new.txt'), 'x');
    await expectCode(s.importPath(src, { name: 'local/tree', expected: null }), 'conflict');
    const moved = await s.importPath(src, { name: 'local/tree', expected: r.snapshot });
    expect(await s.getRef('local/tree')).toBe(moved.snapshot);
    rmSync(join(src, 'new.txt'));
    const again = await s.importPath(src, { name: 'local/tree', expected: moved.snapshot });
    expect(await s.getRef('local/tree')).toBe(r.snapshot);
    expect(again.snapshot).toBe(r.snapshot);
    expect(again.bytesWritten).toBe(0);
    expect(again.objectsWritten).toBe(0);

    const out = join(tempDir(), 'out');
    const ex = await s.exportSnapshot(r.snapshot, out);
    expect(ex).toEqual({ files: 7, bytes: 6_000_000 + 8 + 18 });
    for (const f of ['model.bin', 'dup.bin', 'sub/config.json', 'sub/deep/zero', 'run.sh']) {
      expect(sameBytes(readFileSync(join(out, f)), readFileSync(join(src, f))), f).toBe(true);
    }
    expect(statSync(join(out, 'run.sh')).mode & 0o777).toBe(0o755);
    expect(statSync(join(out, 'model.bin')).mode & 0o777).toBe(0o644);
    expect(lstatSync(join(out, 'link.json')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(out, 'sub', 'up.bin'))).toBe('../model.bin');
    expect(readdirSync(out).filter((n) => n.includes('.tmp'))).toEqual([]);

    // A destination whose `sub` is a symlink elsewhere: refused, nothing written through it.
    const trap = tempDir();
    const out2 = join(tempDir(), 'out2');
    mkdirSync(out2);
    symlinkSync(trap, join(out2, 'sub'));
    const c = await expectCode(s.exportSnapshot(r.snapshot, out2), 'conflict');
    expect(c.details.path).toBe('sub/config.json');
    expect(readdirSync(trap)).toEqual([]);

    const one = join(tempDir(), 'one.bin');
    await s.exportFile(r.snapshot, 'model.bin', one);
    expect(sameBytes(readFileSync(one), bytesOf(3_000_000, 1))).toBe(true);
    await expectCode(s.exportFile(r.snapshot, 'nope', one), 'not_found');
    await expectCode(s.exportFile(r.snapshot, 'link.json', one), 'invalid_argument');
    await s.close();
  });

  it('imports a single file under its base name', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'w.safetensors'), bytesOf(5000, 7));
    const s = await LocalStore.open(tempDir());
    const r = await s.importPath(join(dir, 'w.safetensors'));
    expect(r.files).toBe(1);
    const m = await s.getManifest(r.snapshot);
    expect(m.entries.map((e) => e.path)).toEqual(['w.safetensors']);
    await s.close();
  });

  it('records a symlink to a folder as a link and never follows it', async () => {
    const a = tempDir();
    mkdirSync(join(a, 'real'));
    writeFileSync(join(a, 'real', 'f'), 'hi');
    symlinkSync('real', join(a, 'alias'));
    symlinkSync('..', join(a, 'real', 'up')); // a loop if followed
    const s = await LocalStore.open(tempDir());
    const r = await s.importPath(a);
    const m = await s.getManifest(r.snapshot);
    expect(m.entries.map((e) => [e.path, e.kind])).toEqual([
      ['alias', 'symlink'],
      ['real/f', 'file'],
      ['real/up', 'symlink'],
    ]);
    const out = join(tempDir(), 'out');
    await s.exportSnapshot(r.snapshot, out);
    expect(readlinkSync(join(out, 'alias'))).toBe('real');
    expect(readFileSync(join(out, 'alias', 'f'), 'utf8')).toBe('hi');
    await s.close();
  });

  it('refuses escaping or absolute symlinks, special files and missing paths, and sets no ref', async () => {
    const s = await LocalStore.open(tempDir());
    const a = tempDir();
    symlinkSync('../../etc/passwd', join(a, 'esc'));
    const e = await expectCode(s.importPath(a, { name: 'x' }), 'invalid_argument');
    expect(e.details).toMatchObject({ path: 'esc', rule: 'manifest.symlink_escape' });
    const b = tempDir();
    symlinkSync('/etc/passwd', join(b, 'abs'));
    await expectCode(s.importPath(b, { name: 'x' }), 'invalid_argument');
    await expectCode(s.importPath(join(b, 'missing')), 'not_found');
    const c = tempDir();
    writeFileSync(join(c, 'back\\slash'), 'x');
    const bad = await expectCode(s.importPath(c, { name: 'x' }), 'invalid_argument');
    expect(bad.details.rule).toBe('manifest.path_chars');
    await expectCode(s.importPath(b, { name: '../x' }), 'invalid_argument');
    expect(await s.getRef('x')).toBeNull();
    await s.close();
  });

  it('cancels an import through its signal', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'a'), bytesOf(10, 1));
    const s = await LocalStore.open(tempDir());
    const ac = new AbortController();
    ac.abort();
    await expectCode(s.importPath(dir, { signal: ac.signal, name: 'c' }), 'cancelled');
    expect(await s.getRef('c')).toBeNull();
    await s.close();
  });
});
