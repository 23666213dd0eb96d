/**
 * The end-to-end check with the real producers and clients: a tiny Llama made by transformers
 * (saved sharded) and a tiny GGUF written by gguf-py are converted, pushed to a folder that nginx
 * serves, pulled over HTTP into fresh stores under other names, exported, and loaded back by
 * transformers (`from_pretrained`, logits `torch.equal` to the original's) and gguf-py
 * (`GGUFReader`: every tensor's bytes and every metadata field equal). nginx's request log shows
 * exactly the objects each step needed: each once, nothing else. python3 with torch, transformers
 * and gguf, and nginx, must be there (no skip).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type RunningNginx, startNginx } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tfs } from './helpers.js';

const SCRIPT = path.join(import.meta.dirname, 'producers', 'e2e_producers.py');

/** The ids of every object in a store (its `objects/sha256/xx/yy/<hex>` files). */
async function storeObjects(store: string): Promise<string[]> {
  const entries = await fsp.readdir(path.join(store, 'objects'), { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && /^[0-9a-f]{64}$/.test(e.name))
    .map((e) => e.name)
    .sort();
}

/** The request a client makes first to tell a static origin (404) from a hub. */
const PROBE = { method: 'GET', path: '/v1', status: 404 };

/** The paths of the successful requests, sorted (duplicates kept: each must be asked once). */
function ok(requests: { method: string; path: string; status: number }[]): string[] {
  return requests
    .filter((q) => q.status === 200)
    .map((q) => q.path)
    .sort();
}

function json(stdout: string) {
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

describe('end to end: transformers and gguf-py files through convert, push, nginx, pull, export', () => {
  let dir: string;
  let nginx: RunningNginx;
  const origin = () => path.join(dir, 'origin');

  /** The requests nginx served while `step` ran. */
  async function served(step: () => Promise<void>) {
    const before = nginx.requests().length;
    await step();
    // nginx logs a request when its response is done; the client has read every response by now
    await new Promise((r) => setTimeout(r, 200));
    return nginx.requests().slice(before);
  }

  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-cli-e2e-'));
    await fsp.mkdir(path.join(dir, 'gguf'));
    await fsp.mkdir(origin());
    execFileSync('python3', [SCRIPT, 'make', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
    nginx = await startNginx(origin(), { accessLog: true });
  }, 300_000);
  afterAll(async () => {
    await nginx?.stop();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('round-trips both models exactly, and every step asks nginx for exactly what it needs', async () => {
    const a = path.join(dir, 'a');
    const shards = (await fsp.readdir(path.join(dir, 'llama'))).filter((f) => f.endsWith('.safetensors'));
    expect(shards.length).toBeGreaterThan(1);
    const cl = await tfs(['convert', path.join(dir, 'llama'), '--name', 'prod/llama', '--store', a, '--json']);
    expect(cl.code, cl.stderr).toBe(0);
    expect(json(cl.stdout)).toMatchObject({ converter: 'transformers', components: 1 });
    const cg = await tfs([
      'convert',
      path.join(dir, 'gguf', 'tiny.gguf'),
      '--name',
      'prod/gguf',
      '--store',
      a,
      '--json',
    ]);
    expect(cg.code, cg.stderr).toBe(0);
    expect(json(cg.stdout)).toMatchObject({ converter: 'single-file', tensors: 3, encoded: 1 });
    for (const ref of ['prod/llama', 'prod/gguf']) {
      const p = await tfs(['push', origin(), ref, '--store', a]);
      expect(p.code, p.stderr).toBe(0);
    }

    for (const [ref, name] of [
      ['prod/llama', 'mine/llama'],
      ['prod/gguf', 'mine/gguf'],
    ] as const) {
      const store = path.join(dir, `pulled-${name.replace('/', '-')}`);
      const requests = await served(async () => {
        const r = await tfs(['pull', nginx.url, ref, '--name', name, '--store', store, '--json']);
        expect(r.code, r.stderr).toBe(0);
        expect(json(r.stdout).objects.present).toBe(0);
      });
      // a fresh store: everything in it came from the pull, and the pull asked for nothing else
      const objects = await storeObjects(store);
      // the one probe that tells a static origin from a hub, and the one ask for the checkpoint's
      // whole-file SHA-256 list (converted without --file-sha256 it has none), then only 200s
      const top = readFileSync(path.join(store, 'refs', name), 'utf8')
        .trim()
        .slice('sha256:'.length);
      expect(requests.filter((q) => q.method !== 'GET' || q.status !== 200)).toEqual([
        PROBE,
        { method: 'GET', path: `/refs/_hf/sha256/${top}`, status: 404 },
      ]);
      // (and the checkpoint's whole-file SHA-256 list, carried with it: a side ref of the store too)
      const lists = path.join(store, 'refs', '_hf', 'sha256');
      const sideRefs = existsSync(lists) ? readdirSync(lists).map((hex) => `/refs/_hf/sha256/${hex}`) : [];
      expect(ok(requests)).toEqual([`/refs/${ref}`, ...sideRefs, ...objects.map((hex) => `/chunks/${hex}`)].sort());
      // …and it is the whole closure: verify finds everything the ref reaches, intact
      const v = await tfs(['verify', '--store', store]);
      expect(v.code, v.stderr).toBe(0);
      const out = path.join(dir, `export-${name.replace('/', '-')}`);
      const e = await tfs(['export', name, out, '--safetensors', '--store', store]);
      expect(e.code, e.stderr).toBe(0);
    }
    // the exported folder is the original, file for file
    const original = path.join(dir, 'llama');
    const exported = path.join(dir, 'export-mine-llama');
    expect((await fsp.readdir(exported)).sort()).toEqual((await fsp.readdir(original)).sort());
    for (const f of await fsp.readdir(original)) {
      expect((await fsp.readFile(path.join(exported, f))).equals(await fsp.readFile(path.join(original, f))), f).toBe(
        true,
      );
    }
    await fsp.copyFile(path.join(dir, 'llama.logits'), `${exported}.logits`);
    const checked = JSON.parse(
      execFileSync(
        'python3',
        [
          SCRIPT,
          'check',
          exported,
          path.join(dir, 'gguf', 'tiny.gguf'),
          path.join(dir, 'export-mine-gguf', 'tiny.gguf'),
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      ).toString(),
    );
    expect(checked).toEqual({ logits_equal: true, gguf_tensors: 3, gguf_equal: true, gguf_fields_equal: true });

    // one tensor read from the origin: the ref, the headers that locate it, and its own objects
    const tensor = 'model.layers.1.mlp.down_proj.weight';
    const store = path.join(dir, 'cat');
    const out = path.join(dir, 'down_proj.bin');
    const requests = await served(async () => {
      const r = await tfs(['cat', '--from', nginx.url, 'prod/llama', tensor, '-o', out, '--store', store]);
      expect(r.code, r.stderr).toBe(0);
    });
    const objects = await storeObjects(store);
    expect(requests.filter((q) => q.method !== 'GET' || q.status !== 200)).toEqual([PROBE]);
    expect(ok(requests)).toEqual([`/refs/prod/llama`, ...objects.map((hex) => `/chunks/${hex}`)].sort());
    const whole = await storeObjects(path.join(dir, 'pulled-mine-llama'));
    expect(objects.length).toBeLessThan(whole.length / 2);
    const fromA = path.join(dir, 'down_proj.a.bin');
    expect((await tfs(['cat', 'prod/llama', tensor, '-o', fromA, '--store', a])).code).toBe(0);
    expect((await fsp.readFile(out)).equals(await fsp.readFile(fromA))).toBe(true);
  }, 300_000);
});
