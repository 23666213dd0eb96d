import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { SAMPLES } from '@tensorfs/testkit';
import { convertSnapshot } from '@tensorfs/tensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webDiff, webRef } from '../src/web/api.js';

describe('the web JSON shows snapshots and checkpoints as one model', () => {
  let dir: string;
  let store: LocalStore;
  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-web-model-'));
    store = await LocalStore.open(path.join(dir, 'store'));
    await store.importPath(path.join(SAMPLES, 'tiny-model', 'diffusers'), { name: 'sd', threads: 1 });
    await convertSnapshot(store, 'sd', { name: 'pipe' });
    await store.importPath(path.join(SAMPLES, 'tiny-model', 'model.gguf'), { name: 'gg', threads: 1 });
    await convertSnapshot(store, 'gg', { name: 'ggc' });
  });
  afterAll(async () => {
    await store.close();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('tensor rows carry their component and storage, the same for a snapshot and its conversion', async () => {
    const rows = async (ref: string) =>
      (await webRef(store, ref)).tensors.map((t) => `${t.component}/${t.name} ${t.storage} ${t.objects.join(',')}`);
    expect(await rows('sd')).toEqual(await rows('pipe'));
    expect((await rows('pipe')).map((r) => r.split(' ').slice(0, 2).join(' '))).toEqual([
      'text_encoder/text_model.embeddings.token_embedding.weight plain',
      'text_encoder/text_model.final_layer_norm.bias plain',
      'text_encoder/text_model.final_layer_norm.weight plain',
      'unet/conv_in.bias plain',
      'unet/conv_in.weight plain',
      'unet/conv_out.weight plain',
    ]);
    const gguf = (await webRef(store, 'ggc')).tensors.filter((t) => t.storage === 'encoded');
    expect(gguf.map((t) => [t.component, t.name, t.encoding])).toEqual([['model', 'blk.0.attn_q.weight', 'ggml']]);
  });

  it('the compare view of a snapshot and its conversion is 0 changed', async () => {
    for (const [a, b] of [
      ['sd', 'pipe'],
      ['gg', 'ggc'],
    ] as const) {
      const d = await webDiff(store, a, b);
      expect(d.kinds).toEqual(['snapshot', 'checkpoint']);
      expect([d.tensors.changed, d.tensors.renamed, d.tensors.removed, d.tensors.added]).toEqual([[], [], [], []]);
    }
    expect((await webDiff(store, 'sd', 'pipe')).tensors.unchanged).toBe(6);
    expect((await webDiff(store, 'gg', 'ggc')).tensors.unchanged).toBe(4);
  });
});
