/**
 * Offline (`--offline`, `TENSORFS_OFFLINE=1`, `HF_HUB_OFFLINE=1` for hf://): no command opens a
 * socket. Each command is pointed at a listening loopback server that counts the connections it
 * accepts: zero, while what needs the network fails `unavailable` with `details.offline: true`
 * and reads of what the store holds go on. Each case has a control run without offline that
 * does connect, so a count of zero means something.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bytesOf, safetensorsBytes, tempDir } from '@tensorfs/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { tfs } from './helpers.js';

interface Counter {
  url: string;
  connections: number;
  close(): Promise<void>;
}

const servers: Counter[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

/** A loopback HTTP server answering 404 to everything, counting connections. */
async function counter(): Promise<Counter> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'application/json', connection: 'close' });
    res.end('{"error":{"code":"not_found","message":"nothing here"}}');
  });
  const c: Counter = {
    url: '',
    connections: 0,
    close: () => new Promise((r) => server.close(() => r())),
  };
  server.on('connection', () => c.connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  c.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  servers.push(c);
  return c;
}

function offlineError(r: { code: number; stderr: string }) {
  expect(r.code, r.stderr).toBe(9);
  const e = JSON.parse(r.stderr).error;
  expect(e.code).toBe('unavailable');
  expect(e.details).toMatchObject({ offline: true, rule: 'remote.offline' });
}

/** A store holding `local/w` (a safetensors file with tensor `w`). */
async function storeWithModel(): Promise<{ store: string; data: Uint8Array }> {
  const store = join(tempDir(), 'store');
  const dir = tempDir();
  const data = bytesOf(4096, 5);
  writeFileSync(join(dir, 'w.safetensors'), safetensorsBytes([{ name: 'w', data }]));
  const r = await tfs(['import', join(dir, 'w.safetensors'), '--name', 'local/w', '--store', store]);
  expect(r.code, r.stderr).toBe(0);
  return { store, data };
}

describe('offline: no socket', () => {
  it('pull and push over HTTP (hub or static), --offline and TENSORFS_OFFLINE=1', async () => {
    const { store } = await storeWithModel();
    const srv = await counter();
    offlineError(await tfs(['pull', srv.url, 'team/model', '--offline', '--store', store, '--json']));
    offlineError(await tfs(['push', srv.url, 'local/w', '--store', store, '--json'], { TENSORFS_OFFLINE: '1' }));
    offlineError(
      await tfs(['pull', `${srv.url}/`, 'team/model', '--store', store, '--json'], { TENSORFS_OFFLINE: 'true' }),
    );
    expect(srv.connections).toBe(0);
    // Control: the same pull online reaches the server.
    const online = await tfs(['pull', srv.url, 'team/model', '--store', store, '--json']);
    expect(online.code).not.toBe(0);
    expect(srv.connections).toBeGreaterThan(0);
  });

  it('hf:// with HF_HUB_OFFLINE=1 (or --offline)', async () => {
    const store = join(tempDir(), 'store');
    const srv = await counter();
    const env = { HF_ENDPOINT: srv.url };
    offlineError(await tfs(['import', 'hf://owner/repo', '--store', store, '--json'], { ...env, HF_HUB_OFFLINE: '1' }));
    offlineError(await tfs(['import', 'hf://owner/repo', '--offline', '--store', store, '--json'], env));
    expect(srv.connections).toBe(0);
    const online = await tfs(['import', 'hf://owner/repo', '--store', store, '--json'], env);
    expect(online.code).not.toBe(0);
    expect(srv.connections).toBeGreaterThan(0);
  });

  it('S3: no client is built, no request sent', async () => {
    const { store } = await storeWithModel();
    const srv = await counter();
    const env = {
      AWS_ENDPOINT_URL: srv.url,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_REGION: 'us-east-1',
    };
    offlineError(
      await tfs(['pull', 's3://bucket/p', 'team/model', '--store', store, '--json'], { ...env, TENSORFS_OFFLINE: '1' }),
    );
    offlineError(await tfs(['push', 's3://bucket/p', 'local/w', '--offline', '--store', store, '--json'], env));
    expect(srv.connections).toBe(0);
    const online = await tfs(['pull', 's3://bucket/p', 'team/model', '--store', store, '--json'], env);
    expect(online.code).not.toBe(0);
    expect(srv.connections).toBeGreaterThan(0);
  });

  it('reads of what the store holds work offline; a read that needs the origin fails offline', async () => {
    const { store, data } = await storeWithModel();
    const srv = await counter();
    const out = join(tempDir(), 'w.bin');
    const r = await tfs(['cat', 'local/w', 'w', '--from', srv.url, '--offline', '-o', out, '--store', store]);
    expect(r.code, r.stderr).toBe(0);
    expect(new Uint8Array(readFileSync(out))).toEqual(data);
    // Not here: the origin would be asked, and offline it is not.
    offlineError(await tfs(['cat', 'team/absent', 'w', '--from', srv.url, '--offline', '--store', store, '--json']));
    expect(srv.connections).toBe(0);
    // Local commands are unaffected.
    expect((await tfs(['verify', '--data', '--offline', '--store', store])).code).toBe(0);
  });
});
