// Files written by the reference implementation (Python safetensors, see
// fixtures/safetensors/make_fixtures.py) and what the reference reads back from them.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import {
  checkShardIndex,
  isTensorFSError,
  parseSafetensorsHeader,
  parseShardIndex,
  type SafetensorsHeader,
  writeSafetensorsHeader,
  writeShardIndex,
} from '../src/index.js';

const DIR = join(import.meta.dirname, 'fixtures', 'safetensors');

interface FixtureTensor {
  name: string;
  dtype: string;
  shape: string[];
  data_offsets: [string, string];
  sha256: string;
}
interface Fixture {
  file: string;
  sha256: string;
  valid?: boolean;
  header_size?: number;
  metadata?: Record<string, string> | null;
  tensors?: FixtureTensor[];
  reproducible?: boolean;
  total_size?: string;
}

const manifest = JSON.parse(readFileSync(join(DIR, 'fixtures.json'), 'utf8')) as { fixtures: Fixture[] };
const read = (file: string) => new Uint8Array(readFileSync(join(DIR, file)));
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const files = manifest.fixtures.filter((f) => f.file.endsWith('.safetensors'));

describe('fixtures written by Python safetensors', () => {
  it('covers valid, invalid, reproducible and non-reproducible files', () => {
    expect(files.filter((f) => f.valid).length).toBeGreaterThanOrEqual(8);
    expect(files.some((f) => f.valid === false)).toBe(true);
    expect(files.some((f) => f.valid && !f.reproducible)).toBe(true);
  });

  for (const fixture of files) {
    const bytes = read(fixture.file);
    if (fixture.file !== 'multi-metadata.safetensors') {
      it(`${fixture.file}: bytes are the committed ones`, () => expect(sha256(bytes)).toBe(fixture.sha256));
    }
    if (!fixture.valid) {
      it(`${fixture.file}: rejected, as the reference rejects it`, () => {
        expectCodeSync(() => parseSafetensorsHeader(bytes), 'malformed', 'safetensors.R6');
      });
      continue;
    }
    it(`${fixture.file}: our parse agrees with what the reference reads`, () => {
      const h = parseSafetensorsHeader(bytes, { strict: true });
      expect(h.headerSize).toBe(fixture.header_size);
      expect(h.metadata === null ? null : Object.fromEntries(h.metadata)).toEqual(fixture.metadata);
      expect(
        h.tensors.map((t) => ({
          name: t.name,
          dtype: t.dtype,
          shape: t.shape.map(String),
          data_offsets: t.dataOffsets.map(String),
          sha256: sha256(bytes.subarray(t.byteOffset, t.byteOffset + t.byteLength)),
        })),
      ).toEqual(fixture.tensors);
      expect(h.tensors.map((t) => t.name)).toEqual(fixture.tensors!.map((t) => t.name));
    });
    if (fixture.reproducible) {
      it(`${fixture.file}: our writer reproduces the header bytes exactly`, () => {
        const h = parseSafetensorsHeader(bytes);
        const input = h.tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape }));
        // Shuffle the input: reference order must not depend on it.
        const shuffled = [...input.filter((_, i) => i % 2 === 1), ...input.filter((_, i) => i % 2 === 0)];
        const ours = writeSafetensorsHeader(shuffled, { metadata: h.metadata, order: 'reference' });
        expect(ours.bytes).toEqual(bytes.subarray(0, h.dataStart));
        expect(ours.tensors).toEqual(h.tensors);
        expect(writeSafetensorsHeader(h.tensors, { metadata: h.metadata }).bytes).toEqual(
          bytes.subarray(0, h.dataStart),
        );
      });
    }
  }

  it('multi-metadata.safetensors: same tensors whatever the metadata order; ours is sorted', () => {
    const bytes = read('multi-metadata.safetensors');
    const h = parseSafetensorsHeader(bytes);
    const ours = writeSafetensorsHeader(h.tensors, { metadata: h.metadata });
    const again = parseSafetensorsHeader(ours.bytes, { fileSize: ours.bytes.length + 8 });
    expect(again.tensors.map((t) => t.dataOffsets)).toEqual(h.tensors.map((t) => t.dataOffsets));
    expect([...again.metadata!.keys()]).toEqual(['alpha', 'ctl\u0001', 'format', 'mid', 'nl\nx', 'zeta', 'é/😊']);
  });
});

describe('sharded fixture (index written with json.dumps(indent=2, sort_keys=True))', () => {
  const indexBytes = read('sharded/model.safetensors.index.json');
  const index = parseShardIndex(indexBytes);
  const headers = new Map<string, SafetensorsHeader>(
    index.shards.map((s) => [s, parseSafetensorsHeader(read(`sharded/${s}`))]),
  );
  it('parses and cross-checks against the shards', () => {
    const entry = manifest.fixtures.find((f) => f.file.endsWith('index.json'))!;
    expect(index.totalSize).toBe(BigInt(entry.total_size!));
    expect(index.shards).toEqual(['model-00002-of-00002.safetensors', 'model-00001-of-00002.safetensors']);
    expect(() => checkShardIndex(index, headers)).not.toThrow();
  });
  it('our index writer reproduces the file byte for byte', () => {
    expect(writeShardIndex({ weightMap: index.weightMap, metadata: index.metadata })).toEqual(indexBytes);
  });
});

