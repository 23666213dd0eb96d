/**
 * Refusals: every missing or inconsistent declared fact is `malformed` naming the param or part
 * (and the index at fault); unknown schemes are `unsupported`; any input decodes or throws a TensorFSError.
 */
import { isTensorFSError } from '@tensorfs/format';
import { type Encoded, checkEncoding, decode, decodeRange, encode } from '@tensorfs/format/encodings';
import fc from 'fast-check';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { encodedOf, vectors } from './encodings.helpers.js';

function caseNamed(prefix: string): Encoded {
  const c = vectors.cases.find((v) => v.name.startsWith(prefix));
  if (!c) throw new Error(`no vector ${prefix}`);
  return encodedOf(c.encoding);
}

function withParams(enc: Encoded, patch: Record<string, unknown>): Encoded {
  const params = { ...(enc.params as Record<string, unknown>), ...patch };
  for (const [k, v] of Object.entries(patch)) if (v === undefined) delete params[k];
  return { ...enc, params: params as Encoded['params'] };
}

function withPart(enc: Encoded, role: string, part: Encoded['parts'][string] | undefined): Encoded {
  const parts = { ...enc.parts } as Record<string, Encoded['parts'][string]>;
  if (part === undefined) delete parts[role];
  else parts[role] = part;
  return { ...enc, parts };
}

