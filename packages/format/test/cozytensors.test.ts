import {
  type CheckpointHeader,
  type CheckpointTensor,
  checkpointDataSize,
  checkpointId,
  checkpointReferences,
  COZYTENSORS_MAGIC,
  decodeCheckpoint,
  encodeCheckpoint,
  isCheckpointHeader,
  type JsonValue,
  parseConfigJson,
} from '@tensorfs/format/cozytensors';
import * as main from '@tensorfs/format';
import { encodeCbor, isTensorFSError, type ObjectId, toHex } from '@tensorfs/format';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

/** TENSORFS_SLOW=1 runs the property tests 20 times longer. */
const SCALE = process.env.TENSORFS_SLOW ? 20 : 1;
const D1 = `sha256:${'11'.repeat(32)}` as ObjectId;
const D2 = `sha256:${'ab'.repeat(32)}` as ObjectId;
const utf8 = new TextEncoder();

function sample(): CheckpointHeader {
  return {
    pipeline: { cls: 'P', config: { b: 1, a: [0.5, null, true, 'x'] } },
    source: null,
    components: [
      {
        name: 'unet',
        cls: 'UNet',
        config: { sample_size: 8 },
        tensors: [
          { name: 'w', dtype: 'F32', shape: [2, 2], records: [{ digest: D1, length: 16 }] },
          {
            name: 'q',
            dtype: 'BF16',
            shape: [4],
            encoding: {
              scheme: 'x.int4',
              params: { group: 2 },
              parts: {
                qweight: { dtype: 'U8', shape: [2], records: [{ digest: D2, length: 2 }] },
                scales: { dtype: 'F16', shape: [2], records: [{ digest: D1, length: 4 }] },
              },
            },
          },
        ],
        assets: [{ name: 'config.json', records: [{ digest: D2, length: 3 }] }],
      },
    ],
  };
}

