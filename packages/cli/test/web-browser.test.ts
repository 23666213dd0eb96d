/**
 * The web page in a real browser: Debian's headless Chromium driven by playwright-core, against
 * `tfs serve` (the built dist/bin.js, `pnpm build` first) on loopback. Opening local files runs
 * `@tensorfs/format` inside the page, so this suite is also its browser test.
 */
// biome-ignore-all lint/performance/useDomNodeTextContent: these are playwright locators, not DOM nodes
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalStore } from '@tensorfs/cas';
import { createTag, decodeCheckpoint, type ManifestEntry, moveBranch, type ObjectId } from '@tensorfs/format';
import { CheckpointWriter, commit, convertSnapshot, openTensors, TensorWriter } from '@tensorfs/tensors';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tfs } from './helpers.js';

/** The page's document, as the functions run inside the page see it (this file has no DOM types). */
interface PageElement {
  dataset: Record<string, string | undefined>;
}
declare const MutationObserver: new (
  callback: (records: unknown[], observer: { disconnect(): void }) => void,
) => { observe(target: never, options: { attributes: boolean }): void };
declare const document: {
  getElementById(id: string): PageElement | null;
  querySelector(selector: string): PageElement | null;
};

const CHROMIUM = process.env.TENSORFS_CHROMIUM ?? '/usr/bin/chromium';
const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const SAMPLE = fileURLToPath(new URL('../../../samples/tiny-model/', import.meta.url));
const DOCS = fileURLToPath(new URL('../../../docs/', import.meta.url));
/** Set TENSORFS_SCREENSHOTS=1 to refresh the screenshots in docs/. */
const SCREENSHOTS = process.env.TENSORFS_SCREENSHOTS === '1';

/** A safetensors file of `n` F32 [4, 4] tensors (zeros). */
function manyTensors(n: number): Uint8Array {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  for (let i = 0; i < n; i++) {
    header[`model.layers.${Math.floor(i / 8)}.block.${i % 8}.weight`] = {
      dtype: 'F32',
      shape: [4, 4],
      data_offsets: [i * 64, (i + 1) * 64],
    };
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + n * 64);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  return out;
}

/** Starts `tfs serve` on a free loopback port; resolves its base URL (with a trailing slash). */
async function serve(args: string[]): Promise<{ server: ChildProcess; base: string }> {
  const server = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--json', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    let err = '';
    server.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    server.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(`${JSON.parse(out.split('\n')[0]!).url.replace(/\/$/, '')}/`);
    });
    server.once('exit', (code) => reject(new Error(`tfs serve exited with ${code}: ${err}`)));
  });
  return { server, base };
}

async function stop(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null) return;
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
}

