/**
 * The portable entries in a real browser: `test/fixtures/portable-run.ts` (an in-memory store,
 * `@tensorfs/tensors/read` writing, opening, reading, slicing and loading a model, and
 * `@tensorfs/lanes` deriving a topology and binding to it) is bundled by esbuild for the browser
 * platform — any Node builtin it reached would fail the bundle — and run in Debian's headless
 * Chromium (playwright-core), then in Node; the two reports must be identical, and exact.
 */
import { createHash } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PortableReport, runPortable } from './fixtures/portable-run.js';

const CHROMIUM = process.env.TENSORFS_CHROMIUM ?? '/usr/bin/chromium';
const FIXTURE = fileURLToPath(new URL('./fixtures/portable-run.ts', import.meta.url));

declare const TFS: { runPortable(): Promise<PortableReport>; sha256Hex(bytes: Uint8Array): string };

let dir = '';
let context: BrowserContext | undefined;
let server: http.Server | undefined;
let origin = '';

beforeAll(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tfs-portable-'));
  // An empty page from a loopback origin: 127.0.0.1 is a secure context, where browsers give
  // pages WebCrypto (the memory store's SHA-256), as for the web page `tfs serve` gives.
  server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>portable</title>');
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  context = await chromium.launchPersistentContext(path.join(dir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
}, 120_000);

afterAll(async () => {
  await context?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  if (dir) await fsp.rm(dir, { recursive: true, force: true });
});

describe('the portable entries in Chromium', () => {
  it('write, read, slice, load and bind a model over the memory store exactly as in Node', async () => {
    const bundle = await build({
      entryPoints: [FIXTURE],
      bundle: true,
      write: false,
      format: 'iife',
      globalName: 'TFS',
      platform: 'browser',
      target: 'es2022',
      // The packages' TypeScript sources, as vitest resolves them.
      conditions: ['@tensorfs/source'],
      logLevel: 'silent',
    });
    expect(bundle.errors).toEqual([]);
    const code = bundle.outputFiles[0]!.text;
    expect(code).not.toMatch(/require\(["']node:/);

    const page = await context!.newPage();
    const errors: Error[] = [];
    page.on('pageerror', (e) => errors.push(e));
    // Nothing but the empty page: any other request fails the test.
    const others: string[] = [];
    await page.route('**/*', (route) => {
      if (route.request().url() === origin) return route.continue();
      others.push(route.request().url());
      return route.abort();
    });
    await page.goto(origin);
    await page.addScriptTag({ content: code });
    const inBrowser = await page.evaluate(() => TFS.runPortable());
    expect(errors).toEqual([]);
    expect(others).toEqual([]);
    // Proof that the page ran a browser, not Node.
    expect(await page.evaluate(() => typeof (globalThis as { process?: unknown }).process)).toBe('undefined');

    const inNode = await runPortable();
    expect(inBrowser).toEqual(inNode);
    expect(inNode.sliceIsRows).toBe(true);
    expect(inNode.loadedIsRead).toBe(true);
    expect(inNode.loaded).toBe((8 * 64 + 4 * 64 + 2 * 256 + 64) * 4);
    expect(inNode.tensors.map((t) => [t.name, t.dtype, t.shape])).toEqual([
      ['a.weight', 'F32', [8, 64]],
      ['b.weight', 'F32', [4, 64]],
      ['c.weight', 'F32', [2, 256]],
      ['norm.weight', 'F32', [64]],
    ]);
    expect(inNode.binds).toEqual({
      'tq+none': { verdict: 'admit', steps: [] },
      'tq+int8-rowwise': { verdict: 'derivable', steps: ['T4:quantize'] },
      'tq+gguf.q8_0': { verdict: 'derivable', steps: ['T4:quantize'] },
    });
    // The digests the page computed (noble SHA-256) are the platform's SHA-256 of the same bytes.
    const sample = new Float32Array([1, 2, 3]);
    const probe = await page.evaluate(
      (bytes) => TFS.sha256Hex(new Uint8Array(bytes)),
      Array.from(new Uint8Array(sample.buffer)),
    );
    expect(probe).toBe(createHash('sha256').update(new Uint8Array(sample.buffer)).digest('hex'));
    await page.close();
  }, 120_000);
});
