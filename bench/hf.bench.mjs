// The Hugging Face API of the hub against nginx, same run, same client:
//  1. `snapshot_download` (huggingface_hub, a fresh HF_HUB_CACHE each time) of a 1 GiB model
//     (one 1 GiB safetensors file of 16 BF16 tensors + config.json) from `serveHub` over a store
//     (in a child process), against the same files served by nginx from a folder laid out as the
//     Hub's URLs (static JSON for the info and tree answers, `add_header X-Repo-Commit`);
//  2. time to first byte of GET of the 1 GiB file, hub against nginx;
//  3. the first HEAD of the 1 GiB file on a fresh hub (its SHA-256 computed once, then kept) and
//     the HEAD after.
// Target: the hub's throughput >= 0.8x nginx's.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { LocalStore } from '@tensorfs/cas';
import { StoreOrigin, serveHub } from '@tensorfs/remote';
import { median, mibps, report, settle, writeLayersModel } from './lib.mjs';

const SELF = fileURLToPath(import.meta.url);
if (process.argv[2] === 'hub') {
  const store = await LocalStore.open(process.argv[3], { readOnly: process.argv[4] === 'ro' });
  const hub = await serveHub(new StoreOrigin(store));
  console.log(hub.url);
  process.on('SIGTERM', async () => {
    await hub.close();
    await store.close();
    process.exit(0);
  });
  await new Promise(() => {});
}

function hubProcess(root, mode = 'rw') {
  const p = spawn(process.execPath, [SELF, 'hub', root, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve) => {
    p.stdout.once('data', (d) =>
      resolve({
        url: String(d).trim(),
        stop: () =>
          new Promise((r) => {
            p.once('exit', r);
            p.kill('SIGTERM');
          }),
      }),
    );
  });
}

async function sha256File(path) {
  const h = createHash('sha256');
  for await (const c of createReadStream(path, { highWaterMark: 4 << 20 })) h.update(c);
  return h.digest('hex');
}

