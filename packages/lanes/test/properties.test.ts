import { isTensorFSError } from '@tensorfs/format';
import { bind, type CandidateTensor, defaultCatalog } from '@tensorfs/lanes';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { exactCandidate, variants } from './variants.js';

const cat = defaultCatalog();

describe('bind on hostile input', () => {
  const lane = cat.lane('phi-3-mini+int8-rowwise');
  const names = exactCandidate(cat, lane).model!.map((t) => t.name);
  const tensor = fc.record({
    name: fc.oneof(fc.constantFrom(...names), fc.string({ maxLength: 12 })),
    dtype: fc.constantFrom('F32', 'BF16', 'F16', 'I8', 'U8', 'F8_E4M3', 'Q8_0', 'Q4_K', 'F64', 'NOPE', ''),
    shape: fc.array(
      fc.oneof(fc.nat(10_000), fc.constantFrom(3072, 9216, 8192, 16384, -1, 1.5, Number.MAX_SAFE_INTEGER + 2)),
      { maxLength: 4 },
    ),
  });
  it('answers a verdict or throws a TensorFSError, never anything else', () => {
    fc.assert(
      fc.property(fc.array(tensor, { maxLength: 40 }), fc.boolean(), (ts, withLayout) => {
        const cand = withLayout ? [...exactCandidate(cat, lane).model!.slice(0, 150), ...ts] : ts;
        try {
          const r = bind({ model: cand as CandidateTensor[] }, lane, cat);
          expect(['admit', 'derivable', 'refuse']).toContain(r.verdict);
          if (r.verdict === 'refuse') expect(r.refuse?.rule).toMatch(/^lanes\./);
        } catch (e) {
          expect(isTensorFSError(e)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('derivable answers account for every difference', () => {
  it('every candidate tensor not already in the layout is read by a step, every missing layout tensor is written by one', () => {
    const problems: string[] = [];
    for (const t of cat.topologies.values())
      for (const r of cat.rules.values()) {
        const lane = cat.lane(`${t.name}@${t.version}+${r.name}@${r.version}`);
        const layout = cat.layout(lane);
        for (const v of variants(cat, lane)) {
          const res = bind(v.candidate, lane, cat, v.conventions ? { conventions: v.conventions } : {});
          if (res.verdict !== 'derivable') continue;
          const read = new Set(res.steps.flatMap((s) => s.tensors.flatMap((x) => x.from)));
          const written = new Set(res.steps.flatMap((s) => s.tensors.flatMap((x) => x.to)));
          for (const [c, ts] of Object.entries(v.candidate)) {
            const comp = layout.components[c]!;
            for (const x of ts) {
              const p = comp.byName.get(x.name);
              const fine = p && p.shape.join() === x.shape.join() && p.dtypes.includes(x.dtype);
              if (!fine && !read.has(x.name))
                problems.push(`${res.lane} ${v.name}: ${x.name} differs and no step reads it`);
            }
            const have = new Map(ts.map((x) => [x.name, x]));
            for (const p of comp.byName.values()) {
              const x = have.get(p.name);
              const fine = x && p.shape.join() === x.shape.join() && p.dtypes.includes(x.dtype);
              if (!fine && !written.has(p.name))
                problems.push(`${res.lane} ${v.name}: ${p.name} is not produced by any step`);
            }
          }
          const tiers = res.steps.map((s) => s.tier);
          for (const s of res.steps) {
            if ((s.tier === 'T1' || s.tier === 'T2') && s.newBytes !== 0)
              problems.push(`${res.lane} ${v.name}: ${s.tier} stores bytes`);
            if (s.tier === 'T4' && s.op === 'quantize' && !s.lossy)
              problems.push(`${res.lane} ${v.name}: a lossless quantization`);
          }
          if (tiers.length === 0) problems.push(`${res.lane} ${v.name}: derivable without steps`);
        }
      }
    expect(problems.slice(0, 20)).toEqual([]);
  });
});
