/**
 * `tfs convert` of producer-quantized folders (vectors/v1/producers), then `inspect` (scheme and
 * params, human and --json, of a ref and of a .cozytensors file), `cat --decode` of a checkpoint
 * tensor, and `export --safetensors` byte-identical to the producer's files.
 */
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, sha256Hex } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tfs as run } from './helpers.js';

const DIR = path.join(REPO_ROOT, 'vectors', 'v1', 'producers');
const GPTQ = path.join(DIR, 'cases', 'gptq');
const TENSOR = 'model.layers.0.mlp.gate_proj.weight';

interface Weight {
  name: string;
  f32: string;
  logical: string;
}
const CASES = (
  JSON.parse(await fsp.readFile(path.join(DIR, 'expected.json'), 'utf8')) as {
    cases: { source: string; weights: Weight[] }[];
  }
).cases;
const WANT = CASES.find((c) => c.source === 'cases/gptq')!.weights[0]!;

async function files(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await fsp.readdir(dir)) out[e] = sha256Hex(new Uint8Array(await fsp.readFile(path.join(dir, e))));
  return out;
}

describe('tfs convert / inspect / cat --decode / export of a producer-quantized folder', () => {
  let dir: string;
  let store: string;
  const tfs = (argv: string[]) => run([...argv, '--store', store]);

  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-cli-producers-'));
    store = path.join(dir, 'store');
  });
  afterAll(() => fsp.rm(dir, { recursive: true, force: true }));

  it('refuses packed weights whose producer is not stated (exit 5, naming the fact); --converter gptq declares it', async () => {
    const refused = await tfs(['convert', GPTQ, '--name', 'q', '--threads', '1', '--json']);
    expect(refused.code).toBe(5);
    const err = JSON.parse(refused.stderr);
    expect(err.error.code).toBe('unsupported');
    expect(err.error.details.fact).toBe('quant_method');

    const c = await tfs(['convert', GPTQ, '--name', 'q', '--converter', 'gptq', '--threads', '1', '--json']);
    expect(c.code, c.stderr).toBe(0);
    expect(JSON.parse(c.stdout)).toMatchObject({
      ref: 'q',
      converter: 'transformers',
      tensors: 2,
      encoded: 1,
      conventions: ['gptq'],
    });
    // a layout and a producer together; two producers are refused (exit 2)
    const both = await tfs([
      'convert',
      GPTQ,
      '--name',
      'q2',
      '--converter',
      'transformers',
      '--converter',
      'gptq',
      '--json',
    ]);
    expect(both.code, both.stderr).toBe(0);
    expect(JSON.parse(both.stdout)).toMatchObject({ converter: 'transformers', conventions: ['gptq'] });
    const two = await tfs(['convert', GPTQ, '--name', 'q3', '--converter', 'gptq', '--converter', 'awq']);
    expect(two.code).toBe(2);
  });

  it('inspect shows each tensor scheme and params (--json and human), for the ref and the .cozytensors file', async () => {
    const j = await tfs(['inspect', 'q', '--json']);
    expect(j.code, j.stderr).toBe(0);
    const t = JSON.parse(j.stdout).components[0].tensors.find((x: { name: string }) => x.name === TENSOR);
    expect(t).toEqual({
      name: TENSOR,
      dtype: 'F16',
      shape: [16, 64],
      encoding: {
        scheme: 'gptq',
        params: {
          shape: [16, 64],
          dtype: 'F16',
          bits: 4,
          group_size: 16,
          zero_format: 'v1_minus_one',
          group_index: 'g_idx',
        },
        parts: {
          qweight: { dtype: 'I32', shape: [8, 16] },
          qzeros: { dtype: 'I32', shape: [4, 2] },
          scales: { dtype: 'F16', shape: [4, 16] },
          g_idx: { dtype: 'I32', shape: [64] },
        },
      },
    });
    // Params and parts in the header's canonical (CBOR) key order.
    const h = await tfs(['inspect', 'q']);
    expect(h.code, h.stderr).toBe(0);
    expect(h.stdout).toContain(
      `${TENSOR}  F16  [16, 64]  gptq {"bits":4,"group_size":16,"group_index":"g_idx","zero_format":"v1_minus_one"} [g_idx: I32 [64]; qzeros: I32 [4, 2]; scales: F16 [4, 16]; qweight: I32 [8, 16]]`,
    );
    const hdr = path.join(dir, 'hdr');
    expect((await tfs(['export', 'q', hdr, '--cozytensors'])).code).toBe(0);
    const f = await tfs(['inspect', path.join(hdr, 'model.cozytensors'), '--json']);
    expect(f.code, f.stderr).toBe(0);
    expect(JSON.parse(f.stdout).components[0].tensors).toEqual(JSON.parse(j.stdout).components[0].tensors);
  });

  it('cat --decode writes the reference values (F32 and the logical F16); export gives the folder back', async () => {
    const f32 = path.join(dir, 'w.f32');
    const c = await tfs([
      'cat',
      'q',
      TENSOR,
      '--component',
      'model',
      '--decode',
      '--dtype',
      'F32',
      '-o',
      f32,
      '--json',
    ]);
    expect(c.code, c.stderr).toBe(0);
    expect(JSON.parse(c.stdout)).toMatchObject({ tensor: TENSOR, decoded: true, dtype: 'F32', bytes: 16 * 64 * 4 });
    expect((await fsp.readFile(f32)).toString('hex')).toBe(WANT.f32);
    const f16 = path.join(dir, 'w.f16');
    const d = await tfs(['cat', 'q', TENSOR, '--decode', '-o', f16, '--json']);
    expect(d.code, d.stderr).toBe(0);
    expect(JSON.parse(d.stdout)).toMatchObject({ dtype: 'F16', bytes: 16 * 64 * 2 });
    expect((await fsp.readFile(f16)).toString('hex')).toBe(WANT.logical);
    // Raw bytes of an encoded tensor do not exist: unsupported (exit 5).
    expect((await tfs(['cat', 'q', TENSOR, '-o', path.join(dir, 'raw')])).code).toBe(5);
    const out = path.join(dir, 'out');
    expect((await tfs(['export', 'q', out])).code).toBe(0);
    expect(await files(out)).toEqual(await files(GPTQ));
  });

  it('refuses producer facts the decoder cannot use (GPTQ group_size 0 and 3): exit 3, one line, no ref', async () => {
    for (const [gs, rule] of [
      [0, 'convert.group_size'],
      [3, 'convert.part_shape'],
    ] as const) {
      const bad = path.join(dir, `gptq-gs${gs}`);
      await fsp.mkdir(bad);
      for (const f of await fsp.readdir(GPTQ)) await fsp.copyFile(path.join(GPTQ, f), path.join(bad, f));
      const qc = JSON.parse(await fsp.readFile(path.join(bad, 'quantize_config.json'), 'utf8'));
      await fsp.writeFile(path.join(bad, 'quantize_config.json'), JSON.stringify({ ...qc, group_size: gs }));
      const human = await tfs(['convert', bad, '--name', `gs${gs}`, '--converter', 'gptq', '--threads', '1']);
      expect(human.code, human.stderr).toBe(3);
      expect(human.stderr.split('\n').filter((l) => l !== '')).toHaveLength(1);
      expect(human.stderr).toMatch(new RegExp(`^error\\[malformed\\]: ${TENSOR.replaceAll('.', '\\.')}: gptq: `));
      const j = await tfs(['convert', bad, '--name', `gs${gs}`, '--converter', 'gptq', '--threads', '1', '--json']);
      expect(j.code).toBe(3);
      expect(JSON.parse(j.stderr).error).toMatchObject({ code: 'malformed', details: { rule, tensor: TENSOR } });
      expect((await tfs(['ls', '--json'])).stdout).not.toContain(`"gs${gs}"`);
    }
  });
});
