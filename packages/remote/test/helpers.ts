import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import { afterEach } from 'vitest';

const dirs: string[] = [];
const cleanups: (() => Promise<void> | void)[] = [];

/** A fresh temp dir, removed after the test. */
export function tempDir(prefix = 'tfs-remote-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** Runs `fn` after the current test. */
export function after(fn: () => Promise<void> | void): void {
  cleanups.push(fn);
}

afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Deterministic pseudo-random bytes. */
export function bytesOf(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed * 2654435761 + 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** sha256 id of bytes, computed here. */
export function idOf(bytes: Uint8Array): ObjectId {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

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
