// Fuzz targets: one function per parser, taking raw bytes. Each either returns (parsed) or throws.
// The caller decides whether a throw is acceptable (a TensorFSError) or a crasher (anything else).
// The format module is injected so the same targets run against the built dist (the campaign) and
// against source (the regression test in scripts/test/fuzz-crashers.test.ts).
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Target names, in campaign order. */
export const PARSERS = ['safetensors', 'shard-index', 'gguf', 'tfm1', 'cozytensors', 'encodings'];

const read = (p) => new Uint8Array(readFileSync(join(ROOT, p)));
const filesIn = (dir, suffix) =>
  readdirSync(join(ROOT, dir))
    .filter((n) => n.endsWith(suffix))
    .sort()
    .map((n) => join(dir, n));
const hexBytes = (hex) => {
  const out = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16) || 0;
  return out;
};
const utf8 = new TextEncoder();
const jsonHexCases = (p) => {
  const d = JSON.parse(readFileSync(join(ROOT, p), 'utf8'));
  return [...(d.valid ?? []), ...(d.invalid ?? [])]
    .filter((c) => typeof c.hex === 'string')
    .map((c) => hexBytes(c.hex));
};

/** The committed seed corpus for one parser (bytes), from fixtures, vectors/v1 and samples. */
export function seedsFor(parser) {
  switch (parser) {
    case 'safetensors':
      return [
        ...filesIn('packages/format/test/fixtures/safetensors', '.safetensors'),
        ...filesIn('packages/format/test/fixtures/safetensors/sharded', '.safetensors'),
        ...filesIn('vectors/v1/files', '.safetensors'),
        'samples/tiny-model/model.safetensors',
      ].map(read);
    case 'shard-index':
      return [read('packages/format/test/fixtures/safetensors/sharded/model.safetensors.index.json')];
    case 'gguf':
      return [
        ...filesIn('packages/format/test/fixtures/gguf', '.gguf'),
        ...filesIn('vectors/v1/files', '.gguf'),
        'samples/tiny-model/model.gguf',
      ].map(read);
    case 'tfm1':
      return jsonHexCases('vectors/v1/manifests.json');
    case 'cozytensors':
      return [
        ...filesIn('vectors/v1/cozytensors', '.cozytensors').map(read),
        ...jsonHexCases('vectors/v1/cozytensors/headers.json'),
      ];
    case 'encodings': {
      const d = JSON.parse(readFileSync(join(ROOT, 'vectors/v1/encodings/vectors.json'), 'utf8'));
      return d.cases.map((c) => utf8.encode(JSON.stringify(c.encoding)));
    }
    default:
      throw new Error(`unknown parser ${parser}`);
  }
}

/** Fixed-width length fields at known offsets (offset, width in bytes, little-endian?) for length-field edits. */
export function lengthFieldsFor(parser, bytes) {
  if (parser === 'safetensors') return [[0, 8, true]];
  if (parser === 'gguf') {
    const le = bytes.length >= 8 && bytes[4] !== 0;
    const fields = [
      [4, 4, le],
      [8, 8, le],
      [16, 8, le],
    ];
    // The first KV key length follows the fixed header.
    if (bytes.length >= 32) fields.push([24, 8, le]);
    return fields;
  }
  return [];
}

/**
 * Builds the targets from the format modules: `fmt` = `@tensorfs/format`, `enc` = `@tensorfs/format/encodings`,
 * `cozy` = `@tensorfs/format/cozytensors`. Each target is `async (bytes) => void`.
 */
export function makeTargets(fmt, enc, cozy) {
  const shardDir = 'packages/format/test/fixtures/safetensors/sharded';
  const shardHeaders = new Map(
    filesIn(shardDir, '.safetensors').map((p) => [p.slice(shardDir.length + 1), fmt.parseSafetensorsHeader(read(p))]),
  );
  const textDecoder = new TextDecoder('utf-8', { fatal: false });
  return {
    safetensors: async (bytes) => {
      let syncErr;
      try {
        fmt.parseSafetensorsHeader(bytes);
      } catch (e) {
        syncErr = e;
      }
      // The streaming reader must agree with the in-memory parser on acceptance.
      let asyncErr;
      try {
        await fmt.readSafetensorsHeader(fmt.bytesSource(bytes));
      } catch (e) {
        asyncErr = e;
      }
      if (syncErr && !fmt.isTensorFSError(syncErr)) throw syncErr;
      if (asyncErr && !fmt.isTensorFSError(asyncErr)) throw asyncErr;
      if (syncErr) throw syncErr;
    },
    'shard-index': async (bytes) => {
      const index = fmt.parseShardIndex(bytes);
      fmt.checkShardIndex(index, shardHeaders);
    },
    gguf: async (bytes) => {
      const h = fmt.parseGgufHeader(bytes);
      // Lazy arrays decode on first access: touch them so their decoding is fuzzed too.
      for (const kv of h.metadata)
        if (kv.value && typeof kv.value === 'object' && 'items' in kv.value) void kv.value.items.length;
    },
    tfm1: async (bytes) => {
      fmt.decodeManifest(bytes);
    },
    cozytensors: async (bytes) => {
      cozy.decodeCheckpoint(bytes);
    },
    encodings: async (bytes) => {
      // The input is the JSON text of an {scheme, params, parts:{name:{dtype, shape, hex}}} encoding.
      // Text that is not JSON never reaches the decoder: it is reported as `skipped`.
      let v;
      try {
        v = JSON.parse(textDecoder.decode(bytes));
      } catch {
        return 'skipped';
      }
      if (v && typeof v === 'object' && v.parts && typeof v.parts === 'object' && !Array.isArray(v.parts)) {
        const parts = {};
        for (const [k, p] of Object.entries(v.parts)) {
          parts[k] =
            p && typeof p === 'object' && typeof p.hex === 'string'
              ? { dtype: p.dtype, shape: p.shape, bytes: hexBytes(p.hex) }
              : p;
        }
        v = { ...v, parts };
      }
      enc.decode(v);
    },
  };
}
