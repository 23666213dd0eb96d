/**
 * spec/v2/baselines/: the engine's answers over the whole catalog (every topology x rule x
 * candidate variant). This test reproduces every answer or fails listing each difference.
 * Regenerate deliberately with scripts/lanes/update-baselines.sh (LANES_UPDATE_BASELINES=1).
 */
import fs from 'node:fs';
import path from 'node:path';
import { type BindResult, bind, documentDigest, loadCatalog } from '@tensorfs/lanes';
import { describe, expect, it } from 'vitest';
import { readJson, specCatalog, V2 } from './helpers.js';
import { variants } from './variants.js';

function summary(r: BindResult): Record<string, unknown> {
  return {
    verdict: r.verdict,
    source: r.source,
    lossy: r.lossy,
    newBytes: r.newBytes,
    steps: r.steps.map((s) => ({
      tier: s.tier,
      op: s.op,
      via: s.via,
      lossy: s.lossy,
      tensors: s.tensors.length,
      bytes: s.bytes,
      newBytes: s.newBytes,
    })),
    refuse: r.refuse && {
      rule: r.refuse.rule,
      tensor: r.refuse.tensor,
      expected: r.refuse.expected,
      actual: r.refuse.actual,
      against: r.refuse.against,
    },
    digest: documentDigest(JSON.parse(JSON.stringify(r))),
  };
}

describe('baselines', () => {
  const cat = loadCatalog(specCatalog());
  const dir = path.join(V2, 'baselines');
  it('reproduces every banked answer', () => {
    const answers: Record<string, Record<string, Record<string, unknown>>> = {};
    for (const t of cat.topologies.values()) {
      const out: Record<string, Record<string, unknown>> = {};
      for (const r of cat.rules.values()) {
        const lane = { topology: `${t.name}@${t.version}` as const, rule: `${r.name}@${r.version}` as const };
        for (const v of variants(cat, lane))
          out[`${lane.topology}+${lane.rule} ${v.name}`] = summary(
            bind(v.candidate, lane, cat, v.conventions ? { conventions: v.conventions } : {}),
          );
      }
      answers[`${t.name}@${t.version}`] = out;
    }
    if (process.env.LANES_UPDATE_BASELINES === '1') {
      fs.mkdirSync(dir, { recursive: true });
      for (const [t, out] of Object.entries(answers))
        fs.writeFileSync(path.join(dir, `${t}.json`), `${JSON.stringify(out, null, 1)}\n`);
    }
    const diffs: string[] = [];
    let count = 0;
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
    expect(files.sort()).toEqual(
      Object.keys(answers)
        .map((t) => `${t}.json`)
        .sort(),
    );
    for (const [t, out] of Object.entries(answers)) {
      const banked = readJson(path.join(dir, `${t}.json`)) as Record<string, Record<string, unknown>>;
      for (const k of new Set([...Object.keys(banked), ...Object.keys(out)])) {
        count++;
        const a = banked[k];
        const b = out[k];
        if (!a) diffs.push(`${k}: new answer ${String(b?.verdict)}`);
        else if (!b) diffs.push(`${k}: banked ${String(a.verdict)}, no longer produced`);
        else
          for (const f of new Set([...Object.keys(a), ...Object.keys(b)]))
            if (JSON.stringify(a[f]) !== JSON.stringify(b[f]))
              diffs.push(`${k}: ${f} was ${JSON.stringify(a[f])}, now ${JSON.stringify(b[f])}`);
      }
    }
    expect(diffs).toEqual([]);
    expect(count).toBeGreaterThan(500);
  });
});
