/**
 * The v1 golden manifest vectors (vectors/v1/manifests.json, encoded by vectors/generate.py with the
 * generators' own canonical CBOR encoder, vectors/canonical_cbor.py, and hashed with Python's hashlib).
 */
import {
  compareBytes,
  comparePaths,
  decodeManifest,
  encodeManifest,
  sortManifestEntries,
  fromHex,
  type ErrorCode,
  type Manifest,
  manifestToJSON,
  toHex,
} from '@tensorfs/format';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const root = new URL('../../../', import.meta.url);
const vectors: {
  valid: { name: string; manifest: { version: 1 } & Manifest; hex: string; id: string }[];
  invalid: { name: string; hex: string; code: ErrorCode; rule: string }[];
} = JSON.parse(readFileSync(new URL('vectors/v1/manifests.json', root), 'utf8'));
const schema = JSON.parse(readFileSync(new URL('spec/v1/manifest.schema.json', root), 'utf8'));
const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);

describe('v1 manifest vectors', () => {
  it.each(vectors.valid.map((v) => [v.name, v] as const))('%s encodes, decodes and hashes exactly', (_name, v) => {
    const bytes = encodeManifest({ entries: v.manifest.entries });
    expect(toHex(bytes)).toBe(v.hex);
    expect(`sha256:${createHash('sha256').update(bytes).digest('hex')}`).toBe(v.id);
    const back = decodeManifest(fromHex(v.hex));
    expect(manifestToJSON(back)).toEqual(v.manifest);
    expect(validate(v.manifest), JSON.stringify(validate.errors)).toBe(true);
  });

  it.each(vectors.invalid.map((v) => [v.name, v] as const))('%s is rejected', (_name, v) => {
    expectCodeSync(() => decodeManifest(fromHex(v.hex)), v.code, v.rule);
  });

  it('path-order: sorting the entries, in any starting order, gives the vector order (UTF-8 bytes)', () => {
    const ordered = vectors.valid.find((v) => v.name === 'path-order')!.manifest.entries;
    const paths = ordered.map((e) => e.path);
    const utf8 = new TextEncoder();
    for (let i = 1; i < paths.length; i++) {
      expect(compareBytes(utf8.encode(paths[i - 1]!), utf8.encode(paths[i]!)), paths[i]).toBeLessThan(0);
      expect(comparePaths(paths[i - 1]!, paths[i]!), paths[i]).toBeLessThan(0);
    }
    for (const shuffled of [[...ordered].reverse(), [...ordered].sort((a, b) => (a.path < b.path ? -1 : 1))]) {
      expect(sortManifestEntries(shuffled).map((e) => e.path)).toEqual(paths);
      expect(toHex(encodeManifest({ entries: sortManifestEntries(shuffled) }))).toBe(
        vectors.valid.find((v) => v.name === 'path-order')!.hex,
      );
    }
  });

  it('the schema rejects what the shape rules forbid', () => {
    const good = vectors.valid.find((v) => v.name === 'every-kind')!.manifest;
    const file = good.entries.find((e) => e.kind === 'file')!;
    const bad = [
      { version: 2, entries: [] },
      { version: 1, entries: [{ ...file, mode: 0o600 }] },
      { version: 1, entries: [{ ...file, path: '../x' }] },
      { version: 1, entries: [{ ...file, path: '/x' }] },
      { version: 1, entries: [{ ...file, path: 'a//b' }] },
      { version: 1, entries: [{ ...file, mtime: 0 }] },
      { version: 1, entries: [{ path: 'l', kind: 'symlink', target: '/etc' }] },
      { version: 1, entries: [{ path: 'd', kind: 'dir' }] },
    ];
    for (const m of bad) expect(validate(m), JSON.stringify(m)).toBe(false);
  });
});