describe('hostile params and parts', () => {
  it('block size 0 is malformed, naming the param', () => {
    const bnb = caseNamed('bnb_nf4 reference golden');
    expectCodeSync(() => decode(withParams(bnb, { blocksize: 0 })), 'malformed', 'encodings.bnb_nf4.blocksize', {
      param: 'blocksize',
    });
    const mx = caseNamed('mxfp4 reference golden');
    expectCodeSync(() => decode(withParams(mx, { block_size: 0 })), 'malformed', undefined, { param: 'block_size' });
    const gptq = caseNamed('gptq reference golden, v2');
    expectCodeSync(() => decode(withParams(gptq, { group_size: 0 })), 'malformed', undefined, { param: 'group_size' });
  });

  it('shapes that do not divide are malformed', () => {
    const blocks = new Uint8Array(144);
    expectCodeSync(
      () =>
        decode({
          scheme: 'ggml',
          params: { shape: [1, 100], dtype: 'F32', type: 'Q4_K' },
          parts: { blocks: { dtype: 'U8', shape: [144], bytes: blocks } },
        }),
      'malformed',
      'encodings.ggml.block_divides',
      { param: 'shape' },
    );
    const mx = caseNamed('mxfp8 padded');
    expectCodeSync(
      () => decode(withParams(mx, { padded_shape: [32, 48] })),
      'malformed',
      'encodings.mxfp8.block_divides',
    );
    const gptq = caseNamed('gptq 3-bit');
    expectCodeSync(() => decode(withParams(gptq, { shape: [8, 40] })), 'malformed');
    const rot = caseNamed('rotation H16');
    expectCodeSync(() => decode(withParams(rot, { group_size: 8 })), 'malformed', undefined, { param: 'group_size' });
  });

  it('scale parts of the wrong shape are malformed, naming the part', () => {
    const int8 = caseNamed('int8 row scales');
    const scale = int8.parts.scale;
    if (!scale?.bytes) throw new Error('vector');
    expectCodeSync(
      () => decode(withPart(int8, 'scale', { dtype: 'F32', shape: [3], bytes: scale.bytes?.subarray(0, 12) })),
      'malformed',
      'encodings.int8.part_shape',
      { part: 'scale' },
    );
    // the row scales given as column scales: same count (4 ≠ 8 here) is refused by shape
    expectCodeSync(() => decode(withParams(int8, { granularity: 'column' })), 'malformed', undefined, {
      part: 'scale',
    });
    const nv = caseNamed('nvfp4 reference golden, hi_first, cublas');
    const bs = nv.parts.block_scale;
    expectCodeSync(
      () => decode(withPart(nv, 'block_scale', { dtype: 'F8_E4M3', shape: [2, 2], bytes: bs?.bytes?.subarray(0, 4) })),
      'malformed',
      undefined,
      { part: 'block_scale' },
    );
    const fp8 = caseNamed('fp8_e4m3fn block scales');
    expectCodeSync(() => decode(withParams(fp8, { block: [3, 4] })), 'malformed', undefined, { part: 'scale' });
    const gptq = caseNamed('gptq 4-bit act-order');
    const sc = gptq.parts.scales;
    expectCodeSync(
      () => decode(withPart(gptq, 'scales', { dtype: 'F16', shape: [8, 4], bytes: sc?.bytes })),
      'malformed',
      undefined,
      { part: 'scales' },
    );
  });

  it('a NaN global scale is malformed with the part and index', () => {
    const nv = caseNamed('nvfp4 reference golden, lo_first');
    const nan = new Uint8Array(new Float32Array([Number.NaN]).buffer);
    expect(
      expectCodeSync(() => decode(withPart(nv, 'global_scale', { dtype: 'F32', shape: [], bytes: nan })), 'malformed')
        .details,
    ).toEqual({ rule: 'encodings.nvfp4.global_scale', scheme: 'nvfp4', part: 'global_scale', index: 0, actual: 'NaN' });
  });

  it('g_idx out of range is malformed with the part and index', () => {
    const gptq = caseNamed('gptq 4-bit act-order');
    const g = new Int32Array(new Uint8Array(gptq.parts.g_idx?.bytes ?? []).buffer.slice(0));
    g[5] = 4; // 4 groups: 0..3
    const bad = withPart(gptq, 'g_idx', { dtype: 'I32', shape: [64], bytes: new Uint8Array(g.buffer) });
    expectCodeSync(() => decode(bad), 'malformed', 'encodings.gptq.g_idx_range', {
      part: 'g_idx',
      index: 5,
      actual: 4,
    });
    g[5] = -1;
    expectCodeSync(
      () => decode(withPart(gptq, 'g_idx', { dtype: 'I32', shape: [64], bytes: new Uint8Array(g.buffer) })),
      'malformed',
      undefined,
      { part: 'g_idx', index: 5 },
    );
  });

  it('a missing part is an error, never zeros', () => {
    for (const [prefix, role] of [
      ['fp8_e4m3fn tensor scale', 'scale'],
      ['nvfp4 reference golden, lo_first', 'global_scale'],
      ['bnb_nf4 nested', 'nested_absmax'],
      ['gptq 4-bit act-order', 'g_idx'],
      ['awq_gemm', 'qzeros'],
      ['lora linear', 'up'],
    ] as const) {
      expectCodeSync(() => decode(withPart(caseNamed(prefix), role, undefined)), 'malformed', undefined, {
        part: role,
      });
    }
    const fp8 = caseNamed('fp8_e4m3fn tensor scale');
    expectCodeSync(
      () => decode(withPart(fp8, 'scale', { dtype: 'F32', shape: [] })),
      'malformed',
      'encodings.fp8_e4m3fn.missing_bytes',
      { part: 'scale' },
    );
  });

  it('a missing declared fact is malformed, naming the param', () => {
    for (const [prefix, param] of [
      ['nvfp4 reference golden, lo_first', 'nibble_order'],
      ['nvfp4 reference golden, lo_first', 'scale_layout'],
      ['mxfp4 reference golden', 'nibble_order'],
      ['bnb_nf4 reference golden', 'nibble_order'],
      ['bnb_nf4 reference golden', 'nested'],
      ['gptq reference golden, v2', 'zero_format'],
      ['gptq reference golden, v2', 'group_index'],
      ['int8 row scales', 'scale_kind'],
      ['fp8_e4m3fn row scales', 'granularity'],
      ['int8 tensor scale', 'dtype'],
    ] as const) {
      expectCodeSync(() => decode(withParams(caseNamed(prefix), { [param]: undefined })), 'malformed', undefined, {
        param,
      });
    }
  });

  it('a part of another dtype or length, or an undeclared part, is malformed', () => {
    const int8 = caseNamed('int8 tensor scale');
    expectCodeSync(
      () => decode(withPart(int8, 'q', { dtype: 'U8', shape: [4, 8], bytes: new Uint8Array(32) })),
      'malformed',
      'encodings.int8.part_dtype',
      { part: 'q' },
    );
    expectCodeSync(
      () => decode(withPart(int8, 'q', { dtype: 'I8', shape: [4, 8], bytes: new Uint8Array(31) })),
      'malformed',
      'encodings.int8.part_length',
      { part: 'q', expected: 32, actual: 31 },
    );
    expectCodeSync(
      () => decode(withPart(int8, 'zero_point', { dtype: 'I8', shape: [], bytes: new Uint8Array(1) })),
      'malformed',
      'encodings.int8.unknown_part',
      { part: 'zero_point' },
    );
    expectCodeSync(() => decode(withParams(int8, { axis: 1 })), 'malformed', 'encodings.int8.unknown_param', {
      param: 'axis',
    });
  });

  it('an unknown scheme or an undecodable GGML type is unsupported', () => {
    expect(expectCodeSync(() => decode({ scheme: 'hqq', params: {}, parts: {} }), 'unsupported').details).toEqual({
      rule: 'encodings.unknown_scheme',
      scheme: 'hqq',
    });
    expectCodeSync(
      () =>
        decode({
          scheme: 'ggml',
          params: { shape: [64], dtype: 'F32', type: 'Q2_0' },
          parts: { blocks: { dtype: 'U8', shape: [18], bytes: new Uint8Array(18) } },
        }),
      'unsupported',
      undefined,
      { type: 'Q2_0' },
    );
    expectCodeSync(() => encode(new Float32Array(4), 'bnb_nf4', { shape: [4] }), 'unsupported');
    expectCodeSync(() => decodeRange(caseNamed('int8 tensor scale'), 2, 9), 'invalid_argument');
  });
});

