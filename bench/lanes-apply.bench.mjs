// Applying lanes in a store: what T1 (rekey), T2 (Phi-3 fused -> split) and T4 (quantization)
// cost in new objects and bytes, and how fast T4 streams. Fixture: Phi-3's architecture at a
// reduced size (hidden 1024, 16 heads of 64, 4 layers, intermediate 2816, vocab 8192, BF16,
// ~110 MiB), written with distinct random bytes. Baselines measured in the same run: `cp` of the
// fixture file (the least a tool that rewrites the file pays) for T1/T2, and the encoder alone
// (`encode()` over the same values in memory) for T4.
import { randomFillSync } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { writeSafetensorsHeader } from '@tensorfs/format';
import { encode } from '@tensorfs/format/encodings';
import {
  BUNDLED_CATALOG,
  candidateFromSafetensors,
  deriveTopology,
  documentDigest,
  laneSeams,
  loadCatalog,
} from '@tensorfs/lanes';
import { applyLane } from '@tensorfs/lanes/apply';
import { openTensors } from '@tensorfs/tensors';
import { mibps, report, time, timeCommand } from './lib.mjs';

const H = 1024;
const HEADS = 16;
const HD = 64;
const INTER = 2816;
const LAYERS = 4;
const VOCAB = 8192;

function fused() {
  const ts = [
    { name: 'model.embed_tokens.weight', dtype: 'BF16', shape: [VOCAB, H] },
    { name: 'model.norm.weight', dtype: 'BF16', shape: [H] },
    { name: 'lm_head.weight', dtype: 'BF16', shape: [VOCAB, H] },
  ];
  for (let l = 0; l < LAYERS; l++) {
    const p = `model.layers.${l}`;
    ts.push(
      { name: `${p}.input_layernorm.weight`, dtype: 'BF16', shape: [H] },
      { name: `${p}.post_attention_layernorm.weight`, dtype: 'BF16', shape: [H] },
      { name: `${p}.self_attn.qkv_proj.weight`, dtype: 'BF16', shape: [3 * HEADS * HD, H] },
      { name: `${p}.self_attn.o_proj.weight`, dtype: 'BF16', shape: [H, H] },
      { name: `${p}.mlp.gate_up_proj.weight`, dtype: 'BF16', shape: [2 * INTER, H] },
      { name: `${p}.mlp.down_proj.weight`, dtype: 'BF16', shape: [H, INTER] },
    );
  }
  return ts;
}
function split() {
  return fused().flatMap((t) => {
    if (t.name.endsWith('qkv_proj.weight'))
      return ['q', 'k', 'v'].map((x) => ({
        ...t,
        name: t.name.replace('qkv_proj', `${x}_proj`),
        shape: [HEADS * HD, H],
      }));
    if (t.name.endsWith('gate_up_proj.weight'))
      return ['gate', 'up'].map((x) => ({
        ...t,
        name: t.name.replace('gate_up_proj', `${x}_proj`),
        shape: [INTER, H],
      }));
    return [t];
  });
}

// catalog: the committed rules and the committed Phi-3 morphism at these dimensions, plus a rename
const topoF = deriveTopology({ tensors: fused() }, { name: 'bench-phi', header: 'bench' });
const topoS = deriveTopology({ tensors: split() }, { name: 'bench-split', header: 'bench' });
const topoX = deriveTopology(
  { tensors: split().map((t) => ({ ...t, name: `x.${t.name}` })) },
  { name: 'bench-x', header: 'bench' },
);
const phi = structuredClone(BUNDLED_CATALOG.documents.find((d) => d.name === 'phi3-fused-to-split'));
phi.name = 'bench-phi-split';
phi.pairs = [
  {
    from: 'bench-phi@1',
    to: 'bench-split@1',
    params: { n_head: HEADS, n_head_kv: HEADS, head_dim: HD, intermediate: INTER },
  },
];
const ren = {
  kind: 'tensorfs.lanes.morphism',
  name: 'bench-rename',
  version: 1,
  description: 'prefix x.',
  pairs: [{ from: 'bench-split@1', to: 'bench-x@1', params: {} }],
  map: split().map((t) => ({ from: t.name, to: `x.${t.name}` })),
  evidence: [{ claim: 'bench', source: 'bench/lanes-apply.bench.mjs', locator: 'this file' }],
};
const extra = [topoF, topoS, topoX, phi, ren];
const index = structuredClone(BUNDLED_CATALOG.index);
for (const d of extra)
  index[d.kind === 'tensorfs.lanes.topology' ? 'topologies' : 'morphisms'][`${d.name}@${d.version}`] =
    documentDigest(d);
const catalog = loadCatalog({ index, documents: [...BUNDLED_CATALOG.documents, ...extra] });

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tfs-bench-lanes-apply-'));
const srcDir = path.join(tmp, 'phi');
fs.mkdirSync(srcDir);
const file = path.join(srcDir, 'model.safetensors');
const { bytes: header, tensors: infos } = writeSafetensorsHeader(
  fused().map((t) => ({ ...t, shape: t.shape.map(BigInt) })),
  { order: 'given' },
);
{
  const fd = fs.openSync(file, 'w');
  fs.writeSync(fd, header);
  for (const t of infos) {
    const n = Number(t.dataOffsets[1] - t.dataOffsets[0]);
    const b = randomFillSync(new Uint8Array(n));
    // BF16 values of moderate magnitude: keep exponents sane (no inf/NaN) for the quantizers
    for (let i = 1; i < b.length; i += 2) b[i] = (b[i] & 0x80) | 0x3c | (b[i] & 0x03);
    fs.writeSync(fd, b);
  }
  fs.closeSync(fd);
}
const fileBytes = fs.statSync(file).size;

