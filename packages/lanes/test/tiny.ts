/** The tiny Llama/Phi-3-shaped catalog and fixtures the apply tests share. */
import fs from 'node:fs';
import path from 'node:path';
import {
  BUNDLED_CATALOG,
  type Catalog,
  type CatalogIndex,
  deriveTopology,
  documentDigest,
  type LaneDocument,
  loadCatalog,
  type MorphismDoc,
  refOf,
} from '@tensorfs/lanes';
import { clone } from './helpers.js';

export type T = { name: string; dtype: string; shape: number[] };

export function llamaTensors(): T[] {
  const ts: T[] = [
    { name: 'model.embed_tokens.weight', dtype: 'F32', shape: [16, 8] },
    { name: 'model.norm.weight', dtype: 'F32', shape: [8] },
    { name: 'lm_head.weight', dtype: 'F32', shape: [16, 8] },
  ];
  for (let l = 0; l < 2; l++) {
    const p = `model.layers.${l}`;
    ts.push(
      { name: `${p}.input_layernorm.weight`, dtype: 'F32', shape: [8] },
      { name: `${p}.post_attention_layernorm.weight`, dtype: 'F32', shape: [8] },
      { name: `${p}.self_attn.q_proj.weight`, dtype: 'F32', shape: [8, 8] }, // 2 heads of 4
      { name: `${p}.self_attn.k_proj.weight`, dtype: 'F32', shape: [4, 8] }, // 1 kv head
      { name: `${p}.self_attn.v_proj.weight`, dtype: 'F32', shape: [4, 8] },
      { name: `${p}.self_attn.o_proj.weight`, dtype: 'F32', shape: [8, 8] },
      { name: `${p}.mlp.gate_proj.weight`, dtype: 'F32', shape: [12, 8] },
      { name: `${p}.mlp.up_proj.weight`, dtype: 'F32', shape: [12, 8] },
      { name: `${p}.mlp.down_proj.weight`, dtype: 'F32', shape: [8, 12] },
    );
  }
  return ts;
}

/** A tiny catalog: the committed rules and morphism maps over tiny topologies with real bytes. */
export function tinyCatalog(): Catalog {
  const bundled = BUNDLED_CATALOG.documents as readonly LaneDocument[];
  const rules = bundled.filter((d) => d.kind === 'tensorfs.lanes.rule');
  const hf = llamaTensors();
  const bundledMorphism = (name: string): MorphismDoc => {
    const d = bundled.find((x) => x.name === name);
    if (d?.kind !== 'tensorfs.lanes.morphism') throw new Error(`no bundled morphism ${name}`);
    return clone(d);
  };
  const gguf = bundledMorphism('llama-hf-to-gguf');
  gguf.name = 'tiny-hf-to-gguf';
  gguf.pairs = [{ from: 'tiny-llama@1', to: 'tiny-llama-gguf@1', params: { n_head: 2, n_head_kv: 1 } }];
  const phi = bundledMorphism('phi3-fused-to-split');
  phi.name = 'tiny-phi-split';
  phi.pairs = [
    { from: 'tiny-phi@1', to: 'tiny-llama@1', params: { n_head: 2, n_head_kv: 1, head_dim: 4, intermediate: 12 } },
  ];
  const rename = (n: string) =>
    gguf.map.reduce<string | null>((acc, m) => {
      if (acc || typeof m.to !== 'string') return acc;
      const re = new RegExp(`^${m.from.replace(/\./g, '\\.').replace('{n}', '(\\d+)')}$`);
      const x = re.exec(n);
      return x ? m.to.replace('{n}', x[1] ?? '') : null;
    }, null) as string;
  const fused = hf
    .filter((t) => !/(q|k|v|gate|up)_proj/.test(t.name))
    .concat(
      [0, 1].flatMap((l) => [
        { name: `model.layers.${l}.self_attn.qkv_proj.weight`, dtype: 'F32', shape: [16, 8] },
        { name: `model.layers.${l}.mlp.gate_up_proj.weight`, dtype: 'F32', shape: [24, 8] },
      ]),
    );
  const topo = [
    deriveTopology({ tensors: hf }, { name: 'tiny-llama', header: 'tiny' }),
    deriveTopology(
      { tensors: hf.map((t) => ({ ...t, name: rename(t.name) })) },
      { name: 'tiny-llama-gguf', header: 'tiny' },
    ),
    deriveTopology({ tensors: fused }, { name: 'tiny-phi', header: 'tiny' }),
    deriveTopology(
      { tensors: [{ name: 'other.weight', dtype: 'F32', shape: [2] }] },
      { name: 'tiny-other', header: 'tiny' },
    ),
    deriveTopology(
      { tensors: [{ name: 'renamed.weight', dtype: 'F32', shape: [2] }] },
      { name: 'tiny-renamed', header: 'tiny' },
    ),
  ];
  const ren: MorphismDoc = {
    kind: 'tensorfs.lanes.morphism',
    name: 'tiny-rename',
    version: 1,
    description: 'a rename',
    pairs: [{ from: 'tiny-other@1', to: 'tiny-renamed@1', params: {} }],
    map: [{ from: 'other.weight', to: 'renamed.weight' }],
    evidence: [{ claim: 'test', source: 'test', locator: 'test' }],
  };
  const documents = [...topo, ...rules, gguf, phi, ren];
  const index: CatalogIndex = { kind: 'tensorfs.lanes.catalog', version: 1, topologies: {}, rules: {}, morphisms: {} };
  const field = {
    'tensorfs.lanes.topology': 'topologies',
    'tensorfs.lanes.rule': 'rules',
    'tensorfs.lanes.morphism': 'morphisms',
  } as const;
  for (const d of documents) index[field[d.kind]][refOf(d)] = documentDigest(d);
  return loadCatalog({ index, documents });
}

export function f32(shape: number[], seed: number): Uint8Array {
  const n = shape.reduce((a, b) => a * b, 1);
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = seed * 1000 + i;
  return new Uint8Array(a.buffer);
}

export function countObjects(dir: string): number {
  let n = 0;
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) e.isDirectory() ? walk(path.join(d, e.name)) : n++;
  };
  walk(path.join(dir, 'objects'));
  return n;
}
