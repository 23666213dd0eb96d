// Store import / export against same-run baselines (`openssl dgst -sha256`, `cp`), on a
// safetensors file generated in a temp dir (1 GiB; 4 GiB more with TENSORFS_BENCH_BIG=1 for the
// peak-memory case). Warm page cache: every input is read once before it is measured.
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LocalStore } from '@tensorfs/cas';
import { mibps, report, timeCommand } from './lib.mjs';

const MiB = 1 << 20;
const dir = mkdtempSync(join(tmpdir(), 'tfs-bench-cas-'));

/** Writes a safetensors file of `count` F32 tensors of `tensorBytes` each; returns its path. */
function writeSafetensors(name, count, tensorBytes, seed = 0, changed = new Set()) {
  const header = {};
  let off = 0;
  for (let i = 0; i < count; i++) {
    header[`layers.${i}.weight`] = { dtype: 'F32', shape: [tensorBytes / 4], data_offsets: [off, off + tensorBytes] };
    off += tensorBytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const file = join(dir, name);
  const fd = openSync(file, 'w');
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(json.length));
  writeSync(fd, prefix);
  writeSync(fd, Buffer.from(json));
  const buf = Buffer.allocUnsafe(tensorBytes);
  for (let i = 0; i < count; i++) {
    // Tensor i's bytes depend only on (i, seed when changed): a fine-tune rewrites only `changed`.
    fillTensor(buf, i, changed.has(i) ? seed + 1 : 0);
    writeSync(fd, buf);
  }
  closeSync(fd);
  return file;
}

/** Deterministic bytes for tensor `i` of generation `seed`: a 1 MiB xorshift block, repeated. */
function fillTensor(buf, i, seed) {
  let x = (i + 1) * 2654435761 + seed * 40503 || 1;
  const block = Math.min(MiB, buf.length);
  for (let at = 0; at < block; at += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    buf.writeInt32LE(x | 0, at);
  }
  for (let at = block; at < buf.length; at += block) buf.copy(buf, at, 0, Math.min(block, buf.length - at));
}

function warm(file) {
  execFileSync('cat', [file], { stdio: ['ignore', 'ignore', 'inherit'], maxBuffer: 0 });
}

/** Wall and CPU time (all threads of this process, hashing workers included) of `fn`. */
async function timed(fn) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await fn();
  const c = process.cpuUsage(c0);
  return { ms: performance.now() - t0, cpu: (c.user + c.system) / 1000, r };
}

/** CPU ms of this process's finished children (Linux /proc: cutime + cstime, 100 Hz ticks). */
function childCpuMs() {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(f[13]) + Number(f[14])) * 10;
}

/** Median wall and CPU ms of `openssl dgst -sha256 file` over 3 runs. */
function opensslTimes(file) {
  const runs = [];
  for (let i = 0; i < 3; i++) {
    const c0 = childCpuMs();
    const t0 = performance.now();
    execFileSync('openssl', ['dgst', '-sha256', file], { stdio: ['ignore', 'ignore', 'inherit'] });
    runs.push({ ms: performance.now() - t0, cpu: childCpuMs() - c0 });
  }
  const mid = (k) => runs.map((r) => r[k]).sort((a, b) => a - b)[1];
  return { ms: mid('ms'), cpu: mid('cpu') };
}

const cpuNote = (ours, base) =>
  `CPU ${ours.cpu.toFixed(0)} ms vs ${base.cpu.toFixed(0)} ms (${(ours.cpu / base.cpu).toFixed(2)}x)`;

async function median(n, fn) {
  const runs = [];
  for (let i = 0; i < n; i++) runs.push(await fn());
  runs.sort((a, b) => a.ms - b.ms);
  return runs[Math.floor(n / 2)];
}

