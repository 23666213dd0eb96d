/**
 * The v1 cozytensors vectors (vectors/v1/cozytensors/headers.json, encoded by
 * vectors/cozytensors.py with the generators' own canonical CBOR encoder, vectors/canonical_cbor.py, and hashed with Python's hashlib).
 */
import {
  type CheckpointHeader,
  checkpointReferences,
  checkpointToJSON,
  decodeCheckpoint,
  encodeCheckpoint,
} from '@tensorfs/format/cozytensors';
import { type ErrorCode, fromHex, toHex } from '@tensorfs/format';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const root = new URL('../../../', import.meta.url);
const vectors: {
  valid: { name: string; header: CheckpointHeader & { version: 1 }; hex: string; id: string }[];
  invalid: { name: string; hex: string; code: ErrorCode; rule: string }[];
} = JSON.parse(readFileSync(new URL('vectors/v1/cozytensors/headers.json', root), 'utf8'));
const schema = JSON.parse(readFileSync(new URL('spec/v1/cozytensors.schema.json', root), 'utf8'));
const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);
const sha = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

describe('v1 cozytensors vectors', () => {
  it('has the vectors the spec promises', () => {
    expect(vectors.valid.map((v) => v.name)).toEqual(['empty', 'pipeline', 'encoded', 'json-numbers', 'split-64mib']);
    expect(vectors.invalid.length).toBeGreaterThanOrEqual(50);
  });

  it.each(vectors.valid.map((v) => [v.name, v] as const))('%s encodes, decodes and hashes exactly', (_name, v) => {
    const bytes = encodeCheckpoint(v.header);
    expect(toHex(bytes)).toBe(v.hex);
    expect(sha(bytes)).toBe(v.id);
    const back = decodeCheckpoint(fromHex(v.hex));
    expect(checkpointToJSON(back)).toEqual(v.header);
    expect(toHex(encodeCheckpoint(back))).toBe(v.hex);
    expect(validate(v.header), JSON.stringify(validate.errors)).toBe(true);
    // The committed .cozytensors file is the same bytes.
    const file = readFileSync(new URL(`vectors/v1/cozytensors/${v.name}.cozytensors`, root));
    expect(toHex(new Uint8Array(file))).toBe(v.hex);
  });

  it.each(vectors.invalid.map((v) => [v.name, v] as const))('%s is rejected', (_name, v) => {
    expectCodeSync(() => decodeCheckpoint(fromHex(v.hex)), v.code, v.rule);
  });

  it('pins the order of components, tensors and the 64 MiB cut', () => {
    const pipeline = vectors.valid.find((v) => v.name === 'pipeline')!.header;
    expect(pipeline.components.map((c) => c.name)).toEqual(['scheduler', 'text_encoder', 'tokenizer', 'unet', 'aaa']);
    const split = vectors.valid.find((v) => v.name === 'split-64mib')!.header;
    expect(split.components[0]!.tensors[0]!.records!.map((r) => r.length)).toEqual([64 * 1024 * 1024, 4]);
  });

  it('lists every referenced object once (the reference decoder)', () => {
    const v = vectors.valid.find((x) => x.name === 'pipeline')!;
    const refs = checkpointReferences(fromHex(v.hex));
    const expected = new Set<string>([v.header.source!]);
    for (const c of v.header.components) {
      for (const t of c.tensors) for (const r of t.records ?? []) expected.add(r.digest);
      for (const a of c.assets) for (const r of a.records) expected.add(r.digest);
    }
    expect(refs).toEqual([...expected]);
    const enc = vectors.valid.find((x) => x.name === 'encoded')!;
    expect(checkpointReferences(fromHex(enc.hex))).toHaveLength(5);
  });

  it('the schema rejects what the shape rules forbid', () => {
    const good = vectors.valid.find((v) => v.name === 'pipeline')!.header;
    const c = good.components[1]!;
    const t = c.tensors[0]!;
    const bad = [
      { ...good, version: 2 },
      { ...good, created: 0 },
      { ...good, source: 'sha256:00' },
      { ...good, components: [{ ...c, name: 'a/b' }] },
      { ...good, components: [{ ...c, name: '..' }] },
      { ...good, components: [{ ...c, assets: [{ name: '../x', records: [] }] }] },
      { ...good, components: [{ ...c, assets: [{ name: '/etc/passwd', records: [] }] }] },
      { ...good, components: [{ ...c, assets: [{ name: 'a\u0000b', records: [] }] }] },
      { ...good, components: [{ ...c, tensors: [{ ...t, dtype: 'F128' }] }] },
      { ...good, components: [{ ...c, tensors: [{ ...t, encoding: { scheme: 's', params: null, parts: {} } }] }] },
      { ...good, components: [{ ...c, tensors: [{ ...t, records: [{ digest: t.records![0]!.digest, length: 0 }] }] }] },
    ];
    for (const h of bad) expect(validate(h), JSON.stringify(h).slice(0, 200)).toBe(false);
  });
});
