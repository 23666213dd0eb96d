import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  type BankedHeader,
  type LaneDocument,
  BUNDLED_CATALOG,
  canonicalJson,
  checkDocument,
  defaultCatalog,
  deriveTopology,
  documentDigest,
  loadCatalog,
  sha256,
  type TopologyDoc,
} from '@tensorfs/lanes';
import { toHex } from '@tensorfs/format';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readJson, specCatalog, V2 } from './helpers.js';

describe('sha256 and canonical JSON', () => {
  it('agrees with node:crypto on any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (b) => {
        expect(toHex(sha256(b))).toBe(createHash('sha256').update(b).digest('hex'));
      }),
      { numRuns: 300 },
    );
    expect(toHex(sha256(new Uint8Array(0)))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('sorts keys, drops whitespace and refuses floats', () => {
    expect(canonicalJson({ b: [1, 2, { d: null, c: true }], a: 'x"y' })).toBe(
      '{"a":"x\\"y","b":[1,2,{"c":true,"d":null}]}',
    );
    expect(() => canonicalJson({ a: 1.5 })).toThrow(/safe integers/);
    expect(documentDigest({ a: 1 })).toBe(`sha256:${createHash('sha256').update('{"a":1}').digest('hex')}`);
  });
});

describe('spec/v2 documents', () => {
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
  const schema = (n: string) => ajv.compile(readJson(path.join(V2, 'schemas', `${n}.schema.json`)));
  const validators: Record<string, ReturnType<typeof schema>> = {
    topologies: schema('topology'),
    rules: schema('rule'),
    morphisms: schema('morphism'),
  };
  const { index, documents } = specCatalog();

  it('every document and the index validate against their JSON Schemas and the loader agrees', () => {
    expect(schema('catalog')(index), JSON.stringify(ajv.errors)).toBe(true);
    for (const dir of ['topologies', 'rules', 'morphisms']) {
      const files = fs.readdirSync(path.join(V2, dir));
      expect(files.length).toBeGreaterThan(1);
      for (const f of files) {
        const doc = readJson(path.join(V2, dir, f));
        const ok = validators[dir]?.(doc);
        expect(ok, `${dir}/${f}: ${JSON.stringify(validators[dir]?.errors)}`).toBe(true);
        expect(() => checkDocument(doc)).not.toThrow();
      }
    }
  });

  it('pins every document by the SHA-256 of its canonical JSON', () => {
    for (const doc of documents) {
      const field = {
        'tensorfs.lanes.topology': 'topologies',
        'tensorfs.lanes.rule': 'rules',
        'tensorfs.lanes.morphism': 'morphisms',
      }[doc.kind as string] as 'topologies' | 'rules' | 'morphisms';
      expect(index[field][`${doc.name}@${doc.version}`]).toBe(documentDigest(doc));
    }
  });

  it('re-derives every topology from its banked header to its committed digest', () => {
    const topologies = documents.filter((d) => d.kind === 'tensorfs.lanes.topology') as TopologyDoc[];
    expect(topologies.map((t) => t.name).sort()).toEqual(
      expect.arrayContaining([
        'llama-3-8b',
        'mistral-7b',
        'qwen2-7b',
        'gemma-2-9b',
        'phi-3-mini',
        'gpt2',
        't5-base-encoder',
        'clip-vit-large-patch14-text',
      ]),
    );
    const drift: string[] = [];
    for (const t of topologies) {
      const header = readJson<BankedHeader>(path.join(V2, t.derived_from.header));
      const component = Object.keys(t.components)[0] as string;
      const again = deriveTopology(header, {
        name: t.name,
        version: t.version,
        component,
        header: t.derived_from.header,
      });
      const pinned = index.topologies[`${t.name}@${t.version}`];
      if (documentDigest(again) !== pinned)
        drift.push(`${t.name}@${t.version}: re-derives to ${documentDigest(again)}, pinned ${pinned}`);
    }
    expect(drift).toEqual([]);
  });

  it('banked headers hold names, dtypes and shapes only, as save_pretrained writes them', () => {
    const gpt2 = readJson<BankedHeader>(path.join(V2, 'headers/gpt2.json'));
    const names = gpt2.tensors.map((t) => t.name);
    expect(names).not.toContain('lm_head.weight'); // tied to wte: save_pretrained drops it
    expect(names).toContain('transformer.wte.weight');
    const t5 = readJson<BankedHeader>(path.join(V2, 'headers/t5-base-encoder.json')).tensors.map((t) => t.name);
    expect(t5).toContain('shared.weight');
    expect(t5).not.toContain('encoder.embed_tokens.weight');
    const phi = readJson<BankedHeader>(path.join(V2, 'headers/phi-3-mini.json')).tensors;
    expect(phi.find((t) => t.name === 'model.layers.0.self_attn.qkv_proj.weight')).toEqual({
      name: 'model.layers.0.self_attn.qkv_proj.weight',
      dtype: 'BF16',
      shape: [9216, 3072],
    });
    expect(phi.find((t) => t.name === 'model.layers.0.mlp.gate_up_proj.weight')?.shape).toEqual([16384, 3072]);
    for (const f of fs.readdirSync(path.join(V2, 'headers')))
      for (const t of readJson<BankedHeader>(path.join(V2, 'headers', f)).tensors)
        expect(Object.keys(t).sort()).toEqual(['dtype', 'name', 'shape']);
  });

  it('the bundled catalog is exactly spec/v2 and loads', () => {
    expect(canonicalJson(BUNDLED_CATALOG.index)).toBe(canonicalJson(index));
    const byRef = (ds: readonly LaneDocument[]) =>
      new Map(ds.map((d) => [`${d.kind}:${d.name}@${d.version}`, documentDigest(d)]));
    expect(byRef(BUNDLED_CATALOG.documents as readonly LaneDocument[])).toEqual(byRef(documents));
    const cat = defaultCatalog();
    expect(cat.topologies.size).toBe(11);
    expect(cat.rules.size).toBe(7);
    expect(cat.morphisms.size).toBe(2);
    expect(
      loadCatalog({ index, documents })
        .edges.get('llama-3-8b@1')
        ?.map((e) => e.to),
    ).toEqual(['llama-3-8b-gguf@1']);
  });
});
