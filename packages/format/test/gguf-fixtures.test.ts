// Files written by gguf-py's GGUFWriter (fixtures/gguf/generate.py), checked against what the script wrote
// and what gguf-py's GGUFReader read back (the *.expected.json beside each file).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GGML_TYPES, type GgufScalar, parseGgufHeader, writeGgufHeader } from '../src/index.js';

const DIR = join(import.meta.dirname, 'fixtures', 'gguf');
const FIXTURES = ['all-types-le', 'all-types-be', 'align64', 'vocab-only'];

interface Expected {
  version: number;
  endianness: string;
  alignment: number;
  file_size: number;
  sha256: string;
  metadata: { key: string; type: string; itemType?: string; value: unknown }[];
  tensors: {
    name: string;
    type: string;
    dims: number[];
    byte_offset: number;
    byte_length: number;
    data_sha256: string;
  }[];
}

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
/** Our value in the JSON form the script used (64-bit integers as decimal strings). */
const plain = (v: GgufScalar) => (typeof v === 'bigint' ? v.toString() : v);

describe('gguf-py fixtures', () => {
  for (const name of FIXTURES) {
    it(`parses ${name}.gguf exactly as gguf-py wrote it`, () => {
      const bytes = new Uint8Array(readFileSync(join(DIR, `${name}.gguf`)));
      const expected = JSON.parse(readFileSync(join(DIR, `${name}.expected.json`), 'utf8')) as Expected;
      expect(sha256(bytes)).toBe(expected.sha256);
      const h = parseGgufHeader(bytes);
      expect([h.version, h.endianness, h.alignment, h.fileSize]).toEqual([
        expected.version,
        expected.endianness,
        expected.alignment,
        expected.file_size,
      ]);
      expect(
        h.metadata.map((kv) =>
          typeof kv.value === 'object'
            ? { key: kv.key, type: kv.type, itemType: kv.value.itemType, value: kv.value.items.map(plain) }
            : { key: kv.key, type: kv.type, value: plain(kv.value) },
        ),
      ).toEqual(expected.metadata);
      expect(
        h.tensors.map((t) => ({
          name: t.name,
          type: t.typeName,
          dims: t.dims.map(Number),
          byte_offset: t.byteOffset,
          byte_length: t.byteLength,
          data_sha256: sha256(bytes.subarray(t.byteOffset, t.byteOffset + t.byteLength)),
        })),
      ).toEqual(expected.tensors);
      // Our writer re-creates gguf-py's header byte for byte, from values and from the verbatim KV block.
      const tensors = h.tensors.map((t) => ({ name: t.name, type: t.type, dims: t.dims }));
      const again = writeGgufHeader({ endianness: h.endianness, metadata: h.metadata, tensors });
      expect(again.bytes).toEqual(bytes.subarray(0, h.dataStart));
      const { offset, length } = h.metadataBlock;
      const raw = { raw: bytes.subarray(offset, offset + length), count: h.metadata.length };
      expect(writeGgufHeader({ endianness: h.endianness, metadata: raw, tensors }).bytes).toEqual(
        bytes.subarray(0, h.dataStart),
      );
    });
  }

  it("agrees with gguf-py's type table (except Q8_1, where gguf-py 0.19 says 40 bytes and ggml's struct is 36)", () => {
    const table = JSON.parse(readFileSync(join(DIR, 'ggml-types.expected.json'), 'utf8')) as {
      types: { id: number; name: string; block_size: number; type_size: number }[];
    };
    expect(table.types.length).toBeGreaterThan(30);
    for (const t of table.types) {
      const ours = GGML_TYPES[t.id]!;
      expect(ours.name).toBe(t.name);
      expect(ours.blockSize).toBe(t.block_size);
      if (t.name !== 'Q8_1') expect(ours.typeSize).toBe(t.type_size);
    }
    expect(table.types.find((t) => t.name === 'Q8_1')?.type_size).toBe(40);
    // gguf-py lists every id we do not mark removed, except Q2_0 (42), newer than gguf-py 0.19.
    const pyIds = new Set(table.types.map((t) => t.id));
    expect(GGML_TYPES.filter((t) => !t.removed && !pyIds.has(t.id)).map((t) => t.name)).toEqual(['Q2_0']);
  });
});
