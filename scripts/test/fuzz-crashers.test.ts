import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import * as fmt from '@tensorfs/format';
import * as cozy from '@tensorfs/format/cozytensors';
import * as enc from '@tensorfs/format/encodings';
import { describe, expect, it } from 'vitest';
import { makeGenerator, makeJsonGenerator } from '../fuzz/mutate.mjs';
import { makeTargets, PARSERS, ROOT, seedsFor } from '../fuzz/targets.mjs';

type FuzzTarget = (bytes: Uint8Array) => Promise<unknown>;

// Replays the fuzz campaign's saved crashers (and its seeds, and a short slice of its mutated
// inputs) through the same targets `pnpm fuzz` uses, on source: each input parses or throws a
// TensorFSError, within the campaign's per-input bound.
const LIMIT_MS = 1000;
const CRASHERS = join(ROOT, 'packages/format/test/fixtures/fuzz-crashers');
const targets: Record<string, FuzzTarget> = makeTargets(fmt, enc, cozy);

async function outcome(target: FuzzTarget, bytes: Uint8Array): Promise<{ ok: boolean; ms: number; what: string }> {
  const t0 = performance.now();
  try {
    const r = await target(bytes);
    return { ok: true, ms: performance.now() - t0, what: r === 'skipped' ? 'skipped' : 'accepted' };
  } catch (e) {
    return {
      ok: fmt.isTensorFSError(e),
      ms: performance.now() - t0,
      what: fmt.isTensorFSError(e) ? e.code : String(e),
    };
  }
}

function crashersOf(parser: string): Array<[string, Uint8Array]> {
  const dir = join(CRASHERS, parser);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => n.endsWith('.bin'))
    .sort()
    .map((n) => [n, new Uint8Array(readFileSync(join(dir, n)))]);
}

describe('fuzz crashers and seeds: parse or TensorFSError', () => {
  it('has a target and at least one seed per parser', () => {
    expect([...PARSERS].sort()).toEqual(Object.keys(targets).sort());
    for (const p of PARSERS) expect(seedsFor(p).length).toBeGreaterThan(0);
    // Only parser directories live under fuzz-crashers.
    for (const n of readdirSync(CRASHERS)) if (n !== 'README.md') expect(PARSERS).toContain(n);
  });

  for (const parser of PARSERS) {
    const target = targets[parser] as FuzzTarget;

    it(`${parser}: every saved crasher parses or throws a TensorFSError in time`, async () => {
      for (const [name, bytes] of crashersOf(parser)) {
        const r = await outcome(target, bytes);
        expect({ name, ok: r.ok, what: r.what }).toEqual({ name, ok: true, what: r.what });
        expect(r.ms).toBeLessThan(LIMIT_MS);
      }
    });

    it(`${parser}: every seed, and 500 mutated inputs, parse or throw a TensorFSError`, async () => {
      const seeds = seedsFor(parser);
      const gen = (parser === 'encodings' || parser === 'shard-index' ? makeJsonGenerator : makeGenerator)(
        parser,
        seeds,
        'test',
      );
      const outcomes = new Set<string>();
      const inputs = [...seeds, ...Array.from({ length: 500 }, (_, i) => gen(i))];
      for (const [i, bytes] of inputs.entries()) {
        const r = await outcome(target, bytes);
        outcomes.add(r.what);
        expect({ i, ok: r.ok, what: r.what }).toEqual({ i, ok: true, what: r.what });
      }
      // The corpus exercises both sides: some inputs are accepted, some rejected as malformed.
      expect(outcomes).toContain('accepted');
      expect(outcomes).toContain('malformed');
    });
  }
});