describe('the repository sample model (samples/, written by the reference writers)', () => {
  const root = join(import.meta.dirname, '..', '..', '..', 'samples');
  const model = new Uint8Array(readFileSync(join(root, 'tiny-model', 'model.safetensors')));
  it('our writer reproduces its header', () => {
    const h = parseSafetensorsHeader(model);
    expect(writeSafetensorsHeader(h.tensors, { metadata: h.metadata, order: 'reference' }).bytes).toEqual(
      model.subarray(0, h.dataStart),
    );
  });
  it('the two-shard text encoder checks out against its index', () => {
    const dir = join(root, 'tiny-model', 'diffusers', 'text_encoder');
    const index = parseShardIndex(new Uint8Array(readFileSync(join(dir, 'model.safetensors.index.json'))));
    const headers = new Map(
      index.shards.map((s) => [s, parseSafetensorsHeader(new Uint8Array(readFileSync(join(dir, s))))] as const),
    );
    expect(() => checkShardIndex(index, headers)).not.toThrow();
    expect(index.totalSize).toBe(224n);
  });
});

describe('hostile corpus with the reference verdicts (fixtures/safetensors/make_hostile.py)', () => {
  const corpus = JSON.parse(readFileSync(join(DIR, 'hostile.json'), 'utf8')) as {
    cases: { name: string; hex: string; reference: string; tensorfs: string | null; divergence: string | null }[];
  };
  it('has cases for every rule', () => {
    // The corpus names rules as spec/safetensors.md does (R7); errors carry them as safetensors.R7.
    const rules = new Set(corpus.cases.map((c) => fullRule(c.tensorfs)));
    for (const r of [
      'safetensors.R1',
      'safetensors.R3',
      'safetensors.R4',
      'safetensors.R5',
      'safetensors.R6',
      'safetensors.R7',
      'safetensors.R8',
      'safetensors.R9',
      'safetensors.R10',
      'safetensors.R12',
      'safetensors.R13',
      'safetensors.R14',
      'safetensors.R15',
      'safetensors.R16',
      'safetensors.R17',
      'safetensors.S1',
    ]) {
      expect(rules.has(r), r).toBe(true);
    }
  });
  for (const c of corpus.cases) {
    it(`${c.name}: ${c.tensorfs ?? 'accepted'}; reference ${c.reference === 'ok' ? 'accepts' : 'rejects'}`, () => {
      const bytes = new Uint8Array(Buffer.from(c.hex, 'hex'));
      let rule: string | null = null;
      try {
        parseSafetensorsHeader(bytes);
      } catch (error) {
        if (!isTensorFSError(error)) throw error;
        rule = error.details.rule as string;
      }
      expect(rule).toBe(fullRule(c.tensorfs));
      // Same verdict as the reference, except where a documented divergence says otherwise.
      expect((rule === null) === (c.reference === 'ok')).toBe(c.divergence === null);
    });
  }
  it('strict mode: framing errors become S2, unknown fields S3, everything else as in default mode', () => {
    const strictOnly: Record<string, string> = {
      'leading JSON whitespace': 'safetensors.S2',
      'trailing JSON whitespace': 'safetensors.S2',
      'unknown descriptor field': 'safetensors.S3',
      'R10 125 nested arrays in an unknown field': 'safetensors.S3',
      'R10 126 nested arrays in an unknown field': 'safetensors.S3',
      'R6 N = 0': 'safetensors.S2',
      'R6 BOM': 'safetensors.S2',
      'R6 root array': 'safetensors.S2',
      'R6 NUL padding': 'safetensors.S2',
      'R6 VT padding': 'safetensors.S2',
      'R6 second value': 'safetensors.S2',
      'S1 duplicate unknown field': 'safetensors.S3',
    };
    for (const c of corpus.cases) {
      const bytes = new Uint8Array(Buffer.from(c.hex, 'hex'));
      let rule: string | null = null;
      try {
        parseSafetensorsHeader(bytes, { strict: true });
      } catch (error) {
        rule = (error as { details: { rule: string } }).details.rule;
      }
      const expected = strictOnly[c.name] ?? fullRule(c.tensorfs);
      expect(rule, c.name).toBe(expected);
    }
  });
});

/** A corpus rule name (`R7`, or null for accepted) as errors carry it (`safetensors.R7`). */
function fullRule(rule: string | null): string | null {
  return rule === null ? null : `safetensors.${rule}`;
}

describe('differential: 400 seeded mutations with the reference verdict (mutations.json)', () => {
  const corpus = JSON.parse(readFileSync(join(DIR, 'mutations.json'), 'utf8')) as {
    cases: { hex: string; reference: string; tensors?: [string, string, string[]][] }[];
  };
  it('we accept exactly what the reference accepts, and see the same tensors', () => {
    const disagreements: string[] = [];
    let accepted = 0;
    for (const c of corpus.cases) {
      const bytes = new Uint8Array(Buffer.from(c.hex, 'hex'));
      let rule: string | null = null;
      let ours: [string, string, string[]][] = [];
      try {
        const h = parseSafetensorsHeader(bytes);
        ours = h.tensors.map((t): [string, string, string[]] => [t.name, t.dtype, t.shape.map(String)]);
        // Python sorted() the reference's list by code point, which is UTF-8 byte order.
        ours.sort((a, b) => Buffer.compare(Buffer.from(a[0]), Buffer.from(b[0])));
        accepted++;
      } catch (error) {
        if (!isTensorFSError(error)) throw error;
        rule = error.details.rule as string;
      }
      const referenceAccepts = c.reference === 'ok';
      if (referenceAccepts && rule === null) {
        if (JSON.stringify(ours) !== JSON.stringify(c.tensors)) disagreements.push(`different tensors: ${c.hex}`);
      } else if (referenceAccepts !== (rule === null)) {
        // The documented divergences: we reject duplicate keys (S1) the reference lets through.
        if (!(referenceAccepts && rule === 'safetensors.S1'))
          disagreements.push(`${rule ?? 'accepted'} vs ${c.reference}: ${c.hex}`);
      }
    }
    expect(disagreements).toEqual([]);
    expect(accepted).toBeGreaterThan(10);
  });
});
