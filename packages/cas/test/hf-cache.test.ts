import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  LocalStore,
  detectHfCache,
  exportHfCache,
  hfRepoOf,
  importHfCache,
  isLfsFile,
  parseRepoFolder,
  scanHfCache,
} from '@tensorfs/cas';
import { branchLog, listRepositories, resolveRevision } from '@tensorfs/format';
import { bytesOf, expectCode, safetensorsBytes, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');
const gitId = (b: Uint8Array | string) => {
  const bytes = typeof b === 'string' ? Buffer.from(b) : b;
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
};
const C1 = '1'.repeat(40);
const C2 = '2'.repeat(40);

/** A file of a hand-made cache: LFS files are named by SHA-256, the others by git's blob id. */
interface CacheFile {
  path: string;
  bytes: Uint8Array | string;
  lfs?: boolean;
}

/**
 * Lays out one repository folder exactly as huggingface_hub does: `blobs/<etag>`,
 * `snapshots/<commit>/<path>` relative links into `../../blobs/`, `refs/<name>` with the commit.
 */
function cacheRepo(
  root: string,
  folder: string,
  commits: Record<string, CacheFile[]>,
  refs: Record<string, string>,
): string {
  const repo = join(root, folder);
  mkdirSync(join(repo, 'blobs'), { recursive: true });
  for (const [commit, files] of Object.entries(commits)) {
    for (const f of files) {
      const etag = f.lfs ? sha256(f.bytes) : gitId(f.bytes);
      writeFileSync(join(repo, 'blobs', etag), f.bytes);
      const link = join(repo, 'snapshots', commit, ...f.path.split('/'));
      mkdirSync(join(link, '..'), { recursive: true });
      const depth = f.path.split('/').length - 1;
      symlinkSync(`${'../'.repeat(depth + 2)}blobs/${etag}`, link);
    }
  }
  mkdirSync(join(repo, 'refs'), { recursive: true });
  for (const [name, commit] of Object.entries(refs)) writeFileSync(join(repo, 'refs', name), commit);
  return repo;
}

const weights = (seed: number) =>
  safetensorsBytes([
    { name: 'a', data: bytesOf(300_000, 1) },
    { name: 'b', data: bytesOf(200_000, seed) },
  ]);
const baseFiles = (seed: number): CacheFile[] => [
  { path: 'config.json', bytes: '{"model_type":"llama"}\n' },
  { path: 'model.safetensors', bytes: weights(seed), lfs: true },
  { path: 'tokenizer/vocab.txt', bytes: 'a\nb\n' },
];

async function withStore<T>(fn: (s: LocalStore) => Promise<T>): Promise<T> {
  const s = await LocalStore.open(tempDir());
  try {
    return await fn(s);
  } finally {
    await s.close();
  }
}

describe('Hugging Face cache: recognising it', () => {
  it('tells the hub folder, a repository folder and a snapshot folder from anything else', async () => {
    const hub = tempDir();
    const repo = cacheRepo(hub, 'models--org--m', { [C1]: baseFiles(2) }, { main: C1 });
    expect(await detectHfCache(hub)).toBe('hub');
    expect(await detectHfCache(repo)).toBe('repo');
    expect(await detectHfCache(join(repo, 'snapshots', C1))).toBe('snapshot');
    expect(await detectHfCache(join(repo, 'blobs'))).toBeNull();
    expect(await detectHfCache(join(repo, 'snapshots', C1, 'config.json'))).toBeNull();
    const plain = tempDir();
    writeFileSync(join(plain, 'x'), 'x');
    expect(await detectHfCache(plain)).toBeNull();
  });

  it('names repositories as huggingface_hub does, datasets under datasets/', () => {
    expect(parseRepoFolder('models--org--name')).toEqual({ repo: 'org/name', type: 'model' });
    expect(parseRepoFolder('models--gpt2')).toEqual({ repo: 'gpt2', type: 'model' });
    expect(parseRepoFolder('datasets--org--data')).toEqual({ repo: 'datasets/org/data', type: 'dataset' });
    expect(hfRepoOf('datasets/org/data')).toEqual({ id: 'org/data', type: 'dataset', folder: 'datasets--org--data' });
    expect(hfRepoOf('org/name')).toEqual({ id: 'org/name', type: 'model', folder: 'models--org--name' });
    for (const bad of ['models--a--b--c', 'models--', 'models--a..b', 'other--a']) {
      expect(() => parseRepoFolder(bad)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    }
  });

  it('decides LFS as the Hub does: size, the default .gitattributes patterns, binary samples', () => {
    expect(isLfsFile('config.json', 100, Buffer.from('{}'))).toBe(false);
    expect(isLfsFile('model.safetensors', 100, Buffer.from('x'))).toBe(true);
    expect(isLfsFile('sub/pytorch_model.bin', 5, Buffer.from('x'))).toBe(true);
    expect(isLfsFile('data.tar.gz', 5, Buffer.from('x'))).toBe(true);
    expect(isLfsFile('runs/events.out.tfevents.1', 5, Buffer.from('x'))).toBe(true);
    expect(isLfsFile('saved_model/x/vars', 5, Buffer.from('x'))).toBe(true);
    expect(isLfsFile('tokenizer.json', 10 * 1024 * 1024 + 1, Buffer.from('{'))).toBe(true);
    expect(isLfsFile('tokenizer.json', 10 * 1024 * 1024, Buffer.from('{'))).toBe(false);
    expect(isLfsFile('blob.dat', 3, new Uint8Array([1, 0, 2]))).toBe(true);
    expect(isLfsFile('empty.bin', 0, new Uint8Array())).toBe(false);
  });
});

describe('Hugging Face cache: import', () => {
  it('imports every commit as a tree, branches from refs/, the upstream commit recorded; again: nothing moves', async () => {
    const hub = tempDir();
    cacheRepo(hub, 'models--org--m', { [C1]: baseFiles(2), [C2]: baseFiles(3) }, { main: C2, dev: C1 });
    writeFileSync(join(hub, 'CACHEDIR.TAG'), 'Signature: 8a477f597d28d172789f06886806bc55\n');
    mkdirSync(join(hub, '.locks'));
    await withStore(async (s) => {
      const r = await importHfCache(s, hub);
      expect(r.form).toBe('hub');
      expect(r.skipped).toEqual([]);
      const [repo] = r.repos;
      expect(repo!.repo).toBe('org/m');
      expect(repo!.commits.map((c) => c.commit)).toEqual([C1, C2]);
      expect(repo!.branches.map((b) => [b.name, b.commit, b.moved])).toEqual([
        ['dev', C1, true],
        ['main', C2, true],
      ]);
      const main = await resolveRevision(s, 'org/m');
      expect(main.document?.upstream).toEqual({ source: 'hf', revision: C2 });
      expect(main.target).toBe(repo!.commits[1]!.snapshot);
      // The tree holds the files themselves (the blobs' bytes), not links.
      const m = await s.getManifest(main.target);
      expect(m.entries.map((e) => [e.path, e.kind])).toEqual([
        ['config.json', 'file'],
        ['model.safetensors', 'file'],
        ['tokenizer/vocab.txt', 'file'],
      ]);
      const st = m.entries[1]!;
      expect(st.kind === 'file' && st.profile).toBe('safetensors-v1');
      const out = tempDir();
      await s.exportSnapshot(main.target, out);
      expect(sha256(readFileSync(join(out, 'model.safetensors')))).toBe(sha256(weights(3)));
      // Dedup: three distinct blobs per commit on disk, shared tensor "a" and the small files stored once.
      const blobs = readdirSync(join(hub, 'models--org--m', 'blobs')).map((n) =>
        lstatSync(join(hub, 'models--org--m', 'blobs', n)),
      );
      expect(r.cacheBytes).toBe(blobs.reduce((n, b) => n + b.size, 0));
      expect(r.bytes).toBe(2 * (23 + weights(2).length + 4));
      // Again: the same trees, no branch moves, nothing written.
      const again = await importHfCache(s, hub);
      expect(again.bytesWritten).toBe(0);
      expect(again.repos[0]!.branches.every((b) => !b.moved)).toBe(true);
      expect((await branchLog(s, 'org/m', 'main')).length).toBe(1);
    });
  });

  it('a snapshot folder imports that commit only; a commit no ref names is kept by a tag recording it', async () => {
    const hub = tempDir();
    const repo = cacheRepo(hub, 'models--org--m', { [C1]: baseFiles(2), [C2]: baseFiles(3) }, { main: C2 });
    await withStore(async (s) => {
      const one = await importHfCache(s, join(repo, 'snapshots', C1));
      expect(one.form).toBe('snapshot');
      expect(one.repos[0]!.commits.map((c) => c.commit)).toEqual([C1]);
      expect(one.repos[0]!.branches).toEqual([]);
      expect(one.repos[0]!.tags).toEqual([{ name: `hf-${C1.slice(0, 12)}`, commit: C1, created: true }]);
      const tag = await resolveRevision(s, 'org/m', `hf-${C1.slice(0, 12)}`);
      expect(tag.kind).toBe('tag');
      expect(tag.document?.upstream).toEqual({ source: 'hf', revision: C1 });
      expect(tag.target).toBe(one.repos[0]!.commits[0]!.snapshot);
      await expectCode(resolveRevision(s, 'org/m'), 'not_found', 'repo.no_such_revision');
    });
  });

  it('imports what a partial snapshot has and says what it lacks (trees/<commit>.json, else the other snapshots; .no_exist ignored)', async () => {
    const hub = tempDir();
    const full = baseFiles(2);
    const repo = cacheRepo(hub, 'models--org--m', { [C1]: full, [C2]: full.slice(0, 1) }, { main: C1 });
    mkdirSync(join(repo, '.no_exist', C2, 'tokenizer'), { recursive: true });
    writeFileSync(join(repo, '.no_exist', C2, 'tokenizer', 'vocab.txt'), '');
    writeFileSync(join(repo, '.no_exist', C2, 'generation_config.json'), '');
    await withStore(async (s) => {
      const r = await importHfCache(s, repo);
      expect(r.repos[0]!.commits.map((c) => [c.commit, c.files, c.missing])).toEqual([
        [C1, 3, []],
        [C2, 1, ['model.safetensors']],
      ]);
    });
    mkdirSync(join(repo, 'trees'));
    writeFileSync(
      join(repo, 'trees', `${C2}.json`),
      JSON.stringify({ format_version: 1, files: { 'config.json': {}, 'extra.txt': {}, 'model.safetensors': {} } }),
    );
    await withStore(async (s) => {
      const r = await importHfCache(s, repo);
      expect(r.repos[0]!.commits[1]!.missing).toEqual(['extra.txt', 'model.safetensors']);
    });
  });

  it('a dataset becomes the repository datasets/owner/name; exported back as datasets--owner--name', async () => {
    const hub = tempDir();
    cacheRepo(
      hub,
      'datasets--org--data',
      { [C1]: [{ path: 'train.parquet', bytes: bytesOf(5000, 4), lfs: true }] },
      {
        main: C1,
      },
    );
    await withStore(async (s) => {
      const r = await importHfCache(s, hub);
      expect(r.repos.map((x) => [x.repo, x.type])).toEqual([['datasets/org/data', 'dataset']]);
      expect((await listRepositories(s)).map((x) => x.repo)).toEqual(['datasets/org/data']);
      const out = tempDir();
      const e = await exportHfCache(s, 'datasets/org/data', null, out);
      expect([e.folder, e.id, e.type, e.commit]).toEqual(['datasets--org--data', 'org/data', 'dataset', C1]);
      expect(readdirSync(join(out, 'datasets--org--data', 'blobs'))).toEqual([sha256(bytesOf(5000, 4))]);
    });
  });

  it('spaces and stray entries of the hub folder are not imported, and are named', async () => {
    const hub = tempDir();
    cacheRepo(hub, 'models--org--m', { [C1]: baseFiles(2) }, { main: C1 });
    cacheRepo(hub, 'spaces--org--app', { [C1]: [{ path: 'app.py', bytes: 'print(1)\n' }] }, { main: C1 });
    writeFileSync(join(hub, 'notes.txt'), 'x');
    await withStore(async (s) => {
      const r = await importHfCache(s, hub);
      expect(r.repos.map((x) => x.repo)).toEqual(['org/m']);
      expect(r.skipped).toEqual(['notes.txt', 'spaces--org--app']);
    });
  });
});

describe('Hugging Face cache: hostile caches (a clear error, nothing imported)', () => {
  /** A cache with a good repository first, then `models--org--bad` broken by `harm`. */
  async function refused(harm: (bad: string) => void, code: string, rule: string): Promise<void> {
    const hub = tempDir();
    cacheRepo(hub, 'models--org--good', { [C1]: baseFiles(2) }, { main: C1 });
    const bad = cacheRepo(hub, 'models--org--zbad', { [C2]: baseFiles(3) }, { main: C2 });
    harm(bad);
    await withStore(async (s) => {
      await expectCode(importHfCache(s, hub), code as never, rule);
      expect((await s.listRefs()).map((r) => r.name)).toEqual([]);
    });
  }
  const link = (bad: string, path = 'config.json') => join(bad, 'snapshots', C2, path);
  const blobOf = (bad: string, path = 'config.json') => join(link(bad, path), '..', readlinkSync(link(bad, path)));

  it('a symlink out of the repository (into another one blobs/)', async () => {
    await refused(
      (bad) => {
        rmSync(link(bad));
        const other = readdirSync(join(bad, '..', 'models--org--good', 'blobs'))[0]!;
        symlinkSync(`../../../models--org--good/blobs/${other}`, link(bad));
      },
      'invalid_argument',
      'manifest.symlink_escape',
    );
  });

  it('an absolute symlink elsewhere', async () => {
    await refused(
      (bad) => {
        rmSync(link(bad));
        symlinkSync('/etc/hostname', link(bad));
      },
      'invalid_argument',
      'import.symlink_absolute',
    );
  });

  it('a symlink to a symlink (the blob is itself a link)', async () => {
    await refused(
      (bad) => {
        const blob = blobOf(bad);
        const real = join(bad, 'blobs', 'elsewhere');
        writeFileSync(real, readFileSync(blob));
        rmSync(blob);
        symlinkSync('elsewhere', blob);
      },
      'invalid_argument',
      'hf_cache.blob_symlink',
    );
  });

  it('a blob swapped for a directory', async () => {
    await refused(
      (bad) => {
        const blob = blobOf(bad, 'model.safetensors');
        rmSync(blob);
        mkdirSync(blob);
      },
      'unsupported',
      'hf_cache.blob_type',
    );
  });

  it('a blob swapped for a FIFO', async () => {
    await refused(
      (bad) => {
        const blob = blobOf(bad, 'model.safetensors');
        rmSync(blob);
        execFileSync('mkfifo', [blob]);
      },
      'unsupported',
      'hf_cache.blob_type',
    );
  });

  it('an LFS blob whose bytes do not match its SHA-256 name', async () => {
    await refused(
      (bad) => {
        const blob = blobOf(bad, 'model.safetensors');
        const bytes = readFileSync(blob);
        bytes[bytes.length - 1]! ^= 1;
        writeFileSync(blob, bytes);
      },
      'corrupt',
      'hf_cache.blob_digest',
    );
  });

  it('a git blob whose bytes do not match its SHA-1 name', async () => {
    await refused((bad) => writeFileSync(blobOf(bad), '{"model_type":"llamb"}\n'), 'corrupt', 'hf_cache.blob_digest');
  });

  it('a snapshot link to a missing blob', async () => {
    await refused((bad) => rmSync(blobOf(bad, 'tokenizer/vocab.txt')), 'not_found', 'hf_cache.blob_missing');
  });

  it('.. in a ref name', async () => {
    await refused((bad) => writeFileSync(join(bad, 'refs', 'a..b'), C2), 'invalid_argument', 'hf_cache.ref_name');
  });

  it('a ref holding a path with .. instead of a commit', async () => {
    await refused((bad) => writeFileSync(join(bad, 'refs', 'main'), '../../../etc'), 'malformed', 'hf_cache.ref_value');
  });

  it('a ref holding something other than 40 hex digits', async () => {
    await refused((bad) => writeFileSync(join(bad, 'refs', 'main'), C2.slice(1)), 'malformed', 'hf_cache.ref_value');
  });

  it('a ref that is a symlink', async () => {
    await refused(
      (bad) => {
        rmSync(join(bad, 'refs', 'main'));
        symlinkSync('../../models--org--good/refs/main', join(bad, 'refs', 'main'));
      },
      'invalid_argument',
      'hf_cache.ref_type',
    );
  });

  it('a ref name that is 40 hex digits (not a branch name)', async () => {
    await refused((bad) => writeFileSync(join(bad, 'refs', C1), C2), 'invalid_argument', 'hf_cache.ref_name');
  });

  it('a blob changed between the scan and its read is a conflict', async () => {
    const hub = tempDir();
    const repo = cacheRepo(hub, 'models--org--m', { [C1]: baseFiles(2) }, { main: C1 });
    const scan = await scanHfCache(hub);
    const entry = scan.repos[0]!.snapshots[0]!.entries.find((e) => e.rel === 'model.safetensors')!;
    appendFileSync(entry.abs, 'x');
    await withStore(async (s) => {
      const lease = await s.lease();
      await expectCode(
        s.importEntries(scan.repos[0]!.snapshots[0]!.entries, lease),
        'conflict',
        'import.source_changed',
      );
      await lease.release();
    });
    expect(repo).toContain('models--org--m');
  });
});

describe('Hugging Face cache: export', () => {
  it('writes blobs by ETag, relative links and refs; merges into an existing root, keeping checked blobs', async () => {
    const hub = tempDir();
    cacheRepo(hub, 'models--org--m', { [C1]: baseFiles(2), [C2]: baseFiles(3) }, { main: C1, dev: C2 });
    await withStore(async (s) => {
      await importHfCache(s, hub);
      const out = tempDir();
      const e1 = await exportHfCache(s, 'org/m', 'main', out);
      expect([e1.commit, e1.ref, e1.blobsWritten, e1.blobsKept]).toEqual([C1, 'main', 3, 0]);
      const folder = join(out, 'models--org--m');
      // Names and links exactly as the input cache has them.
      expect(readdirSync(join(folder, 'blobs')).sort()).toEqual(
        [gitId('{"model_type":"llama"}\n'), sha256(weights(2)), gitId('a\nb\n')].sort(),
      );
      for (const f of baseFiles(2)) {
        const l = join(folder, 'snapshots', C1, ...f.path.split('/'));
        expect(readlinkSync(l)).toBe(readlinkSync(join(hub, 'models--org--m', 'snapshots', C1, ...f.path.split('/'))));
        expect(sha256(readFileSync(l))).toBe(sha256(f.bytes));
      }
      expect(readFileSync(join(folder, 'refs', 'main'), 'utf8')).toBe(C1);
      expect(readdirSync(out)).toEqual(['models--org--m']); // the staging folder is gone
      // The second revision merges in: shared blobs are kept (checked), new ones added.
      const e2 = await exportHfCache(s, 'org/m', 'dev', out);
      expect([e2.commit, e2.blobsWritten, e2.blobsKept]).toEqual([C2, 1, 2]);
      expect(readdirSync(join(folder, 'snapshots')).sort()).toEqual([C1, C2]);
      expect(readFileSync(join(folder, 'refs', 'dev'), 'utf8')).toBe(C2);
      // An existing blob with other bytes is never replaced.
      const blob = join(folder, 'blobs', sha256(weights(3)));
      rmSync(blob);
      writeFileSync(blob, 'tampered');
      await expectCode(exportHfCache(s, 'org/m', 'dev', out), 'corrupt', 'hf_cache.existing_blob');
      expect(readFileSync(blob, 'utf8')).toBe('tampered');
      expect(readdirSync(out)).toEqual(['models--org--m']);
    });
  });

  it('a revision of our own (no upstream) gets the first 40 hex of its revision document as its commit', async () => {
    const src = tempDir();
    writeFileSync(join(src, 'config.json'), '{}');
    await withStore(async (s) => {
      const r = await s.importPath(src);
      const { moveBranch } = await import('@tensorfs/format');
      const moved = await moveBranch(s, { repo: 'me/x', target: r.snapshot, author: 't' });
      const out = tempDir();
      const e = await exportHfCache(s, 'me/x', null, out);
      expect(e.commit).toBe(moved.commit.slice(7, 47));
      expect(readFileSync(join(out, 'models--me--x', 'refs', 'main'), 'utf8')).toBe(e.commit);
      expect(readlinkSync(join(out, 'models--me--x', 'snapshots', e.commit, 'config.json'))).toBe(
        `../../blobs/${gitId('{}')}`,
      );
    });
  });
});
