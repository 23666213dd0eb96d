import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeGgufHeader, writeSafetensorsHeader } from '@tensorfs/format';
import { defaultCatalog } from '@tensorfs/lanes';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tfs } from './helpers.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tfs-lanes-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
const cat = defaultCatalog();

/** The lane's layout as tensors, first accepted dtype each. */
function layoutTensors(lane: string) {
  const l = cat.layout(cat.lane(lane));
  return Object.values(l.components).flatMap((c) =>
    c.entries.flatMap((e) => e.parts.map((p) => ({ name: p.name, dtype: p.dtypes[0] as string, shape: [...p.shape] }))),
  );
}

/** A real safetensors file with its full size but no tensor bytes written (sparse): bind reads the header only. */
function sparseSafetensors(name: string, tensors: { name: string; dtype: string; shape: number[] }[]): string {
  const w = writeSafetensorsHeader(tensors);
  const end = w.tensors.reduce((a, t) => Math.max(a, Number(t.dataOffsets[1])), 0);
  const p = path.join(tmp, name);
  fs.writeFileSync(p, w.bytes);
  fs.truncateSync(p, w.bytes.length + end);
  return p;
}

let gpt2 = '';
let wrong = '';
let gguf = '';
beforeAll(() => {
  const t = layoutTensors('gpt2').map((x) => ({ ...x, dtype: 'F32' }));
  gpt2 = sparseSafetensors('gpt2.safetensors', t);
  wrong = sparseSafetensors(
    'wrong.safetensors',
    t.map((x) => (x.name === 'transformer.h.0.mlp.c_fc.weight' ? { ...x, shape: [3072, 768] } : x)),
  );
  const g = writeGgufHeader({
    metadata: [],
    tensors: layoutTensors('mistral-7b-gguf+gguf.q8_0').map((x) => ({
      name: x.name,
      type: x.dtype,
      dims: [...x.shape].reverse(),
    })),
  });
  gguf = path.join(tmp, 'mistral.q8_0.gguf');
  fs.writeFileSync(gguf, g.bytes);
  const last = g.header.tensors.reduce((a, x) => Math.max(a, x.byteOffset + x.paddedLength), 0);
  fs.truncateSync(gguf, last);
});

describe('tfs bind', () => {
  it('admits a file that is the layout (header read only)', async () => {
    expect(fs.statSync(gpt2).size).toBeGreaterThan(400_000_000);
    const r = await tfs(['bind', gpt2, '--lane', 'gpt2', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      verdict: 'admit',
      lane: 'gpt2@1+none@1',
      source: null,
      steps: [],
      refuse: null,
      lossy: false,
      newBytes: 0,
    });
  });

  it('prices a derivation', async () => {
    const r = await tfs(['bind', gpt2, '--lane', 'gpt2@1+int8-rowwise@1']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('derivable: gpt2@1+int8-rowwise@1 (from gpt2@1+none@1)');
    expect(lines[1]).toMatch(/^ {2}T4 +quantize +F32->int8-rowwise@1 +48 tensors +reads .+ +new .+ +LOSSY$/);
    const g = await tfs(['bind', gguf, '--lane', 'mistral-7b+gguf.q8_0', '--json']);
    expect(g.code).toBe(0);
    const res = JSON.parse(g.stdout);
    expect(res.verdict).toBe('derivable');
    expect(res.steps.map((s: { tier: string; op: string }) => `${s.tier}:${s.op}`).sort()).toEqual([
      'T1:rekey',
      'T3:permute',
    ]);
  });

  it('reads every shard header of a sharded checkpoint through its index', async () => {
    const t = layoutTensors('gpt2').map((x) => ({ ...x, dtype: 'F32' }));
    const a = sparseSafetensors('model-00001-of-00002.safetensors', t.slice(0, 80));
    const b = sparseSafetensors('model-00002-of-00002.safetensors', t.slice(80));
    const weightMap = Object.fromEntries(t.map((x, i) => [x.name, path.basename(i < 80 ? a : b)]));
    const index = path.join(tmp, 'model.safetensors.index.json');
    fs.writeFileSync(index, JSON.stringify({ metadata: {}, weight_map: weightMap }));
    const r = await tfs(['bind', index, '--lane', 'gpt2', '--json']);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout).verdict).toBe('admit');
  });

  it('refuses with exit code 7, the result on stdout and the error on stderr', async () => {
    const r = await tfs(['bind', wrong, '--lane', 'gpt2', '--json']);
    expect(r.code).toBe(7);
    const res = JSON.parse(r.stdout);
    expect(res.verdict).toBe('refuse');
    expect(res.refuse).toMatchObject({
      rule: 'lanes.same_count_wrong_dims',
      tensor: 'transformer.h.0.mlp.c_fc.weight',
      expected: { shape: [768, 3072] },
      actual: { shape: [3072, 768], dtype: 'F32' },
    });
    expect(JSON.parse(r.stderr).error).toMatchObject({
      code: 'conflict',
      details: { rule: 'lanes.same_count_wrong_dims' },
    });
    const bad = await tfs(['bind', gpt2, '--lane', 'gpt2+nope']);
    expect(bad.code).toBe(6);
    expect(bad.stderr).toBe('error[not_found]: no rule nope in the lane catalog\n');
  });
});