describe('cozytensors header', () => {
  it('is exported from the main entry and the subpath alike', () => {
    expect(main.encodeCheckpoint).toBe(encodeCheckpoint);
    expect(isCheckpointHeader(encodeCheckpoint(sample()))).toBe(true);
    expect(isCheckpointHeader(utf8.encode('TFM1'))).toBe(false);
    expect(toHex(COZYTENSORS_MAGIC)).toBe('54464331');
  });

  it('round-trips and is stable under key order of configs', () => {
    const h = sample();
    const bytes = encodeCheckpoint(h);
    const back = decodeCheckpoint(bytes);
    expect(back).toEqual(h);
    const reordered = sample();
    reordered.pipeline = { cls: 'P', config: { a: [0.5, null, true, 'x'], b: 1.0 } };
    expect(toHex(encodeCheckpoint(reordered))).toBe(toHex(bytes));
  });

  it('construction order is identity', () => {
    const a = sample();
    const b = sample();
    b.components[0]!.tensors.reverse();
    expect(toHex(encodeCheckpoint(a))).not.toBe(toHex(encodeCheckpoint(b)));
  });

  it('the id is the SHA-256 of the bytes', async () => {
    const bytes = encodeCheckpoint(sample());
    const id = await checkpointId(bytes, (b) => createHash('sha256').update(b).digest());
    expect(id).toBe(`sha256:${createHash('sha256').update(bytes).digest('hex')}`);
  });

  it('references: every record of tensors, parts and assets, and the source, once each', () => {
    const h = sample();
    h.source = `sha256:${'cd'.repeat(32)}` as ObjectId;
    expect(checkpointReferences(encodeCheckpoint(h))).toEqual([h.source, D1, D2]);
  });

  it('is a reference kind: objectReferences walks its records and follows its source', () => {
    const h = sample();
    h.source = `sha256:${'cd'.repeat(32)}` as ObjectId;
    const refs = main.objectReferences(encodeCheckpoint(h));
    expect(refs?.kind).toBe('checkpoint');
    expect(refs?.children).toEqual([
      { id: h.source, follow: true },
      { id: D1, length: 16 },
      // Parts come in the header's (canonical CBOR) role order: "scales" before "qweight".
      { id: D1, length: 4 },
      { id: D2, length: 2 },
      { id: D2, length: 3 },
    ]);
    const bad = encodeCheckpoint(h).slice(0, -1);
    expectCodeSync(() => main.objectReferences(bad), 'malformed', 'cozytensors.truncated');
  });

  it('refuses on encode what decode refuses, as invalid_argument', () => {
    const cases: [string, (h: CheckpointHeader) => void][] = [
      ['cozytensors.duplicate_component', (h) => h.components.push({ ...h.components[0]! })],
      [
        'cozytensors.duplicate_tensor',
        (h) => h.components[0]!.tensors.push({ ...h.components[0]!.tensors[0]! } as CheckpointTensor),
      ],
      ['cozytensors.component_name', (h) => (h.components[0]!.name = '../x')],
      ['cozytensors.asset_name', (h) => (h.components[0]!.assets[0]!.name = '/abs')],
      ['cozytensors.asset_name', (h) => (h.components[0]!.assets[0]!.name = 'a/../b')],
      ['cozytensors.asset_name', (h) => (h.components[0]!.assets[0]!.name = 'nul\u0000')],
      ['cozytensors.data_size', (h) => (h.components[0]!.tensors[0]!.shape = [2, 3])],
      [
        'cozytensors.data_size',
        (h) => {
          const t = h.components[0]!.tensors[1]!;
          t.encoding!.parts.scales!.shape = [3];
        },
      ],
      ['cozytensors.dtype', (h) => ((h.components[0]!.tensors[0] as { dtype: string }).dtype = 'f32')],
      [
        'cozytensors.tensor_kind',
        (h) =>
          ((h.components[0]!.tensors[0] as { encoding: unknown }).encoding = { scheme: 's', params: null, parts: {} }),
      ],
      ['cozytensors.parts_empty', (h) => (h.components[0]!.tensors[1]!.encoding!.parts = {})],
      ['cozytensors.config_number', (h) => (h.components[0]!.config = { x: Number.NaN })],
      ['cozytensors.config', (h) => (h.components[0]!.config = { x: new Date() } as unknown as JsonValue)],
      ['cozytensors.config', (h) => (h.components[0]!.config = { x: undefined } as unknown as JsonValue)],
      [
        'cozytensors.record_digest',
        (h) => (h.components[0]!.tensors[0]!.records![0]!.digest = 'sha256:xx' as ObjectId),
      ],
      [
        'cozytensors.record_length',
        (h) =>
          (h.components[0]!.tensors[0]!.records = [
            { digest: D1, length: 0 },
            { digest: D1, length: 16 },
          ]),
      ],
      ['cozytensors.source', (h) => (h.source = 'nope' as ObjectId)],
      ['cozytensors.asset_order', (h) => h.components[0]!.assets.unshift({ name: 'z', records: [] })],
      ['cozytensors.duplicate_asset', (h) => h.components[0]!.assets.push({ name: 'config.json', records: [] })],
      ['cozytensors.tensor_name', (h) => (h.components[0]!.tensors[0]!.name = '')],
    ];
    for (const [rule, edit] of cases) {
      const h = sample();
      edit(h);
      expectCodeSync(() => encodeCheckpoint(h), 'invalid_argument', rule);
    }
  });

  it('carries any scheme and any params losslessly', () => {
    const h = sample();
    h.components[0]!.tensors[1]!.encoding!.scheme = 'never.heard.of.it/v9';
    h.components[0]!.tensors[1]!.encoding!.params = {
      deep: [[{ x: -1.25e-7 }]],
      '': 2 ** 60,
      __proto__: 1,
    } as JsonValue;
    const back = decodeCheckpoint(encodeCheckpoint(h));
    expect(back.components[0]!.tensors[1]!.encoding!.scheme).toBe('never.heard.of.it/v9');
    expect(back.components[0]!.tensors[1]!.encoding!.params).toEqual(h.components[0]!.tensors[1]!.encoding!.params);
  });

  it('a role named __proto__ is a part like any other', () => {
    const h = sample();
    const parts = h.components[0]!.tensors[1]!.encoding!.parts;
    Object.defineProperty(parts, '__proto__', { value: parts.scales, enumerable: true });
    const back = decodeCheckpoint(encodeCheckpoint(h));
    expect(Object.keys(back.components[0]!.tensors[1]!.encoding!.parts).sort()).toEqual([
      '__proto__',
      'qweight',
      'scales',
    ]);
  });

  it('sizes: sub-byte dtypes fill whole bytes', () => {
    expect(checkpointDataSize('F4', [6])).toBe(3);
    expect(checkpointDataSize('F32', [])).toBe(4);
    expect(checkpointDataSize('F32', [0, 9])).toBe(0);
    expectCodeSync(() => checkpointDataSize('F4', [5]), 'invalid_argument', 'cozytensors.byte_length');
  });
});

