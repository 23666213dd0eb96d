import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ObjectId } from '@tensorfs/format';
import { afterEach } from 'vitest';

const dirs: string[] = [];

/** A fresh temp dir, removed after the test. */
export function tempDir(prefix = 'tfs-cas-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The object id of some bytes, computed independently of the store. */
export function idOf(...chunks: Uint8Array[]): ObjectId {
  const h = createHash('sha256');
  for (const c of chunks) h.update(c);
  return `sha256:${h.digest('hex')}`;
}

/** Deterministic pseudo-random bytes. */
export function bytesOf(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed * 2654435761 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** Random bytes. */
export function randomOf(n: number): Uint8Array {
  return new Uint8Array(randomBytes(n));
}

/** Asserts that `p` rejects with a TensorFSError of `code`; returns the error. */
export async function rejectsCode(
  p: Promise<unknown>,
  code: string,
): Promise<{ code: string; details: Record<string, unknown> }> {
  try {
    await p;
  } catch (err) {
    const e = err as { code?: string; details?: Record<string, unknown> };
    if (e.code !== code) throw new Error(`expected ${code}, got ${e.code}: ${String(err)}`);
    return e as { code: string; details: Record<string, unknown> };
  }
  throw new Error(`expected ${code}, but it resolved`);
}

/** Byte equality without a deep-equal walk (fast for large buffers). */
export function same(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}
