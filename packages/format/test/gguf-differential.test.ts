// Differential test: @huggingface/gguf (a peer reader) reads the files we write, and the gguf-py
// fixtures, exactly as we do.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gguf } from '@huggingface/gguf';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { GGUF_VALUE_TYPES, type GgufHeader, type GgufKV, parseGgufHeader, writeGgufHeader } from '../src/index.js';
import { writeOptionsArbitrary } from './gguf.helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tensorfs-gguf-diff-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What the peer reports, in its own terms, for the fields both readers have. */
async function peer(path: string) {
  const r = await gguf(path, { allowLocalFile: true, typedMetadata: true });
  const { version, tensor_count, kv_count, ...rest } = r.typedMetadata as unknown as Record<
    string,
    { value: unknown; type: number; subType?: number }
  >;
  return {
    version: version!.value,
    tensorCount: tensor_count!.value,
    kvCount: kv_count!.value,
    littleEndian: r.littleEndian,
    metadata: Object.entries(rest).map(([key, v]) => ({ key, ...v })),
    tensors: r.tensorInfos.map((t) => ({
      name: t.name,
      n_dims: t.n_dims,
      shape: t.shape,
      dtype: t.dtype,
      offset: t.offset,
    })),
    tensorDataOffset: r.tensorDataOffset,
    tensorInfoByteRange: r.tensorInfoByteRange,
  };
}

/** Our header in the peer's terms. */
function ours(h: GgufHeader) {
  const typeId = (t: string) => GGUF_VALUE_TYPES.indexOf(t as (typeof GGUF_VALUE_TYPES)[number]);
  const kv = (m: GgufKV) =>
    typeof m.value === 'object'
      ? { key: m.key, value: m.value.items, type: 9, subType: typeId(m.value.itemType) }
      : { key: m.key, value: m.value, type: typeId(m.type) };
  return {
    version: h.version,
    tensorCount: BigInt(h.tensors.length),
    kvCount: BigInt(h.metadata.length),
    littleEndian: h.endianness === 'little',
    metadata: h.metadata.map(kv),
    tensors: h.tensors.map((t) => ({
      name: t.name,
      n_dims: t.dims.length,
      shape: t.dims,
      dtype: t.type,
      offset: t.offset,
    })),
    tensorDataOffset: BigInt(h.dataStart),
    tensorInfoByteRange: [h.tensorInfoBlock.offset, h.tensorInfoBlock.offset + h.tensorInfoBlock.length],
  };
}

/**
 * The peer returns metadata as a plain object: integer-like keys would be reordered and a `__proto__`
 * key would set its prototype instead of adding an entry, so files with such keys are not compared.
 */
const peerSafeKey = (key: string) => !/^\d+$/.test(key) && key !== '__proto__';
const peerSafeOptions = writeOptionsArbitrary.filter((o) => o.metadata.every((kv) => peerSafeKey(kv.key)));

let n = 0;
async function compare(file: Uint8Array): Promise<void> {
  const path = join(dir, `f${n++}.gguf`);
  writeFileSync(path, file);
  expect(await peer(path)).toEqual(ours(parseGgufHeader(file)));
}

describe('differential against @huggingface/gguf', () => {
  it('reads the gguf-py fixtures the same way', async () => {
    for (const name of ['all-types-le', 'all-types-be', 'align64', 'vocab-only']) {
      await compare(new Uint8Array(readFileSync(join(import.meta.dirname, 'fixtures', 'gguf', `${name}.gguf`))));
    }
  });

  it('reads every file our writer makes the same way', async () => {
    await fc.assert(
      fc.asyncProperty(peerSafeOptions, async (o) => {
        const { bytes, header } = writeGgufHeader(o);
        const file = new Uint8Array(header.fileSize);
        file.set(bytes);
        await compare(file);
      }),
      { numRuns: 60 },
    );
  });

  it('reads every mutated file we accept the same way', async () => {
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(peerSafeOptions, fc.nat(), fc.integer({ min: 0, max: 255 }), async (o, at, value) => {
        const { bytes, header } = writeGgufHeader(o);
        const file = new Uint8Array(header.fileSize);
        file.set(bytes);
        file[at % bytes.length] = value;
        let h: GgufHeader;
        try {
          h = parseGgufHeader(file);
        } catch {
          return; // rejected: the peer validates less, so there is nothing to compare
        }
        if (h.metadata.some((kv) => !peerSafeKey(kv.key))) return;
        // The peer caps each dim at 2^32 (its MAX_TENSOR_DIM); we accept up to 2^63 - 1 as ggml does,
        // which a mutation can produce in a zero-element tensor.
        if (h.tensors.some((t) => t.dims.some((d) => d > 1n << 32n))) return;
        // A file with no tensors may end right after its tensor infos (llama.cpp vocabulary files):
        // our data start is then the file's end, the peer's the padded offset past it.
        if (h.tensors.length === 0 && h.dataStart % h.alignment !== 0) return;
        accepted++;
        await compare(file);
      }),
      { numRuns: 150 },
    );
    expect(accepted).toBeGreaterThan(10);
  });
});
