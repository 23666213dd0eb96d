/**
 * The Hugging Face cache with the real libraries: a tiny Llama base and three fine-tunes saved by
 * transformers' `save_pretrained`, served by the fake Hub and downloaded by huggingface_hub's own
 * `snapshot_download` (so the cache is the layout huggingface_hub writes), imported with
 * `tfs import`, exported with `tfs export --hf-cache` and loaded back offline by
 * `from_pretrained`, checked with `scan_cache_dir`. python3 with torch, transformers and
 * huggingface_hub must be installed (no skip).
 */
import { execFile } from 'node:child_process';
import { lstatSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { planAndHash } from '@tensorfs/planner';
import { startFakeHub, tempDir } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tfs } from './helpers.js';

const run = promisify(execFile);
const SCRIPT = join(__dirname, 'fixtures', 'hf_cache.py');
const MODELS = ['base', 'ft1', 'ft2', 'ft3'];
const commitOf = (name: string) => (MODELS.indexOf(name) + 1).toString(16).repeat(40);

async function py(args: string[]): Promise<string> {
  const { stdout } = await run('python3', [SCRIPT, ...args], { maxBuffer: 64 << 20, env: { ...process.env } });
  return stdout;
}

function filesOf(dir: string): Record<string, Uint8Array> {
  return Object.fromEntries(readdirSync(dir).map((n) => [n, new Uint8Array(readFileSync(join(dir, n)))]));
}

let work: string;
let cache: string;

