// Remote transfers on loopback, against baselines measured in the same run:
//  1. pull of a 1 GiB snapshot from a hub (`serveHub` over a store, in a child process) into an
//     empty store — hashing, verifying and admitting every byte — against `curl` fetching the
//     same objects from the same hub into files, and an undici GET that discards them;
//  2. a fine-tune (2 of 16 tensors changed) pulled into a store holding the base, and pushed to a
//     hub holding the base: bytes on the wire against the bytes that changed;
//  3. 2,000 small objects pulled from an in-process hub, batched (POST /v1/objects/batch) and
//     one request per object (batchObjectBytes: 0): requests made and time;
//  4. peak RSS of the pull (a child process). TENSORFS_BENCH_BIG=1 runs only this, over 4 GiB.
// Pull and fetch also print their process CPU time (user + system): the machine is shared, and
// CPU time moves much less with the load than wall time.
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { LocalStore } from '@tensorfs/cas';
import { HubOrigin, StoreOrigin, pull, push, serveHub } from '@tensorfs/remote';
import { median, mibps, report, settle } from './lib.mjs';

// Child modes: `hub <store>` serves a store and prints its URL; `rss <store> <url>` pulls and
// prints its peak RSS (KiB).
if (process.argv[2] === 'hub') {
  const store = await LocalStore.open(process.argv[3], { readOnly: true });
  const hub = await serveHub(new StoreOrigin(store));
  // SIGUSR2: print this process's CPU time so far (ms) on stderr, for the parent to read.
  process.on('SIGUSR2', () => {
    const c = process.cpuUsage();
    process.stderr.write(`hub-cpu ${((c.user + c.system) / 1000).toFixed(0)}\n`);
  });
  console.log(hub.url);
  process.on('SIGTERM', async () => {
    await hub.close();
    await store.close();
    process.exit(0);
  });
  await new Promise(() => {});
}
if (process.argv[2] === 'rss') {
  const s = await LocalStore.open(process.argv[3]);
  await pull(s, new HubOrigin(process.argv[4]), 'team/base', {
    partsDir: join(process.argv[3], 'tmp'),
    concurrency: 4,
  });
  await s.close();
  console.log(process.resourceUsage().maxRSS);
  process.exit(0);
}

const MiB = 1 << 20;
const TENSOR = 64 * MiB;
const dir = mkdtempSync(join(tmpdir(), 'tfs-bench-remote-'));
const big = process.env.TENSORFS_BENCH_BIG === '1';
const cpuMs = (c0) => {
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
};

function fillTensor(buf, i, seed) {
  let x = (i + 1) * 2654435761 + seed * 40503 || 1;
  for (let at = 0; at < MiB; at += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    buf.writeInt32LE(x | 0, at);
  }
  for (let at = MiB; at < buf.length; at += MiB) buf.copy(buf, at, 0, MiB);
}

/** A safetensors file of `count` 64 MiB F32 tensors; tensors in `changed` get other bytes. */
function writeModel(sub, count, changed = new Set()) {
  const header = {};
  for (let i = 0; i < count; i++) {
    header[`layers.${i}.weight`] = { dtype: 'F32', shape: [TENSOR / 4], data_offsets: [i * TENSOR, (i + 1) * TENSOR] };
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const folder = join(dir, sub);
  execFileSync('mkdir', ['-p', folder]);
  const fd = openSync(join(folder, 'model.safetensors'), 'w');
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(json.length));
  writeSync(fd, prefix);
  writeSync(fd, Buffer.from(json));
  const buf = Buffer.allocUnsafe(TENSOR);
  for (let i = 0; i < count; i++) {
    fillTensor(buf, i, changed.has(i) ? 1 : 0);
    writeSync(fd, buf);
  }
  closeSync(fd);
  return folder;
}

async function objectsOf(store, id) {
  const m = await store.getManifest(id);
  return m.entries.flatMap((e) => (e.kind === 'file' ? e.records.map((r) => r.digest) : [])).concat([id]);
}

const SELF = fileURLToPath(import.meta.url);

/** Starts a hub over the store at `root` in a child process; resolves to { url, stop }. */
function hubProcess(root) {
  const p = spawn(process.execPath, [SELF, 'hub', root], { stdio: ['ignore', 'pipe', 'pipe'] });
  const waiting = [];
  p.stderr.on('data', (d) => {
    for (const line of String(d).split('\n')) {
      const m = /^hub-cpu (\d+)$/.exec(line);
      if (m) waiting.shift()?.(Number(m[1]));
      else if (line) process.stderr.write(`${line}\n`);
    }
  });
  /** The hub's CPU time so far (ms). */
  const cpu = () =>
    new Promise((resolve) => {
      waiting.push(resolve);
      p.kill('SIGUSR2');
    });
  return new Promise((resolve) => {
    p.stdout.once('data', (d) => resolve({ url: String(d).trim(), cpu, stop: () => p.kill('SIGTERM') }));
  });
}