describe('parseConfigJson', () => {
  const parse = (s: string) => parseConfigJson(utf8.encode(s));
  it('parses strict JSON into plain values', () => {
    expect(parse(' {"a": [1, 2.5, -0, true, null, "é"], "b": {}}\n')).toEqual({
      a: [1, 2.5, 0, true, null, 'é'],
      b: {},
    });
    expect(parse('1000000000000000019884624838656')).toBe(1e30);
    expect(parse('9007199254740992')).toBe(2 ** 53);
    expect(parse('0.1000000000000000055')).toBe(0.1);
    expect(Object.keys(parse('{"__proto__": 1}') as object)).toEqual(['__proto__']);
  });
  it('refuses duplicate keys, bad UTF-8, numbers a double does not hold, trailing text', () => {
    expectCodeSync(() => parse('{"a": 1, "a": 2}'), 'malformed', 'cozytensors.config_json');
    expectCodeSync(() => parseConfigJson(new Uint8Array([0x22, 0xff, 0x22])), 'malformed', 'cozytensors.config_json');
    expectCodeSync(() => parse('9007199254740993'), 'malformed', 'cozytensors.config_number');
    expectCodeSync(() => parse('1e400'), 'malformed', 'cozytensors.config_number');
    expectCodeSync(() => parse('NaN'), 'malformed', 'cozytensors.config_json');
    expectCodeSync(() => parse('{} x'), 'malformed', 'cozytensors.config_json');
    expectCodeSync(() => parse('['.repeat(60) + ']'.repeat(60)), 'malformed', 'cozytensors.config_json');
  });
});

describe('cozytensors properties', () => {
  const good = encodeCheckpoint(sample());

  it('any bytes decode canonically or throw a TensorFSError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (tail) => {
        const bytes = new Uint8Array(4 + tail.length);
        bytes.set(COZYTENSORS_MAGIC);
        bytes.set(tail, 4);
        try {
          const h = decodeCheckpoint(bytes);
          expect(toHex(encodeCheckpoint(h))).toBe(toHex(bytes));
        } catch (err) {
          expect(isTensorFSError(err), String(err)).toBe(true);
        }
      }),
      { numRuns: 3000 * SCALE },
    );
  });

  it('mutated headers decode to themselves or throw a TensorFSError', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(good.length - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 0, max: good.length }),
        (edits, cut) => {
          const bytes = good.slice(0, Math.max(cut, 4));
          for (const [at, v] of edits) if (at < bytes.length) bytes[at] = v;
          try {
            const h = decodeCheckpoint(bytes);
            expect(toHex(encodeCheckpoint(h))).toBe(toHex(bytes));
          } catch (err) {
            expect(isTensorFSError(err), String(err)).toBe(true);
          }
        },
      ),
      { numRuns: 3000 * SCALE },
    );
  });

  const json: fc.Arbitrary<JsonValue> = fc.jsonValue({ maxDepth: 4 }) as fc.Arbitrary<JsonValue>;
  it('any JSON config round-trips through the header', () => {
    fc.assert(
      fc.property(json, (config) => {
        const h = sample();
        h.components[0]!.config = config;
        const back = decodeCheckpoint(encodeCheckpoint(h));
        // Canonical: keys sorted, -0 is 0 (as JSON text has it); numbers stay the same doubles.
        expect(back.components[0]!.config).toEqual(JSON.parse(JSON.stringify(config)));
      }),
      { numRuns: 500 * SCALE },
    );
  });

  it('a CBOR map in place of the header is refused with a cozytensors rule', () => {
    const body = encodeCbor({ version: 1 });
    const bytes = new Uint8Array([...COZYTENSORS_MAGIC, ...body]);
    expectCodeSync(() => decodeCheckpoint(bytes), 'malformed', 'cozytensors.missing_field');
  });
});

