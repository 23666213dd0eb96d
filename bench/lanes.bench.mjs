// Binding a 2,000-tensor header to a lane, against JSON.parse of that header's JSON text, in the
// same run. The lane is a synthetic Llama-shaped topology of 2,000 keys (derived by the real
// deriveTopology and loaded, digest-pinned, next to the committed catalog). Cases: the candidate
// IS the layout (admit: the fast path), and every tensor one cast away (derivable: the full search
// over sources and rules). Rounds alternate ours/baseline so background load hits both alike.
import { parseSafetensorsHeader, writeSafetensorsHeader } from '@tensorfs/format';
import {
  BUNDLED_CATALOG,
  bind,
  candidateFromSafetensors,
  deriveTopology,
  documentDigest,
  loadCatalog,
} from '@tensorfs/lanes';
import { report } from './lib.mjs';

const LAYERS = 222; // 9 keys a layer + 2 = 2,000
const tensors = [
  { name: 'model.embed_tokens.weight', dtype: 'BF16', shape: [32000, 4096] },
  { name: 'model.norm.weight', dtype: 'BF16', shape: [4096] },
];
for (let l = 0; l < LAYERS; l++) {
  const p = `model.layers.${l}`;
  tensors.push(
    { name: `${p}.input_layernorm.weight`, dtype: 'BF16', shape: [4096] },
    { name: `${p}.post_attention_layernorm.weight`, dtype: 'BF16', shape: [4096] },
    { name: `${p}.self_attn.q_proj.weight`, dtype: 'BF16', shape: [4096, 4096] },
    { name: `${p}.self_attn.k_proj.weight`, dtype: 'BF16', shape: [1024, 4096] },
    { name: `${p}.self_attn.v_proj.weight`, dtype: 'BF16', shape: [1024, 4096] },
    { name: `${p}.self_attn.o_proj.weight`, dtype: 'BF16', shape: [4096, 4096] },
    { name: `${p}.mlp.gate_proj.weight`, dtype: 'BF16', shape: [14336, 4096] },
    { name: `${p}.mlp.up_proj.weight`, dtype: 'BF16', shape: [14336, 4096] },
    { name: `${p}.mlp.down_proj.weight`, dtype: 'BF16', shape: [4096, 14336] },
  );
}
if (tensors.length !== 2000) throw new Error(`expected 2000 tensors, got ${tensors.length}`);

const topo = deriveTopology({ tensors }, { name: 'bench-2000', header: 'bench' });
const documents = [...BUNDLED_CATALOG.documents, topo];
const index = {
  ...BUNDLED_CATALOG.index,
  topologies: { ...BUNDLED_CATALOG.index.topologies, 'bench-2000@1': documentDigest(topo) },
};
const catalog = loadCatalog({ index, documents });
const lane = catalog.lane('bench-2000');

function headerOf(ts) {
  const w = writeSafetensorsHeader(ts, { metadata: { format: 'pt' } });
  const end = w.tensors.reduce((a, t) => Math.max(a, Number(t.dataOffsets[1])), 0);
  return {
    header: parseSafetensorsHeader(w.bytes, { fileSize: w.bytes.length + end }),
    text: new TextDecoder().decode(w.bytes.subarray(8)),
  };
}
const exact = headerOf(tensors);
const cast = headerOf(tensors.map((t) => ({ ...t, dtype: 'F32' === t.dtype ? 'F64' : 'F64' })));

function sample(fn, runs) {
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) fn();
  return (performance.now() - t0) / runs;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

for (const [name, h, verdict] of [
  ['admit (exact layout)', exact, 'admit'],
  ['derivable (2,000 casts)', cast, 'derivable'],
]) {
  const ours = () => bind(candidateFromSafetensors(h.header), lane, catalog);
  const baseline = () => JSON.parse(h.text);
  const r = ours();
  if (r.verdict !== verdict) throw new Error(`${name}: ${r.verdict}`);
  for (let i = 0; i < 5; i++) {
    ours();
    baseline();
  }
  const a = [];
  const b = [];
  for (let round = 0; round < 21; round++) {
    a.push(sample(ours, 10));
    b.push(sample(baseline, 10));
  }
  report(
    `bind 2,000 tensors: ${name}`,
    median(a),
    'JSON.parse',
    median(b),
    `${(h.text.length / 1024).toFixed(0)} KiB header`,
  );
}
