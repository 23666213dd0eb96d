/**
 * The hub's connections within the open-file limit (issue 24 §1, "serve under many clients"): the
 * budget, what happens past it (the longest-idle kept-alive connection closed; when none is idle,
 * `503` + `Retry-After` at once and the connection closed) and `EMFILE` answered as retryable.
 * The whole hub under `ulimit -n 256` with 300 clients is in packages/cli/test/descriptors.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { TensorFSError } from '@tensorfs/format';
import { describe, expect, it } from 'vitest';
import { serveHub } from '../src/index.js';
import { connectionBudget, openFileLimit, retryableWhenOutOfDescriptors } from '../src/hub/connections.js';
import { after, storeWith } from './helpers.js';

/** A raw connection to `port`, collecting what the hub sends and whether it closed. */
async function raw(port: number): Promise<{ socket: Socket; text: () => string; closed: Promise<void> }> {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (d) => (text += d));
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  after(() => {
    socket.destroy();
  });
  return { socket, text: () => text, closed };
}

/** Sends `GET /v1` (kept alive) on `c` and waits for its whole answer. */
async function askOnce(c: Awaited<ReturnType<typeof raw>>): Promise<string> {
  const start = c.text().length;
  c.socket.write('GET /v1 HTTP/1.1\r\nHost: hub\r\n\r\n');
  while (!/\r\n\r\n[\s\S]*\}\n?$/.test(c.text().slice(start))) await new Promise((r) => setTimeout(r, 5));
  return c.text().slice(start);
}

describe('hub connections', () => {
  it('budgets what the open-file limit leaves after the process and the requests in flight', () => {
    expect(connectionBudget(256, 64)).toBe(80);
    expect(connectionBudget(1024, 64)).toBe(848);
    expect(connectionBudget(100, 64)).toBe(8);
    const soft = spawnSync('bash', ['-c', 'ulimit -Sn'], { encoding: 'utf8' }).stdout.trim();
    expect(openFileLimit()).toBe(soft === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(soft));
  });

  it('closes the longest-idle kept-alive connection for a newcomer', async () => {
    const { store } = await storeWith('team/model');
    const hub = await serveHub(store, { maxConnections: 3 });
    after(() => hub.close());
    const a = await raw(hub.port);
    const b = await raw(hub.port);
    const c = await raw(hub.port);
    for (const x of [a, b, c]) expect(await askOnce(x)).toMatch(/^HTTP\/1\.1 200 /);
    const d = await raw(hub.port);
    await a.closed;
    expect(await askOnce(d)).toMatch(/^HTTP\/1\.1 200 /);
    // b and c are still served on their own connections
    expect(await askOnce(b)).toMatch(/^HTTP\/1\.1 200 /);
    expect(await askOnce(c)).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('answers a newcomer 503 with Retry-After and closes it when no connection is idle', async () => {
    const { store } = await storeWith('team/model');
    const hub = await serveHub(store, { maxConnections: 2 });
    after(() => hub.close());
    // Two connections whose first request has not come yet: open, not idle.
    const a = await raw(hub.port);
    const b = await raw(hub.port);
    const c = await raw(hub.port);
    await c.closed;
    const answer = c.text();
    expect(answer).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
    expect(answer).toContain('\r\nretry-after: 1\r\n');
    expect(answer).toContain('\r\nconnection: close\r\n');
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      error: { code: 'unavailable', message: 'the hub has too many connections', details: { rule: 'hub.busy' } },
    });
    // the two within the budget are served
    expect(await askOnce(a)).toMatch(/^HTTP\/1\.1 200 /);
    expect(await askOnce(b)).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('answers running out of descriptors as retryable, other storage errors as they are', () => {
    const emfile = new TensorFSError('io', 'open failed (EMFILE)', {
      details: { rule: 'store.io', op: 'open', errno: 'EMFILE' },
    });
    const busy = retryableWhenOutOfDescriptors(emfile);
    expect(busy.code).toBe('unavailable');
    expect(busy.details.rule).toBe('hub.busy');
    expect(busy.cause).toBe(emfile);
    const enoent = new TensorFSError('io', 'open failed (ENOENT)', {
      details: { rule: 'store.io', op: 'open', errno: 'ENOENT' },
    });
    expect(retryableWhenOutOfDescriptors(enoent)).toBe(enoent);
  });
});
