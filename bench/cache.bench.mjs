// The cache (docs/store.md "Cache"), against same-run baselines:
//
//  1. the cost of recording use: reads of 100 tensors (a cached model: the ref resolved, every
//     tensor read) with use recorded (in memory, flushed at most every 30 s) vs the same reads
//     with recording off; and, for scale, with a write for every use (useFlushMs 0);
//  2. prune of 100k cached objects (fetched-on-read entries, 64 B each) to a budget of 0 vs
//     unlinking the same number of files of the same size with a Node loop (same run, same disk).
//     TENSORFS_BENCH_CACHE_OBJECTS changes the count.
import { createHash, randomFillSync } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { LocalStore } from '@tensorfs/cas';
import { openTensors } from '@tensorfs/tensors';
import { paired, report, settle, writeLayersModel } from './lib.mjs';

const READS = 100;
const ROWS = 256; // BF16 [256, 256] = 128 KiB per tensor: the per-read cost is what shows
const OBJECTS = Number(process.env.TENSORFS_BENCH_CACHE_OBJECTS ?? 100_000);

const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-bench-cache-'));
try {
  // 1. Recording use.
  const file = path.join(dir, 'model.safetensors');
  await writeLayersModel(file, READS, ROWS);
  const root = path.join(dir, 'store');
  {
    const s = await LocalStore.open(root);
    const { snapshot } = await s.importPath(file);
    await s.setRef('bench/cached', snapshot, { cached: true });
    await s.close();
  }
  const withUse = await LocalStore.open(root);
  const without = await LocalStore.open(root, { recordUse: false });
  const eager = await LocalStore.open(root, { useFlushMs: 0 });
  const readAll = (store) => async () => {
    const set = await openTensors(store, 'bench/cached');
    for (const v of set) if ((await v.read()).length !== v.byteLength) throw new Error('short read');
  };
  const [ours, baseline] = await paired(readAll(withUse), readAll(without), 9);
  report('read 100 tensors, use recorded (batched)', ours, 'not recorded', baseline);
  const [eagerMs, baseline2] = await paired(readAll(eager), readAll(without), 5);
  report('read 100 tensors, a write per use', eagerMs, 'not recorded', baseline2);
  for (const s of [withUse, without, eager]) await s.close();

  // 2. Prune of many cached objects.
  const pruneRoot = path.join(dir, 'prune');
  const s = await LocalStore.open(pruneRoot);
  const t0 = performance.now();
  const ids = writeObjects(path.join(pruneRoot, 'objects', 'sha256'), OBJECTS, 1);
  for (let i = 0; i < ids.length; i += 10_000) await s.addCachedObjects(ids.slice(i, i + 10_000), 'bench');
  const plainDir = path.join(dir, 'plain');
  const plain = writePlain(plainDir, OBJECTS);
  console.log(
    `setup: ${OBJECTS} cached objects and ${OBJECTS} plain files in ${(performance.now() - t0).toFixed(0)} ms`,
  );
  await settle();
  const p0 = performance.now();
  const r = await s.prune({ maxBytes: 0 });
  const pruneMs = performance.now() - p0;
  if (r.removed !== OBJECTS) throw new Error(`pruned ${r.removed} of ${OBJECTS}`);
  await s.close();
  const u0 = performance.now();
  for (const f of plain) fs.unlinkSync(f);
  const unlinkMs = performance.now() - u0;
  report(
    `prune ${OBJECTS} cached objects`,
    pruneMs,
    'unlink loop',
    unlinkMs,
    `${((pruneMs / OBJECTS) * 1000).toFixed(1)} µs/object`,
  );
} finally {
  await fsp.rm(dir, { recursive: true, force: true });
}

/** Writes `n` distinct 64-byte objects under `objects/sha256/xx/yy/<hex>`; returns their ids. */
function writeObjects(base, n, seed) {
  const ids = [];
  const buf = new Uint8Array(64);
  randomFillSync(buf);
  const made = new Set();
  for (let i = 0; i < n; i++) {
    new DataView(buf.buffer).setUint32(0, i);
    new DataView(buf.buffer).setUint32(4, seed);
    const hex = createHash('sha256').update(buf).digest('hex');
    const d = path.join(base, hex.slice(0, 2), hex.slice(2, 4));
    if (!made.has(d)) {
      fs.mkdirSync(d, { recursive: true });
      made.add(d);
    }
    fs.writeFileSync(path.join(d, hex), buf, { mode: 0o444 });
    ids.push(`sha256:${hex}`);
  }
  return ids;
}

/** `n` files of 64 bytes in the same fan-out, for the unlink baseline. */
function writePlain(base, n) {
  const files = [];
  const buf = new Uint8Array(64);
  for (let i = 0; i < n; i++) {
    const a = (i & 0xff).toString(16).padStart(2, '0');
    const b = ((i >> 8) & 0xff).toString(16).padStart(2, '0');
    const d = path.join(base, a, b);
    if (i < 65536) fs.mkdirSync(d, { recursive: true });
    const f = path.join(d, String(i));
    fs.writeFileSync(f, buf);
    files.push(f);
  }
  return files;
}
