/** Whole-file SHA-256s recorded at import (file-sha256.ts): what the list holds, its bytes, its copy. */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bytesOf, expectCode, safetensorsBytes, tempDir } from '@tensorfs/testkit';
import { describe, expect, it, vi } from 'vitest';
import {
  LocalStore,
  copyFileSha256,
  fileSha256Ref,
  importSources,
  localSource,
  readFileSha256,
  recordsKey,
} from '../src/index.js';
import {
  decodeFileSha256 as formatDecode,
  encodeFileSha256 as formatEncode,
  fileRecordsKey,
  fileSha256Ref as formatRef,
} from '@tensorfs/format/store';
import { WholeFileHashes, decodeFileSha256, encodeFileSha256 } from '../src/store/file-sha256.js';

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** A folder with a multi-record safetensors file (big tensors and small ones), a small one and a blob. */
function folder(): { dir: string; big: Uint8Array; small: Uint8Array } {
  const dir = tempDir('tfs-sha-src-');
  mkdirSync(join(dir, 'sub'));
  const big = safetensorsBytes([
    { name: 'a', data: bytesOf(3 << 20, 1) },
    { name: 'tiny', data: bytesOf(100, 2) },
    { name: 'b', data: bytesOf(5 << 20, 3) },
  ]);
  const small = safetensorsBytes([
    { name: 'x', data: bytesOf(10, 4) },
    { name: 'y', data: bytesOf(20, 5) },
  ]);
  writeFileSync(join(dir, 'model.safetensors'), big);
  writeFileSync(join(dir, 'sub', 'small.safetensors'), small);
  writeFileSync(join(dir, 'config.json'), '{"a":1}\n');
  return { dir, big, small };
}

