// Wrong-typed arguments to public functions are invalid_argument, never a plain TypeError (issue 11).
import * as format from '@tensorfs/format';
import * as encodings from '@tensorfs/format/encodings';
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

/** [name, call, rule, details.argument (when the rule is `<area>.argument`)] */
const EXACT: [string, () => unknown, string, string?][] = [
  ['TensorFSError with an unknown code', () => new format.TensorFSError('nope' as never, 'x'), 'errors.code'],
  ['toHex(null)', () => format.toHex(null as never), 'ids.argument', 'bytes'],
  ['fromHex(5)', () => format.fromHex(5 as never), 'ids.argument', 'hex'],
  ['parseObjectId(null-prototype object)', () => format.parseObjectId(Object.create(null)), 'ids.object_id'],
  ['digestFromObjectId({})', () => format.digestFromObjectId({} as never), 'ids.object_id'],
  ['digestInto(null, bytes)', () => format.digestInto(null as never, new Uint8Array(32)), 'ids.argument'],
  ['digestInto(id, 8 bytes)', () => format.digestInto(`sha256:${'0'.repeat(64)}`, new Uint8Array(8)), 'ids.argument'],
  ['jsonInteger(1.5)', () => format.jsonInteger(1.5), 'json.argument'],
  ['jsonInteger(NaN)', () => format.jsonInteger(Number.NaN), 'json.argument'],
  ['jsonInteger(undefined)', () => format.jsonInteger(undefined as never), 'json.argument'],
  ['bytesSource(null)', () => format.bytesSource(null as never), 'source.argument', 'bytes'],
  ['readFully(null, 0, 1)', () => format.readFully(null as never, 0, 1), 'source.argument'],
  [
    'readInto(source, 0, null)',
    () => format.readInto(format.bytesSource(new Uint8Array(4)), 0, null as never),
    'source.argument',
    'target',
  ],
  [
    'readFully(source, NaN, 1)',
    () => format.readFully(format.bytesSource(new Uint8Array(4)), Number.NaN, 1),
    'source.range',
  ],
  ['readFully(source, 0, -1)', () => format.readFully(format.bytesSource(new Uint8Array(4)), 0, -1), 'source.range'],
  ['readFully(source, 1.5, 1)', () => format.readFully(format.bytesSource(new Uint8Array(4)), 1.5, 1), 'source.range'],
  ['readFully past the end', () => format.readFully(format.bytesSource(new Uint8Array(4)), 2, 3), 'source.range'],
  [
    'readInto(source, -1, bytes)',
    () => format.readInto(format.bytesSource(new Uint8Array(4)), -1, new Uint8Array(1)),
    'source.range',
  ],
  ['readHead(null)', () => format.readHead(null as never), 'source.argument'],
  ['detectCodec(null, 0)', () => format.detectCodec(null as never, 0), 'codec.argument', 'head'],
  ['detectCodec(bytes, -1)', () => format.detectCodec(new Uint8Array(8), -1), 'codec.argument', 'size'],
  [
    'readContainerHeader(source, null)',
    () => format.readContainerHeader(format.bytesSource(new Uint8Array(8)), null as never),
    'codec.argument',
    'options',
  ],
  [
    'writeSafetensorsHeader(null)',
    () => format.writeSafetensorsHeader(null as never),
    'safetensors.argument',
    'tensors',
  ],
  [
    'writeSafetensorsHeader([null])',
    () => format.writeSafetensorsHeader([null] as never),
    'safetensors.argument',
    'tensors[]',
  ],
  ['writeSafetensors([], null)', () => format.writeSafetensors([], null as never), 'safetensors.argument', 'options'],
  [
    'parseSafetensorsHeader(bytes, null)',
    () => format.parseSafetensorsHeader(new Uint8Array(16), null as never),
    'safetensors.argument',
    'options',
  ],
  [
    'readSafetensorsHeader(source, null)',
    () => format.readSafetensorsHeader(format.bytesSource(new Uint8Array(16)), null as never),
    'safetensors.argument',
    'options',
  ],
  [
    'parseShardIndex(bytes, null)',
    () => format.parseShardIndex(new Uint8Array(2), null as never),
    'safetensors.argument',
    'options',
  ],
  [
    'checkShardIndex({}, Map)',
    () => format.checkShardIndex({} as never, new Map()),
    'safetensors.argument',
    'index.shards',
  ],
  ['shardIndexTotalSize(null)', () => format.shardIndexTotalSize(null as never), 'safetensors.argument', 'headers'],
  [
    'shardIndexTotalSize([{ tensors: [null] }])',
    () => format.shardIndexTotalSize([{ tensors: [null] }] as never),
    'safetensors.argument',
    'headers[].tensors[]',
  ],
  [
    'parseGgufHeader(bytes, null)',
    () => format.parseGgufHeader(new Uint8Array(8), null as never),
    'gguf.argument',
    'options',
  ],
  [
    'readGgufHeader(source, null)',
    () => format.readGgufHeader(format.bytesSource(new Uint8Array(8)), null as never),
    'gguf.argument',
    'options',
  ],
  ['ggmlPad(null, 32)', () => format.ggmlPad(null as never, 32), 'gguf.argument'],
  ['ggmlPad(1n, 0)', () => format.ggmlPad(1n, 0), 'gguf.argument'],
  ['ggmlTensorGeometry({}, [])', () => format.ggmlTensorGeometry({} as never, []), 'gguf.argument', 'type'],
  ['ggmlTensorGeometry(0, [null])', () => format.ggmlTensorGeometry(0, [null] as never), 'gguf.argument', 'dims[]'],
  [
    'ggmlTensorGeometry(0, [4n], null)',
    () => format.ggmlTensorGeometry(0, [4n], null as never),
    'gguf.argument',
    'details',
  ],
  ['decodeCbor(bytes, null)', () => format.decodeCbor(new Uint8Array([0]), null as never), 'cbor.argument', 'options'],
  ['compareBytes(null, bytes)', () => format.compareBytes(null as never, new Uint8Array(1)), 'manifest.argument', 'a'],
  ['comparePaths("a", 5)', () => format.comparePaths('a', 5 as never), 'manifest.argument', 'b'],
  ['validatePath(null)', () => format.validatePath(null as never), 'manifest.argument', 'path'],
  [
    'validateSymlinkTarget("a", undefined)',
    () => format.validateSymlinkTarget('a', undefined as never),
    'manifest.argument',
    'target',
  ],
  ['referenceKindOf(null)', () => format.referenceKindOf(null as never), 'references.argument', 'head'],
  ['objectReferences(null)', () => format.objectReferences(null as never), 'references.argument', 'head'],
  ['decodeCheckpoint(null)', () => format.decodeCheckpoint(null as never), 'cozytensors.argument', 'bytes'],
  ['checkpointReferences(null)', () => format.checkpointReferences(null as never), 'cozytensors.argument', 'bytes'],
  [
    'checkpointId(bytes, null)',
    () => format.checkpointId(new Uint8Array(1), null as never),
    'cozytensors.argument',
    'sha256',
  ],
  [
    'checkpointDataSize("F32", null)',
    () => format.checkpointDataSize('F32', null as never),
    'cozytensors.argument',
    'shape',
  ],
  ['checkpointDataSize("F32", [-1])', () => format.checkpointDataSize('F32', [-1]), 'cozytensors.argument', 'shape[]'],
  ['checkpointToJSON(null)', () => format.checkpointToJSON(null as never), 'cozytensors.argument', 'header'],
  [
    'checkpointToJSON({ components: [null] })',
    () => format.checkpointToJSON({ pipeline: null, components: [null] } as never),
    'cozytensors.argument',
    'header.components[]',
  ],
  ['parseConfigJson(null)', () => format.parseConfigJson(null as never), 'cozytensors.argument', 'bytes'],
  [
    'castFloat32(null, ...)',
    () => encodings.castFloat32(null as never, 0, 'F32', new Uint8Array(0)),
    'encodings.argument',
    'src',
  ],
  [
    'castFloat32 past src',
    () => encodings.castFloat32(new Float32Array(1), 2, 'F32', new Uint8Array(8)),
    'encodings.argument',
  ],
  [
    'castFloat32 unknown dtype',
    () => encodings.castFloat32(new Float32Array(1), 1, 'F64' as never, new Uint8Array(8)),
    'encodings.argument',
  ],
  ['decodeRowsOf(null, 0, 1)', () => encodings.decodeRowsOf(null as never, 0, 1), 'encodings.argument', 'dec'],
  ['decode(encoded, null)', () => encodings.decode({} as never, null as never), 'encodings.argument', 'options'],
  ['f16BitsOf(1n)', () => encodings.f16BitsOf(1n as never), 'encodings.argument', 'value'],
  ['bf16BitsOf("1")', () => encodings.bf16BitsOf('1' as never), 'encodings.argument', 'value'],
  ['e4m3fnCodeOf(null)', () => encodings.e4m3fnCodeOf(null as never), 'encodings.argument', 'value'],
  ['cublasIndex(1.5, 0, 4)', () => encodings.cublasIndex(1.5, 0, 4), 'encodings.argument', 'r'],
  ['hadamardH4(1.5, 0, 4)', () => encodings.hadamardH4(1.5 as never, 0, 4), 'encodings.argument', 'x'],
  ['hadamardH4 past x', () => encodings.hadamardH4(new Float32Array(4), 2, 4), 'encodings.argument', 'o + g'],
  ['importAwq(null, ...)', () => encodings.importAwq(null as never, 'l', {}), 'encodings.argument', 'tensors'],
  [
    'importGptq(tensors, "l", null)',
    () => encodings.importGptq({}, 'l', null as never),
    'encodings.argument',
    'config',
  ],
  ['importLlmInt8(tensors, 5)', () => encodings.importLlmInt8({}, 5 as never), 'encodings.argument', 'layer'],
  [
    'importScaledFp8 with a tensor of the wrong shape',
    () =>
      encodings.importScaledFp8(
        {
          'l.weight': { dtype: 'F8_E4M3', shape: [2], bytes: null },
          'l.weight_scale': { dtype: 'F32', shape: 5 },
        } as never,
        'l',
      ),
    'encodings.argument',
  ],
  [
    'importGgufTensor(0, [null], ...)',
    () => encodings.importGgufTensor(0, [null] as never, undefined),
    'encodings.argument',
    'dims[]',
  ],
  ['detectConventions(null)', () => encodings.detectConventions(null as never), 'encodings.argument', 'input'],
  [
    'detectConventions({ tensors: null })',
    () => encodings.detectConventions({ tensors: null } as never),
    'encodings.argument',
    'input.tensors',
  ],
];