describe('tfs lanes', () => {
  it('ls, show and layout', async () => {
    const ls = JSON.parse((await tfs(['lanes', 'ls', '--json'])).stdout);
    expect(ls.topologies.map((t: { ref: string }) => t.ref)).toContain('phi-3-mini@1');
    expect(ls.rules.find((r: { ref: string }) => r.ref === 'gguf.q4_k@1')).toMatchObject({
      encoding: 'ggml',
      digest: cat.digests.get('gguf.q4_k@1'),
    });
    const show = JSON.parse((await tfs(['lanes', 'show', 'phi3-fused-to-split', '--json'])).stdout);
    expect(show.digest).toBe(cat.digests.get('phi3-fused-to-split@1'));
    expect(show.document.evidence.length).toBeGreaterThan(0);
    const layout = JSON.parse((await tfs(['lanes', 'layout', 'gpt2@1+gguf.q8_0@1', '--json'])).stdout);
    expect(layout.lane).toBe('gpt2@1+gguf.q8_0@1');
    expect(layout.components.model.tensors['transformer.h.0.attn.c_attn.weight']).toEqual({
      key: 'transformer.h.0.attn.c_attn.weight',
      role: 'blocks',
      dtypes: ['Q8_0'],
      shape: [768, 2304],
    });
  });

  it('derive writes a topology from a header', async () => {
    const out = path.join(tmp, 'mine@1.json');
    const r = await tfs(['lanes', 'derive', gpt2, '--name', 'my-gpt2', '--out', out, '--json']);
    expect(r.stderr).toBe('');
    const doc = JSON.parse(fs.readFileSync(out, 'utf8'));
    expect(JSON.parse(r.stdout)).toMatchObject({ ref: 'my-gpt2@1', keys: 148 });
    expect(doc.components.model.keys).toEqual(cat.topology('gpt2@1').components.model?.keys);
    const none = await tfs(['lanes', 'derive', gpt2]);
    expect(none.code).toBe(2);
  });
});

describe('tfs bind --apply', () => {
  it('needs --name, and a local ref or file', async () => {
    const noName = await tfs(['bind', 'local/x', '--lane', 'gpt2', '--apply']);
    expect(noName.code).toBe(2);
    expect(noName.stderr).toBe('error[invalid_argument]: --apply needs --name NEW\n');
    const remote = await tfs(['bind', 'local/x', '--lane', 'gpt2', '--apply', '--name', 'local/y', '--from', tmp]);
    expect(remote.code).toBe(2);
    expect(remote.stderr).toBe('error[invalid_argument]: --apply works on the local store: tfs pull the ref first\n');
  });
});

