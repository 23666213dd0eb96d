/**
 * Issue 24.3: `tfs convert` commits only what decodes. Starting from each producer convention's
 * golden layout (vectors/v1/producers), random and mostly wrong facts are written into the
 * producer's files (quantization config values, quant_state / comfy_quant JSON values, a producer
 * tensor's shape or dtype, the values of small tensors). Whatever convert accepts, every encoded
 * tensor of the checkpoint decodes; whatever it refuses is `malformed` or `unsupported` with a
 * rule, and the ref was not set.
 */
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { isTensorFSError, parseSafetensorsHeader } from '@tensorfs/format';
import { REPO_ROOT, acceptedCounter, safetensorsBytes } from '@tensorfs/testkit';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProducerConvention, convertPath, openCheckpoint } from '../src/index.js';
import { type TestStore, tempStore } from './helpers.js';

const DIR = path.join(REPO_ROOT, 'vectors', 'v1', 'producers');

interface Case {
  name: string;
  source: string;
  producer?: ProducerConvention;
  dtype?: 'F32' | 'F16' | 'BF16';
}
const CASES = (JSON.parse(await fsp.readFile(path.join(DIR, 'expected.json'), 'utf8')) as { cases: Case[] }).cases;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
interface Tensor {
  name: string;
  dtype: string;
  shape: number[];
  data: Uint8Array;
}
interface Layout {
  /** JSON side files (config.json, quantize_config.json…) by path. */
  json: Record<string, Json>;
  /** The one safetensors file: its path, tensors and metadata. */
  file: string;
  tensors: Tensor[];
  metadata: Record<string, string> | undefined;
  options: { producer?: ProducerConvention; dtype?: 'F32' | 'F16' | 'BF16' };
}

async function load(c: Case): Promise<Layout> {
  const src = path.join(DIR, c.source);
  const st = await fsp.stat(src);
  const files = st.isFile() ? [src] : (await fsp.readdir(src)).map((f) => path.join(src, f));
  const json: Record<string, Json> = {};
  let file = '';
  let tensors: Tensor[] = [];
  let metadata: Record<string, string> | undefined;
  for (const f of files) {
    const bytes = new Uint8Array(await fsp.readFile(f));
    if (f.endsWith('.json')) json[path.basename(f)] = JSON.parse(new TextDecoder().decode(bytes)) as Json;
    else {
      file = path.basename(f);
      const h = parseSafetensorsHeader(bytes);
      metadata = h.metadata ? Object.fromEntries(h.metadata) : undefined;
      tensors = h.tensors.map((t) => ({
        name: t.name,
        dtype: t.dtype,
        shape: t.shape.map(Number),
        data: bytes.slice(t.byteOffset, t.byteOffset + t.byteLength),
      }));
    }
  }
  return {
    json,
    file,
    tensors,
    metadata,
    options: {
      ...(c.producer ? { producer: c.producer } : {}),
      dtype: c.dtype ?? 'BF16',
    },
  };
}

/** Facts a decoder relies on, and values for them (most of them wrong for most layouts). */
const FACT_KEYS = [
  'bits',
  'w_bit',
  'group_size',
  'q_group_size',
  'desc_act',
  'checkpoint_format',
  'version',
  'weight_block_size',
  'blocksize',
  'nested_blocksize',
  'nested_offset',
  'shape',
  'quant_type',
  'format',
  'convrot',
  'convrot_groupsize',
] as const;
const VALUE: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(0, 1, 2, 3, 4, 5, 8, 16, 32, 64, 128, -1, -2, 1.5, 7, 256),
  fc.constantFrom<Json>([0, 0], [1, 1], [3, 5], [16, 16], [16, 0], [128, 128], [8], [], [2, 64], [4, 32], [-1, 2]),
  fc.constantFrom<Json>(true, false, null, 'gemm', 'gemv', 'gptq', 'gptq_v2', 'nf4', 'fp4', 'x'),
  fc.constantFrom<Json>('float8_e4m3fn', 'float8_e5m2', 'nvfp4', 'mxfp8', 'int8_tensorwise', 'float32', 'bfloat16'),
);
const WIDTH: Record<string, number> = { U8: 1, I8: 1, F8_E4M3: 1, F8_E5M2: 1, F16: 2, BF16: 2, I32: 4, F32: 4 };

type Mutation =
  | { kind: 'config'; key: (typeof FACT_KEYS)[number]; value: Json | undefined }
  | { kind: 'json_tensor'; key: (typeof FACT_KEYS)[number]; value: Json | undefined }
  | { kind: 'shape'; which: number; shape: number[]; seed: number }
  | { kind: 'dtype'; which: number; dtype: string }
  | { kind: 'values'; which: number; seed: number };

const MUTATION: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({
    kind: fc.constant('config' as const),
    key: fc.constantFrom(...FACT_KEYS),
    value: fc.option(VALUE, { nil: undefined }),
  }),
  fc.record({
    kind: fc.constant('json_tensor' as const),
    key: fc.constantFrom(...FACT_KEYS),
    value: fc.option(VALUE, { nil: undefined }),
  }),
  fc.record({
    kind: fc.constant('shape' as const),
    which: fc.nat(),
    shape: fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 0, maxLength: 3 }),
    seed: fc.nat(),
  }),
  fc.record({ kind: fc.constant('dtype' as const), which: fc.nat(), dtype: fc.constantFrom(...Object.keys(WIDTH)) }),
  fc.record({ kind: fc.constant('values' as const), which: fc.nat(), seed: fc.nat() }),
);

