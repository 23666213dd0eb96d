// One import pipeline (issue 23 item 3): LocalStore.importPath and the Hugging Face cache import
// are adapters over `importSources`, not importers of their own. Nothing in cas plans files but
// the pipeline (and the local admission it drives); importPath stores exactly what
// `importSources(localSource)` stores, progress events included; a cache snapshot imports through
// `hfCacheSource` into any store, its blob digests checked by the pipeline.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { join, relative } from 'node:path';
import {
  hfCacheSource,
  importHfCache,
  importSources,
  LocalStore,
  localSource,
  scanHfCache,
  type Progress,
} from '@tensorfs/cas';
import { TensorFSError } from '@tensorfs/format';
import { fileSha256Ref, MemoryStore } from '@tensorfs/format/store';
import { bytesOf, expectCode, safetensorsBytes, tempDir } from '@tensorfs/testkit';
import { afterEach, describe, expect, it, vi } from 'vitest';

const src = join(import.meta.dirname, '..', 'src');

function sources(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((d) => (d.isDirectory() ? sources(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : []));
}

const callers = (pattern: RegExp) =>
  sources(src)
    .filter((f) => pattern.test(fs.readFileSync(f, 'utf8')))
    .map((f) => relative(src, f).split('\\').join('/'))
    .sort();

const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');
const gitId = (b: Uint8Array | string) => {
  const bytes = typeof b === 'string' ? Buffer.from(b) : b;
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
};

/** A folder with a multi-record safetensors file, an executable, a nested file and a link. */
function tree(): string {
  const root = join(tempDir(), 'model');
  fs.mkdirSync(join(root, 'sub'), { recursive: true });
  fs.writeFileSync(
    join(root, 'model.safetensors'),
    safetensorsBytes([
      { name: 'a', data: bytesOf(3 << 20, 1) },
      { name: 'b', data: bytesOf(2 << 20, 2) },
      { name: 'c', data: bytesOf(40_000, 3) },
    ]),
  );
  fs.writeFileSync(join(root, 'run.sh'), '#!/bin/sh\n');
  fs.chmodSync(join(root, 'run.sh'), 0o755);
  fs.writeFileSync(join(root, 'sub', 'config.json'), '{"model_type":"llama"}\n');
  fs.symlinkSync('sub/config.json', join(root, 'config.json'));
  return root;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('cas imports through the one pipeline', () => {
  it('plans files only in the pipeline and its local admission; importPath and importHfCache call importSources', () => {
    expect(callers(/\bplanAndHash\(/)).toEqual(['sources/pipeline.ts', 'store/local-admission.ts']);
    expect(callers(/\bnew LocalAdmission\(/)).toEqual(['sources/pipeline.ts']);
    expect(callers(/\bimportSources\(/)).toEqual(['store/hf-cache-import.ts', 'store/store.ts']);
  });

  it('importPath stores what importSources(localSource) stores: snapshot, ref, objects, whole-file list, progress', async () => {
    const root = tree();
    const a = await LocalStore.open(tempDir());
    const b = await LocalStore.open(tempDir());
    try {
      const seenA: Progress[] = [];
      const seenB: Progress[] = [];
      const viaPath = await a.importPath(root, { name: 'm', fileSha256: true, onProgress: (p) => seenA.push(p) });
      const viaPipeline = await importSources(b, localSource(root), {
        name: 'm',
        fileSha256: true,
        onProgress: (p) => seenB.push(p),
      });
      expect(viaPath.snapshot).toBe(viaPipeline.snapshot);
      expect(await a.getRef('m')).toBe(viaPath.snapshot);
      expect(await a.getManifest(viaPath.snapshot)).toEqual(await b.getManifest(viaPipeline.snapshot));
      expect(viaPath).toEqual({
        snapshot: viaPipeline.snapshot,
        files: viaPipeline.files + viaPipeline.links, // importPath counts every entry, as it always did
        bytes: viaPipeline.bytes,
        bytesWritten: viaPipeline.bytesWritten,
        objectsWritten: viaPipeline.objectsWritten,
      });
      expect([viaPipeline.files, viaPipeline.links, viaPipeline.objectsWritten]).toEqual([3, 1, 6]);
      // The same whole-file SHA-256 list, named by the same side ref.
      const list = await a.getRef(fileSha256Ref(viaPath.snapshot));
      expect(list).not.toBeNull();
      expect(list).toBe(await b.getRef(fileSha256Ref(viaPipeline.snapshot)));
      // The pipeline's progress, field for field (bytesFetched and objectsWritten are the pipeline's;
      // the written counts move as background publishes finish, so only their presence is compared).
      const steady = (p: Progress) => ({
        ...p,
        bytesWritten: typeof p.bytesWritten,
        objectsWritten: typeof (p as { objectsWritten?: unknown }).objectsWritten,
      });
      expect(seenA.map(steady)).toEqual(seenB.map(steady));
      expect(seenA.map(steady).at(-1)).toMatchObject({ bytesWritten: 'number', objectsWritten: 'number' });
      expect(seenA.at(-1)).toMatchObject({ files: 3, filesTotal: 3, bytesFetched: 0 });
      expect((await a.verify()).corrupt).toEqual([]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a local store that cannot record the whole-file list fails importPath, as it always did', async () => {
    const root = tree();
    const s = await LocalStore.open(tempDir());
    try {
      const setRef = LocalStore.prototype.setRef;
      vi.spyOn(LocalStore.prototype, 'setRef').mockImplementation(function (this: LocalStore, name, ...rest) {
        if (name.startsWith('_hf/sha256/'))
          return Promise.reject(new TensorFSError('io', 'no space', { details: { rule: 'store.io' } }));
        return setRef.call(this, name, ...rest);
      });
      await expectCode(s.importPath(root, { name: 'm', fileSha256: true }), 'io', 'store.io');
      // Another store may refuse such refs: there the list is a shortcut lost, not a failure.
      const memory = new MemoryStore();
      vi.spyOn(memory, 'setRef').mockImplementation(async (name) => {
        if (name.startsWith('_hf/sha256/')) throw new TensorFSError('io', 'no', { details: { rule: 'store.io' } });
      });
      await expect(importSources(memory, localSource(root), { fileSha256: true })).resolves.toMatchObject({
        files: 3,
        links: 1,
      });
    } finally {
      await s.close();
    }
  });

  it('imports a Hugging Face cache snapshot through hfCacheSource into any store, as importHfCache does', async () => {
    const hub = tempDir();
    const repo = join(hub, 'models--org--m');
    const commit = '1'.repeat(40);
    const files: { path: string; bytes: Uint8Array | string; lfs?: boolean }[] = [
      { path: 'config.json', bytes: '{"model_type":"llama"}\n' },
      {
        path: 'model.safetensors',
        bytes: safetensorsBytes([
          { name: 'a', data: bytesOf(300_000, 1) },
          { name: 'b', data: bytesOf(200_000, 2) },
        ]),
        lfs: true,
      },
    ];
    fs.mkdirSync(join(repo, 'blobs'), { recursive: true });
    fs.mkdirSync(join(repo, 'snapshots', commit), { recursive: true });
    fs.mkdirSync(join(repo, 'refs'), { recursive: true });
    fs.writeFileSync(join(repo, 'refs', 'main'), commit);
    const blobs: string[] = [];
    for (const f of files) {
      const name = f.lfs ? sha256(f.bytes) : gitId(f.bytes);
      blobs.push(name);
      fs.writeFileSync(join(repo, 'blobs', name), f.bytes);
      fs.symlinkSync(`../../blobs/${name}`, join(repo, 'snapshots', commit, f.path));
    }
    const local = await LocalStore.open(tempDir());
    try {
      const imported = await importHfCache(local, hub);
      const snapshot = imported.repos[0]!.commits[0]!.snapshot;
      // The generic admission (a MemoryStore has no local one), the same pipeline, the same tree.
      const memory = new MemoryStore();
      const scan = await scanHfCache(hub);
      const r = await importSources(memory, hfCacheSource(scan.repos[0]!, scan.repos[0]!.snapshots[0]!));
      expect(r.snapshot).toBe(snapshot);
      expect(await memory.getManifest(r.snapshot)).toEqual(await local.getManifest(snapshot));
      expect(r.sources).toEqual([
        { kind: 'hf-cache', repo: 'org/m', type: 'model', folder: 'models--org--m', commit, files: 2 },
      ]);
      // A blob whose bytes are not those of its name: the pipeline's check, with the cache's rule,
      // on either store; nothing named.
      fs.writeFileSync(join(repo, 'blobs', blobs[0]!), '{"model_type":"llamb"}\n');
      const again = await scanHfCache(hub);
      await expectCode(
        importSources(new MemoryStore(), hfCacheSource(again.repos[0]!, again.repos[0]!.snapshots[0]!), { name: 'x' }),
        'corrupt',
        'hf_cache.blob_digest',
      );
      const fresh = await LocalStore.open(tempDir());
      try {
        await expectCode(importHfCache(fresh, hub), 'corrupt', 'hf_cache.blob_digest');
        expect(await fresh.listRefs()).toEqual([]);
      } finally {
        await fresh.close();
      }
    } finally {
      await local.close();
    }
  });
});
