import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Store } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';

/** The committed fixtures (see test/fixtures/gen.py). */
export const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

/** One tensor as the reference readers (Python safetensors, gguf-py) see it. */
export interface ExpectedTensor {
  name: string;
  dtype: string;
  shape: number[];
  offset: number;
  length: number;
  sha256: string;
}

/** fixtures/expected.json: file path → tensors. */
export async function expectedTensors(): Promise<Record<string, ExpectedTensor[]>> {
  return JSON.parse(await fsp.readFile(path.join(FIXTURES, 'expected.json'), 'utf8'));
}

/** A fresh store in a temp dir, and a scratch dir beside it. */
export interface TestStore {
  store: Store;
  root: string;
  scratch: string;
  close(): Promise<void>;
}

export async function tempStore(): Promise<TestStore> {
  const base = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-tensors-'));
  const root = path.join(base, 'store');
  const scratch = path.join(base, 'scratch');
  await fsp.mkdir(scratch);
  const store = await Store.open(root);
  return {
    store,
    root,
    scratch,
    async close() {
      await store.close();
      await fsp.rm(base, { recursive: true, force: true });
    },
  };
}

/**
 * Copies fixtures into a folder (`{dest: fixture}`) and imports it as a snapshot; returns its id.
 * With `ref`, the ref is set too.
 */
export async function importTree(
  t: TestStore,
  files: Record<string, string | Uint8Array>,
  ref?: string,
): Promise<ObjectId> {
  const dir = await fsp.mkdtemp(path.join(t.scratch, 'tree-'));
  for (const [dest, from] of Object.entries(files)) {
    const target = path.join(dir, dest);
    await fsp.mkdir(path.dirname(target), { recursive: true });
    if (typeof from === 'string') await fsp.copyFile(path.join(FIXTURES, from), target);
    else await fsp.writeFile(target, from);
  }
  const result = await t.store.importPath(dir, { threads: 1, ...(ref !== undefined ? { name: ref } : {}) });
  return result.snapshot;
}