try {
  const COUNT = 64;
  const TENSOR = 16 * MiB;
  const file = writeSafetensors('base.safetensors', COUNT, TENSOR);
  const size = COUNT * TENSOR;
  warm(file);
  const ssl = opensslTimes(file);
  const openssl = ssl.ms;

  // 1. Import into a fresh store (hash on every core, write every object).
  const fresh = await median(3, async () => {
    const root = mkdtempSync(join(dir, 'store-'));
    const s = await LocalStore.open(root);
    const t = await timed(() => s.importPath(file, { name: 'base' }));
    await s.close();
    rmSync(root, { recursive: true, force: true });
    return t;
  });
  report(
    'import 1 GiB safetensors, new store',
    fresh.ms,
    'openssl dgst -sha256',
    openssl,
    `${mibps(size, fresh.ms)} MiB/s, wrote ${(fresh.r.bytesWritten / MiB).toFixed(0)} MiB; ${cpuNote(fresh, ssl)}`,
  );

  // 2. Re-import into a store that has it: hash only, 0 bytes written.
  const root = join(dir, 'store');
  const store = await LocalStore.open(root);
  await store.importPath(file, { name: 'base' });
  const again = await median(3, () => timed(() => store.importPath(file, { name: 'base' })));
  report(
    're-import 1 GiB (all objects present)',
    again.ms,
    'openssl dgst -sha256',
    openssl,
    `wrote ${again.r.bytesWritten} bytes; ${cpuNote(again, ssl)}`,
  );
  if (again.r.bytesWritten !== 0) throw new Error('re-import wrote bytes');

  // 3. A fine-tune changing 10% of the tensors stores only those tensors.
  const changed = new Set(Array.from({ length: COUNT / 10 }, (_, k) => k * 10));
  const tuned = writeSafetensors('tuned.safetensors', COUNT, TENSOR, 7, changed);
  warm(tuned);
  const ft = await timed(() => store.importPath(tuned, { name: 'tuned' }));
  const usage = await store.usage();
  report(
    'import fine-tune (10% of tensors changed)',
    ft.ms,
    'openssl dgst -sha256',
    openssl,
    `${cpuNote(ft, ssl)}; wrote ${(ft.r.bytesWritten / MiB).toFixed(1)} MiB of ${(size / MiB).toFixed(0)} (expected ${((changed.size * TENSOR) / MiB).toFixed(0)}); dedup ratio ${usage.dedupRatio.toFixed(2)}x (logical ${(usage.logicalBytes / MiB).toFixed(0)} MiB, stored ${(usage.storedBytes / MiB).toFixed(0)} MiB)`,
  );

  // 4. Export against cp (same filesystem, warm objects).
  const snapshot = await store.resolve('base');
  const exp = await median(3, async () => {
    const out = mkdtempSync(join(dir, 'out-'));
    const t = await timed(() => store.exportSnapshot(snapshot, out));
    rmSync(out, { recursive: true, force: true });
    return t;
  });
  const cp = await median(3, async () => {
    const out = mkdtempSync(join(dir, 'cp-'));
    const t = await timed(async () => execFileSync('cp', [file, join(out, 'base.safetensors')]));
    rmSync(out, { recursive: true, force: true });
    return t;
  });
  report('export 1 GiB snapshot (fdatasync + rename)', exp.ms, 'cp', cp.ms, `${mibps(size, exp.ms)} MiB/s`);
  const cpSync = await median(3, async () => {
    const out = mkdtempSync(join(dir, 'cps-'));
    const t = await timed(async () => execFileSync('sh', ['-c', `cp "${file}" "${out}/f" && sync "${out}/f"`]));
    rmSync(out, { recursive: true, force: true });
    return t;
  });
  report('export 1 GiB snapshot', exp.ms, 'cp + sync', cpSync.ms);
  await store.close();

  // 5. Peak RSS importing a 4 GiB file (child process, fresh store).
  if (process.env.TENSORFS_BENCH_BIG === '1') {
    rmSync(root, { recursive: true, force: true });
    rmSync(tuned, { force: true });
    const big = writeSafetensors('big.safetensors', 256, TENSOR);
    warm(big);
    const bigRoot = mkdtempSync(join(dir, 'big-'));
    const script = `import { LocalStore } from '@tensorfs/cas';
      import { readFileSync } from 'node:fs';
      const s = await LocalStore.open(${JSON.stringify(bigRoot)});
      const t0 = performance.now();
      await s.importPath(${JSON.stringify(big)});
      const ms = performance.now() - t0;
      await s.close();
      // VmHWM is this process image's peak RSS (getrusage's maxRSS would include the parent's,
      // inherited across fork + exec on Linux).
      const hwm = /VmHWM:\\s+(\\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
      console.log(JSON.stringify({ ms, maxRss: hwm ? Number(hwm[1]) * 1024 : process.resourceUsage().maxRSS * 1024 }));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      cwd: process.cwd(),
    });
    if (r.status !== 0) throw new Error(r.stderr);
    const { ms, maxRss } = JSON.parse(r.stdout.trim().split('\n').at(-1));
    const ssl = await timeCommand('openssl', ['dgst', '-sha256', big], { runs: 1, warmup: 0 });
    report(
      'import 4 GiB safetensors, new store',
      ms,
      'openssl dgst -sha256',
      ssl,
      `peak RSS ${(maxRss / MiB).toFixed(0)} MiB (target < 300 MiB)`,
    );
  } else {
    console.log('import 4 GiB (peak RSS): skipped, set TENSORFS_BENCH_BIG=1');
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
