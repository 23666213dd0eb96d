/**
 * `tfs convert` of PEFT adapters written by peft itself (producers/peft_adapters.py: LoRA with
 * rsLoRA, rank_pattern and alpha_pattern, an embedding target, GPT-2 Conv1D with fan_in_fan_out;
 * LoHa and IA3): the component's class and config, each pair's declared rank, alpha, scale rule
 * and target, `cat --decode` against peft's own `get_delta_weight`, `export --safetensors`
 * byte-identical and loaded back by `PeftModel.from_pretrained` with `torch.equal` logits; other
 * PEFT types refused by name, a declared converter the files do not match refused.
 * python3 with torch, transformers and peft must be there (no skip).
 */
import { execFileSync } from 'node:child_process';
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tfs as run } from './helpers.js';

const SCRIPT = path.join(import.meta.dirname, 'producers', 'peft_adapters.py');

interface Layer {
  r: number;
  alpha: number;
  scaling: number;
  shape: number[];
  delta: string;
}
interface Record {
  base: string;
  layers: { [module: string]: Layer };
  logits: string;
}

function floats(hexOrBytes: string | Buffer): Float32Array {
  const b = typeof hexOrBytes === 'string' ? Buffer.from(hexOrBytes, 'hex') : hexOrBytes;
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
}

