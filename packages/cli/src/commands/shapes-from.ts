/**
 * `tfs convert --shapes-from <ref|file|lane:NAME>`: logical tensor shapes from a reference header,
 * for layouts that store only a padded shape (ComfyUI NVFP4 / MXFP8). A path that exists is a
 * `.safetensors` file (its header only is read); `lane:<topology>[@v]` is a topology of the lane
 * catalog (its keys and shapes, every component); anything else is a ref or id in the store (a
 * snapshot's or a checkpoint's tensors, headers only).
 */
import * as fsp from 'node:fs/promises';
import { openFileSource } from '@tensorfs/cas/file';
import { readSafetensorsHeader, TensorFSError } from '@tensorfs/format';
import type { Store } from '@tensorfs/format/store';

/** The logical shape of every tensor `source` names, by tensor name. */
export async function shapesFrom(
  source: string,
  store: () => Promise<Store>,
  signal?: AbortSignal,
): Promise<Map<string, number[]>> {
  const shapes = new Map<string, number[]>();
  const add = (name: string, shape: readonly (number | bigint)[]) => {
    const s = shape.map(Number);
    const prior = shapes.get(name);
    if (prior !== undefined && prior.join() !== s.join()) {
      throw new TensorFSError('invalid_argument', `--shapes-from gives ${name} two shapes`, {
        details: { rule: 'convert.shapes_from', tensor: name, shapes: [prior, s] },
      });
    }
    shapes.set(name, s);
  };
  if (source.startsWith('lane:')) {
    const { defaultCatalog } = await import('@tensorfs/lanes');
    const topology = defaultCatalog().topology(source.slice('lane:'.length));
    for (const c of Object.values(topology.components)) for (const [k, s] of Object.entries(c.keys)) add(k, s);
    return shapes;
  }
  const stat = await fsp.stat(source).catch(() => null);
  if (stat?.isFile()) {
    const file = await openFileSource(source);
    try {
      const header = await readSafetensorsHeader(file, signal ? { signal } : {});
      for (const t of header.tensors) add(t.name, t.shape);
    } finally {
      await file.close();
    }
    return shapes;
  }
  if (stat !== null) {
    throw new TensorFSError(
      'invalid_argument',
      '--shapes-from names a folder: give a .safetensors file, a ref or lane:NAME',
      {
        details: { rule: 'convert.shapes_from' },
      },
    );
  }
  const { openModel } = await import('@tensorfs/tensors');
  const model = await openModel(await store(), source, signal ? { signal } : {});
  for (const view of model) add(view.name, view.shape);
  return shapes;
}
