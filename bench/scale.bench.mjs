// The store at scale (issue 24): for each size N (default 10,000 and 100,000 objects; set
// TENSORFS_BENCH_SCALE=10000,100000,1000000 for the million), a new store is built directly
// through the store API: N tiny distinct objects (16 B, admitted with putBatch in groups of
// 8,192) and N/100 refs, each naming a snapshot of 100 files of one object. Then, whole process
// (`tfs …`, under `ulimit -n 1024`): `ls`, `du`, `verify`, `verify --data`, `gc --dry-run`; a
// pull's missing-object planning (a real `pull` of a snapshot naming all N objects, from the
// store itself as origin, so every object is present: the walk of the manifest, the existence
// check of each leaf and the ref's closure check, nothing transferred; timed inside a process of
// its own, without its start-up); and the size of metadata.sqlite3 (+ WAL). Prints the growth table: each figure and its ratio to the size before.
//
// TENSORFS_BENCH_DIR puts the stores elsewhere (e.g. /dev/shm: a tmpfs makes the build's
// fsyncs free; 1,000,000 objects take about 4.5 GiB there). The build is timed but is not part
// of the table's point: the commands after it are. The refs phase (putManifest under the build's
// lease, then setRef, per ref) is given in wall ms and in the process's CPU ms (user + system,
// all threads), which the load of a shared machine sways far less.
//
// Knobs for the refs phase alone: TENSORFS_BENCH_ONLY=build skips the commands (and the pull);
// TENSORFS_BENCH_REFS=<count> sets the refs per size instead of N/100 (a ref past N/100 names the
// same objects as an earlier one, under other paths: refs and objects can then grow apart).
// The objects phase is also given in CPU ms and in the bytes the process read and wrote per object
// (`/proc/self/io` rchar / wchar: SQLite's pages, the WAL and the objects), and the build lease's
// release in ms; TENSORFS_BENCH_LEASE=0 builds without a lease (what the claims cost).
// TENSORFS_BENCH_SWEEP=1 then (with TENSORFS_BENCH_ONLY=build TENSORFS_BENCH_REFS=0: no ref holds
// anything) has a new lease claim every other object (Lease.add, 8,192 a call) and times a GC with
// no grace period in the process: its mark reads N/2 claims, its sweep removes the other N/2 in
// batches of 128 (the sweep's lease re-check at that scale); a `tfs gc --dry-run` runs before it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { LocalStore } from '@tensorfs/cas';
import { StoreOrigin, pull } from '@tensorfs/remote';

const SCALES = (process.env.TENSORFS_BENCH_SCALE ?? '10000,100000').split(',').map(Number);
const TFS = fileURLToPath(new URL('../packages/cli/dist/bin.js', import.meta.url));
const dir = mkdtempSync(join(process.env.TENSORFS_BENCH_DIR ?? tmpdir(), 'tfs-bench-scale-'));
const GROUP = 8192;
const ONLY_BUILD = process.env.TENSORFS_BENCH_ONLY === 'build';
const REFS = process.env.TENSORFS_BENCH_REFS === undefined ? undefined : Number(process.env.TENSORFS_BENCH_REFS);
const LEASE = process.env.TENSORFS_BENCH_LEASE !== '0';
const SWEEP = process.env.TENSORFS_BENCH_SWEEP === '1';

/** The sweep at scale: a lease claims every other object, then a GC without grace takes the rest. */
async function sweepHalf(root, ids) {
  const store = await LocalStore.open(root, { graceMs: 0 });
  const lease = await store.lease();
  const half = ids.filter((_, i) => i % 2 === 0);
  const t0 = performance.now();
  for (let at = 0; at < half.length; at += GROUP) lease.add(half.slice(at, at + GROUP));
  const tClaim = performance.now() - t0;
  // Another process's dry run meanwhile: its mark reads the N/2 claims, it stats the other N/2.
  const dry = cli(`--store ${root} gc --dry-run --json`);
  const cpu0 = process.cpuUsage();
  const t1 = performance.now();
  const r = await store.gc();
  const tGc = performance.now() - t1;
  const cpu = process.cpuUsage(cpu0);
  if (r.removed !== ids.length - half.length) throw new Error(`gc removed ${r.removed} of ${ids.length}`);
  await lease.release();
  await store.close();
  return { claimHalf: tClaim, dryHalf: dry, sweep: tGc, sweepCpu: (cpu.user + cpu.system) / 1000 };
}

