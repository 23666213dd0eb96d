/**
 * `tfs bind --apply` end to end (in-process): a Phi-3-shaped file imported at the lane's seams
 * and split for one header; T4 quantization gated by --allow-lossy; and `tfs bind --from` on a
 * loopback static HTTP origin, which fetches headers and manifests only.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { writeSafetensors } from '@tensorfs/format';
import { BUNDLED_CATALOG, deriveTopology, documentDigest, type MorphismDoc } from '@tensorfs/lanes';
import { openTensors } from '@tensorfs/tensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tfs } from './helpers.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tfs-lanes-apply-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
const catDir = path.join(tmp, 'catalog');

type T = { name: string; dtype: string; shape: number[] };
/** Phi-3 at toy dimensions: 2 heads of 4, 1 KV head, intermediate 12, hidden 8 (+ a wide matrix for T4). */
function phiTensors(): T[] {
  const ts: T[] = [
    { name: 'model.embed_tokens.weight', dtype: 'F32', shape: [16, 8] },
    { name: 'model.norm.weight', dtype: 'F32', shape: [8] },
  ];
  for (const l of [0, 1])
    ts.push(
      { name: `model.layers.${l}.self_attn.qkv_proj.weight`, dtype: 'F32', shape: [16, 8] },
      { name: `model.layers.${l}.self_attn.o_proj.weight`, dtype: 'F32', shape: [8, 8] },
      { name: `model.layers.${l}.mlp.gate_up_proj.weight`, dtype: 'F32', shape: [24, 8] },
      { name: `model.layers.${l}.mlp.down_proj.weight`, dtype: 'F32', shape: [8, 12] },
    );
  return ts;
}
function splitTensors(): T[] {
  return phiTensors().flatMap((t) => {
    const p = t.name.replace(/\.(self_attn\.qkv_proj|mlp\.gate_up_proj)\.weight$/, '');
    if (t.name.includes('qkv_proj'))
      return [
        { name: `${p}.self_attn.q_proj.weight`, dtype: 'F32', shape: [8, 8] },
        { name: `${p}.self_attn.k_proj.weight`, dtype: 'F32', shape: [4, 8] },
        { name: `${p}.self_attn.v_proj.weight`, dtype: 'F32', shape: [4, 8] },
      ];
    if (t.name.includes('gate_up_proj'))
      return [
        { name: `${p}.mlp.gate_proj.weight`, dtype: 'F32', shape: [12, 8] },
        { name: `${p}.mlp.up_proj.weight`, dtype: 'F32', shape: [12, 8] },
      ];
    return [t];
  });
}
/** Distinct bytes per tensor (no two objects alike). */
function bytesOf(t: T, seed: number): Uint8Array {
  const n = t.shape.reduce((a, b) => a * b, 1);
  return new Uint8Array(Float32Array.from({ length: n }, (_, i) => Math.sin(seed * 131 + i) * (1 + (i % 5))).buffer);
}
function countObjects(store: string): number {
  let n = 0;
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) e.isDirectory() ? walk(path.join(d, e.name)) : n++;
  };
  walk(path.join(store, 'objects'));
  return n;
}

/** A user catalog: toy phi and split topologies and the committed Phi-3 morphism at toy params. */
function writeCatalog(): void {
  const topo = [
    deriveTopology({ tensors: phiTensors() }, { name: 'toy-phi', header: 'toy' }),
    deriveTopology({ tensors: splitTensors() }, { name: 'toy-split', header: 'toy' }),
  ];
  const phi = JSON.parse(
    JSON.stringify(
      (BUNDLED_CATALOG.documents as readonly { name: string }[]).find((d) => d.name === 'phi3-fused-to-split'),
    ),
  ) as MorphismDoc;
  phi.name = 'toy-phi-split';
  phi.pairs = [
    { from: 'toy-phi@1', to: 'toy-split@1', params: { n_head: 2, n_head_kv: 1, head_dim: 4, intermediate: 12 } },
  ];
  const index = {
    kind: 'tensorfs.lanes.catalog',
    version: 1,
    topologies: {} as Record<string, string>,
    rules: {},
    morphisms: { 'toy-phi-split@1': documentDigest(phi) },
  };
  fs.mkdirSync(path.join(catDir, 'topologies'), { recursive: true });
  fs.mkdirSync(path.join(catDir, 'morphisms'), { recursive: true });
  for (const t of topo) {
    index.topologies[`${t.name}@1`] = documentDigest(t);
    fs.writeFileSync(path.join(catDir, 'topologies', `${t.name}@1.json`), JSON.stringify(t));
  }
  fs.writeFileSync(path.join(catDir, 'morphisms', 'toy-phi-split@1.json'), JSON.stringify(phi));
  fs.writeFileSync(path.join(catDir, 'catalog.json'), JSON.stringify(index));
}

const phiDir = path.join(tmp, 'phi');
const data = new Map<string, Uint8Array>();
beforeAll(() => {
  writeCatalog();
  fs.mkdirSync(phiDir);
  const ts = phiTensors().map((t, i) => {
    const d = bytesOf(t, i + 1);
    data.set(t.name, d);
    return { ...t, data: d };
  });
  fs.writeFileSync(path.join(phiDir, 'model.safetensors'), writeSafetensors(ts));
});

