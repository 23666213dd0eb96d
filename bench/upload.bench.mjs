// Writing a fine-tune variant straight to a hub next to its base: the checkpoint writer with an
// origin destination streams only the objects the hub lacks, then one tree and one revision.
// Bytes on the wire (both directions, every request and answer, counted by a loopback TCP proxy
// in front of the hub) against the bytes that changed (the rewritten tensors): target <= 1.05x.
// Baseline in the same run: the same variant uploaded to an empty hub (everything crosses).
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { HubOrigin, StoreOrigin, serveHub } from '@tensorfs/remote';
import { CheckpointWriter } from '@tensorfs/tensors';

const MiB = 1 << 20;
const TENSORS = 16;
const TENSOR = 4 * MiB;
const CHANGED = [3, 11];
const TOKEN = 'bench-upload-token-0123456789';
const dir = mkdtempSync(join(tmpdir(), 'tfs-bench-upload-'));

function tensorBytes(i, seed) {
  const b = Buffer.alloc(TENSOR);
  let x = (i * 2654435761 + seed * 40503) >>> 0 || 1;
  for (let o = 0; o < TENSOR; o += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b.writeUInt32LE(x >>> 0, o);
  }
  return b;
}

/** A TCP proxy to `port` counting every byte in both directions. */
async function countingProxy(port) {
  const counted = { up: 0, down: 0 };
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    client.on('data', (d) => {
      counted.up += d.length;
    });
    upstream.on('data', (d) => {
      counted.down += d.length;
    });
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${server.address().port}`, counted, close: () => server.close() };
}

async function hubWithProxy(name) {
  const store = await LocalStore.open(join(dir, name));
  const hub = await serveHub(new StoreOrigin(store), {
    tokens: { tokens: [{ token: TOKEN, read: ['*'], write: ['*'] }] },
  });
  const proxy = await countingProxy(hub.port);
  return {
    proxy,
    async close() {
      proxy.close();
      await hub.close(0);
      await store.close();
    },
  };
}

async function publish(local, url, variant, seeds) {
  const origin = new HubOrigin(url, { credential: TOKEN });
  const author = (await origin.whoami()).owner;
  const w = new CheckpointWriter(local, {
    destination: {
      origin,
      repo: 'bench/model',
      branch: 'main',
      author,
      message: variant || 'base',
      ...(variant ? { variant } : {}),
    },
  });
  w.component('model', { cls: 'Bench', config: {} });
  for (let i = 0; i < TENSORS; i++)
    await w.put(`layer.${i}.weight`, tensorBytes(i, seeds[i]), { dtype: 'U8', shape: [TENSOR] });
  const r = await w.commit();
  await origin.close();
  return r;
}

try {
  const local = await LocalStore.open(join(dir, 'local'));
  const baseSeeds = Array.from({ length: TENSORS }, () => 1);
  const ftSeeds = baseSeeds.map((s, i) => (CHANGED.includes(i) ? 2 : s));

  // The base on the hub, then the fine-tune variant next to it, counted.
  const a = await hubWithProxy('hub-a');
  await publish(local, a.proxy.url, '', baseSeeds);
  a.proxy.counted.up = 0;
  a.proxy.counted.down = 0;
  const t0 = performance.now();
  const ft = await publish(local, a.proxy.url, 'ft', ftSeeds);
  const ms = performance.now() - t0;
  const wire = a.proxy.counted.up + a.proxy.counted.down;
  await a.close();

  // Baseline: the same variant to an empty hub.
  const b = await hubWithProxy('hub-b');
  await publish(local, b.proxy.url, 'ft', ftSeeds);
  const full = b.proxy.counted.up + b.proxy.counted.down;
  await b.close();
  await local.close();

  const changed = CHANGED.length * TENSOR;
  const ratio = wire / changed;
  console.log(
    `fine-tune variant next to its base (${CHANGED.length} of ${TENSORS} tensors of ${TENSOR / MiB} MiB changed): wire ${wire} B (up ${a.proxy.counted.up}, down ${a.proxy.counted.down}) | changed ${changed} B | ratio ${ratio.toFixed(4)} (target <= 1.05) | ${ms.toFixed(0)} ms`,
  );
  console.log(
    `baseline: the same variant to an empty hub: wire ${full} B | ratio to the whole variant ${(full / (TENSORS * TENSOR)).toFixed(4)} | next to its base it sends ${((wire / full) * 100).toFixed(1)}% of that`,
  );
  console.log(`published ${ft.published.tree} (${ft.published.path}), sent ${ft.published.sent.objects} objects`);
  if (ratio > 1.05) {
    console.error('ratio above 1.05');
    process.exitCode = 1;
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
