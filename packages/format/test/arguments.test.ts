// Wrong-typed arguments to public functions are invalid_argument, never a plain TypeError (issue 11).
import * as format from '@tensorfs/format';
import { expectCode, expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const file = (records: unknown[]) => ({
  entries: [{ path: 'a', kind: 'file', mode: 0o644, size: 0, profile: 'blob-v1', records }],
});
const nullSource = { size: 100, read: async () => null as unknown as Uint8Array };

const CASES: [string, () => unknown][] = [
  ['encodeManifest with records: [null]', () => format.encodeManifest(file([null]) as never)],
  ['encodeManifest(null)', () => format.encodeManifest(null as never)],
  ['decodeManifest(null)', () => format.decodeManifest(null as never)],
  ['manifestId(null, fn)', () => format.manifestId(null as never, () => new Uint8Array(32))],
  ['manifestId(bytes, null)', () => format.manifestId(new Uint8Array(1), null as never)],
  ['manifestToJSON(null)', () => format.manifestToJSON(null as never)],
  ['sortManifestEntries([null, null])', () => format.sortManifestEntries([null, null] as never)],
  ['decodeCbor(null)', () => format.decodeCbor(null as never)],
  ['objectIdFromDigest(null)', () => format.objectIdFromDigest(null as never)],
  ['parseSafetensorsHeader(null)', () => format.parseSafetensorsHeader(null as never)],
  ['readSafetensorsHeader(null)', () => format.readSafetensorsHeader(null as never)],
  ['readSafetensorsHeader over a source resolving null', () => format.readSafetensorsHeader(nullSource)],
  ['parseGgufHeader(null)', () => format.parseGgufHeader(null as never)],
  ['readGgufHeader(null)', () => format.readGgufHeader(null as never)],
  ['readGgufHeader over a source resolving null', () => format.readGgufHeader(nullSource)],
  ['writeGgufHeader({})', () => format.writeGgufHeader({} as never)],
  ['writeGgufHeader(null)', () => format.writeGgufHeader(null as never)],
  ['writeGguf(null)', () => format.writeGguf(null as never)],
  ['ggmlTensorGeometry(0, null)', () => format.ggmlTensorGeometry(0, null as never)],
  ['safetensorsByteLength(F32, null)', () => format.safetensorsByteLength('F32', null as never)],
  ['parseShardIndex(null)', () => format.parseShardIndex(null as never)],
  ['checkShardIndex(null, null)', () => format.checkShardIndex(null as never, null as never)],
  ['writeShardIndex(null)', () => format.writeShardIndex(null as never)],
  ['codecForPath(5)', () => format.codecForPath(5 as never)],
  ['readContainerHeader(null)', () => format.readContainerHeader(null as never)],
  ['readContainerHeader over a source resolving null', () => format.readContainerHeader(nullSource)],
];

describe('wrong-typed arguments', () => {
  it.each(CASES)('%s is invalid_argument', async (_name, call) => {
    const error = await expectCode(call, 'invalid_argument');
    expect(error.details.rule).toMatch(/^[a-z]+\.(argument|contract|shape|record_shape)$/);
  });
});

describe('GGUF UTF-8 errors', () => {
  it('keep the decoder error as the cause, not as a string in details', () => {
    // One KV whose key is the overlong encoding of NUL (C0 80).
    const bytes = new Uint8Array([
      ...[0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0],
      ...[0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0],
      ...[2, 0, 0, 0, 0, 0, 0, 0, 0xc0, 0x80],
      ...[4, 0, 0, 0, 1, 0, 0, 0],
    ]);
    const error = expectCodeSync(() => format.parseGgufHeader(bytes), 'malformed', 'gguf.utf8');
    expect(error.details).not.toHaveProperty('cause');
    expect(JSON.stringify(error.toJSON())).not.toContain('TypeError');
    expect(error.cause).toBeInstanceOf(TypeError);
  });
});
