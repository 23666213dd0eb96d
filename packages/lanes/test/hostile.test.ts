import {
  bindOrThrow,
  documentDigest,
  type LaneDocument,
  loadCatalog,
  type MorphismEntry,
  refOf,
} from '@tensorfs/lanes';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { clone, specCatalog } from './helpers.js';
import { exactCandidate } from './variants.js';

type Input = ReturnType<typeof specCatalog>;
const FIELD: Record<string, 'topologies' | 'rules' | 'morphisms'> = {
  'tensorfs.lanes.topology': 'topologies',
  'tensorfs.lanes.rule': 'rules',
  'tensorfs.lanes.morphism': 'morphisms',
};

/** Re-pins every document, so the check under test is the one that fires (not the digest). */
function repin(input: Input): Input {
  const index = {
    kind: input.index.kind,
    version: input.index.version,
    topologies: {},
    rules: {},
    morphisms: {},
  } as Input['index'];
  for (const d of input.documents) index[FIELD[d.kind]!][refOf(d)] = documentDigest(d);
  return { index, documents: input.documents };
}
const fresh = () => clone(specCatalog());
/** The document of `kind` named `name` (the test fails when there is none). */
function doc<K extends LaneDocument['kind']>(input: Input, kind: K, name: string): Extract<LaneDocument, { kind: K }> {
  const d = input.documents.find((x) => x.kind === kind && x.name === name);
  if (!d) throw new Error(`no ${kind} ${name}`);
  return d as Extract<LaneDocument, { kind: K }>;
}
const morphism = (input: Input, name: string) => doc(input, 'tensorfs.lanes.morphism', name);
const topology = (input: Input, name: string) => doc(input, 'tensorfs.lanes.topology', name);
const rule = (input: Input, name: string) => doc(input, 'tensorfs.lanes.rule', name);
/** Entry `i` of a morphism's map (the test fails when there is none). */
function entry(m: { map: MorphismEntry[] }, i: number): MorphismEntry {
  const e = m.map[i];
  if (!e) throw new Error(`no map entry ${i}`);
  return e;
}

