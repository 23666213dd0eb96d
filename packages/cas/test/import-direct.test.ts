// Import writes big records with O_DIRECT from the hasher's page-aligned buffers (issue 16): the
// objects are byte-exact whatever their length (the write is padded to the alignment and cut back
// with ftruncate), small or unaligned bytes go through the page cache, and a filesystem that
// refuses O_DIRECT falls back to buffered writes for the rest of the store's life.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import type { ManifestFileEntry } from '@tensorfs/format';
import { idOf, objectFile, safetensorsBytes, tempDir } from '@tensorfs/testkit';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { allocateAligned, DIRECT_ALIGN, DIRECT_MIN_BYTES, directView, O_DIRECT } from '../src/store/direct.js';
import { Objects } from '../src/store/objects.js';

const KiB = 1024;
const linux = process.platform === 'linux';

/** `n` bytes, distinct per `seed`. */
function filled(n: number, seed: number): Uint8Array {
  const b = Buffer.alloc(n);
  for (let i = 0; i + 4 <= n; i += 4096) b.writeUInt32LE((seed * 2654435761 + i) >>> 0, i);
  b[n - 1] = seed;
  return b;
}

/** Odd lengths on purpose: every big record's direct write is padded, then cut back. */
const LENGTHS = [300 * KiB + 1, 1000 * KiB + 4095, 2048 * KiB, 100];

async function importOdd(s: LocalStore, seed = 1): Promise<Uint8Array[]> {
  const dir = tempDir();
  const tensors = LENGTHS.map((n, i) => filled(n, i + seed));
  const file = safetensorsBytes(tensors.map((data, i) => ({ name: `t${i}`, data })));
  writeFileSync(join(dir, 'm.safetensors'), file);
  const header = file.subarray(0, file.length - tensors.reduce((n, t) => n + t.length, 0));
  const r = await s.importPath(join(dir, 'm.safetensors'), { name: 'm', threads: 2 });
  const m = await s.getManifest(r.snapshot);
  const entry = m.entries[0] as ManifestFileEntry;
  expect(entry.records.map((x) => x.digest)).toEqual([header, ...tensors].map((b) => idOf(b)));
  return [header, ...tensors];
}