describe('wrong-typed arguments: the exact rule', () => {
  it.each(EXACT)('%s', async (_name, call, rule, argument) => {
    const error = await expectCode(call, 'invalid_argument', rule);
    if (argument !== undefined) expect(error.details.argument).toBe(argument);
  });

  it('predicates answer false or undefined for a wrong type instead of throwing', () => {
    expect(format.canReadInto(null as never)).toBe(false);
    expect(format.isCheckpointHeader(null as never)).toBe(false);
    expect(format.ggmlTypeByName(5 as never)).toBeUndefined();
    expect(encodings.isDecodableScheme(Object.create(null))).toBe(false);
  });

  it('keep working on valid arguments (the checked public forms give the same answers)', () => {
    expect(encodings.f16BitsOf(1)).toBe(0x3c00);
    expect(encodings.bf16BitsOf(1)).toBe(0x3f80);
    expect(encodings.e4m3fnCodeOf(1)).toBe(0x38);
    expect(encodings.cublasIndex(0, 1, 4)).toBe(1);
    expect(format.comparePaths('a', 'b')).toBeLessThan(0);
    expect(format.compareBytes(new Uint8Array([2]), new Uint8Array([1]))).toBeGreaterThan(0);
    expect(format.jsonInteger(2 ** 60)).toBe('1152921504606846976');
    expect(format.jsonInteger(7n)).toBe(7);
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
