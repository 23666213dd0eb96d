import { createHash } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Store } from '@tensorfs/cas';
import { isTensorFSError, type ObjectId } from '@tensorfs/format';
import { expect } from 'vitest';

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

/** The stored objects, by walking objects/ (independent of the store's own bookkeeping). */
export async function listObjects(root: string): Promise<Set<string>> {
  const out = new Set<string>();
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await fsp.readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else out.add(entry.name);
    }
  };
  await walk(path.join(root, 'objects'));
  return out;
}

/** The path of an object file in the store. */
export function objectPath(root: string, id: ObjectId): string {
  const hex = id.slice(7);
  return path.join(root, 'objects', 'sha256', hex.slice(0, 2), hex.slice(2, 4), hex);
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Runs `fn` and returns the TensorFSError code it throws (fails the test if it does not throw one). */
export async function codeOf(fn: () => unknown): Promise<string> {
  try {
    await fn();
  } catch (error) {
    if (!isTensorFSError(error)) throw error;
    return error.code;
  }
  expect.unreachable('expected a TensorFSError');
  return '';
}

/** Deterministic pseudo-random bytes (xorshift), fast enough for tens of MiB. */
export function noise(length: number, seed = 1): Uint8Array {
  const out = new Uint8Array(length);
  const words = new Uint32Array(out.buffer, 0, length >>> 2);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x >>> 0;
  }
  for (let i = words.length * 4; i < length; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
}
