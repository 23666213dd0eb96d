import { execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import http from 'node:http';
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { request, Agent } from 'undici';
import { LocalStore } from '@tensorfs/cas';
import { HubOrigin, StoreOrigin, pull, serveHub } from '@tensorfs/remote';
const SELF = fileURLToPath(import.meta.url);
if (process.argv[2] === 'hub') {
  const store = await LocalStore.open(process.argv[3], { readOnly: true });
  const hub = await serveHub(new StoreOrigin(store));
  const c0 = process.cpuUsage();
  process.on('SIGUSR2', () => { const c = process.cpuUsage(c0); console.error(`hub cpu ${((c.user+c.system)/1000).toFixed(0)} ms`); });
  console.log(hub.url);
  process.on('SIGTERM', async () => { await hub.close(); process.exit(0); });
  await new Promise(() => {});
}
const MiB = 1 << 20, TENSOR = 64 * MiB, N = 16;
const dir = mkdtempSync(join(tmpdir(), 'tfs-exp-'));
const header = {};
for (let i = 0; i < N; i++) header[`l.${i}`] = { dtype: 'F32', shape: [TENSOR / 4], data_offsets: [i * TENSOR, (i + 1) * TENSOR] };
let json = JSON.stringify(header); json += ' '.repeat((8 - (json.length % 8)) % 8);
execFileSync('mkdir', ['-p', join(dir, 'm')]);
const fd = openSync(join(dir, 'm', 'model.safetensors'), 'w');
const p = Buffer.alloc(8); p.writeBigUInt64LE(BigInt(json.length)); writeSync(fd, p); writeSync(fd, Buffer.from(json));
const buf = Buffer.allocUnsafe(TENSOR);
for (let i = 0; i < N; i++) { buf.fill(i * 7 + 1); for (let k = 0; k < TENSOR; k += 4096) buf[k] = (k * 31 + i) & 255; writeSync(fd, buf); }
closeSync(fd);
const a = await LocalStore.open(join(dir, 'a'));
const snap = (await a.importPath(join(dir, 'm'), { name: 'team/base' })).snapshot;
const m = await a.getManifest(snap);
const ids = m.entries.flatMap((e) => (e.kind === 'file' ? e.records.map((r) => r.digest) : []));
await a.close();
const hubp = spawn(process.execPath, [...(process.env.HUBPROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/exp/hubprof'] : []), SELF, 'hub', join(dir, 'a')], { stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise((r) => hubp.stdout.once('data', (d) => r(String(d).trim())));
const urls = [...new Set(ids)].map((id) => `${url}/v1/objects/${id.slice(7)}`);
console.log(urls.length, 'objects');
const cpu = (c0) => { const c = process.cpuUsage(c0); return ((c.user + c.system) / 1000).toFixed(0); };
async function pool(fn) { let next = 0; await Promise.all(Array.from({ length: 4 }, async () => { while (next < urls.length) await fn(urls[next++]); })); }
const cases = {
  curlnull: async () => { execFileSync('curl', ['-s', '--parallel', '--parallel-max', '4', ...urls.flatMap((u) => ['-o', '/dev/null', u])]); },
  curlfiles: async () => { const o = join(dir, 'cf'); execFileSync('mkdir', ['-p', o]); execFileSync('curl', ['-s', '--parallel', '--parallel-max', '4', ...urls.flatMap((u, i) => ['-o', join(o, String(i)), u])]); execFileSync('sync'); rmSync(o, { recursive: true }); },
  undici: () => pool(async (u) => { const r = await request(u); for await (const _ of r.body); }),
  undiciHash: () => pool(async (u) => { const r = await request(u); const h = createHash('sha256'); for await (const c of r.body) h.update(c); h.digest(); }),
  nodehttp: () => pool((u) => new Promise((res, rej) => http.get(u, (r) => { r.on('data', () => {}); r.on('end', res); r.on('error', rej); }))),
  pull: async () => { const t = join(dir, 'b'); const b = await LocalStore.open(t); await pull(b, new HubOrigin(url), 'team/base', { partsDir: join(t, 'tmp'), concurrency: 4 }); await b.close(); rmSync(t, { recursive: true }); },
};
const which = process.argv.slice(2);
for (let round = 0; round < +(process.env.ROUNDS ?? 2); round++) for (const k of which.length ? which : Object.keys(cases)) {
  hubp.kill('SIGUSR2');
  let sess;
  if (process.env.PROF) { const { Session } = await import('node:inspector/promises'); sess = new Session(); sess.connect(); await sess.post('Profiler.enable'); await sess.post('Profiler.start'); }
  const c0 = process.cpuUsage(); const t0 = performance.now();
  await cases[k]();
  if (sess) { const { profile } = await sess.post('Profiler.stop'); (await import('node:fs')).writeFileSync(`/tmp/exp/${k}-${round}.cpuprofile`, JSON.stringify(profile)); }
  await new Promise((r) => setTimeout(r, 50));
  hubp.kill('SIGUSR2');
  console.log(`${k}: ${(performance.now() - t0).toFixed(0)} ms wall, ${cpu(c0)} ms cpu`);
}
hubp.kill('SIGTERM'); await new Promise((r) => hubp.on('exit', r)); rmSync(dir, { recursive: true, force: true });