/** rchar and wchar of this process so far (0 where /proc is not there). */
function io() {
  try {
    const t = readFileSync('/proc/self/io', 'utf8');
    return { r: Number(/rchar: (\d+)/.exec(t)[1]), w: Number(/wchar: (\d+)/.exec(t)[1]) };
  } catch {
    return { r: 0, w: 0 };
  }
}

function tiny(i) {
  const b = Buffer.alloc(16);
  b.writeUInt32LE(i, 0);
  b.writeUInt32LE((0x9e3779b9 ^ i) >>> 0, 4);
  b.writeUInt32LE(0x5ca1ab1e, 8);
  return b;
}

const file = (path, id) => ({
  kind: 'file',
  path,
  mode: 0o644,
  size: 16,
  profile: 'blob-v1',
  records: [{ digest: id, length: 16 }],
});

async function build(root, n) {
  const store = await LocalStore.open(root);
  const lease = LEASE ? await store.lease() : undefined;
  const ids = [];
  const io0 = io();
  const cpuObj0 = process.cpuUsage();
  const t0 = performance.now();
  for (let at = 0; at < n; at += GROUP) {
    const items = [];
    for (let i = at; i < Math.min(n, at + GROUP); i++) items.push({ bytes: tiny(i) });
    for (const r of await store.putBatch(items, { lease })) ids.push(r.result.id);
  }
  const tObjects = performance.now() - t0;
  const cpuObj = process.cpuUsage(cpuObj0);
  const io1 = io();
  const refs = REFS ?? n / 100;
  const cpu0 = process.cpuUsage();
  for (let r = 0; r < refs; r++) {
    // Past N/100 refs the objects come round again: other paths keep each snapshot distinct.
    const round = Math.floor((r * 100) / n);
    const entries = [];
    for (let k = 0; k < 100; k++) {
      const path = `f${String(k).padStart(3, '0')}${round > 0 ? `.${round}` : ''}`;
      entries.push(file(path, ids[(r * 100 + k) % n]));
    }
    const snap = await store.putManifest({ entries }, { lease });
    await store.setRef(`scale/r${r}`, snap);
  }
  const tRefs = performance.now() - t0 - tObjects;
  const cpu = process.cpuUsage(cpu0);
  const t1 = performance.now();
  await lease?.release();
  const tRelease = performance.now() - t1;
  await store.close();
  return {
    ids,
    refs,
    tObjects,
    tRefs,
    cpuRefs: (cpu.user + cpu.system) / 1000,
    cpuObjects: (cpuObj.user + cpuObj.system) / 1000,
    readPerObject: (io1.r - io0.r) / n,
    writtenPerObject: (io1.w - io0.w) / n,
    tRelease,
  };
}

function cli(args) {
  const t0 = performance.now();
  execFileSync('bash', ['-c', `ulimit -n 1024; exec "${process.execPath}" "${TFS}" ${args}`], {
    stdio: ['ignore', 'ignore', 'inherit'],
    maxBuffer: 1 << 30,
  });
  return performance.now() - t0;
}

/**
 * A pull of a snapshot of every object, from the store itself: planning only (all present). Run
 * in a process of its own (`--plan <root>`), as the commands are, so each size starts as cold.
 */
async function planChild(root) {
  const store = await LocalStore.open(root);
  const ids = [];
  for (const r of (await store.scanRefs()).refs) {
    for (const e of (await store.getManifest(r.id)).entries) ids.push(e.records[0].digest);
  }
  const width = String(ids.length).length;
  const entries = ids.map((id, i) => file(`f${String(i).padStart(width, '0')}`, id));
  await store.setRef('scale/all', await store.putManifest({ entries }));
  const t0 = performance.now();
  const r = await pull(store, new StoreOrigin(store), 'scale/all', { name: 'scale/copy' });
  const ms = performance.now() - t0;
  await store.close();
  if (r.objects.present !== ids.length + 1 || r.objects.fetched !== 0) {
    throw new Error(`planning found ${JSON.stringify(r.objects)} for ${ids.length} objects`);
  }
  console.log(JSON.stringify({ ms }));
}