beforeAll(async () => {
  // Kept for the whole file (tempDir() folders go after each test).
  work = mkdtempSync(join(tmpdir(), 'tfs-hf-cache-'));
  cache = join(work, 'hub');
  await py(['make', join(work, 'models')]);
  const repos = Object.fromEntries(
    MODELS.map((m) => [
      `org/${m}`,
      { commits: { [commitOf(m)]: { files: filesOf(join(work, 'models', m)) } }, refs: { main: commitOf(m) } },
    ]),
  );
  const hub = await startFakeHub(repos);
  try {
    // Another host name than the CDN's (127.0.0.1), so the client takes the Hub's redirect
    // answer as the file's metadata instead of following it, as with huggingface.co and its CDN.
    await py(['download', cache, hub.endpoint.replace('127.0.0.1', 'localhost'), ...MODELS.map((m) => `org/${m}`)]);
  } finally {
    await hub.close();
  }
}, 600_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Every blob file of the cache (each counted once) and its bytes. */
function cacheBlobBytes(root: string): number {
  let n = 0;
  for (const folder of readdirSync(root).filter((f) => f.startsWith('models--'))) {
    for (const b of readdirSync(join(root, folder, 'blobs'))) n += lstatSync(join(root, folder, 'blobs', b)).size;
  }
  return n;
}

/** The bytes of the distinct objects the planner cuts these files into: what a fresh store must add. */
async function distinctObjectBytes(files: Uint8Array[]): Promise<number> {
  const seen = new Map<string, number>();
  for (const bytes of files) {
    const plan = await planAndHash({ size: bytes.length, read: async (o, l) => bytes.subarray(o, o + l) });
    for (const r of plan.records) seen.set(r.digest, r.length);
  }
  return [...seen.values()].reduce((a, b) => a + b, 0);
}

describe('tfs import / export --hf-cache with transformers and huggingface_hub', () => {
  it('imports the cache: a repository per model, main from refs/, the dedup of three fine-tunes exact', async () => {
    const store = join(tempDir(), 'store');
    const r = await tfs(['--store', store, 'import', cache, '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.form).toBe('hub');
    expect(out.repos.map((x: { repo: string }) => x.repo)).toEqual(MODELS.map((m) => `org/${m}`));
    for (const repo of out.repos) {
      const m = repo.repo.slice(4);
      expect(repo.commits.map((c: { commit: string }) => c.commit)).toEqual([commitOf(m)]);
      expect(repo.branches.map((b: { name: string; commit: string }) => [b.name, b.commit])).toEqual([
        ['main', commitOf(m)],
      ]);
    }
    // What the cache holds on disk: every blob once (4 × config, generation config, weights).
    expect(out.cacheBytes).toBe(cacheBlobBytes(cache));
    // What the store added: the distinct objects of all the files, exactly.
    const all = MODELS.flatMap((m) => Object.values(filesOf(join(work, 'models', m))));
    const expected = await distinctObjectBytes(all);
    expect(out.bytesWritten).toBe(expected);
    const oneModel = Object.values(filesOf(join(work, 'models', 'base'))).reduce((n, b) => n + b.length, 0);
    // Three fine-tunes that changed one 32×32 F32 weight each: far less than four copies.
    expect(out.bytesWritten).toBeLessThan(oneModel + 3 * (32 * 32 * 4 + 2000));
    expect(out.cacheBytes).toBe(4 * oneModel);
    const human = await tfs(['--store', join(tempDir(), 'store'), 'import', cache]);
    expect(human.stdout).toContain(`the store added`);
    expect(human.stdout).toContain(`org/ft2 ${commitOf('ft2')} -> sha256:`);
  });

  it('regression: tfs import …/snapshots/<commit> imports that commit (it failed: symlink target leaves the tree)', async () => {
    const store = join(tempDir(), 'store');
    const snap = join(cache, 'models--org--ft1', 'snapshots', commitOf('ft1'));
    const r = await tfs(['--store', store, 'import', snap, '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.form).toBe('snapshot');
    expect(out.repos[0].repo).toBe('org/ft1');
    expect(out.repos[0].branches.map((b: { name: string }) => b.name)).toEqual(['main']);
    expect(out.repos[0].commits[0].files).toBe(3);
  });

  it('regression: importing the models--… folder then converting gives the model (it gave 0 tensors)', async () => {
    const store = join(tempDir(), 'store');
    const r = await tfs(['--store', store, 'import', join(cache, 'models--org--base'), '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const snapshot = JSON.parse(r.stdout).repos[0].commits[0].snapshot;
    const c = await tfs(['--store', store, 'convert', snapshot, '--name', 'cp/base', '--json']);
    expect(c.code, c.stdout + c.stderr).toBe(0);
    const conv = JSON.parse(c.stdout);
    expect([conv.converter, conv.tensors, conv.assets]).toEqual(['transformers', 21, 2]);
  });

  it('export --hf-cache: from_pretrained offline gives outputs torch.equal to the originals; scan_cache_dir sees no warnings', async () => {
    const store = join(tempDir(), 'store');
    expect((await tfs(['--store', store, 'import', cache])).code).toBe(0);
    const out = join(tempDir(), 'exported');
    for (const m of ['ft2', 'base']) {
      const e = await tfs(['--store', store, 'export', `org/${m}`, out, '--hf-cache', '--json']);
      expect(e.code, e.stdout + e.stderr).toBe(0);
      expect(JSON.parse(e.stdout)).toMatchObject({ folder: `models--org--${m}`, commit: commitOf(m), ref: 'main' });
      // The very names and links huggingface_hub wrote when it downloaded the files.
      const a = join(out, `models--org--${m}`);
      const b = join(cache, `models--org--${m}`);
      expect(readdirSync(join(a, 'blobs')).sort()).toEqual(readdirSync(join(b, 'blobs')).sort());
      for (const f of readdirSync(join(b, 'snapshots', commitOf(m)))) {
        expect(readlinkSync(join(a, 'snapshots', commitOf(m), f))).toBe(
          readlinkSync(join(b, 'snapshots', commitOf(m), f)),
        );
      }
      expect(readFileSync(join(a, 'refs', 'main'), 'utf8')).toBe(readFileSync(join(b, 'refs', 'main'), 'utf8'));
    }
    const spec = ['ft2', 'base'].map((m) => ({ repo: `org/${m}`, dir: join(work, 'models', m) }));
    // The input cache too: its layout is huggingface_hub's own, so it passes the same checks.
    const reports = JSON.parse(await py(['check', JSON.stringify({ [out]: spec, [cache]: spec.slice(0, 1) })]));
    const report = reports[out];
    expect(report.warnings).toEqual([]);
    for (const m of ['ft2', 'base']) {
      expect(report.models[`org/${m}`]).toEqual({ logits_equal: true, tensors_equal: true, tensors: 21 });
    }
    expect(
      report.repos.map((x: { repo: string; refs: string[]; revisions: string[] }) => [x.repo, x.refs, x.revisions]),
    ).toEqual([
      ['org/base', ['main'], [commitOf('base')]],
      ['org/ft2', ['main'], [commitOf('ft2')]],
    ]);
    expect(reports[cache].warnings).toEqual([]);
    expect(reports[cache].models['org/ft2']).toEqual({ logits_equal: true, tensors_equal: true, tensors: 21 });
  }, 600_000);

  it('export --hf-cache of a checkpoint revision: its --safetensors export, loaded offline by from_pretrained equal to the original', async () => {
    const store = join(tempDir(), 'store');
    const c = await tfs(['--store', store, 'convert', join(work, 'models', 'ft1'), '--name', 'cp/ft1', '--json']);
    expect(c.code, c.stdout + c.stderr).toBe(0);
    const out = join(tempDir(), 'exported');
    const e = await tfs(['--store', store, 'export', 'cp/ft1', out, '--hf-cache', '--json']);
    expect(e.code, e.stdout + e.stderr).toBe(0);
    const r = JSON.parse(e.stdout);
    expect(r).toMatchObject({ folder: 'models--cp--ft1', ref: 'main' });
    const snap = join(out, 'models--cp--ft1', 'snapshots', r.commit);
    // The files of the --safetensors export, byte for byte.
    const flat = join(tempDir(), 'flat');
    expect((await tfs(['--store', store, 'export', 'cp/ft1', flat, '--safetensors'])).code).toBe(0);
    expect(readdirSync(snap).sort()).toEqual(readdirSync(flat).sort());
    for (const f of readdirSync(flat))
      expect(readFileSync(join(snap, f)).equals(readFileSync(join(flat, f))), f).toBe(true);
    const reports = JSON.parse(
      await py(['check', JSON.stringify({ [out]: [{ repo: 'cp/ft1', dir: join(work, 'models', 'ft1') }] })]),
    );
    expect(reports[out].models['cp/ft1']).toEqual({ logits_equal: true, tensors_equal: true, tensors: 21 });
    expect(reports[out].warnings).toEqual([]);
  }, 600_000);
});