describe('tfs bind --apply', () => {
  it('a Phi-3-shaped file: imported at the lane seams, split for one header and the manifest', async () => {
    const store = path.join(tmp, 'store-t2');
    const file = path.join(phiDir, 'model.safetensors');
    const r = await tfs([
      'bind',
      file,
      '--lane',
      'toy-split',
      '--catalog',
      catDir,
      '--apply',
      '--name',
      'toy/split',
      '--store',
      store,
      '--json',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.steps.map((s: { tier: string; op: string; newBytes: number }) => [s.tier, s.op, s.newBytes])).toEqual([
      ['T2', 'split', 0],
    ]);
    expect(out.applied.seams).toEqual({ tensors: 0, objects: 0, bytes: 0 });
    expect(out.applied.importSeams['model.safetensors']['model.layers.0.self_attn.qkv_proj.weight']).toEqual([
      256, 384,
    ]);
    // import: header + 6 plain tensors + 2 x (3 + 2) seam-cut pieces + manifest (no whole-file
    // SHA-256 list: an import records one only with --file-sha256); apply: header + manifest
    expect(countObjects(store)).toBe(1 + 6 + 10 + 1 + 2);
    const again = await tfs([
      'bind',
      'toy/split',
      '--lane',
      'toy-split',
      '--catalog',
      catDir,
      '--store',
      store,
      '--json',
    ]);
    expect(JSON.parse(again.stdout).verdict).toBe('admit');
    const cat = await tfs(['cat', 'toy/split', 'model.layers.1.self_attn.k_proj.weight', '--store', store]);
    expect(cat.bytes).toEqual(
      Buffer.from((data.get('model.layers.1.self_attn.qkv_proj.weight') as Uint8Array).subarray(256, 384)),
    );
  });

  it('T4 needs --allow-lossy (exit 8, naming the tensors); with it the result admits', async () => {
    const store = path.join(tmp, 'store-t4');
    const file = path.join(phiDir, 'model.safetensors');
    const imp = await tfs(['import', file, '--name', 'toy/phi', '--store', store]);
    expect(imp.code, imp.stderr).toBe(0);
    const before = countObjects(store);
    const lane = 'toy-split+int8-rowwise';
    const no = await tfs([
      'bind',
      'toy/phi',
      '--lane',
      lane,
      '--catalog',
      catDir,
      '--apply',
      '--name',
      'toy/q',
      '--store',
      store,
      '--json',
    ]);
    expect(no.code).toBe(8);
    const err = JSON.parse(no.stderr).error;
    expect(err).toMatchObject({ code: 'denied', details: { rule: 'lanes.lossy_not_allowed' } });
    expect(err.details.tensors).toContain('model.layers.0.self_attn.o_proj.weight');
    expect(countObjects(store)).toBe(before);
    const yes = await tfs([
      'bind',
      'toy/phi',
      '--lane',
      lane,
      '--catalog',
      catDir,
      '--apply',
      '--allow-lossy',
      '--name',
      'toy/q',
      '--store',
      store,
    ]);
    expect(yes.stderr).toBe('');
    expect(yes.code).toBe(0);
    expect(yes.stdout).toMatch(/T4 +quantize +F32->int8-rowwise@1 .* LOSSY/);
    const again = await tfs(['bind', 'toy/q', '--lane', lane, '--catalog', catDir, '--store', store, '--json']);
    expect(JSON.parse(again.stdout).verdict).toBe('admit');
  });
});

describe('tfs bind --from', () => {
  it('fetches the manifest and headers only: no tensor object is requested', async () => {
    const a = path.join(tmp, 'store-a');
    expect((await tfs(['import', phiDir, '--name', 'team/phi', '--store', a])).code).toBe(0);
    const site = path.join(tmp, 'site');
    const push = await tfs(['push', site, 'team/phi', '--store', a]);
    expect(push.code, push.stderr).toBe(0);
    const { LocalStore } = await import('@tensorfs/cas');
    const s = await LocalStore.open(a, { readOnly: true });
    const set = await openTensors(s, 'team/phi');
    const tensorObjects = new Set([...set].flatMap((v) => v.digests.map((d) => d.slice(7))));
    const headerObject = (await s.getManifest(set.snapshot)).entries
      .flatMap((e) => (e.kind === 'file' ? [e.records[0]?.digest.slice(7)] : []))
      .filter((x): x is string => typeof x === 'string');
    await s.close();
    expect(tensorObjects.size).toBe(10);

    const log: string[] = [];
    const server = http.createServer((req, res) => {
      log.push(`${req.method} ${req.url}`);
      const file = path.join(site, decodeURIComponent((req.url ?? '/').split('?')[0] as string));
      if (!file.startsWith(site) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
        res.writeHead(404).end();
        return;
      }
      const body = fs.readFileSync(file);
      res.writeHead(200, { 'content-length': body.length });
      res.end(req.method === 'HEAD' ? undefined : body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      const b = path.join(tmp, 'store-b');
      const r = await tfs([
        'bind',
        '--from',
        url,
        'team/phi',
        '--lane',
        'toy-split',
        '--catalog',
        catDir,
        '--store',
        b,
        '--json',
      ]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.verdict).toBe('derivable');
      expect(out.steps.map((x: { tier: string; op: string }) => `${x.tier}:${x.op}`)).toEqual(['T2:split']);
      expect(out.fetched.objects).toBe(2); // the manifest and the header object
      const got = log.filter((l) => l.startsWith('GET /chunks/')).map((l) => l.slice('GET /chunks/'.length));
      expect(got.some((h) => tensorObjects.has(h))).toBe(false);
      expect(got).toEqual(expect.arrayContaining(headerObject));
      // a refusal through the origin is exit 7, still without tensor bytes
      const no = await tfs(['bind', '--from', url, 'team/phi', '--lane', 'gpt2', '--store', b, '--json']);
      expect(no.code).toBe(7);
      expect(JSON.parse(no.stdout).verdict).toBe('refuse');
      expect(
        log.filter((l) => l.startsWith('GET /chunks/')).some((l) => tensorObjects.has(l.slice('GET /chunks/'.length))),
      ).toBe(false);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
