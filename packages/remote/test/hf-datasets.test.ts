/**
 * Datasets pulled through: the real `huggingface_hub` client (`repo_type="dataset"`) against a hub
 * whose upstream is another hub holding a dataset; one file first (only it is fetched), then the
 * whole snapshot, then the upstream stopped and the dataset read again from the pull-through hub.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tempDir } from '@tensorfs/testkit';
import { bytesOf } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { StoreOrigin, serveHub } from '../src/index.js';
import { after, folderOf, newStore } from './helpers.js';

const run = promisify(execFile);
const TOKEN = 'tok-datasets-1234';

const SCRIPT = `
import hashlib, json, os, sys, tempfile
from huggingface_hub import hf_hub_download, snapshot_download
from huggingface_hub.errors import RepositoryNotFoundError

def tree(d):
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, d)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return dict(sorted(out.items()))

out = {}
if sys.argv[1] == "first":
    one = hf_hub_download("team/data", "data/train.csv", repo_type="dataset", cache_dir=tempfile.mkdtemp())
    out["one"] = hashlib.sha256(open(one, "rb").read()).hexdigest()
    try:
        hf_hub_download("team/data", "README.md", cache_dir=tempfile.mkdtemp())
        out["as_model"] = "ok"
    except RepositoryNotFoundError as e:
        out["as_model"] = [type(e).__name__, e.response.status_code]
out["snapshot"] = tree(snapshot_download("team/data", repo_type="dataset", cache_dir=tempfile.mkdtemp()))
print(json.dumps(out))
`;

async function python(arg: string, endpoint: string): Promise<Record<string, unknown>> {
  const { stdout } = await run('python3', ['-c', SCRIPT, arg], {
    env: {
      ...process.env,
      HF_ENDPOINT: endpoint,
      HF_TOKEN: TOKEN,
      HF_HUB_CACHE: tempDir('tfs-hf-cache-'),
      HF_HUB_DISABLE_TELEMETRY: '1',
      HF_HUB_DISABLE_PROGRESS_BARS: '1',
      HF_HUB_DISABLE_XET: '1',
    },
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

const sha = async (b: Uint8Array) => Buffer.from(await crypto.subtle.digest('SHA-256', b)).toString('hex');

describe('pull-through of datasets', () => {
  it('fetches a dataset from the upstream as a dataset (one file, then the snapshot) and serves it with the upstream stopped', async () => {
    const files = {
      'README.md': new TextEncoder().encode('# data\n'),
      'data/train.csv': new TextEncoder().encode('a,b\n1,2\n3,4\n'),
      'data/train-00000.parquet': bytesOf(3 << 20, 4),
    };
    const upStore = await newStore();
    await upStore.importPath(folderOf(files), { name: 'datasets/team/data' });
    const tokens = { tokens: [{ token: TOKEN, read: ['*'] }] };
    const up = await serveHub(new StoreOrigin(upStore), { tokens });
    let upOpen = true;
    after(() => (upOpen ? up.close() : undefined));
    const store = await newStore();
    const pt = await serveHub(new StoreOrigin(store), {
      tokens,
      huggingFace: { upstream: { endpoint: up.url, token: TOKEN, http: { retries: 0 } } },
    });
    after(() => pt.close());

    const expected = Object.fromEntries(
      await Promise.all(
        Object.entries(files)
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(async ([p, b]) => [p, await sha(b)] as const),
      ),
    );
    const first = await python('first', pt.url);
    expect(first.one).toBe(expected['data/train.csv']);
    // Asked as a model, the same name is no repository (on either hub): nothing is fetched as a model.
    expect(first.as_model).toEqual(['RepositoryNotFoundError', 404]);
    expect(first.snapshot).toEqual(expected);
    // Kept under the dataset's repository name, on a branch fetched from upstream.
    expect((await store.listRefs()).map((r) => r.name).filter((n) => !n.startsWith('_hf/'))).toEqual([
      'datasets/team/data',
    ]);
    expect(await store.getRef('team/data')).toBeNull();

    upOpen = false;
    await up.close();
    const again = await python('again', pt.url);
    expect(again.snapshot).toEqual(expected);
  }, 120_000);
});
