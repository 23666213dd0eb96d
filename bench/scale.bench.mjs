// The store at scale (issue 24): for each size N (default 10,000 and 100,000 objects; set
// TENSORFS_BENCH_SCALE=10000,100000,1000000 for the million, which takes tens of minutes on a
// shared 2-core VM), a new store is built directly through the store API: N tiny distinct
// objects (16 B, admitted with putBatch in groups of 8,192) and N/100 refs, each naming a
// snapshot of 100 files of one object. Then, whole process (`tfs …`): `ls`, `du`, `verify`,
// `gc --dry-run`; in process: a pull's missing-object planning (`has` of every object of the
// store, as pull.fetchAll does for each leaf); and the size of metadata.sqlite3 (+ WAL).
// Prints the growth table: each figure and its ratio to the size before (linear = ×10).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { LocalStore } from '@tensorfs/cas';

const SCALES = (process.env.TENSORFS_BENCH_SCALE ?? '10000,100000').split(',').map(Number);
const TFS = fileURLToPath(new URL('../packages/cli/dist/bin.js', import.meta.url));
const dir = mkdtempSync(join(process.env.TENSORFS_BENCH_DIR ?? tmpdir(), 'tfs-bench-scale-'));
const GROUP = 8192;

function tiny(i) {
  const b = Buffer.alloc(16);
  b.writeUInt32LE(i, 0);
  b.writeUInt32LE((0x9e3779b9 ^ i) >>> 0, 4);
  b.writeUInt32LE(0x5ca1ab1e, 8);
  return b;
}

async function build(root, n) {
  const store = await LocalStore.open(root);
  const lease = await store.lease();
  const ids = [];
  const t0 = performance.now();
  for (let at = 0; at < n; at += GROUP) {
    const items = [];
    for (let i = at; i < Math.min(n, at + GROUP); i++) items.push({ bytes: tiny(i) });
    for (const r of await store.putBatch(items, { lease })) ids.push(r.result.id);
  }
  const tObjects = performance.now() - t0;
  for (let r = 0; r < n / 100; r++) {
    const entries = [];
    for (let k = 0; k < 100; k++) {
      const id = ids[r * 100 + k];
      entries.push({
        kind: 'file',
        path: `f${String(k).padStart(3, '0')}`,
        mode: 0o644,
        size: 16,
        profile: 'blob-v1',
        records: [{ digest: id, length: 16 }],
      });
    }
    const snap = await store.putManifest({ entries }, { lease });
    await store.setRef(`scale/r${r}`, snap);
  }
  const tRefs = performance.now() - t0 - tObjects;
  await lease.release();
  await store.close();
  return { ids, tObjects, tRefs };
}

function cli(args) {
  const t0 = performance.now();
  execFileSync('bash', ['-c', `ulimit -n 1024; exec "${process.execPath}" "${TFS}" ${args}`], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return performance.now() - t0;
}

const rows = [];
for (const n of SCALES) {
  const root = join(dir, `s${n}`);
  const { ids, tObjects, tRefs } = await build(root, n);
  const row = { n, build: tObjects, refs: tRefs };
  row.ls = cli(`--store ${root} ls --json`);
  row.du = cli(`--store ${root} du --json`);
  row.verify = cli(`--store ${root} verify --json`);
  row.gc = cli(`--store ${root} gc --dry-run --json`);
  const store = await LocalStore.open(root, { readOnly: true });
  const t0 = performance.now();
  let present = 0;
  for (const id of ids) if (await store.has(id)) present++;
  row.plan = performance.now() - t0;
  await store.close();
  if (present !== n) throw new Error(`planning found ${present} of ${n}`);
  const size = (f) => {
    try {
      return statSync(join(root, f)).size;
    } catch {
      return 0;
    }
  };
  row.sqlite = size('metadata.sqlite3') + size('metadata.sqlite3-wal');
  rows.push(row);
  rmSync(root, { recursive: true, force: true });
  console.log(`N=${n} done (load ${loadavg()[0].toFixed(1)})`);
}
const cols = ['build', 'refs', 'ls', 'du', 'verify', 'gc', 'plan'];
console.log(`| objects | refs | ${cols.map((c) => `${c} ms`).join(' | ')} | sqlite KiB |`);
console.log(`|---|---|${cols.map(() => '---').join('|')}|---|`);
for (const [k, r] of rows.entries()) {
  const prev = rows[k - 1];
  const cell = (c) => `${r[c].toFixed(0)}${prev ? ` (×${(r[c] / prev[c]).toFixed(1)})` : ''}`;
  console.log(
    `| ${r.n} | ${r.n / 100} | ${cols.map(cell).join(' | ')} | ${(r.sqlite / 1024).toFixed(0)}${prev ? ` (×${(r.sqlite / prev.sqlite).toFixed(1)})` : ''} |`,
  );
}
rmSync(dir, { recursive: true, force: true });