describe('the web page in headless Chromium', () => {
  let dir: string;
  let server: ChildProcess;
  let base: string;
  let context: BrowserContext;
  let page: Page;
  let checkpointBytes: Uint8Array;
  let storePath: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `Chromium is not installed at ${CHROMIUM}: apt-get update && apt-get install -y chromium (the browser tests need it; they are never skipped)`,
      );
    }
    if (!existsSync(BIN) || !existsSync(fileURLToPath(new URL('../dist/web/app.js', import.meta.url)))) {
      throw new Error(
        'the CLI is not built: run pnpm build first (this suite serves dist/web/app.js through dist/bin.js)',
      );
    }
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-web-'));
    const storeDir = path.join(dir, 'store');
    const store = await LocalStore.open(storeDir);
    try {
      await store.importPath(SAMPLE, { name: 'base', threads: 1 });
      const set = await openTensors(store, 'base', { file: 'model.safetensors' });
      const writer = new TensorWriter(store, 'model.safetensors');
      for (const v of set) {
        if (v.name === 'layers.0.attn.qkv.weight')
          await writer.add(v.name, 'F16', [24n, 8n], new Uint8Array(384).fill(7));
        else if (v.name === 'embed.weight') await writer.add(v.name, 'F16', [16n, 8n], new Uint8Array(256).fill(3));
        else await writer.inherit(v, v.name === 'layers.0.mlp.up.weight' ? { name: 'layers.0.mlp.fc1.weight' } : {});
      }
      const entry = await writer.finish();
      await commit(store, { base: 'base', put: [entry], ref: 'finetune', lease: writer.lease });
      await writer.close();
      // A Diffusers folder as a snapshot and as a cozytensors checkpoint (also written out as a file).
      await store.importPath(path.join(SAMPLE, 'diffusers'), { name: 'sd', threads: 1 });
      const converted = await convertSnapshot(store, 'sd', { name: 'sd-ckpt' });
      checkpointBytes = await store.readObject(converted.id);
      await fsp.writeFile(path.join(dir, 'sd.cozytensors'), checkpointBytes);
    } finally {
      await store.close();
    }
    await fsp.writeFile(path.join(dir, 'many.safetensors'), manyTensors(2000));
    // Hostile files: a header that is not JSON, a header length far past the file, GGUF garbage.
    const notJson = new Uint8Array(8 + 9);
    new DataView(notJson.buffer).setBigUint64(0, 9n, true);
    notJson.set(new TextEncoder().encode('{not json'), 8);
    await fsp.writeFile(path.join(dir, 'bad.safetensors'), notJson);
    const huge = new Uint8Array(16);
    new DataView(huge.buffer).setBigUint64(0, 2n ** 40n, true);
    await fsp.writeFile(path.join(dir, 'huge.safetensors'), huge);
    const gguf = new Uint8Array(64).fill(0xff);
    gguf.set(new TextEncoder().encode('GGUF'), 0);
    new DataView(gguf.buffer).setUint32(4, 3, true);
    await fsp.writeFile(path.join(dir, 'bad.gguf'), gguf);
    const badCheckpoint = new Uint8Array(32).fill(0x9f);
    badCheckpoint.set(new TextEncoder().encode('TFC1'), 0);
    await fsp.writeFile(path.join(dir, 'bad.cozytensors'), badCheckpoint);

    // The hub (`tfs serve`) serves the page at / beside its /v1/ API.
    ({ server, base } = await serve(['--store', storeDir]));
    storePath = storeDir;
    context = await chromium.launchPersistentContext(path.join(dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1200, height: 800 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    // Nothing but the server under test: any other request fails the suite.
    await page.route('**/*', (route) =>
      new URL(route.request().url()).hostname === '127.0.0.1' ? route.continue() : route.abort(),
    );
    page.on('pageerror', (e) => {
      throw e;
    });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    if (server) await stop(server);
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  async function ready(n?: number): Promise<void> {
    await page.waitForFunction((k) => Number(document.getElementById('app')?.dataset.ready ?? 0) >= k, n ?? 1);
  }

  it('loads the refs with kind, sizes and what they share', async () => {
    await page.goto(base);
    await ready();
    const rows = page.locator('[data-testid=refs] tbody tr');
    await expect.poll(() => rows.count()).toBe(4);
    expect(await rows.nth(0).innerText()).toMatch(/^base\s/);
    expect(await rows.nth(0).innerText()).toContain('snapshot');
    expect(await rows.nth(0).innerText()).toMatch(/KiB with finetune/);
    expect(await rows.nth(1).innerText()).toMatch(/^finetune\s/);
    expect(await rows.nth(3).innerText()).toMatch(/^sd-ckpt\s/);
    expect(await rows.nth(3).innerText()).toContain('checkpoint');
    // The checkpoint shares every tensor object with the snapshot it was converted from.
    expect(await rows.nth(3).innerText()).toMatch(/with sd\b/);
    if (SCREENSHOTS) await page.screenshot({ path: path.join(DOCS, 'web-refs.png') });
  });

  it('navigates to a ref: files, configs, tensor table; filters and sorts', async () => {
    await page.click('text=base');
    await page.waitForSelector('[data-testid=files]');
    expect(await page.locator('[data-testid=files] tbody tr').count()).toBe(11);
    const count = page.locator('[data-testid=tensor-count]');
    expect(await count.innerText()).toBe('18 of 18 tensors');
    await page.fill('input[type=search]', 'layers.0');
    expect(await count.innerText()).toBe('3 of 18 tensors');
    await page.fill('input[type=search]', '');
    await page.click('.vt-head button[data-key=bytes]');
    await page.click('.vt-head button[data-key=bytes]');
    expect(await page.getAttribute('.vt-head button[data-key=bytes]', 'aria-sort')).toBe('descending');
    // The largest tensor first.
    const detail = (await (await fetch(`${base}api/ref?name=base`)).json()) as { tensors: { bytes: number }[] };
    const largest = Math.max(...detail.tensors.map((t) => t.bytes));
    expect(await page.locator('.vt-row[data-index="0"] span').nth(5).innerText()).toBe(largest.toLocaleString('en-US'));
    expect(await page.locator('details summary').allInnerTexts()).toContain('diffusers/unet/config.json');
    if (SCREENSHOTS) await page.screenshot({ path: path.join(DOCS, 'web-ref.png') });
  });

  it("shows a checkpoint's components, assets, configs and tensors", async () => {
    await page.goto(`${base}#/ref/sd-ckpt`);
    await page.reload();
    await page.waitForSelector('[data-testid=files]');
    const header = decodeCheckpoint(checkpointBytes);
    const tensors = header.components.reduce((n, c) => n + c.tensors.length, 0);
    expect(await page.locator('[data-testid=tensor-count]').innerText()).toBe(`${tensors} of ${tensors} tensors`);
    const roles = await page.locator('[data-testid=files] tbody tr').allInnerTexts();
    expect(roles.filter((r) => r.includes('component')).length).toBe(header.components.length);
    expect(await page.locator('details summary').allInnerTexts()).toContain('unet/config');
  });

  it('moves through the tensor table with the keyboard', async () => {
    await page.goto(`${base}#/ref/base`);
    await page.reload();
    await page.waitForSelector('.vt-body');
    await page.click('.vt-head button[data-key=name]');
    await page.focus('.vt-body');
    await page.keyboard.press('Home');
    const detail = page.locator('[data-testid=tensor-detail]');
    const first = await page.locator('.vt-row[data-index="0"] span').first().innerText();
    expect(await detail.innerText()).toMatch(new RegExp(`^${first.replaceAll('.', '\\.')} ·`));
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    const third = await page.locator('.vt-row[data-index="2"] span').first().innerText();
    expect(await detail.innerText()).toMatch(new RegExp(`^${third.replaceAll('.', '\\.')} ·`));
    expect(await page.getAttribute('.vt-row[data-index="2"]', 'class')).toContain('sel');
    await page.keyboard.press('End');
    expect(await page.getAttribute('.vt-row[data-index="17"]', 'class')).toContain('sel');
  });

  it('compares two refs: the same facts as tfs diff', async () => {
    await page.goto(`${base}#/compare?a=base&b=finetune`);
    await page.waitForSelector('[data-testid=diff-summary]');
    const summary = await page.locator('[data-testid=diff-summary]').innerText();
    expect(summary).toMatch(/2\s+changed/);
    expect(summary).toMatch(/1\s+renamed/);
    expect(summary).toMatch(/0\s+added/);
    expect(summary).toMatch(/0\s+removed/);
    expect(summary).toMatch(/15\s+unchanged/);
    expect(summary).toMatch(/in 4 objects/);
    const lines = await page.locator('[data-testid=diff-tensors] tbody tr').allInnerTexts();
    expect(lines.map((l) => l.replace(/\s+/g, ' ').trim())).toEqual([
      '~ model.safetensors: embed.weight F32 [16, 8] F16 [16, 8] (dtype)',
      '~ model.safetensors: layers.0.attn.qkv.weight F16 [24, 8] F16 [24, 8]',
      '→ model.safetensors: layers.0.mlp.up.weight → model.safetensors: layers.0.mlp.fc1.weight BF16 [16, 8] same objects',
    ]);
    if (SCREENSHOTS) await page.screenshot({ path: path.join(DOCS, 'web-compare.png') });
  });

  /** Shows the local-file view afresh. */
  async function localPage(): Promise<void> {
    await page.goto(`${base}#/local`);
    await page.reload();
    await page.waitForSelector('input[type=file]');
  }

  /** Chooses files in the local-file view and waits for the page to finish with them. */
  async function openLocal(files: string[]): Promise<string> {
    const done = () =>
      page.evaluate(() => Number(document.querySelector('[data-testid=local-result]')?.dataset.done ?? 0));
    const before = await done();
    await page.setInputFiles('input[type=file]', files);
    await page.waitForFunction(
      (k) => Number(document.querySelector('[data-testid=local-result]')?.dataset.done ?? 0) > k,
      before,
      { timeout: 10_000 },
    );
    return page.locator('[data-testid=local-result]').innerText();
  }

  it('opens local files in the page with @tensorfs/format (safetensors, GGUF, an index with its shards)', async () => {
    await localPage();
    const text = await openLocal([path.join(SAMPLE, 'model.safetensors'), path.join(SAMPLE, 'model.gguf')]);
    expect(text).toContain('model.safetensors · safetensors · 8 tensors');
    expect(text).toContain('model.gguf · GGUF · 4 tensors');
    expect(await page.locator('[data-testid=tensor-count]').innerText()).toBe('12 of 12 tensors');
    // The GGUF rows are what the reference reader (samples/expected) says.
    const expected = JSON.parse(await fsp.readFile(path.join(SAMPLE, '../expected/model.gguf.json'), 'utf8'));
    await page.fill('input[type=search]', expected.tensors[0].name);
    const row = (await page.locator('.vt-row[data-index="0"]').innerText()).split('\n').map((s) => s.trim());
    expect(row).toEqual([
      expected.tensors[0].name,
      'model.gguf',
      'F32',
      `[${expected.tensors[0].shape.join(', ')}]`,
      'plain',
      String(expected.tensors[0].byte_length),
      '1',
    ]);
    if (SCREENSHOTS) await page.screenshot({ path: path.join(DOCS, 'web-local.png') });
    const te = path.join(SAMPLE, 'diffusers/text_encoder');
    const shards = await openLocal([
      path.join(te, 'model.safetensors.index.json'),
      path.join(te, 'model-00001-of-00002.safetensors'),
      path.join(te, 'model-00002-of-00002.safetensors'),
    ]);
    expect(shards).toContain('model.safetensors.index.json · safetensors shard index · 2 shards · 3 tensors');
    const header = decodeCheckpoint(checkpointBytes);
    const tensors = header.components.reduce((n, c) => n + c.tensors.length, 0);
    const checkpoint = await openLocal([path.join(dir, 'sd.cozytensors')]);
    expect(checkpoint).toContain(
      `sd.cozytensors · cozytensors checkpoint · ${header.components.length} components · ${tensors} tensors`,
    );
    // An index without its shards names the missing one.
    const missing = await openLocal([path.join(te, 'model.safetensors.index.json')]);
    expect(missing).toMatch(/error\[not_found\]: a shard index names a shard that was not chosen/);
  });

  it('a hostile file gets the error the CLI gives, at once', async () => {
    await localPage();
    const started = Date.now();
    const text = await openLocal([
      path.join(dir, 'bad.safetensors'),
      path.join(dir, 'huge.safetensors'),
      path.join(dir, 'bad.gguf'),
      path.join(dir, 'bad.cozytensors'),
    ]);
    expect(Date.now() - started).toBeLessThan(5_000);
    const alerts = (await page.locator('[role=alert]').allInnerTexts()).map((t) => t.split('\n')[0]);
    expect(alerts, text).toHaveLength(4);
    // Exactly the code, rule and message `tfs inspect` gives for each.
    const names = ['bad.safetensors', 'huge.safetensors', 'bad.gguf', 'bad.cozytensors'];
    for (const [i, name] of names.entries()) {
      const cli = await tfs(['inspect', path.join(dir, name), '--json']);
      const e = JSON.parse(cli.stderr).error;
      expect(e.details.rule).toMatch(/^(safetensors|gguf|codec|cozytensors)\./);
      expect(alerts[i]).toBe(`${name}: error[${e.code}] (${e.details.rule}): ${e.message}`);
    }
    expect(text).not.toContain('tensors ·');
    // The page still works after them.
    const again = await openLocal([path.join(SAMPLE, 'model.safetensors')]);
    expect(again).toContain('8 tensors');
  });

  it('opens a 2,000-tensor header in under 200 ms of script time', async () => {
    const cdp = await context.newCDPSession(page);
    await cdp.send('Performance.enable');
    const script = async () =>
      ((await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === 'ScriptDuration')?.value ?? 0) * 1000;
    await localPage();
    // One promise in the page that settles when the open is done (no polling, whose script
    // would count), armed before the file is chosen.
    await page.evaluate(() => {
      const out = document.querySelector('[data-testid=local-result]')!;
      (globalThis as { opened?: Promise<void> }).opened = new Promise<void>((resolve) => {
        new MutationObserver((_records, observer) => {
          if (out.dataset.done !== undefined) {
            observer.disconnect();
            resolve();
          }
        }).observe(out as never, { attributes: true });
      });
    });
    const before = await script();
    await page.setInputFiles('input[type=file]', [path.join(dir, 'many.safetensors')]);
    await page.evaluate(() => (globalThis as { opened?: Promise<void> }).opened);
    const scriptMs = (await script()) - before;
    const text = await page.locator('[data-testid=local-result]').innerText();
    const pageMs = Number(await page.getAttribute('[data-testid=local-result]', 'data-open-ms'));
    expect(text).toContain('2000 tensors');
    expect(await page.locator('[data-testid=tensor-count]').innerText()).toBe('2000 of 2000 tensors');
    // Virtualized: a few dozen rows in the DOM, not 2,000.
    expect(await page.locator('.vt-row').count()).toBeLessThan(60);
    console.log(
      `web: open 2000-tensor header: ${scriptMs.toFixed(1)} ms script (CDP ScriptDuration), ${pageMs} ms wall in the page`,
    );
    expect(scriptMs).toBeGreaterThan(0);
    expect(scriptMs).toBeLessThan(200);
    await cdp.detach();
  });

  it('stays fast on a 100,000-tensor header: virtualized rows, filtering and sorting', async () => {
    await fsp.writeFile(path.join(dir, 'huge-model.safetensors'), manyTensors(100_000));
    await localPage();
    const text = await openLocal([path.join(dir, 'huge-model.safetensors')]);
    expect(text).toContain('100000 tensors');
    const openMs = Number(await page.getAttribute('[data-testid=local-result]', 'data-open-ms'));
    expect(await page.locator('.vt-row').count()).toBeLessThan(60);
    const timed = (fn: () => Promise<unknown>) => async () => {
      const t0 = Date.now();
      await fn();
      return Date.now() - t0;
    };
    const filterMs = await timed(() => page.fill('input[type=search]', 'layers.12499.'))();
    expect(await page.locator('[data-testid=tensor-count]').innerText()).toBe('8 of 100000 tensors');
    await page.fill('input[type=search]', '');
    const sortMs = await timed(() => page.click('.vt-head button[data-key=name]'))();
    await page.focus('.vt-body');
    await page.keyboard.press('End');
    expect(await page.locator('.vt-row.sel').count()).toBe(1);
    expect(await page.locator('.vt-row').count()).toBeLessThan(60);
    console.log(
      `web: 100,000-tensor header: open ${openMs} ms, filter ${filterMs} ms, sort ${sortMs} ms (wall, through the driver)`,
    );
  });

  it('uses the hub tokens: JSON needs one, a token sees only the refs it may read, /v1/ still answers', async () => {
    const tokens = path.join(dir, 'tokens.json');
    await fsp.writeFile(tokens, JSON.stringify({ tokens: [{ token: 'base-reader-token', read: ['base'] }] }));
    const hub = await serve(['--tokens', tokens, '--store', storePath]);
    try {
      expect((await fetch(hub.base)).status).toBe(200);
      const anonymous = await fetch(`${hub.base}api/refs`);
      expect(anonymous.status).toBe(401);
      const auth = { headers: { authorization: 'Bearer base-reader-token' } };
      const refs = (await (await fetch(`${hub.base}api/refs`, auth)).json()) as { refs: { name: string }[] };
      expect(refs.refs.map((r) => r.name)).toEqual(['base']);
      const other = await fetch(`${hub.base}api/ref?name=finetune`, auth);
      expect(other.status).toBe(403);
      const v1 = (await (await fetch(`${hub.base}v1/refs`, auth)).json()) as { refs: { name: string }[] };
      expect(v1.refs.map((r) => r.name)).toEqual(['base']);
      // In the browser: the token given once in the address is kept for the tab and sent with each request.
      const entries = await page.evaluate('history.length');
      // Chromium turns a navigation during load into a replacement by itself; other browsers add
      // an entry. So the page must replace the entry itself: record that it does.
      await page.addInitScript(`{
        window.replaced = [];
        const replace = history.replaceState.bind(history);
        history.replaceState = (data, unused, url) => {
          window.replaced.push(String(url));
          replace(data, unused, url);
        };
      }`);
      await page.goto(`${hub.base}#token=base-reader-token`);
      await page.waitForSelector('[data-testid=refs]');
      expect(await page.locator('[data-testid=refs] tbody tr').count()).toBe(1);
      expect(page.url()).not.toContain('base-reader-token');
      // Nor in the session history: the entry was replaced, not followed by a new one.
      expect(await page.evaluate('history.length')).toBe((entries as number) + 1);
      const replaced = (await page.evaluate('window.replaced')) as string[];
      expect(replaced.length).toBeGreaterThan(0);
      expect(replaced.join(' ')).not.toContain('base-reader-token');
    } finally {
      await stop(hub.server);
    }
  });

  it('lists the good refs of a store with bad ones, and names each bad one with its problem', async () => {
    const other = path.join(dir, 'store-with-bad-refs');
    const store = await LocalStore.open(other);
    try {
      await store.importPath(path.join(SAMPLE, 'diffusers', 'unet', 'config.json'), { name: 'good' });
    } finally {
      await store.close();
    }
    await fsp.writeFile(path.join(other, 'refs', 'garbage'), 'not an id\n');
    await fsp.writeFile(path.join(other, 'refs', 'gone'), `sha256:${'7'.repeat(64)}\n`);
    const hub = await serve(['--store', other]);
    try {
      await page.goto(hub.base);
      await ready();
      const rows = page.locator('[data-testid=refs] tbody tr');
      await expect.poll(() => rows.count()).toBe(1);
      expect(await rows.nth(0).innerText()).toMatch(/^good\s/);
      const bad = page.locator('[data-testid=ref-problems] .error');
      expect(await bad.count()).toBe(2);
      expect(await bad.nth(0).innerText()).toMatch(/^garbage: error\[corrupt\] \(ref\.content\)/);
      expect(await bad.nth(1).innerText()).toMatch(/^gone: error\[corrupt\] \(ref\.target_missing\)/);
    } finally {
      // A graceful stop, although Chromium may hold a preconnected socket that never sent a
      // request: the hub closes those at once (it used to wait out its 10 s grace behind them).
      hub.server.kill('SIGTERM');
      if (hub.server.exitCode === null && hub.server.signalCode === null) {
        await new Promise((r) => hub.server.once('exit', r));
      }
    }
  });

  it("lists repositories with branches, tags and each tree's variants; a token opens the variants its scopes reach", async () => {
    const other = path.join(dir, 'store-with-repos');
    const store = await LocalStore.open(other);
    let int8: ObjectId;
    try {
      await store.importPath(path.join(SAMPLE, 'diffusers'), { name: 'sd', threads: 1 });
      const full = await convertSnapshot(store, 'sd', { name: 'sd-ckpt' });
      const w = new CheckpointWriter(store);
      w.component('model', { cls: 'Tiny', config: {} });
      await w.put('w', new Uint8Array(64).fill(1), { dtype: 'U8', shape: [64] });
      const small = await w.commit({ name: 'small-ckpt' });
      int8 = small.id;
      const readme = await store.put([new TextEncoder().encode('# acme/m\n')]);
      const file = (p: string, id: ObjectId, size: number): ManifestEntry => ({
        path: p,
        kind: 'file',
        mode: 0o644,
        size,
        profile: 'blob-v1',
        records: [{ digest: id, length: size }],
      });
      const tree = await store.putManifest({
        entries: [
          file('README.md', readme.id, readme.length),
          file('model.cozytensors', full.id, (await store.readObject(full.id)).length),
          file('model.int8.cozytensors', small.id, small.bytes.length),
        ],
      });
      const draft = await store.putManifest({
        entries: [file('model.cozytensors', full.id, (await store.readObject(full.id)).length)],
      });
      await moveBranch(store, {
        repo: 'acme/m',
        target: tree,
        author: 'tester',
        message: 'two variants',
        time: Date.UTC(2026, 10, 30, 12),
      });
      await createTag(store, { repo: 'acme/m', tag: 'v1' });
      await moveBranch(store, { repo: 'acme/m', branch: 'draft', target: draft, author: 'tester', message: 'draft' });
    } finally {
      await store.close();
    }
    const tokens = path.join(dir, 'repo-tokens.json');
    await fsp.writeFile(tokens, JSON.stringify({ tokens: [{ token: 'acme-reader-token', read: ['acme/*'] }] }));
    const hub = await serve(['--store', other, '--tokens', tokens]);
    try {
      await page.goto(`${hub.base}#token=acme-reader-token`);
      await ready();
      await page.goto(`${hub.base}#/repos`);
      await page.waitForSelector('[data-testid="repo-acme/m"]');
      // Only what the token may read: acme/m, not the sd repositories.
      expect(await page.locator('section[data-testid^=repo-]').count()).toBe(1);
      const row = (rev: string) => page.locator(`[data-testid="rev-acme/m@${rev}"]`);
      expect(await row('main').locator('[data-testid=variants]').innerText()).toBe('(default), int8');
      expect(await row('main').innerText()).toMatch(/^branch\s+main/);
      expect(await row('main').innerText()).toContain('tester · two variants');
      expect(await row('draft').locator('[data-testid=variants]').innerText()).toBe('(default)');
      expect(await row('v1').innerText()).toMatch(/^tag\s+v1/);
      expect(await row('v1').locator('[data-testid=variants]').innerText()).toBe('(default), int8');
      // A variant opens as a checkpoint, although no ref names it: a readable branch reaches it.
      await row('main').locator('a', { hasText: 'int8' }).click();
      await page.waitForSelector('[data-testid=files]');
      expect(page.url()).toContain(encodeURIComponent(int8));
      expect(await page.locator('[data-testid=tensor-count]').innerText()).toBe('1 of 1 tensors');
      if (SCREENSHOTS) {
        await page.goto(`${hub.base}#/repos`);
        await page.waitForSelector('[data-testid="repo-acme/m"]');
        await page.screenshot({ path: path.join(DOCS, 'web-repos.png') });
      }
      // An id no readable branch reaches stays denied.
      const auth = { headers: { authorization: 'Bearer acme-reader-token' } };
      const sd = (await (await fetch(`${hub.base}api/repos`, auth)).json()) as { repos: { repo: string }[] };
      expect(sd.repos.map((r) => r.repo)).toEqual(['acme/m']);
      const snapshot = await LocalStore.open(other, { readOnly: true });
      const sdId = await snapshot.resolve('sd');
      await snapshot.close();
      expect((await fetch(`${hub.base}api/ref?name=${encodeURIComponent(sdId)}`, auth)).status).toBe(403);
    } finally {
      hub.server.kill('SIGTERM');
      if (hub.server.exitCode === null && hub.server.signalCode === null) {
        await new Promise((r) => hub.server.once('exit', r));
      }
    }
  });

  it('serves only GET/HEAD, refuses unknown API routes, and 404s other paths', async () => {
    const post = await fetch(`${base}api/refs`, { method: 'POST' });
    expect(post.status).toBe(405);
    const nope = await fetch(`${base}api/nope`);
    expect(nope.status).toBe(404);
    expect(((await nope.json()) as { error: { code: string } }).error.code).toBe('not_found');
    const missing = await fetch(`${base}api/ref?name=zz`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: unknown }).error).toEqual({
      code: 'not_found',
      message: 'no such ref',
      details: { rule: 'store.no_ref', ref: 'zz' },
    });
    expect((await fetch(`${base}elsewhere`)).status).toBe(404);
    const html = await fetch(base);
    expect(html.headers.get('content-security-policy')).toContain("default-src 'none'");
  });
});
