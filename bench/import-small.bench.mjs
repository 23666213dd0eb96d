// Many small tensors (issue 24): `tfs import` of one safetensors file holding N tiny tensors
// (default 100,000 of 64 bytes; TENSORFS_BENCH_TENSORS sets N) into a new store, whole process,
// against writing the same tensors as N files with one `sync` at the end (`tar -x` of an archive
// of them, then `sync`), in the same rounds, interleaved. Target: ≤ 2×. Both run under
// `ulimit -n 1024` (the stock limit): the import must not need a descriptor per tensor.
// TENSORFS_BENCH_RUNS sets the rounds (default 3).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { median } from './lib.mjs';

const N = Number(process.env.TENSORFS_BENCH_TENSORS ?? 100_000);
const SIZE = 64;
const RUNS = Number(process.env.TENSORFS_BENCH_RUNS ?? 3);
const TFS = fileURLToPath(new URL('../packages/cli/dist/bin.js', import.meta.url));
const dir = mkdtempSync(join(process.env.TENSORFS_BENCH_DIR ?? tmpdir(), 'tfs-bench-small-'));

// The model: N tensors `t.<i>` of SIZE distinct bytes each.
const header = {};
for (let i = 0; i < N; i++) header[`t.${i}`] = { dtype: 'U8', shape: [SIZE], data_offsets: [i * SIZE, (i + 1) * SIZE] };
let json = JSON.stringify(header);
while ((json.length + 8) % 8) json += ' ';
const jb = Buffer.from(json);
const file = Buffer.alloc(8 + jb.length + N * SIZE);
file.writeBigUInt64LE(BigInt(jb.length), 0);
jb.copy(file, 8);
const src = join(dir, 'src');
mkdirSync(src);
for (let i = 0; i < N; i++) {
  const at = 8 + jb.length + i * SIZE;
  file.writeUInt32LE(i, at);
  file.writeUInt32LE((0x9e3779b9 ^ i) >>> 0, at + 4);
  writeFileSync(join(src, `t.${i}`), file.subarray(at, at + SIZE));
}
const model = join(dir, 'model.safetensors');
writeFileSync(model, file);
const tar = join(dir, 'tensors.tar');
execFileSync('tar', ['-cf', tar, '-C', dir, 'src']);
rmSync(src, { recursive: true });

function timed(script) {
  execFileSync('sync');
  const t0 = performance.now();
  execFileSync('bash', ['-c', `ulimit -n 1024; ${script}`], { stdio: ['ignore', 'ignore', 'inherit'] });
  return performance.now() - t0;
}

const ours = [];
const base = [];
for (let r = 0; r < RUNS; r++) {
  const out = join(dir, `x${r}`);
  mkdirSync(out);
  base.push(timed(`tar -xf ${tar} -C ${out} && sync`));
  const store = join(dir, `store${r}`);
  ours.push(timed(`${process.execPath} ${TFS} --store ${store} import ${model} --name m`));
  rmSync(out, { recursive: true });
  rmSync(store, { recursive: true });
}
const o = median(ours);
const b = median(base);
console.log(
  `import of ${N} tensors of ${SIZE} B: ${o.toFixed(0)} ms (runs ${ours.map((x) => x.toFixed(0)).join(', ')}); ` +
    `tar -x + sync ${b.toFixed(0)} ms (runs ${base.map((x) => x.toFixed(0)).join(', ')}); ratio ${(o / b).toFixed(2)}× (target ≤ 2×); load ${loadavg()[0].toFixed(1)}`,
);
rmSync(dir, { recursive: true, force: true });