describe('whole-file SHA-256s recorded at import', () => {
  for (const threads of [1, 2]) {
    it(`lists every multi-record file of the tree by its record list, with its SHA-256 (threads ${threads})`, async () => {
      const { dir, big, small } = folder();
      const store = await LocalStore.open(join(tempDir('tfs-sha-'), 's'));
      try {
        const r = await store.importPath(dir, { name: 'm', threads, fileSha256: true });
        const m = await store.getManifest(r.snapshot);
        const list = await readFileSha256(store, r.snapshot);
        const key = (path: string) => {
          const e = m.entries.find((x) => x.path === path);
          if (e?.kind !== 'file') throw new Error(path);
          return recordsKey(e.records);
        };
        expect(Object.fromEntries(list)).toEqual({
          [key('model.safetensors')]: sha(big),
          [key('sub/small.safetensors')]: sha(small),
        });
        // The list is one object named by the tree's side ref.
        const id = await store.getRef(fileSha256Ref(r.snapshot));
        expect(id).not.toBeNull();
        expect(decodeFileSha256(await store.readObject(id!))).toEqual(list);
      } finally {
        await store.close();
      }
    });
  }

  it('records the list for an import that names no ref too (tfs convert <folder> imports so), rooting only the list', async () => {
    const { dir, big, small } = folder();
    const store = await LocalStore.open(join(tempDir('tfs-sha-'), 's'));
    try {
      const r = await store.importPath(dir, { fileSha256: true });
      const list = await readFileSha256(store, r.snapshot);
      expect([...list.values()].sort()).toEqual([sha(big), sha(small)].sort());
      // The side ref is the only ref (it names the list, not the tree: the tree is still unrooted).
      expect((await store.listRefs()).map((x) => x.name)).toEqual([fileSha256Ref(r.snapshot)]);
    } finally {
      await store.close();
    }
  });

  it('by default hashes no local file twice and records no list; a single-record file is known all the same', async () => {
    const { dir } = folder();
    writeFileSync(join(dir, 'w.bin'), bytesOf(70_000, 9));
    const store = await LocalStore.open(join(tempDir('tfs-sha-'), 's'));
    const wholes = vi.spyOn(WholeFileHashes.prototype, 'file');
    try {
      const r = await importSources(store, localSource(dir), { name: 'm' });
      expect(wholes).not.toHaveBeenCalled();
      expect(await store.getRef(fileSha256Ref(r.snapshot))).toBeNull();
      expect((await store.listRefs()).map((x) => x.name)).toEqual(['m']);
      // Files of one record: the id is the SHA-256; multi-record files are left to a server.
      expect(Object.fromEntries(r.fileSha256)).toEqual({
        'config.json': sha(new TextEncoder().encode('{"a":1}\n')),
        'w.bin': sha(bytesOf(70_000, 9)),
      });
      // Asked for: every file is hashed whole once more (the worker), and the list is recorded.
      const again = await importSources(store, localSource(dir), { name: 'n', fileSha256: true });
      expect(wholes).toHaveBeenCalledTimes(4);
      expect(again.snapshot).toBe(r.snapshot);
      expect((await readFileSha256(store, r.snapshot)).size).toBe(2);
    } finally {
      vi.restoreAllMocks();
      await store.close();
    }
  });

  it('writes nothing for a tree of single-record files', async () => {
    const dir = tempDir('tfs-sha-src-');
    writeFileSync(join(dir, 'a.bin'), bytesOf(2 << 20, 7));
    writeFileSync(join(dir, 'b.txt'), 'b\n');
    const store = await LocalStore.open(join(tempDir('tfs-sha-'), 's'));
    try {
      const r = await store.importPath(dir, { name: 'm' });
      expect(await store.getRef(fileSha256Ref(r.snapshot))).toBeNull();
      expect((await store.listRefs()).map((x) => x.name)).toEqual(['m']);
    } finally {
      await store.close();
    }
  });

  it('keys record lists as @tensorfs/format/store does, and re-exports its list codec', async () => {
    const records = [
      { digest: `sha256:${'1'.repeat(64)}` as const, length: 5 },
      { digest: `sha256:${'2'.repeat(64)}` as const, length: 7 },
    ];
    expect(recordsKey(records)).toBe(await fileRecordsKey(records));
    expect(recordsKey(records)).toBe(
      sha(new TextEncoder().encode(`${records[0]!.digest} 5\n${records[1]!.digest} 7\n`)),
    );
    expect(encodeFileSha256).toBe(formatEncode);
    expect(decodeFileSha256).toBe(formatDecode);
    expect(fileSha256Ref(records[0]!.digest)).toBe(formatRef(records[0]!.digest));
  });

  it('has canonical bytes, and refuses what is not a list (malformed store.file_sha256)', () => {
    const a = 'a'.repeat(64);
    const b = 'b'.repeat(64);
    const bytes = encodeFileSha256(
      new Map([
        [b, a],
        [a, b],
      ]),
    );
    expect(new TextDecoder().decode(bytes)).toBe(`tensorfs file-sha256 1\n${a} ${b}\n${b} ${a}\n`);
    expect(decodeFileSha256(encodeFileSha256(new Map()))).toEqual(new Map());
    for (const bad of [
      '',
      'tensorfs file-sha256 1\nxyz\n',
      `tensorfs file-sha256 2\n${a} ${b}\n`,
      `tensorfs file-sha256 1\n${a} ${b}`,
    ]) {
      expectCode(() => decodeFileSha256(new TextEncoder().encode(bad)), 'malformed', 'store.file_sha256');
    }
  });

  it('is copied from one store to another with the tree, once', async () => {
    const { dir, big } = folder();
    const from = await LocalStore.open(join(tempDir('tfs-sha-'), 'a'));
    const to = await LocalStore.open(join(tempDir('tfs-sha-'), 'b'));
    try {
      const r = await from.importPath(dir, { name: 'm', fileSha256: true });
      expect(await copyFileSha256(from, to, r.snapshot)).toBe(true);
      expect(await copyFileSha256(from, to, r.snapshot)).toBe(false);
      expect([...(await readFileSha256(to, r.snapshot)).values()]).toContain(sha(big));
      // A tree without a list: nothing copied, nothing thrown.
      expect(await copyFileSha256(to, from, `sha256:${'0'.repeat(64)}`)).toBe(false);
    } finally {
      await from.close();
      await to.close();
    }
  });
});
