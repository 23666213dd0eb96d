/**
 * The real clients: a tiny Llama (sharded), a tiny GPT-2 and a PEFT adapter made by transformers
 * and peft, imported into a store, served by the hub, and read back by huggingface_hub,
 * transformers and peft with `HF_ENDPOINT` set (hf-clients.py); then through a pull-through hub
 * whose upstream is stopped before the models are loaded from it.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { StoreOrigin, serveHub } from '../src/index.js';
import { after, newStore } from './helpers.js';

const run = promisify(execFile);
const SCRIPT = join(import.meta.dirname, 'hf-clients.py');
const ALL = 'tok-all-123456';
const TOKENS = {
  tokens: [
    { token: ALL, read: ['*'] },
    { token: 'tok-other-1234', read: ['other/*'] },
  ],
  anonymous: { read: ['test/*'] },
};

async function python(args: string[], env: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const { stdout } = await run('python3', [SCRIPT, ...args], {
    env: {
      ...process.env,
      HF_HUB_CACHE: tempDir('tfs-hf-cache-'),
      HF_HUB_DISABLE_TELEMETRY: '1',
      HF_HUB_DISABLE_PROGRESS_BARS: '1',
      HF_HUB_DISABLE_XET: '1',
      TRANSFORMERS_VERBOSITY: 'error',
      ...env,
    },
    maxBuffer: 16 << 20,
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

describe('huggingface_hub, transformers and peft against the hub', () => {
  it('download, resume, load equal to the original, raise the right errors; and through a pull-through hub with its upstream stopped', async () => {
    const out = tempDir('tfs-hf-models-');
    const made = await python(['make', out]);
    expect((made.shards as string[]).filter((f) => f.endsWith('.safetensors')).length).toBeGreaterThan(1);

    const store = await newStore();
    for (const name of ['llama', 'gpt2', 'adapter']) await store.importPath(join(out, name), { name: `test/${name}` });
    await store.importPath(join(out, 'llama'), { name: 'private/llama' });
    const up = await serveHub(new StoreOrigin(store), { tokens: TOKENS });
    let upOpen = true;
    after(() => (upOpen ? up.close() : undefined));

    const pullStore = await newStore();
    const pt = await serveHub(new StoreOrigin(pullStore), {
      tokens: TOKENS,
      huggingFace: { upstream: { endpoint: up.url, token: ALL, http: { retries: 0 } } },
    });
    after(() => pt.close());

    const r = await python(['check', out], { HF_ENDPOINT: up.url, PULL_ENDPOINT: pt.url });
    for (const k of ['llama_equal', 'gpt2_equal', 'adapter_equal', 'one_file', 'resumed', 'by_sha'])
      expect([k, r[k]]).toEqual([k, true]);
    const llamaFiles = r.snapshot_llama as string[];
    expect(llamaFiles).toContain('model.safetensors.index.json');
    expect(llamaFiles.filter((f) => /^model-\d+-of-\d+\.safetensors$/.test(f)).length).toBeGreaterThan(1);
    expect(r.snapshot_adapter).toEqual(['README.md', 'adapter_config.json', 'adapter_model.safetensors']);
    expect(r.one_file_alone).toEqual(['config.json']);
    expect((r.range as unknown[])[0]).toBe(206);
    expect((r.range as unknown[])[2]).toBe(true);
    const info = r.info as { id: string; sha: string; siblings: string[] };
    expect(info.id).toBe('test/llama');
    expect(info.sha).toMatch(/^[0-9a-f]{40}$/);
    expect((r.meta as { commit: string }).commit).toBe(info.sha);
    expect(r.errors).toEqual({
      repo: ['RepositoryNotFoundError', 404],
      revision: ['RevisionNotFoundError', 404],
      sha: ['RevisionNotFoundError', 404],
      entry: ['RemoteEntryNotFoundError', 404],
      info_revision: ['RevisionNotFoundError', 404],
      anonymous: ['RepositoryNotFoundError', 401],
      scope: ['GatedRepoError', 403],
      bad_token: ['HfHubHTTPError', 401],
    });
    expect(r.pulled).toEqual({
      llama: llamaFiles,
      gpt2: ['config.json', 'generation_config.json', 'model.safetensors'],
      adapter: ['README.md', 'adapter_config.json', 'adapter_model.safetensors'],
    });

    // The upstream stops: the pull-through hub serves what it fetched, loaded by the real clients.
    upOpen = false;
    await up.close();
    const loaded = await python(['load', out], { HF_ENDPOINT: pt.url });
    expect(loaded).toEqual({
      llama_equal: true,
      gpt2_equal: true,
      adapter_equal: true,
      snapshot_llama: llamaFiles,
    });
  }, 420_000);
});
