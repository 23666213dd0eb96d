// The cache (docs/store.md "Cache"), against same-run baselines:
//
//  1. the cost of recording use: reads of 100 tensors (a cached model: the ref resolved, every
//     tensor read) with use recorded (in memory, flushed at most every 30 s) vs the same reads
//     with recording off; and, for scale, with a write for every use (useFlushMs 0);
//  2. prune of 100k cached objects (fetched-on-read entries, 64 B each) to a budget of 0 vs
//     unlinking the same number of files of the same size with a Node loop (same run, same disk).
//     TENSORFS_BENCH_CACHE_OBJECTS changes the count. Each timed part starts after `sync`.
import { execFileSync } from 'node:child_process';
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
  const PAIRS = Number(process.env.TENSORFS_BENCH_CACHE_PAIRS ?? 9);
  const [ours, baseline] = await paired(readAll(withUse), readAll(without), PAIRS);
  report('read 100 tensors, use recorded (batched)', ours, 'not recorded', baseline);
  const [eagerMs, baseline2] = await paired(readAll(eager), readAll(without), Math.max(5, Math.floor(PAIRS / 2)));
  report('read 100 tensors, a write per use', eagerMs, 'not recorded', baseline2);
  for (const s of [withUse, without, eager]) await s.close();

  // 2. Prune of many cached objects.
  const pruneRoot = path.join(dir, 'prune');
  const s = await LocalStore.open(pruneRoot);
  const t0 = performance.now();
  // Objects and plain files written alternately, so both are as old in the page cache.
  const { ids, plain } = writeBoth(path.join(pruneRoot, 'objects', 'sha256'), path.join(dir, 'plain'), OBJECTS, 1);
  for (let i = 0; i < ids.length; i += 10_000) await s.addCachedObjects(ids.slice(i, i + 10_000), 'bench');
  console.log(
    `setup: ${OBJECTS} cached objects and ${OBJECTS} plain files in ${(performance.now() - t0).toFixed(0)} ms`,
  );
  // Both timed parts start from a synced disk: 2 x OBJECTS files were just written, and their
  // writeback would otherwise land inside whichever part runs first (the prune, before 12/2026:
  // 3.2x the unlink loop at 100k, against 1.07x at 20k where less was pending).
  execFileSync('sync');
  await settle();
  const p0 = performance.now();
  const r = await s.prune({ maxBytes: 0 });
  const pruneMs = performance.now() - p0;
  if (r.removed !== OBJECTS) throw new Error(`pruned ${r.removed} of ${OBJECTS}`);
  await s.close();
  execFileSync('sync');
  await settle();
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

/**
 * Writes `n` distinct 64-byte objects under `objects/sha256/xx/yy/<hex>` and, alternately, `n`
 * plain files of 64 bytes in a fan-out as wide (the unlink baseline); returns both.
 */
function writeBoth(base, plainBase, n, seed) {
  const ids = [];
  const plain = [];
  const buf = new Uint8Array(64);
  randomFillSync(buf);
  const zeros = new Uint8Array(64);
  const made = new Set();
  const dirOf = (d) => {
    if (!made.has(d)) {
      fs.mkdirSync(d, { recursive: true });
      made.add(d);
    }
    return d;
  };
  for (let i = 0; i < n; i++) {
    new DataView(buf.buffer).setUint32(0, i);
    new DataView(buf.buffer).setUint32(4, seed);
    const hex = createHash('sha256').update(buf).digest('hex');
    fs.writeFileSync(path.join(dirOf(path.join(base, hex.slice(0, 2), hex.slice(2, 4))), hex), buf, { mode: 0o444 });
    ids.push(`sha256:${hex}`);
    const a = (i & 0xff).toString(16).padStart(2, '0');
    const b = ((i >> 8) & 0xff).toString(16).padStart(2, '0');
    const f = path.join(dirOf(path.join(plainBase, a, b)), String(i));
    fs.writeFileSync(f, zeros);
    plain.push(f);
  }
  return { ids, plain };
}
