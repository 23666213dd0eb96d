/** Partial pulls by tensor name, and fetch on read: only the objects a read needs cross the wire. */
import { join } from 'node:path';
import { isTensorFSError } from '@tensorfs/format';
import { openTensors } from '@tensorfs/tensors';
import { describe, expect, it } from 'vitest';
import { FetchingStore, FolderOrigin, pull, push } from '../src/index.js';
import { bytesOf, idOf, safetensorsBytes, tempDir } from '@tensorfs/testkit';
import { newStore, storeWith } from './helpers.js';

/** A safetensors file of F32 tensors `name → bytes`. */
const safetensors = (tensors: Record<string, Uint8Array>) =>
  safetensorsBytes(
    Object.entries(tensors).map(([name, data]) => ({ name, dtype: 'F32', shape: [data.length / 4], data })),
  );

const T = {
  'layers.0.attn.weight': bytesOf(400_000, 1),
  'layers.0.mlp.weight': bytesOf(800_000, 2),
  'layers.1.attn.weight': bytesOf(400_000, 3),
  'layers.1.mlp.weight': bytesOf(800_000, 4),
};

async function remoteModel() {
  const { store } = await storeWith('team/model', {
    'model.safetensors': safetensors(T),
    'config.json': new TextEncoder().encode('{"layers":2}\n'),
  });
  const origin = new FolderOrigin(join(tempDir(), 'origin'));
  await push(store, origin, 'team/model');
  return origin;
}

describe('pull --tensors', () => {
  it('fetches the headers, the matching tensors and the other files, nothing else', async () => {
    const origin = await remoteModel();
    const b = await newStore();
    const r = await pull(b, origin, 'team/model', { tensors: ['*.attn.*'], name: 'local/attn' });
    const set = await openTensors(b, 'local/attn');
    expect(set.files.map((f) => [f.path, [...f.tensors]])).toEqual([
      ['model.safetensors', ['layers.0.attn.weight', 'layers.1.attn.weight']],
    ]);
    for (const name of ['layers.0.attn.weight', 'layers.1.attn.weight'] as const) {
      const bytes = await set.get(name).read({ verify: true });
      expect(Buffer.from(bytes).equals(Buffer.from(T[name]))).toBe(true);
    }
    expect((await b.getManifest(r.id)).entries.map((e) => e.path).sort()).toEqual(['config.json', 'model.safetensors']);
    expect((await b.verify({ data: true })).corrupt).toEqual([]);
    // Each tensor is its own record: the mlp ones (1.6 MB) never crossed.
    expect(await b.has(idOf(T['layers.0.mlp.weight']))).toBe(false);
    expect(await b.has(idOf(T['layers.1.mlp.weight']))).toBe(false);
    expect(await b.has(idOf(T['layers.1.attn.weight']))).toBe(true);
    const total = Object.values(T).reduce((n, x) => n + x.length, 0);
    expect(r.bytes.fetched).toBeLessThan(total - 1_500_000);
    const none = await pull(b, origin, 'team/model', { tensors: ['nothing.*'], name: 'x' }).catch((e) => e);
    expect(isTensorFSError(none) && none.code).toBe('not_found');
  });
});

describe('fetch on read', () => {
  it('one tensor of a remote model costs that tensor plus headers', async () => {
    const origin = await remoteModel();
    const local = await newStore();
    const fs = new FetchingStore(local, origin);
    const id = await fs.resolve('team/model');
    const set = await openTensors(fs, id);
    const before = fs.fetched.bytes;
    const view = set.get('layers.1.mlp.weight');
    const bytes = await view.read({ verify: true });
    expect(Buffer.from(bytes).equals(Buffer.from(T['layers.1.mlp.weight']))).toBe(true);
    expect(fs.fetched.bytes - before).toBe(800_000);
    expect(fs.fetched.bytes).toBeLessThan(800_000 + 10_000); // + the manifest and the header
    await fs.close();
    expect(await local.getRef('team/model')).toBeNull();
  });
});