function noise(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = (seed | 1) >>> 0;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

function setFact(obj: Record<string, Json>, key: string, value: Json | undefined): void {
  if (value === undefined) delete obj[key];
  else obj[key] = value;
}

/** The quantization config objects of a layout (config.json's `quantization_config` and side files). */
function configs(l: Layout): Record<string, Json>[] {
  const out: Record<string, Json>[] = [];
  for (const [name, v] of Object.entries(l.json)) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) continue;
    if (name === 'config.json') {
      const q = v.quantization_config;
      if (q && typeof q === 'object' && !Array.isArray(q)) out.push(q);
    } else {
      const q = v.quantization;
      out.push(q && typeof q === 'object' && !Array.isArray(q) ? q : v);
    }
  }
  return out;
}

function mutate(l: Layout, m: Mutation): void {
  const JSON_TENSOR = /\.(quant_state\.bitsandbytes__(nf4|fp4)|comfy_quant)$/;
  switch (m.kind) {
    case 'config':
      for (const c of configs(l)) setFact(c, m.key, m.value);
      return;
    case 'json_tensor':
      for (const t of l.tensors) {
        if (!JSON_TENSOR.test(t.name)) continue;
        const obj = JSON.parse(new TextDecoder().decode(t.data)) as Record<string, Json>;
        setFact(obj, m.key, m.value);
        t.data = new TextEncoder().encode(JSON.stringify(obj));
        t.shape = [t.data.length];
      }
      if (l.metadata?._quantization_metadata !== undefined) {
        const qm = JSON.parse(l.metadata._quantization_metadata) as { layers?: Record<string, Record<string, Json>> };
        for (const layer of Object.values(qm.layers ?? {})) setFact(layer, m.key, m.value);
        l.metadata._quantization_metadata = JSON.stringify(qm);
      }
      return;
    case 'shape': {
      const t = l.tensors[m.which % l.tensors.length]!;
      if (JSON_TENSOR.test(t.name)) return;
      t.shape = m.shape;
      t.data = noise(m.shape.reduce((a, b) => a * b, 1) * (WIDTH[t.dtype] ?? 1), m.seed);
      return;
    }
    case 'dtype': {
      const t = l.tensors[m.which % l.tensors.length]!;
      if (JSON_TENSOR.test(t.name) || !(t.dtype in WIDTH)) return;
      const n = t.shape.reduce((a, b) => a * b, 1);
      t.dtype = m.dtype;
      t.data = noise(n * (WIDTH[m.dtype] as number), n);
      return;
    }
    case 'values': {
      const t = l.tensors[m.which % l.tensors.length]!;
      if (JSON_TENSOR.test(t.name)) return;
      t.data = noise(t.data.length, m.seed);
      return;
    }
  }
}

describe('convert commits only what decodes (random producer facts on every convention)', () => {
  let t: TestStore;
  let n = 0;
  beforeAll(async () => {
    t = await tempStore();
  });
  afterAll(async () => {
    await t.close();
  });

  it('accepted: every encoded tensor decodes; refused: malformed/unsupported with a rule, no ref', async () => {
    const layouts = await Promise.all(CASES.map(load));
    const accepted = acceptedCounter();
    const refused = acceptedCounter();
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: layouts.length - 1 }),
        fc.array(MUTATION, { minLength: 1, maxLength: 3 }),
        async (which, mutations) => {
          const l: Layout = structuredClone(layouts[which]!);
          for (const m of mutations) mutate(l, m);
          const dir = path.join(t.scratch, `case-${++n}`);
          await fsp.mkdir(dir);
          for (const [name, v] of Object.entries(l.json)) await fsp.writeFile(path.join(dir, name), JSON.stringify(v));
          await fsp.writeFile(path.join(dir, l.file), safetensorsBytes(l.tensors, l.metadata));
          const ref = `p/${n}`;
          let result: unknown;
          try {
            result = await convertPath(t.local!, dir, { name: ref, threads: 1, ...l.options });
          } catch (error) {
            if (!isTensorFSError(error)) throw error;
            expect(['malformed', 'unsupported'], `${error.code}: ${error.message}`).toContain(error.code);
            expect(String(error.details.rule)).toMatch(/^(convert|encodings)\.[a-z_.0-9]+$/);
            expect(await t.store.getRef(ref)).toBeNull();
            refused.accept();
            return;
          }
          expect(result).toBeDefined();
          const cp = await openCheckpoint(t.store, ref);
          for (const name of cp.components.keys()) {
            for (const [tensor, view] of cp.component(name).tensors) {
              if (!view.encoding) continue;
              try {
                await view.read({ decode: true, dtype: 'F32' });
              } catch (error) {
                throw new Error(
                  `convert accepted ${tensor} (${view.encoding.scheme} ${JSON.stringify(view.encoding.params)}) but decode failed: ${
                    isTensorFSError(error) ? `${error.code} ${error.message}` : String(error)
                  }`,
                );
              }
            }
          }
          accepted.accept();
        },
      ),
      { numRuns: 200 },
    );
    accepted.assertFloor(20);
    refused.assertFloor(20);
  }, 300_000);
});