function startNginx(root, commit) {
  const nginx = spawnSync('sh', ['-c', 'command -v nginx || ls /usr/sbin/nginx'], { encoding: 'utf8' }).stdout.trim();
  if (!nginx) throw new Error('nginx is required: apt-get install -y nginx-light');
  return (async () => {
    const dir = await fsp.mkdtemp(join(tmpdir(), 'tfs-hf-nginx-'));
    await fsp.mkdir(join(dir, 'tmp'));
    const port = 20000 + Math.floor(Math.random() * 20000);
    const user = process.getuid?.() === 0 ? 'user root;\n' : '';
    await fsp.writeFile(
      join(dir, 'nginx.conf'),
      `${user}daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 64; }
http {
  access_log off;
  sendfile on;
  default_type application/octet-stream;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    add_header X-Repo-Commit ${commit} always;
    location /api/ { default_type application/json; }
    location / { }
  }
}
`,
    );
    const proc = spawn(nginx, ['-c', join(dir, 'nginx.conf'), '-p', dir, '-e', join(dir, 'error.log')], {
      stdio: 'ignore',
    });
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      try {
        await fetch(`${url}/`);
        break;
      } catch {
        if (i > 300) throw new Error('nginx did not start');
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    return {
      url,
      stop: async () => {
        const done = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGQUIT');
        await done;
        await fsp.rm(dir, { recursive: true, force: true });
      },
    };
  })();
}

const PY = `
import os, sys, time, shutil
from huggingface_hub import snapshot_download
t = time.perf_counter()
p = snapshot_download("bench/model", cache_dir=sys.argv[1])
print((time.perf_counter() - t) * 1000)
`;

/** ms of one snapshot_download from `endpoint` into a fresh cache (removed after). */
async function snapshot(endpoint, scratch) {
  const cache = await fsp.mkdtemp(join(scratch, 'cache-'));
  try {
    const out = execFileSync('python3', ['-c', PY, cache], {
      env: {
        ...process.env,
        HF_ENDPOINT: endpoint,
        HF_HUB_DISABLE_TELEMETRY: '1',
        HF_HUB_DISABLE_PROGRESS_BARS: '1',
        HF_HUB_DISABLE_XET: '1',
      },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    return Number(out.trim().split('\n').pop());
  } finally {
    await fsp.rm(cache, { recursive: true, force: true });
  }
}

/** ms to the first body byte of GET `url`. */
async function ttfb(url) {
  const ctl = new AbortController();
  const t0 = performance.now();
  const r = await fetch(url, { signal: ctl.signal });
  const reader = r.body.getReader();
  await reader.read();
  const ms = performance.now() - t0;
  ctl.abort();
  await reader.cancel().catch(() => {});
  return ms;
}

const scratch = await fsp.mkdtemp(join(tmpdir(), 'tfs-hf-bench-'));
try {
  const src = join(scratch, 'src');
  await fsp.mkdir(src);
  console.log('generating a 1 GiB model...');
  await writeLayersModel(join(src, 'model.safetensors'), 16, 5792); // 16 x 64 MiB BF16
  await fsp.writeFile(join(src, 'config.json'), '{"model_type":"bench"}\n');
  const bytes = (await fsp.stat(join(src, 'model.safetensors'))).size;
  const store = await LocalStore.open(join(scratch, 'store'));
  await store.importPath(src, { name: 'bench/model' });
  await store.close();

  // The first HEAD on a fresh hub computes the file's SHA-256 once; later HEADs read it.
  let hub = await hubProcess(join(scratch, 'store'));
  const fileUrl = (base, rev) => `${base}/bench/model/resolve/${rev}/model.safetensors`;
  let t0 = performance.now();
  await (await fetch(fileUrl(hub.url, 'main'), { method: 'HEAD' })).arrayBuffer();
  const firstHead = performance.now() - t0;
  await hub.stop();
  hub = await hubProcess(join(scratch, 'store'), 'ro');
  t0 = performance.now();
  await (await fetch(fileUrl(hub.url, 'main'), { method: 'HEAD' })).arrayBuffer();
  const keptHead = performance.now() - t0;
  console.log(
    `first HEAD of the 1 GiB file: ${firstHead.toFixed(0)} ms (SHA-256 computed, every object verified); on a new hub after: ${keptHead.toFixed(1)} ms`,
  );

  // nginx: the same files under the Hub's URL layout, with the hub's own answers as static JSON.
  const info = await (await fetch(`${hub.url}/api/models/bench/model/revision/main`)).json();
  const tree = await (await fetch(`${hub.url}/api/models/bench/model/tree/${info.sha}?recursive=true`)).text();
  const web = join(scratch, 'web');
  await fsp.mkdir(join(web, 'api/models/bench/model/revision'), { recursive: true });
  await fsp.mkdir(join(web, 'api/models/bench/model/tree'), { recursive: true });
  await fsp.mkdir(join(web, 'bench/model/resolve', info.sha), { recursive: true });
  await fsp.writeFile(join(web, 'api/models/bench/model/revision/main'), JSON.stringify(info));
  await fsp.writeFile(join(web, 'api/models/bench/model/tree', info.sha), tree);
  for (const f of ['model.safetensors', 'config.json'])
    await fsp.link(join(src, f), join(web, 'bench/model/resolve', info.sha, f));
  const ng = await startNginx(web, info.sha);

  const ours = [];
  const base = [];
  const firstOurs = [];
  const firstBase = [];
  for (let i = 0; i < 3; i++) {
    await settle();
    ours.push(await snapshot(hub.url, scratch));
    await settle();
    base.push(await snapshot(ng.url, scratch));
    firstOurs.push(await ttfb(fileUrl(hub.url, info.sha)));
    firstBase.push(await ttfb(fileUrl(ng.url, info.sha)));
  }
  const o = median(ours);
  const b = median(base);
  report(
    'snapshot_download 1 GiB: hub vs nginx',
    o,
    'nginx',
    b,
    `${mibps(bytes, o)} vs ${mibps(bytes, b)} MiB/s; throughput ${(b / o).toFixed(2)}x nginx (target >= 0.8); runs ${ours.map((x) => x.toFixed(0)).join('/')} vs ${base.map((x) => x.toFixed(0)).join('/')}`,
  );
  report('time to first byte, 1 GiB file: hub vs nginx', median(firstOurs), 'nginx', median(firstBase));
  await ng.stop();
  await hub.stop();
  // The digest check: what the hub served is what nginx served.
  console.log(`model.safetensors sha256 ${await sha256File(join(src, 'model.safetensors'))}`);
} finally {
  await fsp.rm(scratch, { recursive: true, force: true });
}