describe('tfs convert of PEFT adapters', () => {
  let dir: string;
  let store: string;
  const tfs = (argv: string[]) => run([...argv, '--store', store]);
  const records: { [name: string]: Record } = {};

  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-cli-peft-'));
    store = path.join(dir, 'store');
    execFileSync('python3', [SCRIPT, 'make', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
    for (const name of ['rs', 'plain', 'gpt2'])
      records[name] = JSON.parse(await fsp.readFile(path.join(dir, `${name}.json`), 'utf8'));
  }, 300_000);
  afterAll(() => fsp.rm(dir, { recursive: true, force: true }));

  it('declares every LoRA pair (rank, alpha, scale rule, target) and decodes to peft get_delta_weight', async () => {
    for (const [name, rule] of [
      ['rs', 'alpha_over_sqrt_rank'],
      ['plain', 'alpha_over_rank'],
      ['gpt2', 'alpha_over_rank'],
    ] as const) {
      const adapter = path.join(dir, name);
      const c = await tfs(['convert', adapter, '--name', `peft/${name}`, '--threads', '1', '--json']);
      expect(c.code, c.stderr).toBe(0);
      const rec = records[name]!;
      const layers = Object.entries(rec.layers);
      expect(JSON.parse(c.stdout)).toMatchObject({
        converter: 'peft',
        components: 1,
        encoded: layers.length,
        adapter: { type: 'LORA', baseModel: rec.base, revision: null, pairs: layers.length },
      });
      const human = await tfs(['convert', adapter, '--name', `peft/${name}`, '--threads', '1']);
      expect(human.stdout).toContain(`PEFT LORA adapter of ${rec.base}: ${layers.length} LoRA pairs`);

      const inspected = JSON.parse((await tfs(['inspect', `peft/${name}`, '--json'])).stdout);
      const component = inspected.components[0];
      expect(component.name).toBe('adapter');
      expect(component.cls).toBe('PeftModelForCausalLM');
      const config = JSON.parse(await fsp.readFile(path.join(adapter, 'adapter_config.json'), 'utf8'));
      expect(component.config).toEqual(config);
      for (const [module, layer] of layers) {
        const tensorName = `base_model.model.${module}.weight`;
        const t = component.tensors.find((x: { name: string }) => x.name === tensorName);
        expect(t, tensorName).toBeDefined();
        const transpose = module.endsWith('embed_tokens') || name === 'gpt2';
        expect(t.shape).toEqual(layer.shape);
        expect(t.encoding.scheme).toBe('lora');
        expect(t.encoding.params).toEqual({
          shape: layer.shape,
          dtype: 'F32',
          alpha: layer.alpha,
          rank: layer.r,
          scale_rule: rule,
          target: `${module}.weight`,
          ...(transpose ? { transpose: true } : {}),
        });
        const scale = rule === 'alpha_over_sqrt_rank' ? layer.alpha / Math.sqrt(layer.r) : layer.alpha / layer.r;
        expect(scale).toBeCloseTo(layer.scaling, 12);

        const out = path.join(dir, `${name}-delta.f32`);
        const d = await tfs(['cat', `peft/${name}`, tensorName, '--decode', '-o', out]);
        expect(d.code, d.stderr).toBe(0);
        const got = floats(await fsp.readFile(out));
        const want = floats(layer.delta);
        expect(got.length).toBe(want.length);
        // The sum over r is float32 in an unspecified order (spec/v1/encodings.md 5.11): the
        // error is float32 rounding of the largest value, nothing more.
        let worst = 0;
        let largest = 0;
        for (let i = 0; i < want.length; i++) {
          worst = Math.max(worst, Math.abs(got[i]! - want[i]!));
          largest = Math.max(largest, Math.abs(want[i]!));
        }
        expect(largest).toBeGreaterThan(0);
        expect(worst / largest, `${name} ${module}`).toBeLessThan(4e-7);
      }
      // the rank_pattern / alpha_pattern modules really differ from the defaults
      if (name === 'rs') {
        expect(rec.layers['model.layers.1.self_attn.v_proj']).toMatchObject({ r: 2, alpha: 3 });
        expect(rec.layers['model.layers.0.self_attn.v_proj']).toMatchObject({ r: 4, alpha: 3 });
      }
    }
  }, 120_000);

  it('export --safetensors gives the adapter back byte for byte, and PeftModel.from_pretrained loads it', async () => {
    const spec: { base: string; adapter: string; logits: string }[] = [];
    for (const name of ['rs', 'plain', 'gpt2']) {
      const out = path.join(dir, `export-${name}`);
      const e = await tfs(['export', `peft/${name}`, out, '--safetensors']);
      expect(e.code, e.stderr).toBe(0);
      for (const f of ['adapter_config.json', 'adapter_model.safetensors', 'README.md']) {
        const a = await fsp.readFile(path.join(dir, name, f));
        const b = await fsp.readFile(path.join(out, f));
        expect(b.equals(a), `${name}/${f}`).toBe(true);
      }
      expect((await fsp.readdir(out)).sort()).toEqual((await fsp.readdir(path.join(dir, name))).sort());
      spec.push({ base: records[name]!.base, adapter: out, logits: records[name]!.logits });
    }
    const specFile = path.join(dir, 'load.json');
    await fsp.writeFile(specFile, JSON.stringify(spec));
    const loaded = JSON.parse(
      execFileSync('python3', [SCRIPT, 'load', specFile], { stdio: ['ignore', 'pipe', 'pipe'] }).toString(),
    );
    expect(loaded).toEqual(spec.map((s) => ({ adapter: s.adapter, equal: true, class: 'PeftModelForCausalLM' })));
  }, 300_000);

  it('refuses other PEFT types by name, and a declared converter the files do not match', async () => {
    for (const [name, type] of [
      ['loha', 'LOHA'],
      ['ia3', 'IA3'],
    ]) {
      const r = await tfs(['convert', path.join(dir, name!), '--name', `peft/${name}`, '--json']);
      expect(r.code, r.stderr).toBe(5);
      const err = JSON.parse(r.stderr).error;
      expect(err).toMatchObject({ code: 'unsupported', details: { rule: 'convert.peft_type', type } });
      expect(err.message).toContain(type);
    }
    // a Kohya LoRA declared for a PEFT adapter: nothing follows it, so it is refused, not ignored
    const kohya = await tfs(['convert', path.join(dir, 'rs'), '--name', 'k', '--converter', 'kohya_lora', '--json']);
    expect(kohya.code, kohya.stderr).toBe(2);
    expect(JSON.parse(kohya.stderr).error).toMatchObject({
      code: 'invalid_argument',
      details: { rule: 'convert.converter_mismatch', converter: 'kohya_lora', layout: 'peft' },
    });
    // peft declared for a Transformers folder (the base model)
    const peft = await tfs(['convert', path.join(dir, 'llama'), '--name', 'k', '--converter', 'peft', '--json']);
    expect(peft.code, peft.stderr).toBe(2);
    expect(JSON.parse(peft.stderr).error).toMatchObject({
      code: 'invalid_argument',
      details: { rule: 'convert.converter_mismatch', converter: 'peft' },
    });
    // diffusers declared for it too
    const diff = await tfs(['convert', path.join(dir, 'llama'), '--name', 'k', '--converter', 'diffusers', '--json']);
    expect(diff.code, diff.stderr).toBe(2);
    expect(JSON.parse(diff.stderr).error.details).toMatchObject({ rule: 'convert.converter_mismatch' });
    const refs = await tfs(['ls', '--json']);
    expect(refs.stdout).not.toContain('"k"');
  });

  it('convert --help lists the recognised layouts', async () => {
    const h = await run(['convert', '--help']);
    expect(h.code).toBe(0);
    for (const layout of ['diffusers', 'peft', 'transformers', 'single-file'])
      expect(h.stdout).toMatch(new RegExp(`^  ${layout} `, 'm'));
    expect(h.stdout).toContain('--shapes-from');
  });
});