const tensors = big ? 64 : 16;
console.log(`generating a ${(tensors * TENSOR) / 1024 ** 3} GiB model...`);
const baseDir = writeModel('base', tensors);
const a = await LocalStore.open(join(dir, 'a'));
const base = (await a.importPath(baseDir, { name: 'team/base' })).snapshot;
rmSync(baseDir, { recursive: true, force: true });
if (!big) {
  const tuneDir = writeModel('tune', tensors, new Set([3, 11]));
  await a.importPath(tuneDir, { name: 'team/tune' });
  rmSync(tuneDir, { recursive: true, force: true });
}
const total = tensors * TENSOR;
await a.close();

const hub = await hubProcess(join(dir, 'a'));
const origin = new HubOrigin(hub.url);
const ids = await (async () => {
  const s = await LocalStore.open(join(dir, 'a'), { readOnly: true });
  const r = await objectsOf(s, base);
  await s.close();
  return r;
})();

if (big) {
  const t0 = performance.now();
  const out = execFileSync(process.execPath, [SELF, 'rss', join(dir, 'e'), hub.url], { encoding: 'utf8' });
  const rssMiB = Number(out.trim()) / 1024;
  console.log(
    `pull of ${(total / 1024 ** 3).toFixed(0)} GiB: ${((performance.now() - t0) / 1000).toFixed(1)} s, peak RSS ${rssMiB.toFixed(0)} MiB (target < 300 MiB)`,
  );
  hub.stop();
  await origin.close();
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

// 1. pull vs curl vs undici, interleaved, each after the same settling time (see settle()); the
// medians of five rounds.
const urls = ids.map((id) => `${hub.url}/v1/objects/${id.slice(7)}`);
const oursRuns = [];
const bufferedRuns = [];
const curlRuns = [];
const undiciRuns = [];
const oursCpuRuns = [];
const undiciCpuRuns = [];
for (let round = 0; round < 5; round++) {
  const target = join(dir, `b${round}`);
  const b = await LocalStore.open(target);
  await settle();
  const h0 = await hub.cpu();
  let c0 = process.cpuUsage();
  let t0 = performance.now();
  const r = await pull(b, origin, 'team/base', { partsDir: join(target, 'tmp'), concurrency: 4 });
  oursRuns.push(performance.now() - t0);
  oursCpuRuns.push(cpuMs(c0));
  const hubMs = (await hub.cpu()) - h0;
  console.log(
    `round ${round}: pull ${(performance.now() - t0).toFixed(0)} ms, cpu ${cpuMs(c0).toFixed(0)} ms (hub ${hubMs} ms)`,
  );
  if (r.bytes.fetched < total) throw new Error('pull fetched less than the model');
  await b.close();
  rmSync(target, { recursive: true, force: true });

  // The same pull through the page cache (directIO: false).
  const bb = await LocalStore.open(target);
  await settle();
  t0 = performance.now();
  await pull(bb, origin, 'team/base', { partsDir: join(target, 'tmp'), concurrency: 4, directIO: false });
  bufferedRuns.push(performance.now() - t0);
  console.log(`round ${round}: pull, buffered ${(performance.now() - t0).toFixed(0)} ms`);
  await bb.close();
  rmSync(target, { recursive: true, force: true });

  const out = join(dir, `curl${round}`);
  execFileSync('mkdir', ['-p', out]);
  const args = ['-s', '-S', '--no-progress-meter', '--fail', '--parallel', '--parallel-max', '4'];
  for (const [i, u] of urls.entries()) args.push('-o', join(out, String(i)), u);
  await settle();
  t0 = performance.now();
  execFileSync('curl', args, { stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync('sync');
  curlRuns.push(performance.now() - t0);
  console.log(`round ${round}: curl ${(performance.now() - t0).toFixed(0)} ms`);
  rmSync(out, { recursive: true, force: true });

  await settle();
  c0 = process.cpuUsage();
  t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < urls.length) {
        // Node's fetch is undici's; one retry, as a plain downloader would.
        const url = urls[next++];
        for (let attempt = 0; ; attempt++) {
          try {
            const res = await fetch(url);
            for await (const _ of res.body);
            break;
          } catch (err) {
            if (attempt > 0) throw err;
          }
        }
      }
    }),
  );
  undiciRuns.push(performance.now() - t0);
  undiciCpuRuns.push(cpuMs(c0));
  console.log(`round ${round}: fetch ${(performance.now() - t0).toFixed(0)} ms, cpu ${cpuMs(c0).toFixed(0)} ms`);
}
const [oursMs, bufferedMs, curlMs, undiciMs, oursCpu, undiciCpu] = [
  oursRuns,
  bufferedRuns,
  curlRuns,
  undiciRuns,
  oursCpuRuns,
  undiciCpuRuns,
].map(median);
console.log(
  `pull / curl throughput ratio per round: ${oursRuns.map((o, k) => (curlRuns[k] / o).toFixed(2)).join(' ')}; buffered: ${bufferedRuns.map((o, k) => (curlRuns[k] / o).toFixed(2)).join(' ')}`,
);
report(
  'pull 1 GiB from a hub (verify + admit)',
  oursMs,
  'curl -> files + sync',
  curlMs,
  `${mibps(total, oursMs)} vs ${mibps(total, curlMs)} MiB/s; throughput ratio ${(curlMs / oursMs).toFixed(2)}`,
);
report(
  'pull 1 GiB, buffered (directIO: false)',
  bufferedMs,
  'curl -> files + sync',
  curlMs,
  `${mibps(total, bufferedMs)} vs ${mibps(total, curlMs)} MiB/s; throughput ratio ${(curlMs / bufferedMs).toFixed(2)}`,
);
report(
  'pull 1 GiB from a hub (verify + admit)',
  oursMs,
  'fetch (undici) GET, discard',
  undiciMs,
  `${mibps(total, undiciMs)} MiB/s; throughput ratio ${(undiciMs / oursMs).toFixed(2)}`,
);
console.log(
  `process CPU: pull ${oursCpu.toFixed(0)} ms, fetch ${undiciCpu.toFixed(0)} ms (ratio ${(oursCpu / undiciCpu).toFixed(2)}; the hub's CPU is in its own process)`,
);