/** Every record's object file holds exactly its bytes; no temp is left; verify finds nothing. */
async function expectStored(root: string, s: LocalStore, records: Uint8Array[]): Promise<void> {
  for (const b of records) expect(Buffer.compare(readFileSync(objectFile(root, idOf(b))), b)).toBe(0);
  expect(readdirSync(join(root, 'tmp'))).toEqual([]);
  const v = await s.verify({ data: true });
  expect(v.corrupt).toEqual([]);
  expect(v.missing).toEqual([]);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('direct writes', () => {
  it('directView takes only one page-aligned piece of at least the minimum, with room for the padding', () => {
    const mem = allocateAligned(4 * DIRECT_MIN_BYTES, false);
    const n = DIRECT_MIN_BYTES + 1;
    const view = directView([mem.subarray(DIRECT_ALIGN, DIRECT_ALIGN + n)], n);
    if (!linux) {
      expect(O_DIRECT).toBe(0);
      expect(view).toBeNull();
      return;
    }
    expect(view).not.toBeNull();
    expect(view!.byteOffset).toBe(DIRECT_ALIGN);
    expect(view!.length).toBe(DIRECT_MIN_BYTES + DIRECT_ALIGN);
    // Not aligned, too short, two pieces, plain memory, no room left for the padding.
    expect(directView([mem.subarray(16, 16 + n)], n)).toBeNull();
    expect(directView([mem.subarray(0, DIRECT_MIN_BYTES - 1)], DIRECT_MIN_BYTES - 1)).toBeNull();
    expect(directView([mem.subarray(0, n), mem.subarray(n, n + 10)], n + 10)).toBeNull();
    expect(directView([new Uint8Array(2 * DIRECT_MIN_BYTES)], 2 * DIRECT_MIN_BYTES)).toBeNull();
    const end = mem.buffer.byteLength;
    expect(directView([new Uint8Array(mem.buffer, end - n, n)], n)).toBeNull();
  });

  it.runIf(linux)('writes every big record directly and stores each byte-exact', async () => {
    const direct = vi.spyOn(Objects.prototype as unknown as { fillDirect: () => unknown }, 'fillDirect');
    const root = tempDir();
    const s = await LocalStore.open(root, { directIO: true });
    const records = await importOdd(s);
    // The three tensors of at least 256 KiB; not the header nor the 100-byte tensor.
    expect(direct.mock.calls.map((c) => (c as unknown[])[1]).sort((a, b) => Number(a) - Number(b))).toEqual(
      LENGTHS.slice(0, 3),
    );
    await expectStored(root, s, records);
    await s.close();
  });

  it('is on by default for imports; directIO: false or TENSORFS_DIRECT_IO=0 turns it off', async () => {
    const direct = vi.spyOn(Objects.prototype as unknown as { fillDirect: () => unknown }, 'fillDirect');
    const root = tempDir();
    const s = await LocalStore.open(root);
    await expectStored(root, s, await importOdd(s));
    expect(direct).toHaveBeenCalledTimes(linux ? 3 : 0);
    await s.close();
    direct.mockClear();
    const off = await LocalStore.open(tempDir(), { directIO: false });
    await importOdd(off, 2);
    expect(direct).not.toHaveBeenCalled();
    await off.close();
    vi.stubEnv('TENSORFS_DIRECT_IO', '0');
    const t = await LocalStore.open(tempDir());
    await importOdd(t, 3);
    expect(direct).not.toHaveBeenCalled();
    await t.close();
    vi.stubEnv('TENSORFS_DIRECT_IO', '1');
    const u = await LocalStore.open(tempDir());
    await importOdd(u, 4);
    expect(direct).toHaveBeenCalledTimes(linux ? 3 : 0);
    await u.close();
    vi.unstubAllEnvs();
  });

  it.runIf(linux)('by default a part is buffered unless its caller asks; directIO: true makes it direct', async () => {
    const bytes = filled(5 << 20, 7);
    const resident = (file: string) =>
      Number(
        execFileSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', file], { encoding: 'utf8' }).trim(),
      );
    const pages: Record<string, number> = {};
    for (const [label, options, direct] of [
      ['default', {}, undefined],
      ['default, asked', {}, true],
      ['directIO: true', { directIO: true }, undefined],
    ] as const) {
      const root = tempDir();
      const s = await LocalStore.open(root, options);
      const part = await s.openPart('p', { expectedLength: bytes.length, ...(direct !== undefined ? { direct } : {}) });
      await part.write(bytes);
      await part.commit({ expected: idOf(bytes) });
      pages[label] = resident(objectFile(root, idOf(bytes)));
      await s.close();
    }
    expect(pages).toEqual({ default: bytes.length, 'default, asked': 0, 'directIO: true': 0 });
  });

  it('on tmpfs a directIO import is byte-exact, direct where the kernel takes O_DIRECT there and buffered once refused', async () => {
    if (!existsSync('/dev/shm')) return expect(linux).toBe(false);
    const direct = vi.spyOn(Objects.prototype as unknown as { fillDirect: () => unknown }, 'fillDirect');
    const root = mkdtempSync(join('/dev/shm', 'tfs-direct-'));
    try {
      const s = await LocalStore.open(root, { directIO: true });
      await expectStored(root, s, await importOdd(s));
      const objects = (s as unknown as { objects: Objects }).objects;
      // tmpfs refused O_DIRECT before Linux 6.6 (EINVAL) and takes it since.
      const refused = !objects.directPossible;
      expect(direct.mock.calls.length).toBe(linux ? 3 : 0);
      await expectStored(root, s, await importOdd(s, 5));
      expect(direct.mock.calls.length).toBe(linux ? (refused ? 3 : 6) : 0);
      await s.close();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it.runIf(linux)('falls back to buffered writes when the filesystem refuses O_DIRECT', async () => {
    const probe = await fsp.open(tempDir() + '/probe', 'w');
    const FileHandle = Object.getPrototypeOf(probe) as { write: (...a: unknown[]) => Promise<unknown> };
    await probe.close();
    const write = FileHandle.write;
    let refused = 0;
    vi.spyOn(FileHandle, 'write').mockImplementation(function (this: unknown, ...a: unknown[]) {
      const [, , length, position] = a as [Uint8Array, number, number, number | null];
      // EINVAL, as a filesystem that cannot do O_DIRECT answers, for the direct writes (whole
      // aligned blocks at an explicit position; buffered temp writes append at position null).
      if (length >= DIRECT_MIN_BYTES && length % DIRECT_ALIGN === 0 && typeof position === 'number') {
        refused++;
        return Promise.reject(Object.assign(new Error('EINVAL: invalid argument, write'), { code: 'EINVAL' }));
      }
      return write.apply(this, a);
    });
    const direct = vi.spyOn(Objects.prototype as unknown as { fillDirect: () => unknown }, 'fillDirect');
    const root = tempDir();
    const s = await LocalStore.open(root, { directIO: true });
    const records = await importOdd(s);
    // Records of one read batch start together: each may have tried before the first refusal.
    expect(refused).toBeGreaterThanOrEqual(1);
    expect(refused).toBe(direct.mock.calls.length);
    await expectStored(root, s, records);
    // The open store remembers: its next import writes everything buffered, nothing is refused.
    direct.mockClear();
    refused = 0;
    const again = await importOdd(s, 10);
    expect(direct).not.toHaveBeenCalled();
    expect(refused).toBe(0);
    await expectStored(root, s, again);
    await s.close();
  });
});
