/**
 * What only the remote tests need: cleanups run after each test (servers, stores), sample trees
 * and stores holding them. Bytes, digests and temp dirs come from `@tensorfs/testkit`.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { isTensorFSError, type ObjectId } from '@tensorfs/format';
import { bytesOf, tempDir } from '@tensorfs/testkit';
import { afterEach } from 'vitest';

const cleanups: (() => Promise<void> | void)[] = [];

/** Runs `fn` after the current test, before its temp dirs are removed. */
export function after(fn: () => Promise<void> | void): void {
  cleanups.push(fn);
}

// Registered after testkit's (imported above) dir removal, so under vitest's default `stack`
// order of after-hooks it runs first: servers and stores close before their folders go.
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

/** Writes `files` (path → bytes) under a new folder. */
export function folderOf(files: Record<string, Uint8Array>): string {
  const d = tempDir('tfs-src-');
  for (const [p, b] of Object.entries(files)) {
    mkdirSync(dirname(join(d, p)), { recursive: true });
    writeFileSync(join(d, p), b);
  }
  return d;
}

/** The default sample tree: three files in two folders. */
export function sampleFiles(seed = 1): Record<string, Uint8Array> {
  return {
    'unet/weights.bin': bytesOf(300_000, seed),
    'text/encoder.bin': bytesOf(120_000, seed + 1),
    'config.json': new TextEncoder().encode('{"model":"tiny"}\n'),
  };
}

/** A new store (closed after the test). */
export async function newStore(): Promise<LocalStore> {
  const s = await LocalStore.open(join(tempDir('tfs-store-'), 'store'));
  after(() => s.close());
  return s;
}

/** A store holding `files` as snapshot `name`. */
export async function storeWith(
  name: string,
  files: Record<string, Uint8Array> = sampleFiles(),
): Promise<{ store: LocalStore; id: ObjectId }> {
  const store = await newStore();
  const r = await store.importPath(folderOf(files), { name });
  return { store, id: r.snapshot };
}

/** The error code a promise rejects with (`ok` if it resolves); anything but a TensorFSError rethrows. */
export async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (isTensorFSError(err)) return err.code;
    throw err;
  }
  return 'ok';
}

/** The part file a pull keeps for object `hex` in a local store's tmp/ (`pull-<hex>.<host>-<pid>.part`), if any. */
export function partFile(storeRoot: string, hex: string): string | undefined {
  const tmp = join(storeRoot, 'tmp');
  if (!existsSync(tmp)) return undefined;
  const name = readdirSync(tmp).find((n) => n.startsWith(`pull-${hex}.`) && n.endsWith('.part'));
  return name === undefined ? undefined : join(tmp, name);
}