function plan(root) {
  const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--plan', root], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  return JSON.parse(out).ms;
}

if (process.argv[2] === '--plan') {
  await planChild(process.argv[3]);
  process.exit(0);
}

const rows = [];
for (const n of SCALES) {
  const root = join(dir, `s${n}`);
  const b = await build(root, n);
  const row = {
    n,
    refCount: b.refs,
    build: b.tObjects,
    buildCpu: b.cpuObjects,
    refs: b.tRefs,
    refsCpu: b.cpuRefs,
    release: b.tRelease,
    readB: b.readPerObject,
    writtenB: b.writtenPerObject,
    load: loadavg()[0],
  };
  const size = (f) => {
    try {
      return statSync(join(root, f)).size;
    } catch {
      return 0;
    }
  };
  row.sqlite = size('metadata.sqlite3') + size('metadata.sqlite3-wal');
  if (SWEEP) Object.assign(row, await sweepHalf(root, b.ids));
  if (!ONLY_BUILD) {
    row.ls = cli(`--store ${root} ls --json`);
    row.du = cli(`--store ${root} du --json`);
    row.verify = cli(`--store ${root} verify --json`);
    row.data = cli(`--store ${root} verify --data --json`);
    row.gc = cli(`--store ${root} gc --dry-run --json`);
    row.gcRun = cli(`--store ${root} gc --json`);
    row.plan = plan(root);
  }
  rows.push(row);
  rmSync(root, { recursive: true, force: true });
  console.log(`N=${n} done (load ${loadavg()[0].toFixed(1)}): ${JSON.stringify(row)}`);
}
const cols = [
  'build',
  'buildCpu',
  'release',
  'refs',
  'refsCpu',
  ...(ONLY_BUILD ? [] : ['ls', 'du', 'verify', 'data', 'gc', 'gcRun', 'plan']),
  ...(SWEEP ? ['claimHalf', 'dryHalf', 'sweep', 'sweepCpu'] : []),
];
const head = {
  buildCpu: 'build CPU',
  refsCpu: 'refs CPU',
  release: 'lease release',
  data: 'verify --data',
  gc: 'gc --dry-run',
  gcRun: 'gc',
  claimHalf: 'claim N/2',
  dryHalf: 'gc --dry-run',
  sweep: 'gc sweep of N/2',
  sweepCpu: 'its CPU',
  plan: 'pull plan',
};
console.log(
  `| objects (load) | refs | ${cols.map((c) => `${head[c] ?? c} ms`).join(' | ')} | build read / written B per object | ms/ref | sqlite KiB |`,
);
console.log(`|---|---|${cols.map(() => '---').join('|')}|---|---|---|`);
for (const [k, r] of rows.entries()) {
  const prev = rows[k - 1];
  // The ratio per 10× growth: (t / t_prev) ^ (1 / log10(n / n_prev)), so 10k → 300k reads alike.
  // The refs columns grow with the ref count (N/100 unless TENSORFS_BENCH_REFS says otherwise).
  const grow = (c) => (c.startsWith('refs') ? r.refCount / prev.refCount : r.n / prev.n);
  const per10 = (c) => (r[c] / prev[c]) ** (1 / Math.log10(grow(c)));
  const cell = (c, v = r[c].toFixed(0)) => `${v}${prev && grow(c) !== 1 ? ` (×${per10(c).toFixed(1)})` : ''}`;
  const perRef =
    r.refCount === 0 ? '-' : `${(r.refs / r.refCount).toFixed(2)} / ${(r.refsCpu / r.refCount).toFixed(2)} CPU`;
  const bytes = `${r.readB.toFixed(0)} / ${r.writtenB.toFixed(0)}`;
  console.log(
    `| ${r.n} (${r.load.toFixed(1)}) | ${r.refCount} | ${cols.map((c) => cell(c)).join(' | ')} | ${bytes} | ${perRef} | ${cell('sqlite', (r.sqlite / 1024).toFixed(0))} |`,
  );
}
rmSync(dir, { recursive: true, force: true });