describe('your own architectures: --catalog', () => {
  it('derive pins a topology in a folder, bind uses it, --apply performs a derivation', async () => {
    const { LocalStore: Store } = await import('@tensorfs/cas');
    const { writeSafetensors } = await import('@tensorfs/format');
    const catDir = path.join(tmp, 'my-lanes');
    const tensors = [
      { name: 'a.weight', dtype: 'F32', shape: [4, 2], data: new Uint8Array(32).fill(1) },
      { name: 'b.weight', dtype: 'F32', shape: [2], data: new Uint8Array(8).fill(2) },
    ];
    const src = path.join(tmp, 'mine');
    fs.mkdirSync(src);
    fs.writeFileSync(path.join(src, 'model.safetensors'), writeSafetensors(tensors));
    const d = await tfs([
      'lanes',
      'derive',
      path.join(src, 'model.safetensors'),
      '--name',
      'mine',
      '--catalog',
      catDir,
      '--json',
    ]);
    expect(d.stderr, d.stderr).toBe('');
    expect(JSON.parse(d.stdout)).toMatchObject({ ref: 'mine@1', keys: 2 });
    // a renamed form and the morphism to it, hand-authored with evidence
    fs.writeFileSync(
      path.join(src, 'renamed.safetensors'),
      writeSafetensors(tensors.map((t) => ({ ...t, name: `x.${t.name}` }))),
    );
    expect(
      (await tfs(['lanes', 'derive', path.join(src, 'renamed.safetensors'), '--name', 'mine-x', '--catalog', catDir]))
        .code,
    ).toBe(0);
    const { documentDigest } = await import('@tensorfs/lanes');
    const m = {
      kind: 'tensorfs.lanes.morphism',
      name: 'mine-to-x',
      version: 1,
      description: 'prefix x.',
      pairs: [{ from: 'mine@1', to: 'mine-x@1', params: {} }],
      map: [
        { from: 'a.weight', to: 'x.a.weight' },
        { from: 'b.weight', to: 'x.b.weight' },
      ],
      evidence: [{ claim: 'the test wrote both', source: 'packages/cli/test/lanes.test.ts', locator: 'this test' }],
    };
    fs.mkdirSync(path.join(catDir, 'morphisms'));
    fs.writeFileSync(path.join(catDir, 'morphisms', 'mine-to-x@1.json'), JSON.stringify(m));
    const idx = JSON.parse(fs.readFileSync(path.join(catDir, 'catalog.json'), 'utf8'));
    idx.morphisms['mine-to-x@1'] = documentDigest(m);
    fs.writeFileSync(path.join(catDir, 'catalog.json'), JSON.stringify(idx));
    const b = await tfs([
      'bind',
      path.join(src, 'model.safetensors'),
      '--lane',
      'mine-x',
      '--catalog',
      catDir,
      '--json',
    ]);
    expect(b.stderr).toBe('');
    expect(JSON.parse(b.stdout).steps.map((s: { tier: string; op: string }) => `${s.tier}:${s.op}`)).toEqual([
      'T1:rekey',
    ]);
    const storeDir = path.join(tmp, 'store');
    const store = await Store.open(storeDir);
    fs.rmSync(path.join(src, 'renamed.safetensors'));
    await store.importPath(src, { name: 'local/mine', threads: 1 });
    await store.close();
    const env = { TENSORFS_HOME: storeDir };
    const a = await tfs(
      ['bind', 'local/mine', '--lane', 'mine-x', '--catalog', catDir, '--apply', '--name', 'local/mine-x', '--json'],
      env,
    );
    expect(a.stderr).toBe('');
    expect(JSON.parse(a.stdout).applied).toMatchObject({ ref: 'local/mine-x', entries: 1 });
    const again = await tfs(['bind', 'local/mine-x', '--lane', 'mine-x', '--catalog', catDir, '--json'], env);
    expect(JSON.parse(again.stdout).verdict).toBe('admit');
    // a tampered document in the folder is refused
    fs.writeFileSync(
      path.join(catDir, 'morphisms', 'mine-to-x@1.json'),
      JSON.stringify({ ...m, description: 'changed' }),
    );
    const bad = await tfs(['lanes', 'ls', '--catalog', catDir]);
    expect(bad.code).toBe(4);
    expect(bad.stderr).toBe('error[corrupt]: mine-to-x@1 does not match its pinned digest\n');
  });
});
