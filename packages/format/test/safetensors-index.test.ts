import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import {
  checkShardIndex,
  isSafeShardName,
  JsonNumberText,
  parseSafetensorsHeader,
  parseShardIndex,
  type SafetensorsHeader,
  shardIndexTotalSize,
  writeSafetensors,
  writeShardIndex,
} from '../src/index.js';

const enc = (s: string) => new TextEncoder().encode(s);
const parse = (s: string, options = {}) => parseShardIndex(enc(s), options);
const A = 'model-00001-of-00002.safetensors';
const B = 'model-00002-of-00002.safetensors';

describe('parseShardIndex', () => {
  it('parses weight_map, metadata (exact integers) and distinct shards', () => {
    const index = parse(
      `{"metadata":{"total_size":18446744073709551615,"total_parameters":5,"note":[1.5e3,null,true,{"x":"y"}]},"weight_map":{"b":"${B}","a":"${A}","c":"${B}","__proto__":"${A}"}}`,
    );
    expect(index.totalSize).toBe(2n ** 64n - 1n);
    expect(index.metadata!.get('total_parameters')).toBe(5n);
    expect(index.metadata!.get('note')).toEqual([new JsonNumberText('1.5e3'), null, true, new Map([['x', 'y']])]);
    expect([...index.weightMap]).toEqual([
      ['b', B],
      ['a', A],
      ['c', B],
      ['__proto__', A],
    ]);
    expect(index.shards).toEqual([B, A]);
  });
  it('accepts absent or null metadata and ignores unknown root fields', () => {
    expect(parse(`{"weight_map":{"a":"${A}"}}`).metadata).toBeNull();
    expect(parse(`{"metadata":null,"weight_map":{"a":"${A}"},"extra":{"deep":[[[]]]}}`).totalSize).toBeNull();
    expect(parse(`{"metadata":{},"weight_map":{"a":"${A}"}}`).metadata).toEqual(new Map());
  });
  it('rejects duplicates at every level, including escape-equivalent keys', () => {
    for (const text of [
      `{"weight_map":{"a":"${A}"},"weight_map":{"a":"${A}"}}`,
      `{"weight_map":{"a":"${A}","\\u0061":"${B}"}}`,
      `{"metadata":{"total_size":1,"total_size":2},"weight_map":{"a":"${A}"}}`,
      `{"metadata":{},"metadat\\u0061":{},"weight_map":{"a":"${A}"}}`,
    ]) {
      expectCodeSync(() => parse(text), 'malformed', 'safetensors.S1');
    }
  });
  it('rejects structure errors', () => {
    for (const text of [
      '{}',
      '{"weight_map":{}}',
      '[]',
      `{"weight_map":[["a","${A}"]]}`,
      '{"weight_map":{"a":1}}',
      `{"metadata":[],"weight_map":{"a":"${A}"}}`,
      `{"metadata":{"total_size":-1},"weight_map":{"a":"${A}"}}`,
      `{"metadata":{"total_size":1.0},"weight_map":{"a":"${A}"}}`,
      `{"metadata":{"total_size":"1"},"weight_map":{"a":"${A}"}}`,
      `{"metadata":{"total_size":18446744073709551616},"weight_map":{"a":"${A}"}}`,
      `{"weight_map":{"a":"${A}"}} x`,
      `\ufeff{"weight_map":{"a":"${A}"}}`,
      `{"weight_map":{"a":"${A}",}}`,
    ]) {
      expectCodeSync(() => parse(text), 'malformed', 'safetensors.I1');
    }
    expectCodeSync(() => parseShardIndex(new Uint8Array([0x7b, 0xff, 0x7d])), 'malformed', 'safetensors.I1', {
      offset: 1,
    });
    expectCodeSync(
      () => parse(`{"x":${'['.repeat(200)}${']'.repeat(200)},"weight_map":{"a":"${A}"}}`),
      'malformed',
      'safetensors.R10',
    );
  });
  it('treats every shard name as hostile', () => {
    const hostile = [
      '../model.safetensors',
      'a/../../etc/passwd.safetensors',
      '/abs/model.safetensors',
      'sub/model.safetensors',
      'sub\\model.safetensors',
      '\\\\server\\share\\model.safetensors',
      'C:model.safetensors',
      'c:\\model.safetensors',
      'https://evil.example/model.safetensors',
      'file:model.safetensors',
      'model..safetensors',
      '.safetensors',
      'model.bin',
      'model.safetensors.tmp',
      'mo\u0000del.safetensors',
      'mo\ndel.safetensors',
      'mo\u007fdel.safetensors',
      'mo\u0085del.safetensors',
      'NUL.safetensors',
      'com1.safetensors',
      `${'a'.repeat(250)}.safetensors`,
    ];
    for (const name of hostile) {
      expect(isSafeShardName(name), JSON.stringify(name)).toBe(false);
      expectCodeSync(() => parse(`{"weight_map":{"t":${JSON.stringify(name)}}}`), 'malformed', 'safetensors.I2', {
        tensor: 't',
      });
    }
    for (const name of [
      A,
      'model.safetensors',
      'diffusion_pytorch_model-00001-of-00003.safetensors',
      'modèle😊.safetensors',
      'nul1.safetensors',
    ]) {
      expect(isSafeShardName(name), name).toBe(true);
    }
    expect(isSafeShardName('a\ud800.safetensors')).toBe(false);
    expect(isSafeShardName(42)).toBe(false);
  });
  it('applies size and shard-count limits', () => {
    const text = `{"weight_map":{"a":"${A}","b":"${B}"}}`;
    expectCodeSync(() => parse(text, { maxIndexSize: text.length - 1 }), 'limit_exceeded', 'safetensors.I7');
    expect(parse(text, { maxIndexSize: text.length }).shards).toHaveLength(2);
    expectCodeSync(() => parse(text, { maxShards: 1 }), 'limit_exceeded', 'safetensors.I7', { actual: 2 });
    expectCodeSync(() => parse(text, { maxShards: -1 }), 'invalid_argument');
  });
});