describe('cozytensors: arbitrary valid headers', () => {
  const dtypes = ['F32', 'F16', 'BF16', 'U8', 'I64', 'BOOL', 'F4'] as const;
  const bitsOf: Record<string, number> = { F32: 32, F16: 16, BF16: 16, U8: 8, I64: 64, BOOL: 8, F4: 4 };
  const digest = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `sha256:${toHex(b)}` as ObjectId);
  /** A part whose records add up to its dtype × shape, cut at arbitrary points. */
  const part = fc
    .record({
      dtype: fc.constantFrom(...dtypes),
      shape: fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 3 }),
      cuts: fc.array(fc.integer({ min: 1, max: 5 }), { maxLength: 3 }),
      digests: fc.array(digest, { minLength: 4, maxLength: 4 }),
    })
    .map(({ dtype, shape, cuts, digests }) => {
      const n = shape.reduce((a, b) => a * b, 1);
      // A sub-byte dtype fills whole bytes: an odd element count becomes one more.
      const fixed = (n * bitsOf[dtype]!) % 8 === 0 ? shape : [n + 1];
      let bytes = (fixed.reduce((a, b) => a * b, 1) * bitsOf[dtype]!) / 8;
      const records = [];
      for (const [i, c] of cuts.entries()) {
        if (bytes <= c) break;
        records.push({ digest: digests[i]!, length: c });
        bytes -= c;
      }
      if (bytes > 0) records.push({ digest: digests[3]!, length: bytes });
      return { dtype, shape: fixed, records };
    });
  const name = fc.string({ minLength: 1, maxLength: 8 }).filter((s) => !s.includes('\u0000'));
  const segment = fc
    .string({ minLength: 1, maxLength: 6 })
    .filter((s) => !/[\u0000-\u001f\u007f\\/]/.test(s) && s !== '.' && s !== '..');
  const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;
  const tensor = fc.oneof(
    fc.tuple(name, part).map(([n, p]) => ({ name: n, ...p })),
    fc
      .tuple(name, fc.constantFrom(...dtypes), fc.string(), json, fc.dictionary(name, part, { minKeys: 1, maxKeys: 3 }))
      .map(([n, dtype, scheme, params, parts]) => ({
        name: n,
        dtype,
        shape: [2],
        encoding: { scheme: `s${scheme}`.replace(/\u0000/g, ''), params, parts },
      })),
  );
  const component = fc.record({
    name: segment,
    cls: fc.string().map((s) => s.replace(/\u0000/g, '')),
    config: json,
    tensors: fc.uniqueArray(tensor, { selector: (t) => t.name, maxLength: 4 }),
    assets: fc.uniqueArray(
      fc.record({
        name: fc.array(segment, { minLength: 1, maxLength: 2 }).map((s) => s.join('/')),
        records: fc.array(fc.record({ digest, length: fc.integer({ min: 1, max: 2 ** 40 }) }), { maxLength: 2 }),
      }),
      { selector: (a) => a.name, maxLength: 3 },
    ),
  });
  const header = fc.record({
    pipeline: fc.option(fc.record({ cls: fc.constant('P'), config: json }), { nil: null }),
    source: fc.option(digest, { nil: null }),
    components: fc.uniqueArray(component, { selector: (c) => c.name, maxLength: 3 }),
  });

  it('encode → decode gives the header back, and re-encodes to the same bytes', () => {
    fc.assert(
      fc.property(header, (h) => {
        for (const c of h.components) {
          const key = (s: string) => new TextEncoder().encode(s);
          c.assets.sort((a, b) => {
            const x = key(a.name);
            const y = key(b.name);
            for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
            return x.length - y.length;
          });
        }
        const bytes = encodeCheckpoint(h as CheckpointHeader);
        const back = decodeCheckpoint(bytes);
        expect(toHex(encodeCheckpoint(back))).toBe(toHex(bytes));
        expect(back.components.map((c) => c.name)).toEqual(h.components.map((c) => c.name));
        expect(back.components.map((c) => c.tensors.map((t) => t.name))).toEqual(
          h.components.map((c) => c.tensors.map((t) => t.name)),
        );
        expect(back.source).toBe(h.source);
      }),
      { numRuns: 300 * SCALE },
    );
  });
});