describe('any input decodes or throws a TensorFSError', () => {
  const schemes = [
    'int8',
    'fp8_e4m3fn',
    'fp8_e5m2',
    'mxfp8',
    'mxfp4',
    'nvfp4',
    'bnb_nf4',
    'bnb_fp4',
    'gptq',
    'awq_gemm',
    'ggml',
    'rotation',
    'lora',
    'x',
  ];
  const part = fc.record({
    dtype: fc.constantFrom('U8', 'I8', 'I32', 'F32', 'F16', 'BF16', 'F8_E4M3', 'F8_E8M0', 'nope'),
    shape: fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 3 }),
    bytes: fc.uint8Array({ maxLength: 300 }),
  });
  const param = fc.oneof(
    fc.jsonValue({ maxDepth: 2 }),
    fc.integer({ min: -2, max: 300 }),
    fc.constantFrom(
      'lo_first',
      'hi_first',
      'row_major',
      'cublas_128x4',
      'v1_minus_one',
      'v2',
      'g_idx',
      'sequential',
      'Q4_K',
      'IQ2_XS',
      'row',
      'tensor',
      'block',
      'scale',
    ),
  );

  it('random encodings', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...schemes),
        fc.dictionary(
          fc.constantFrom(
            'shape',
            'dtype',
            'granularity',
            'scale_kind',
            'block',
            'block_size',
            'scale_layout',
            'nibble_order',
            'padded_shape',
            'blocksize',
            'nested',
            'nested_blocksize',
            'nested_offset',
            'bits',
            'group_size',
            'zero_format',
            'group_index',
            'type',
            'kind',
            'inner',
            'alpha',
          ),
          param,
        ),
        fc.dictionary(
          fc.constantFrom(
            'q',
            'scale',
            'block_scale',
            'global_scale',
            'codes',
            'absmax',
            'code_table',
            'qweight',
            'qzeros',
            'scales',
            'g_idx',
            'blocks',
            'down',
            'up',
          ),
          part,
        ),
        fc.array(fc.integer({ min: 1, max: 16 }), { minLength: 1, maxLength: 2 }),
        (scheme, params, parts, shape) => {
          const p = { dtype: 'F32', shape, ...params };
          try {
            decode({ scheme, params: p as Encoded['params'], parts });
          } catch (err) {
            if (!isTensorFSError(err)) throw err;
          }
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('real encodings with every byte of one part mutated', () => {
    const encs = vectors.cases.map((c) => encodedOf(c.encoding));
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: encs.length - 1 }),
        fc.nat(),
        fc.uint8Array({ minLength: 1, maxLength: 64 }),
        (i, which, noise) => {
          const enc = encs[i] as Encoded;
          const roles = Object.keys(enc.parts);
          const role = roles[which % roles.length] as string;
          const p = enc.parts[role];
          const bytes = new Uint8Array(p?.bytes ?? []);
          for (let j = 0; j < bytes.length; j++) bytes[j] = noise[j % noise.length] as number;
          try {
            const out = decode(withPart(enc, role, { dtype: p?.dtype ?? 'U8', shape: p?.shape ?? [], bytes }), {
              dtype: 'BF16',
            });
            expect(out).toBeInstanceOf(Uint8Array);
          } catch (err) {
            if (!isTensorFSError(err)) throw err;
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('checkEncoding: the decoder’s own checks, without the parts’ bytes', () => {
  const bytesless = (enc: Encoded): Encoded => ({
    ...enc,
    parts: Object.fromEntries(Object.entries(enc.parts).map(([r, p]) => [r, { dtype: p.dtype, shape: p.shape }])),
  });

  it('accepts every golden vector without its bytes, and refuses what decode refuses with the same rule', () => {
    let refused = 0;
    for (const c of vectors.cases) {
      const enc = encodedOf(c.encoding);
      expect(() => checkEncoding(bytesless(enc)), c.name).not.toThrow();
      // A wrong fact: group sizes, block shapes and part shapes the decoder would refuse.
      const wrong: Encoded[] = [
        withParams(enc, { group_size: 0 }),
        withParams(enc, { group_size: 3 }),
        withParams(enc, { block: [0, 0] }),
        withParams(enc, { blocksize: 0 }),
        ...Object.keys(enc.parts).map((r) => withPart(enc, r, { ...enc.parts[r]!, shape: [3, 1, 7] })),
      ];
      for (const w of wrong) {
        let byDecode: unknown;
        try {
          decode(w);
        } catch (error) {
          byDecode = error;
        }
        let byCheck: unknown;
        try {
          checkEncoding(bytesless(w));
        } catch (error) {
          byCheck = error;
        }
        if (!isTensorFSError(byDecode) || byDecode.code !== 'malformed') continue;
        const rule = byDecode.details.rule;
        // The bytes of the reshaped part no longer fit its shape: a byte fact, which a check
        // without bytes cannot see (it may still refuse the shape itself).
        if (String(rule).endsWith('.part_length')) continue;
        refused++;
        expect(isTensorFSError(byCheck), `${c.name}: ${byDecode.message}`).toBe(true);
        expect((byCheck as { details: { rule: unknown } }).details.rule, c.name).toBe(rule);
      }
    }
    expect(refused).toBeGreaterThan(50);
  });

  it('checks the values of a small part it is given (a GPTQ g_idx out of range)', () => {
    const enc = caseNamed('gptq 4-bit act-order');
    const g = enc.parts.g_idx!;
    const bad = new Int32Array(g.shape[0]!).fill(99);
    const w = withPart(bytesless(enc), 'g_idx', { ...g, bytes: new Uint8Array(bad.buffer) });
    expectCodeSync(() => checkEncoding(w), 'malformed', 'encodings.gptq.g_idx_range', { part: 'g_idx', index: 0 });
    expect(() => checkEncoding(bytesless(enc))).not.toThrow();
  });
});
