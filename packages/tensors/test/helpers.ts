import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type LocalStore, openStore, type Store } from '@tensorfs/cas';
import { MemoryStore, storedObjects } from '@tensorfs/testkit';
import { type ObjectId, objectReferences } from '@tensorfs/format';

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

/** The implementations of the cas `Store` port every store-agnostic suite runs against. */
export const STORE_KINDS = ['local', 'memory'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

/**
 * A fresh store behind the port, and a scratch dir. `local` is the on-disk `LocalStore` (its files
 * under `root`); `memory` is testkit's `MemoryStore`, so a suite passing on both uses nothing but
 * the port. `local` is set only for the local kind (GC, export and other maintenance).
 */
export interface TestStore {
  kind: StoreKind;
  store: Store;
  local: LocalStore | undefined;
  root: string;
  scratch: string;
  /** Hex digests of every stored object. */
  objects(): Promise<Set<string>>;
  /** Names of every ref. */
  refNames(): Promise<string[]>;
  /** Removes a ref (maintenance, not on the port). */
  deleteRef(name: string): Promise<void>;
  /** Collects what no ref reaches and no live lease claims, at once (grace period 0). */
  gc(): Promise<void>;
  /** The bytes of `path` in `snapshot`: exported by the local store, read through the port otherwise. */
  fileBytes(snapshot: ObjectId, path: string): Promise<Uint8Array>;
  close(): Promise<void>;
}

export async function tempStore(kind: StoreKind = 'local'): Promise<TestStore> {
  const base = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-tensors-'));
  const root = path.join(base, 'store');
  const scratch = path.join(base, 'scratch');
  await fsp.mkdir(scratch);
  const local = kind === 'local' ? await openStore(root) : undefined;
  const memory = kind === 'memory' ? new MemoryStore() : undefined;
  return {
    kind,
    store: (local ?? memory)!,
    local,
    root,
    scratch,
    async objects() {
      if (local) return storedObjects(root);
      return new Set([...memory!.objects.keys()].map((id) => id.slice('sha256:'.length)));
    },
    async refNames() {
      return local ? (await local.listRefs()).map((r) => r.name) : [...memory!.refs.keys()].sort();
    },
    async deleteRef(name) {
      if (local) await local.deleteRef(name);
      else if (!memory!.refs.delete(name)) throw new Error(`no ref ${name}`);
    },
    async gc() {
      if (local) {
        const collector = await openStore(root, { graceMs: 0 });
        try {
          await collector.gc();
        } finally {
          await collector.close();
        }
        return;
      }
      const keep = new Set<ObjectId>([...memory!.refs.values()]);
      for (const held of memory!.leases.values()) for (const id of held) keep.add(id);
      for (const id of [...memory!.refs.values()]) {
        const bytes = memory!.objects.get(id);
        for (const c of (bytes && objectReferences(bytes)?.children) ?? []) keep.add(c.id);
      }
      for (const id of [...memory!.objects.keys()]) if (!keep.has(id)) memory!.objects.delete(id);
    },
    async fileBytes(snapshot, file) {
      if (local) {
        const dest = path.join(scratch, `export-${Math.random().toString(16).slice(2)}`);
        await local.exportFile(snapshot, file, dest);
        return new Uint8Array(await fsp.readFile(dest));
      }
      const entry = (await memory!.getManifest(snapshot)).entries.find((e) => e.path === file);
      if (entry?.kind !== 'file') throw new Error(`no file ${file}`);
      return memory!.recordsSource(entry.records, { verify: true }).read(0, entry.size);
    },
    async close() {
      await local?.close();
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
  extra: { fileSha256?: boolean } = {},
): Promise<ObjectId> {
  const dir = await fsp.mkdtemp(path.join(t.scratch, 'tree-'));
  for (const [dest, from] of Object.entries(files)) {
    const target = path.join(dir, dest);
    await fsp.mkdir(path.dirname(target), { recursive: true });
    if (typeof from === 'string') await fsp.copyFile(path.join(FIXTURES, from), target);
    else await fsp.writeFile(target, from);
  }
  const options = { threads: 1, ...extra, ...(ref !== undefined ? { name: ref } : {}) };
  if (t.local) return (await t.local.importPath(dir, options)).snapshot;
  // Import is not on the port: the local importer stores the tree, then every object is copied
  // into the store under test (same ids, so the same snapshot).
  const staging = await openStore(path.join(t.scratch, `staging-${path.basename(dir)}`));
  try {
    const { snapshot } = await staging.importPath(dir, { threads: 1 });
    for (const hex of await storedObjects(staging.root)) {
      await t.store.put(await staging.readObject(`sha256:${hex}`), { expected: `sha256:${hex}` });
    }
    if (ref !== undefined) await t.store.setRef(ref, snapshot);
    return snapshot;
  } finally {
    await staging.close();
  }
}
