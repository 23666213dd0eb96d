/**
 * `tfs import hf://…` and `tfs convert hf://…` in-process against a fake Hugging Face Hub and
 * CDN on loopback (HF_ENDPOINT), with HF_TOKEN; the token never appears in any output.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { isSideRef } from '@tensorfs/format/store';
import { type FakeHub, type FakeHubOptions, fakeHubFixture, sha256Hex, startFakeHub, tempDir } from '@tensorfs/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { run } from '../src/index.js';
import { capture, tfs } from './helpers.js';
import { tfs as spawnTfs } from './remote-servers.js';

const fx = fakeHubFixture();
const TOKEN = 'hf_FAKEcliTOKENzyxwvutsrqponmlk';
const hubs: FakeHub[] = [];
afterEach(async () => {
  for (const h of hubs.splice(0)) await h.close();
});

async function hub(options: FakeHubOptions = {}): Promise<FakeHub> {
  const h = await startFakeHub(fx.repos, options);
  hubs.push(h);
  return h;
}

function envOf(h: FakeHub, token?: string): NodeJS.ProcessEnv {
  return { HF_ENDPOINT: h.endpoint, ...(token !== undefined ? { HF_TOKEN: token } : {}) };
}

function folder(files: Record<string, Uint8Array>): string {
  const d = join(tempDir('tfs-cli-hf-'), 'repo');
  for (const [p, b] of Object.entries(files)) {
    mkdirSync(dirname(join(d, p)), { recursive: true });
    writeFileSync(join(d, p), b);
  }
  return d;
}

function noToken(r: { stdout: string; stderr: string }, token: string): void {
  expect(r.stdout).not.toContain(token);
  expect(r.stderr).not.toContain(token);
}

async function refsOf(store: string): Promise<string[]> {
  const s = await LocalStore.open(store, { readOnly: true });
  try {
    // Heads only: a successful import also records its tree's whole-file SHA-256 list (a side ref).
    return (await s.listRefs()).map((r) => r.name).filter((n) => !isSideRef(n));
  } finally {
    await s.close();
  }
}

describe('tfs import hf://', () => {
  it('imports at the pinned commit, prints and records it, and a local import of the same files adds nothing', async () => {
    const h = await hub();
    const store = join(tempDir(), 'store');
    const r = await tfs(['import', 'hf://acme/tiny', '--store', store, '--json'], envOf(h, TOKEN));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    noToken(r, TOKEN);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({
      ref: 'hf/acme/tiny',
      files: 7,
      source: { kind: 'huggingface', repo: 'acme/tiny', revision: 'main', commit: fx.c1, endpoint: h.endpoint },
    });
    expect(out.bytesFetched).toBe(out.bytes);
    const record = JSON.parse(readFileSync(join(store, 'sources', `${out.snapshot.slice(7)}.json`), 'utf8'));
    expect(record.snapshot).toBe(out.snapshot);
    expect(record.sources.map((s: { commit: string }) => s.commit)).toEqual([fx.c1]);
    expect(JSON.stringify(record)).not.toContain(TOKEN);
    // The record beside the store is no trouble to the store's own maintenance.
    expect((await tfs(['verify', '--data', '--store', store])).code).toBe(0);
    expect((await tfs(['gc', '--store', store])).code).toBe(0);

    const local = await tfs(['import', folder(fx.tiny), '--store', store, '--name', 'local/tiny', '--json']);
    expect(local.code).toBe(0);
    expect(JSON.parse(local.stdout)).toMatchObject({ snapshot: out.snapshot, objectsWritten: 0, bytesWritten: 0 });

    // The human form names the commit, at a tag too.
    const tag = await tfs(['import', 'hf://acme/tiny@v0.1', '--store', store, '--name', 'hf/old'], envOf(h, TOKEN));
    expect(tag.code).toBe(0);
    expect(tag.stdout).toContain(`hf://acme/tiny@v0.1 = commit ${fx.c0}`);
    expect(tag.stdout).toMatch(/^hf\/old -> sha256:[0-9a-f]{64}$/m);
    noToken(tag, TOKEN);
    expect(h.log.filter((q) => q.server === 'cdn').every((q) => q.authorization === undefined)).toBe(true);
    expect(h.log.filter((q) => q.server === 'hub').every((q) => q.authorization === `Bearer ${TOKEN}`)).toBe(true);
  });

  it('--include fetches only the selected files', async () => {
    const h = await hub();
    const store = join(tempDir(), 'store');
    const r = await tfs(
      ['import', 'hf://acme/tiny', '--include', '*.json', '--include', 'model-0000*', '--store', store, '--json'],
      envOf(h),
    );
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.source.files.map((f: { path: string }) => f.path)).toEqual([
      'config.json',
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
      'model.safetensors.index.json',
    ]);
    expect(h.log.some((q) => q.path.endsWith('README.md') || q.path.endsWith('model.gguf'))).toBe(false);
    expect(h.log.some((q) => q.path.endsWith(sha256Hex(fx.tiny['gguf/model.gguf']!)))).toBe(false);
    const local = await tfs(['import', folder({}), '--include', '*.json', '--store', store]);
    expect(local.code).toBe(2);
  });

  it('maps the Hub refusals to exit codes: gated 8 (naming HF_TOKEN), missing 6, lying bytes 4', async () => {
    const h = await hub();
    const store = join(tempDir(), 'store');
    const gated = await tfs(['import', 'hf://acme/gated', '--store', store], envOf(h));
    expect(gated.code).toBe(8);
    expect(gated.stderr).toContain('set HF_TOKEN');
    const wrong = await tfs(['import', 'hf://acme/gated', '--store', store, '--json'], envOf(h, TOKEN));
    expect(wrong.code).toBe(8);
    expect(JSON.parse(wrong.stderr).error).toMatchObject({
      code: 'denied',
      details: { rule: 'hf.gated', status: 403 },
    });
    noToken(wrong, TOKEN);
    const ok = await tfs(['import', 'hf://acme/gated', '--store', store, '--json'], envOf(h, fx.gatedToken));
    expect(ok.code).toBe(0);
    noToken(ok, fx.gatedToken);

    const missing = await tfs(['import', 'hf://acme/nope', '--store', store, '--json'], envOf(h));
    expect(missing.code).toBe(6);
    expect(JSON.parse(missing.stderr).error).toMatchObject({
      code: 'not_found',
      details: { rule: 'hf.repo_not_found' },
    });

    const shard = fx.tiny['model-00001-of-00002.safetensors']!;
    const lie = shard.slice();
    lie[lie.length - 1]! ^= 0x55;
    const liar = await hub({ cdnOverride: { [sha256Hex(shard)]: lie } });
    const bad = await tfs(
      ['import', 'hf://acme/tiny', '--store', store, '--name', 'hf/bad', '--json'],
      envOf(liar, TOKEN),
    );
    expect(bad.code).toBe(4);
    expect(JSON.parse(bad.stderr).error).toMatchObject({ code: 'corrupt', details: { rule: 'hf.digest_mismatch' } });
    noToken(bad, TOKEN);
    expect(await refsOf(store)).toEqual(['hf/acme/gated']);
  });

  it('a CDN serving another size than the Hub announced: every run one corrupt line (exit 4), no ref, nothing unhandled', async () => {
    // The failure was racy (an unread body dropped with destroy() raised an uncaught abort), so many runs.
    const uncaught: unknown[] = [];
    const onError = (e: unknown) => uncaught.push(e);
    process.on('unhandledRejection', onError);
    process.on('uncaughtException', onError);
    try {
      const shard = fx.tiny['model-00001-of-00002.safetensors']!;
      for (const delta of [1000, 1, -1, -100]) {
        const lie = new Uint8Array(shard.length + delta);
        lie.set(shard.subarray(0, Math.min(shard.length, lie.length)));
        const liar = await hub({ cdnOverride: { [sha256Hex(shard)]: lie } });
        const want = `error[corrupt]: model-00001-of-00002.safetensors: the Hub announced ${shard.length} bytes, but the download has ${lie.length}\n`;
        // Five at once, in-process (where an uncaught event reaches the listeners above).
        const stores = Array.from({ length: 5 }, () => join(tempDir(), 'store'));
        const runs = await Promise.all(stores.map((s) => tfs(['import', 'hf://acme/tiny', '--store', s], envOf(liar))));
        for (const [i, r] of runs.entries()) {
          expect(r.code, r.stderr).toBe(4);
          expect(r.stderr).toBe(want);
          expect(r.stdout).toBe('');
          if (existsSync(stores[i]!)) expect(await refsOf(stores[i]!)).toEqual([]);
        }
        const store = join(tempDir(), 'store');
        if (delta === 1000 || delta === -100) {
          // The real process (where the uncaught event was exit 1): its exit code and whole stderr.
          const p = await spawnTfs(['import', 'hf://acme/tiny', '--store', store], envOf(liar));
          expect(p.code, p.stderr).toBe(4);
          expect(p.stderr).toBe(want);
        }
        const j = await tfs(['import', 'hf://acme/tiny', '--store', store, '--json'], envOf(liar));
        expect(j.code, j.stderr).toBe(4);
        expect(JSON.parse(j.stderr).error).toMatchObject({
          code: 'corrupt',
          details: { rule: 'hf.size_mismatch', expected: shard.length, actual: lie.length },
        });
        if (existsSync(store)) expect(await refsOf(store)).toEqual([]);
      }
      await new Promise((r) => setTimeout(r, 100)); // a late abort event would land here
    } finally {
      process.off('unhandledRejection', onError);
      process.off('uncaughtException', onError);
    }
    expect(uncaught.map(String)).toEqual([]);
  }, 120_000);

  it('Ctrl-C (the abort signal) mid-transfer exits 12 and names nothing', async () => {
    const ac = new AbortController();
    const h = await hub({
      onCdnRequest: () => {
        ac.abort();
        return new Promise(() => {});
      },
    });
    const store = join(tempDir(), 'store');
    const c = capture();
    const code = await run(['import', 'hf://acme/tiny', '--store', store, '--name', 'hf/x'], {
      ...c.io,
      env: envOf(h, TOKEN),
      signal: ac.signal,
    });
    expect(code).toBe(12);
    noToken(c.text(), TOKEN);
    expect(await refsOf(store)).toEqual([]);
  });
});

describe('tfs convert hf://', () => {
  it('converts a Diffusers repository into the checkpoint a local convert of the same files makes', async () => {
    const h = await hub();
    const store = join(tempDir(), 'store');
    const r = await tfs(['convert', 'hf://acme/tiny-pipe', '--name', 'cp/pipe', '--store', store, '--json'], envOf(h));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ ref: 'cp/pipe', converter: 'diffusers', source: { repo: 'acme/tiny-pipe' } });
    expect(out.components).toBeGreaterThan(1);
    expect(existsSync(join(store, 'sources', `${out.snapshot.slice(7)}.json`))).toBe(true);
    const local = await tfs(['convert', folder(fx.pipe), '--name', 'cp/local', '--store', store, '--json']);
    expect(local.code).toBe(0);
    expect(JSON.parse(local.stdout)).toMatchObject({ id: out.id, snapshot: out.snapshot });
    const human = await tfs(['convert', 'hf://acme/tiny-pipe', '--name', 'cp/pipe2', '--store', store], envOf(h));
    expect(human.stdout).toContain(`= commit ${fx.repos['acme/tiny-pipe']!.refs.main}`);
  });

  it('converts the Transformers-shaped files --include selects', async () => {
    const h = await hub();
    const store = join(tempDir(), 'store');
    const r = await tfs(
      ['convert', 'hf://acme/tiny', '--include', '*.json', 'model-*', '--name', 'cp/tiny', '--store', store, '--json'],
      envOf(h),
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ converter: 'transformers', components: 1, tensors: 5, source: { commit: fx.c1 } });
    const inspect = await tfs(['inspect', 'cp/tiny', '--store', store, '--json']);
    expect(inspect.code).toBe(0);
    expect(
      JSON.parse(inspect.stdout)
        .components[0].tensors.map((t: { name: string }) => t.name)
        .sort(),
    ).toEqual(['lm_head.weight', 'model.embed.weight', 'model.layers.0.wé', 'model.layers.1.w', 'model.norm.weight']);
  });
});
