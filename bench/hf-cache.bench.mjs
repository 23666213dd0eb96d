// `tfs import` of a Hugging Face cache holding a base model and three fine-tunes of it, against
// `cp -r` of the same cache folder + `sync -f` of the copy (the durable copy of what the cache
// holds), in the same rounds, interleaved. Prints the dedup (bytes of blobs in the cache, each
// blob once, against the bytes of new objects the store admitted) and both throughputs.
//
// The cache is laid out as huggingface_hub writes it (blobs/<sha256> for the LFS weights,
// blobs/<git blob id> for config.json, relative links in snapshots/<commit>/, refs/main). The
// base is a safetensors file of TENSORS distinct BF16 tensors; each fine-tune changes a different
// eighth of them (as a merged adapter on some projections would), so the three share 7/8 of
// their tensors with the base. TENSORFS_BENCH_RUNS sets the rounds (default 3),
// TENSORFS_BENCH_HF_MIB the base's size (default 256 MiB).
import { execFileSync } from 'node:child_process';
import { createHash, randomFillSync } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LocalStore, importHfCache } from '@tensorfs/cas';
import { writeSafetensorsHeader } from '@tensorfs/format';
import { median, settle } from './lib.mjs';

const MiB = 1 << 20;
const RUNS = Number(process.env.TENSORFS_BENCH_RUNS ?? 3);
const BASE_MIB = Number(process.env.TENSORFS_BENCH_HF_MIB ?? 256);
const ROWS = 1024; // a 1024×1024 BF16 tensor is 2 MiB
const TENSORS = Math.max(8, Math.round(BASE_MIB / 2));
const dir = mkdtempSync(join(process.env.TENSORFS_BENCH_DIR ?? tmpdir(), 'tfs-bench-hf-cache-'));

const noise = randomFillSync(new Uint8Array(ROWS * ROWS * 2));

/** The model's bytes: header, then TENSORS tensors; `changed` tensors get other bytes (a fine-tune). */
function model(changed, salt) {
  const names = Array.from({ length: TENSORS }, (_, i) => `model.layers.${String(i).padStart(3, '0')}.weight`);
  const { bytes: header } = writeSafetensorsHeader(
    names.map((name) => ({ name, dtype: 'BF16', shape: [BigInt(ROWS), BigInt(ROWS)] })),
    { metadata: new Map([['format', 'pt']]), order: 'given' },
  );
  const tensor = ROWS * ROWS * 2;
  const out = new Uint8Array(header.length + TENSORS * tensor);
  out.set(header, 0);
  for (let i = 0; i < TENSORS; i++) {
    const at = header.length + i * tensor;
    out.set(noise, at);
    const view = new DataView(out.buffer, at, 8);
    view.setUint32(0, i); // every tensor distinct
    if (changed(i)) view.setUint32(4, salt);
  }
  return out;
}

const gitId = (b) => createHash('sha1').update(`blob ${b.length}\0`).update(b).digest('hex');
const sha256 = (b) => createHash('sha256').update(b).digest('hex');

/** One repository folder as huggingface_hub writes it. */
function repo(root, name, commit, files) {
  const folder = join(root, `models--org--${name}`);
  mkdirSync(join(folder, 'blobs'), { recursive: true });
  mkdirSync(join(folder, 'snapshots', commit), { recursive: true });
  mkdirSync(join(folder, 'refs'));
  for (const [path, bytes, lfs] of files) {
    const etag = lfs ? sha256(bytes) : gitId(bytes);
    writeFileSync(join(folder, 'blobs', etag), bytes);
    symlinkSync(`../../blobs/${etag}`, join(folder, 'snapshots', commit, path));
  }
  writeFileSync(join(folder, 'refs', 'main'), commit);
}

const cache = join(dir, 'hub');
const config = Buffer.from('{"architectures":["LlamaForCausalLM"],"model_type":"llama"}\n');
const eighth = Math.ceil(TENSORS / 8);
repo(cache, 'base', 'a'.repeat(40), [
  ['config.json', config, false],
  ['model.safetensors', model(() => false, 0), true],
]);
for (const k of [1, 2, 3]) {
  const changed = (i) => i >= k * eighth && i < (k + 1) * eighth;
  repo(cache, `ft${k}`, String(k).repeat(40), [
    ['config.json', config, false],
    ['model.safetensors', model(changed, k), true],
  ]);
}
execFileSync('sync');

async function importOnce() {
  const root = mkdtempSync(join(dir, 'store-'));
  const store = await LocalStore.open(root);
  const t0 = performance.now();
  const r = await importHfCache(store, cache);
  const wall = performance.now() - t0;
  await store.close();
  rmSync(root, { recursive: true, force: true });
  return { wall, r };
}

function cpOnce() {
  const out = join(dir, 'copy');
  const t0 = performance.now();
  execFileSync('cp', ['-r', cache, out]);
  execFileSync('sync', ['-f', out]);
  const wall = performance.now() - t0;
  rmSync(out, { recursive: true, force: true });
  return wall;
}

const ours = [];
const cps = [];
let result;
try {
  for (let i = 0; i < RUNS; i++) {
    await settle();
    const o = await importOnce();
    ours.push(o.wall);
    result = o.r;
    await settle();
    cps.push(cpOnce());
  }
  const r = result;
  const MiBs = (b, ms) => ((b / MiB / ms) * 1000).toFixed(0);
  console.log(
    `HF cache: ${r.repos.length} repositories (a base of ${TENSORS} × 2 MiB tensors and 3 fine-tunes each changing ${eighth}), load ${loadavg()[0].toFixed(1)}`,
  );
  console.log(
    `dedup: the cache holds ${(r.cacheBytes / MiB).toFixed(1)} MiB of blobs; the store added ${(r.bytesWritten / MiB).toFixed(1)} MiB (${r.objectsWritten} objects): ${(r.cacheBytes / r.bytesWritten).toFixed(2)}x`,
  );
  const mo = median(ours);
  const mc = median(cps);
  console.log(
    `tfs import ${mo.toFixed(0)} ms (${MiBs(r.cacheBytes, mo)} MiB/s of cache) | cp -r + sync -f ${mc.toFixed(0)} ms (${MiBs(r.cacheBytes, mc)} MiB/s) | ratio ${(mo / mc).toFixed(3)} (runs: ours ${ours.map((x) => x.toFixed(0)).join(', ')}; cp ${cps.map((x) => x.toFixed(0)).join(', ')})`,
  );
} finally {
  await fsp.rm(dir, { recursive: true, force: true });
}
