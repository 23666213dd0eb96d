/**
 * `tfs serve` serving a checkpoint (made by `tfs convert` or `tfs compose` with `--file-sha256`)
 * through the Hugging Face API: the first `HEAD` of its export's safetensors file answers at once
 * with the SHA-256 its writer recorded, over a read-only store, with no hash pass; without the
 * flag nothing is hashed at write and the hub computes the digest on the first `HEAD`. Run
 * `pnpm build` first.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesOf, safetensorsBytes } from '@tensorfs/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { tfsServe, tfsSync } from './remote-servers.js';

const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'tfs-serve-hf-ckpt-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const sha256Of = (file: string) =>
  /([0-9a-f]{64})\s*$/.exec(execFileSync('openssl', ['dgst', '-sha256', file], { encoding: 'utf8' }))![1]!;

/** A Transformers folder: config.json + a 72 MiB model.safetensors of 9 tensors (10 records). */
function model(d: string) {
  const dir = join(d, 'm');
  mkdirSync(dir);
  const tensors = Array.from({ length: 9 }, (_, i) => ({ name: `layers.${i}.weight`, data: bytesOf(8 << 20, 70 + i) }));
  writeFileSync(join(dir, 'config.json'), '{"model_type":"llama","torch_dtype":"float32"}\n');
  writeFileSync(join(dir, 'model.safetensors'), safetensorsBytes(tensors));
  return { dir, tensors };
}

/** Moves one tensor's object out of the store (a hash pass over the file would fail on it); returns the undo. */
function hideObject(store: string, data: Uint8Array): () => void {
  const hex = createHash('sha256').update(data).digest('hex');
  const object = join(store, 'objects', 'sha256', hex.slice(0, 2), hex.slice(2, 4), hex);
  renameSync(object, `${object}.away`);
  return () => renameSync(`${object}.away`, object);
}

/** First HEAD (timed) with the object hidden, then a GET with it back: the ETag is the GET's SHA-256. */
async function headThenGet(store: string, repo: string, file: string, hidden: Uint8Array, d: string) {
  const restore = hideObject(store, hidden);
  // No tokens: the hub opens the store read-only and cannot keep anything it computes.
  const hub = await tfsServe(['--store', store]);
  try {
    const t0 = performance.now();
    const head = await fetch(`${hub.url}/${repo}/resolve/main/${file}`, { method: 'HEAD' });
    const ms = performance.now() - t0;
    expect(head.status).toBe(200);
    expect(ms).toBeLessThan(1000);
    restore();
    const get = await fetch(`${hub.url}/${repo}/resolve/main/${file}`);
    expect(get.status).toBe(200);
    const got = join(d, 'got.bin');
    writeFileSync(got, Buffer.from(await get.arrayBuffer()));
    expect(head.headers.get('x-linked-etag')).toBe(`"${sha256Of(got)}"`);
    expect(get.headers.get('x-linked-etag')).toBe(head.headers.get('x-linked-etag'));
    return got;
  } finally {
    await hub.stop('SIGTERM');
  }
}

describe('tfs serve: a checkpoint through the Hugging Face API', () => {
  it('tfs convert <folder> --file-sha256: the first HEAD of model.safetensors answers at once with its SHA-256 (read-only store, no hash pass)', async () => {
    const d = temp();
    const { dir, tensors } = model(d);
    const store = join(d, 'store');
    const c = tfsSync(['convert', dir, '--name', 'team/ckpt', '--file-sha256', '--store', store, '--threads', '1']);
    expect([c.code, c.stderr]).toEqual([0, '']);
    const got = await headThenGet(store, 'team/ckpt', 'model.safetensors', tensors[4]!.data, d);
    // The export of a converted checkpoint is its source file, byte for byte.
    expect(sha256Of(got)).toBe(sha256Of(join(dir, 'model.safetensors')));
  }, 120_000);

  it('tfs compose --file-sha256 (a checkpoint with no source): the export built from its tensors is hashed at commit, not on first HEAD', async () => {
    const d = temp();
    const { dir, tensors } = model(d);
    const store = join(d, 'store');
    expect(tfsSync(['convert', dir, '--name', 'team/ckpt', '--store', store, '--threads', '1']).code).toBe(0);
    const r = tfsSync([
      'compose',
      'team/ckpt',
      '--trim',
      'layers.8.*',
      '--name',
      'team/small',
      '--file-sha256',
      '--store',
      store,
    ]);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const got = await headThenGet(store, 'team/small', 'model.safetensors', tensors[3]!.data, d);
    // The laid-out file: a safetensors header, then the 8 kept tensors' bytes in order.
    const expected = join(d, 'expected.safetensors');
    writeFileSync(expected, safetensorsBytes(tensors.slice(0, 8)));
    expect(sha256Of(got)).toBe(sha256Of(expected));
  }, 120_000);

  it('without --file-sha256 nothing hashes the file at write: no list, and the hub computes the digest on the first HEAD', async () => {
    const d = temp();
    const { dir } = model(d);
    const store = join(d, 'store');
    expect(tfsSync(['convert', dir, '--name', 'team/ckpt', '--store', store, '--threads', '1']).code).toBe(0);
    expect(existsSync(join(store, 'refs', '_hf', 'sha256'))).toBe(false);
    const hub = await tfsServe(['--store', store]);
    try {
      const head = await fetch(`${hub.url}/team/ckpt/resolve/main/model.safetensors`, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('x-linked-etag')).toBe(`"${sha256Of(join(dir, 'model.safetensors'))}"`);
    } finally {
      await hub.stop('SIGTERM');
    }
  }, 120_000);
});