function storeBytes(dir) {
  let n = 0;
  let bytes = 0;
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        n++;
        bytes += fs.statSync(p).size;
      }
    }
  };
  walk(path.join(dir, 'objects'));
  return { n, bytes };
}

async function fresh(name, seams) {
  const dir = path.join(tmp, name);
  const store = await LocalStore.open(dir);
  await store.importPath(srcDir, { name: 'phi', ...(seams ? { seams: { 'model.safetensors': seams } } : {}) });
  return { dir, store };
}

const cand = await (async () => {
  const { parseSafetensorsHeader } = await import('@tensorfs/format');
  return candidateFromSafetensors(parseSafetensorsHeader(header, { fileSize: fileBytes }));
})();
const seams = laneSeams(cand, 'bench-split', catalog);

const cp = await timeCommand('cp', [file, path.join(tmp, 'copy.safetensors')], { runs: 3 });
const line = (o) => `${o.n} new objects, ${o.bytes} new bytes`;

// T2 with seams cut at import, then T1 on the split result
{
  const { dir, store } = await fresh('t2-seams', seams);
  let i = 0;
  let cost;
  const ms = await time(
    async () => {
      const before = storeBytes(dir);
      await applyLane(store, 'phi', 'bench-split', catalog, { name: `split-${i++}` });
      const after = storeBytes(dir);
      // the first run's cost (later runs write the same header and manifest again: deduplicated)
      cost ??= { n: after.n - before.n, bytes: after.bytes - before.bytes };
    },
    { runs: 3, warmup: 0 },
  );
  report('apply T2 split (seams cut at import)', ms, 'cp file', cp, `${line(cost)} (header + manifest)`);
  const b1 = storeBytes(dir);
  const t1 = await time(() => applyLane(store, 'split-0', 'bench-x', catalog, { name: `x-${i++}` }), {
    runs: 1,
    warmup: 0,
  });
  const a1 = storeBytes(dir);
  report('apply T1 rekey (split -> x.*)', t1, 'cp file', cp, line({ n: a1.n - b1.n, bytes: a1.bytes - b1.bytes }));
  // T4: quantize the split model to int8-rowwise (BF16 -> I8 codes + F32 row scales), streamed
  const set = await openTensors(store, 'split-0');
  const quantBytes = [...set]
    .filter((v) => v.shape.length === 2 && !/embed|lm_head/.test(v.name))
    .reduce((a, v) => a + v.byteLength, 0);
  const t4 = await time(
    () =>
      applyLane(store, 'split-0', 'bench-split+int8-rowwise', catalog, {
        name: `q-${i++}`,
        allowLossy: true,
      }),
    { runs: 1, warmup: 0 },
  );
  // the encoder alone over the same number of values, in memory (1024-column rows)
  const values = new Float32Array(quantBytes / 2);
  for (let k = 0; k < values.length; k++) values[k] = Math.sin(k);
  const enc = await time(() => encode(values, 'int8', { shape: [values.length / H, H], granularity: 'row' }), {
    runs: 1,
    warmup: 0,
  });
  report(
    'apply T4 quantize BF16 -> int8-rowwise',
    t4,
    'encode() alone',
    enc,
    `${(quantBytes / 1048576).toFixed(0)} MiB BF16 in: ${mibps(quantBytes, t4)} MiB/s (encoder alone ${mibps(quantBytes, enc)} MiB/s)`,
  );
  const t4n = await time(
    () => applyLane(store, 'split-0', 'bench-split+cozy.nvfp4-flat', catalog, { name: `n-${i++}`, allowLossy: true }),
    { runs: 1, warmup: 0 },
  );
  const encn = await time(() => encode(values, 'nvfp4', { shape: [values.length / H, H], nibble_order: 'lo_first' }), {
    runs: 1,
    warmup: 0,
  });
  report(
    'apply T4 quantize BF16 -> cozy.nvfp4-flat',
    t4n,
    'encode() alone',
    encn,
    `${mibps(quantBytes, t4n)} MiB/s (two passes: amax, then encode)`,
  );
  await store.close();
}

// T2 without seams at import: only boundary pieces are written
{
  const { dir, store } = await fresh('t2-plain');
  const before = storeBytes(dir);
  const t0 = performance.now();
  const r = await applyLane(store, 'phi', 'bench-split', catalog, { name: 'split' });
  const ms = performance.now() - t0;
  const after = storeBytes(dir);
  report(
    'apply T2 split (imported without seams)',
    ms,
    'cp file',
    cp,
    `${line({ n: after.n - before.n, bytes: after.bytes - before.bytes })}; boundary ${r.seams.objects} objects, ${r.seams.bytes} bytes`,
  );
  await store.close();
}
fs.rmSync(tmp, { recursive: true, force: true });