describe('checkShardIndex', () => {
  const shard = (names: string[]): SafetensorsHeader =>
    parseSafetensorsHeader(
      writeSafetensors(names.map((name) => ({ name, dtype: 'F32', shape: [2], data: new Uint8Array(8) }))),
    );
  const headers = (a: string[], b: string[]) =>
    new Map([
      [A, shard(a)],
      [B, shard(b)],
    ]);
  const index = (total?: number) =>
    parse(
      `{${total === undefined ? '' : `"metadata":{"total_size":${total}},`}"weight_map":{"x":"${A}","y":"${B}","z":"${B}"}}`,
    );

  it('accepts a consistent checkpoint and checks total_size exactly', () => {
    expect(() => checkShardIndex(index(24), headers(['x'], ['y', 'z']))).not.toThrow();
    expect(() => checkShardIndex(index(), headers(['x'], ['y', 'z']))).not.toThrow();
    expectCodeSync(() => checkShardIndex(index(25), headers(['x'], ['y', 'z'])), 'malformed', 'safetensors.I6', {
      expected: 24n,
      actual: 25n,
    });
    expect(shardIndexTotalSize(headers(['x'], ['y', 'z']).values())).toBe(24n);
  });
  it('rejects missing, unmapped and doubled tensors, and unknown or missing shards', () => {
    expectCodeSync(() => checkShardIndex(index(), headers(['x'], ['y'])), 'malformed', 'safetensors.I3', {
      tensor: 'z',
      shard: B,
    });
    expectCodeSync(() => checkShardIndex(index(), headers(['x', 'w'], ['y', 'z'])), 'malformed', 'safetensors.I4', {
      tensor: 'w',
    });
    expectCodeSync(() => checkShardIndex(index(), headers(['x', 'y'], ['y', 'z'])), 'malformed', 'safetensors.I5', {
      tensor: 'y',
      shard: A,
      expected: B,
    });
    const extra = headers(['x'], ['y', 'z']).set('model-00003-of-00003.safetensors', shard([]));
    expectCodeSync(() => checkShardIndex(index(), extra), 'malformed', 'safetensors.I4');
    expectCodeSync(() => checkShardIndex(index(), new Map([[A, shard(['x'])]])), 'invalid_argument');
  });
});

describe('writeShardIndex', () => {
  it('writes json.dumps(indent=2, sort_keys=True) + "\\n", ASCII only', () => {
    const bytes = writeShardIndex({
      weightMap: { 'b.é😊': B, a: A, '\u007f': A },
      metadata: { total_size: 24n, extra: [1, new JsonNumberText('2.5'), { z: null, y: true }, []], empty: {} },
    });
    expect(new TextDecoder().decode(bytes)).toBe(
      [
        '{',
        '  "metadata": {',
        '    "empty": {},',
        '    "extra": [',
        '      1,',
        '      2.5,',
        '      {',
        '        "y": true,',
        '        "z": null',
        '      },',
        '      []',
        '    ],',
        '    "total_size": 24',
        '  },',
        '  "weight_map": {',
        `    "a": "${A}",`,
        `    "b.\\u00e9\\ud83d\\ude0a": "${B}",`,
        `    "\\u007f": "${A}"`,
        '  }',
        '}',
        '',
      ].join('\n'),
    );
    const back = parseShardIndex(bytes);
    expect(back.weightMap.get('b.é😊')).toBe(B);
    expect(writeShardIndex({ weightMap: back.weightMap, metadata: back.metadata })).toEqual(bytes);
  });
  it('validates before writing', () => {
    expectCodeSync(() => writeShardIndex({ weightMap: {} }), 'invalid_argument', 'safetensors.I1');
    expectCodeSync(
      () => writeShardIndex({ weightMap: { a: '../x.safetensors' } }),
      'invalid_argument',
      'safetensors.I2',
    );
    expectCodeSync(
      () => writeShardIndex({ weightMap: { a: A }, metadata: { total_size: -1 } }),
      'invalid_argument',
      'safetensors.I1',
    );
    expectCodeSync(
      () => writeShardIndex({ weightMap: { a: A }, metadata: { total_size: 1.5 } }),
      'invalid_argument',
      'safetensors.I1',
    );
    expectCodeSync(
      () => writeShardIndex({ weightMap: { a: A }, metadata: { x: 0.5 } }),
      'invalid_argument',
      'safetensors.I1',
    );
    expectCodeSync(() => writeShardIndex({ weightMap: { 'a\udc00': A } }), 'invalid_argument', 'safetensors.I1');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expectCodeSync(
      () => writeShardIndex({ weightMap: { a: A }, metadata: cyclic }),
      'invalid_argument',
      'safetensors.I1',
    );
  });
});
