/**
 * The `lora` scheme's PEFT params (spec/v1/encodings.md 5.11): `scale_rule` (alpha / r, rsLoRA
 * alpha / √r, alpha used as is), `rank` checked against the parts, `target` carried, `transpose`
 * giving `(scale · up @ down)ᵀ`; the Kohya rule unchanged without them.
 */
import { decode, type Encoded } from '@tensorfs/format/encodings';
import { describe, expect, it } from 'vitest';

function part(values: number[], shape: number[]) {
  return { dtype: 'F32', shape, bytes: new Uint8Array(new Float32Array(values).buffer) };
}

// up [3, 2], down [2, 4]: up @ down is [3, 4]
const UP = [1, 2, 3, 4, 5, 6];
const DOWN = [1, 0, 2, 1, 0, 1, 1, 3];
function product(): number[][] {
  const out: number[][] = [];
  for (let o = 0; o < 3; o++) {
    const row: number[] = [];
    for (let i = 0; i < 4; i++) row.push(UP[o * 2]! * DOWN[i]! + UP[o * 2 + 1]! * DOWN[4 + i]!);
    out.push(row);
  }
  return out;
}

function lora(params: Record<string, unknown>, shape = [3, 4]): Encoded {
  return {
    scheme: 'lora',
    params: { shape, dtype: 'F32', ...params } as Encoded['params'],
    parts: { down: part(DOWN, [2, 4]), up: part(UP, [3, 2]) },
  };
}

function values(enc: Encoded): number[] {
  const b = decode(enc);
  return [...new Float32Array(b.buffer, b.byteOffset, b.length / 4)];
}

function codeOf(fn: () => unknown): unknown {
  try {
    fn();
    return 'no error';
  } catch (e) {
    return { code: (e as { code: string }).code, rule: (e as { details: { rule: string } }).details.rule };
  }
}

describe('lora with PEFT params', () => {
  it('alpha_over_rank and alpha_over_sqrt_rank scale the product; alpha 0 means 0 with a rule', () => {
    const p = product().flat();
    expect(values(lora({ alpha: 6, rank: 2, scale_rule: 'alpha_over_rank', target: 'm.weight' }))).toEqual(
      p.map((v) => Math.fround(v * 3)),
    );
    const s = Math.fround(5 / Math.sqrt(2));
    expect(values(lora({ alpha: 5, scale_rule: 'alpha_over_sqrt_rank' }))).toEqual(p.map((v) => Math.fround(v * s)));
    expect(values(lora({ alpha: 0, scale_rule: 'alpha_over_rank' }))).toEqual(p.map(() => 0));
    // Kohya: alpha 0 or null is alpha = rank (scale 1)
    expect(values(lora({ alpha: 0 }))).toEqual(p);
  });

  it('transpose gives (scale · up @ down)ᵀ with the logical shape [in, out]', () => {
    const p = product();
    const t: number[] = [];
    for (let i = 0; i < 4; i++) for (let o = 0; o < 3; o++) t.push(Math.fround(p[o]![i]! * 2));
    expect(values(lora({ alpha: 4, rank: 2, scale_rule: 'alpha_over_rank', transpose: true }, [4, 3]))).toEqual(t);
    // the shape must be the transposed one
    expect(codeOf(() => decode(lora({ alpha: 4, scale_rule: 'alpha_over_rank', transpose: true }, [3, 4])))).toEqual({
      code: 'malformed',
      rule: 'encodings.lora.part_shape',
    });
  });

  it('refuses a rank other than the parts, a null alpha with a rule, an unknown rule', () => {
    expect(codeOf(() => decode(lora({ alpha: 4, rank: 3, scale_rule: 'alpha_over_rank' })))).toEqual({
      code: 'malformed',
      rule: 'encodings.lora.rank',
    });
    expect(codeOf(() => decode(lora({ alpha: null, scale_rule: 'alpha_over_rank' })))).toEqual({
      code: 'malformed',
      rule: 'encodings.lora.alpha',
    });
    expect(codeOf(() => decode(lora({ alpha: 1, scale_rule: 'alpha_over_r' })))).toEqual({
      code: 'malformed',
      rule: 'encodings.lora.scale_rule',
    });
    expect(codeOf(() => decode(lora({ alpha: 1, target: 7 })))).toEqual({
      code: 'malformed',
      rule: 'encodings.lora.target',
    });
  });
});