describe('hostile catalogs', () => {
  it('loads the committed catalog', () => {
    expect(loadCatalog(fresh()).morphisms.size).toBe(2);
  });

  it('a document that does not match its digest is corrupt', () => {
    const input = fresh();
    const t = topology(input, 'llama-3-8b');
    const keys = t.components.model?.keys;
    if (!keys) throw new Error('no model component');
    keys['model.norm.weight'] = [4097];
    const e = expectCodeSync(() => loadCatalog(input), 'corrupt', 'lanes.digest_mismatch');
    expect(e.details.document).toBe('llama-3-8b@1');
    expect(e.details.expected).toBe(input.index.topologies['llama-3-8b@1']);
    const nibbles = fresh();
    rule(nibbles, 'cozy.nvfp4-flat').conventions.nibble_order = 'hi_first';
    expectCodeSync(() => loadCatalog(nibbles), 'corrupt', 'lanes.digest_mismatch');
  });

  it('unpinned and missing documents are refused', () => {
    const extra = fresh();
    extra.documents.push({ ...clone(morphism(extra, 'phi3-fused-to-split')), version: 2 });
    expectCodeSync(() => loadCatalog(extra), 'malformed', 'lanes.unpinned');
    const missing = fresh();
    missing.documents = missing.documents.filter((d) => d.name !== 'gguf.q4_k');
    expectCodeSync(() => loadCatalog(missing), 'not_found', 'lanes.missing_document');
  });

  it('a morphism that does not re-derive its committed target is corrupt', () => {
    const renamed = fresh();
    entry(morphism(renamed, 'llama-hf-to-gguf'), 1).to = 'output_norm.weigh';
    const e = expectCodeSync(() => loadCatalog(repin(renamed)), 'corrupt', 'lanes.morphism_rederive');
    expect(e.details).toMatchObject({
      morphism: 'llama-hf-to-gguf@1',
      tensor: 'output_norm.weight',
      expected: [4096],
      actual: null,
    });
    // q|k|v at 1:1:2 instead of the evidence's n_head*hd : n_kv*hd : n_kv*hd
    const ratio = fresh();
    const fused = entry(morphism(ratio, 'phi3-fused-to-split'), 7);
    if (!('split' in fused)) throw new Error('entry 7 is not a split');
    fused.split.sizes = ['D/4', 'D/4', 'D/2'];
    const r = expectCodeSync(() => loadCatalog(repin(ratio)), 'corrupt', 'lanes.morphism_rederive');
    expect(r.details).toMatchObject({
      tensor: 'model.layers.0.self_attn.k_proj.weight',
      expected: [3072, 3072],
      actual: [2304, 3072],
    });
    const seam = fresh();
    const seamPair = morphism(seam, 'phi3-fused-to-split').pairs[0];
    if (!seamPair) throw new Error('no pair');
    seamPair.params.n_head_kv = 8;
    expectCodeSync(() => loadCatalog(repin(seam)), 'malformed', 'lanes.morphism_seam');
    const unmapped = fresh();
    morphism(unmapped, 'llama-hf-to-gguf').map.splice(2, 1);
    expectCodeSync(() => loadCatalog(repin(unmapped)), 'malformed', 'lanes.morphism_unmapped');
  });

  it('cyclic morphisms are refused', () => {
    const input = fresh();
    const back = clone(morphism(input, 'llama-hf-to-gguf'));
    back.name = 'gguf-to-llama-hf';
    back.pairs = [{ from: 'llama-3-8b-gguf@1', to: 'llama-3-8b@1', params: { n_head: 32, n_head_kv: 8 } }];
    back.map = back.map.map((m): MorphismEntry => {
      if ('split' in m) throw new Error('llama-hf-to-gguf has no split entries');
      return 'permute' in m
        ? { from: m.to, to: m.from, permute: { ...m.permute, kind: 'rotary_pairs_to_halves' } }
        : { from: m.to, to: m.from };
    });
    input.documents.push(back);
    const e = expectCodeSync(() => loadCatalog(repin(input)), 'malformed', 'lanes.morphism_cycle');
    expect(e.details.cycle).toEqual(['llama-3-8b@1', 'llama-3-8b-gguf@1', 'llama-3-8b@1']);
    const self = fresh();
    const selfPair = morphism(self, 'phi3-fused-to-split').pairs[0];
    if (!selfPair) throw new Error('no pair');
    selfPair.to = 'phi-3-mini@1';
    expectCodeSync(() => loadCatalog(repin(self)), 'malformed', 'lanes.morphism_cycle');
  });

  it('ambiguous morphisms are refused: a second route, or two entries claiming one key', () => {
    const twice = fresh();
    const dup = clone(morphism(twice, 'llama-hf-to-gguf'));
    dup.name = 'llama-hf-to-gguf-again';
    dup.pairs = dup.pairs.slice(0, 1);
    twice.documents.push(dup);
    expectCodeSync(() => loadCatalog(repin(twice)), 'conflict', 'lanes.morphism_ambiguous');
    const entries = fresh();
    morphism(entries, 'llama-hf-to-gguf').map.push({
      from: 'model.layers.{n}.mlp.up_proj.weight',
      to: 'blk.{n}.ffn_up2.weight',
    });
    const e = expectCodeSync(() => loadCatalog(repin(entries)), 'conflict', 'lanes.morphism_ambiguous');
    expect(e.details.tensor).toBe('model.layers.0.mlp.up_proj.weight');
    const collide = fresh();
    entry(morphism(collide, 'llama-hf-to-gguf'), 2).to = 'token_embd.weight';
    expectCodeSync(() => loadCatalog(repin(collide)), 'conflict', 'lanes.morphism_ambiguous');
  });

  it('documents outside the schema are malformed, naming the path', () => {
    const input = fresh();
    morphism(input, 'phi3-fused-to-split').evidence = [];
    const e = expectCodeSync(() => loadCatalog(repin(input)), 'malformed', 'lanes.schema');
    expect(e.details.path).toBe('/evidence');
    const shape = fresh();
    const emission = rule(shape, 'int8-rowwise').emit[0];
    if (!emission) throw new Error('no emission');
    emission.shape = ['N', 'K/'];
    expectCodeSync(() => loadCatalog(repin(shape)), 'malformed', 'lanes.expression');
  });

  it('a candidate with the right element count in the wrong dims is a clear error', () => {
    const cat = loadCatalog(fresh());
    const c = exactCandidate(cat, cat.lane('t5-base-encoder'));
    const bad = c.text_encoder!.map((t) =>
      t.name === 'encoder.block.0.layer.1.DenseReluDense.wi.weight' ? { ...t, shape: [768, 3072] } : t,
    );
    const e = expectCodeSync(
      () => bindOrThrow({ text_encoder: bad }, 't5-base-encoder', cat),
      'conflict',
      'lanes.same_count_wrong_dims',
    );
    expect(e.details).toMatchObject({
      tensor: 'encoder.block.0.layer.1.DenseReluDense.wi.weight',
      expected: { shape: [3072, 768] },
      actual: { shape: [768, 3072], dtype: 'BF16' },
    });
    expect(e.message).toContain('a reshape is not a derivation');
  });
});