// 2. fine-tune: bytes on the wire vs bytes changed.
const changed = 2 * TENSOR;
{
  const c = await LocalStore.open(join(dir, 'c'));
  await pull(c, origin, 'team/base', { partsDir: join(dir, 'c', 'tmp') });
  const r = await pull(c, origin, 'team/tune', { partsDir: join(dir, 'c', 'tmp') });
  console.log(
    `fine-tune pull: ${r.bytes.fetched} bytes fetched for ${changed} changed: ratio ${(r.bytes.fetched / changed).toFixed(4)} (target <= 1.05)`,
  );
  await c.close();
  rmSync(join(dir, 'c'), { recursive: true, force: true });
}
{
  const dest = await LocalStore.open(join(dir, 'd'));
  const destHub = await serveHub(new StoreOrigin(dest), {
    tokens: { tokens: [{ token: 'bench-token-1234', read: ['*'], write: ['*'] }] },
  });
  const src = await LocalStore.open(join(dir, 'a'), { readOnly: true });
  const o = new HubOrigin(destHub.url, { credential: 'bench-token-1234' });
  await push(src, o, 'team/base');
  const r = await push(src, o, 'team/tune');
  console.log(
    `fine-tune push: ${r.bytes.sent} bytes sent for ${changed} changed: ratio ${(r.bytes.sent / changed).toFixed(4)} (target <= 1.05)`,
  );
  await destHub.close();
  await src.close();
  await dest.close();
  rmSync(join(dir, 'd'), { recursive: true, force: true });
}

// 3. 2,000 small objects: batched against one request per object.
{
  const files = join(dir, 'small');
  execFileSync('mkdir', ['-p', files]);
  for (let i = 0; i < 2000; i++) {
    const b = Buffer.alloc(4096 + (i % 13));
    b.writeUInt32LE(i, 0);
    b.writeUInt32LE((i * 2654435761) >>> 0, 8);
    const fd = openSync(join(files, `${String(i).padStart(4, '0')}.bin`), 'w');
    writeSync(fd, b);
    closeSync(fd);
  }
  const s = await LocalStore.open(join(dir, 's'));
  await s.importPath(files, { name: 'team/small' });
  let requests = 0;
  const smallHub = await serveHub(new StoreOrigin(s), { log: () => requests++ });
  const so = new HubOrigin(smallHub.url);
  for (const [label, opts] of [
    ['one request per object', { batchObjectBytes: 0 }],
    ['batched', {}],
  ]) {
    const target = await LocalStore.open(join(dir, `t-${label.length}`));
    requests = 0;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const r = await pull(target, so, 'team/small', { ...opts, concurrency: 4 });
    const ms = performance.now() - t0;
    console.log(
      `2,000 small objects, ${label}: ${r.objects.fetched} objects in ${requests} requests, ${ms.toFixed(0)} ms (cpu of client and hub ${cpuMs(c0).toFixed(0)} ms)`,
    );
    await target.close();
  }
  await so.close();
  await smallHub.close();
  await s.close();
}

// 4. peak RSS of a pull in its own process.
{
  const out = execFileSync(process.execPath, [SELF, 'rss', join(dir, 'e'), hub.url], { encoding: 'utf8' });
  const rssMiB = Number(out.trim()) / 1024;
  console.log(`pull of ${(total / 1024 ** 3).toFixed(0)} GiB: peak RSS ${rssMiB.toFixed(0)} MiB (target < 300 MiB)`);
}

hub.stop();
await origin.close();
rmSync(dir, { recursive: true, force: true });
