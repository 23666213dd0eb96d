import {
  bytesSource,
  CONTAINER_CODECS,
  codecByProfile,
  codecForPath,
  detectCodec,
  ggufCodec,
  readContainerHeader,
  safetensorsCodec,
  writeGguf,
  writeSafetensors,
} from '@tensorfs/format';
import { expectCode } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const st = writeSafetensors([{ name: 'w', dtype: 'F32', shape: [2], data: new Uint8Array(8) }]);
const gg = writeGguf({ metadata: [], tensors: [{ name: 'w', type: 'F32', dims: [2n], data: new Uint8Array(8) }] });

describe('the codec table', () => {
  it('lists each format once, with its own name, profile and extensions', () => {
    const names = CONTAINER_CODECS.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(CONTAINER_CODECS.map((c) => c.profile)).size).toBe(names.length);
    for (const codec of CONTAINER_CODECS) {
      expect(codecByProfile(codec.profile)).toBe(codec);
      for (const ext of codec.extensions) expect(codecForPath(`a/b${ext}`)).toBe(codec);
    }
    expect(codecByProfile('blob-v1')).toBeUndefined();
    expect(codecForPath('config.json')).toBeUndefined();
  });

  it('detects each format from its leading bytes', () => {
    expect(detectCodec(gg.subarray(0, 16), gg.length)).toBe(ggufCodec);
    expect(detectCodec(st.subarray(0, 16), st.length)).toBe(safetensorsCodec);
    expect(detectCodec(new Uint8Array(0), 0)).toBeUndefined();
    expect(detectCodec(new TextEncoder().encode('{"weight_map":{}}'), 17)).toBeUndefined();
  });

  it('describes tensors the same way for every format', async () => {
    for (const [codec, bytes] of [
      [safetensorsCodec, st],
      [ggufCodec, gg],
    ] as const) {
      const header = await codec.read(bytesSource(bytes));
      const [t] = codec.tensors(header as never);
      expect(t).toMatchObject({ name: 'w', dtype: 'F32', shape: [2n], byteLength: 8, blockSize: 1, typeSize: 4 });
      expect(t!.byteOffset).toBe(codec.dataStart(header as never));
    }
  });

  it('rewrites a file byte-exact from its template and tensors', async () => {
    for (const [codec, bytes] of [
      [safetensorsCodec, st],
      [ggufCodec, gg],
    ] as const) {
      const c = codec as typeof safetensorsCodec;
      const header = await c.read(bytesSource(bytes));
      const template = await c.template(header, bytesSource(bytes));
      const tensors = c.tensors(header);
      const written = c.writeHeader(c.checkTemplate(template), tensors);
      expect(written.bytes).toEqual(bytes.subarray(0, c.dataStart(header)));
    }
  });
});

describe('readContainerHeader', () => {
  it('reads each format by its bytes, whatever the name', async () => {
    expect((await readContainerHeader(bytesSource(gg), { path: 'x.safetensors' })).format).toBe('gguf');
    expect((await readContainerHeader(bytesSource(st))).format).toBe('safetensors');
  });

  it('says a .gguf with another magic is not a GGUF file (malformed, naming the bytes), not a safetensors limit', async () => {
    const e = await expectCode(
      readContainerHeader(bytesSource(st), { path: 'model.gguf' }),
      'malformed',
      'codec.magic',
    );
    expect(e.details.expected).toBe('GGUF');
    expect(e.message).toContain('not a GGUF file');
    const text = new TextEncoder().encode('GGML and more bytes');
    const named = await expectCode(
      readContainerHeader(bytesSource(text), { path: 'm.gguf' }),
      'malformed',
      'codec.magic',
    );
    expect(named.message).toContain('"GGML"');
    expect(named.details.actual).toBe('47474d4c');
    // Without the name, the same bytes are read as safetensors (the format without magic).
    const other = await expectCode(readContainerHeader(bytesSource(text)), 'limit_exceeded');
    expect(other.details.rule).toBe('safetensors.R3');
  });

  it('the GGUF parser itself names the bytes it found instead of the magic', async () => {
    const bytes = new TextEncoder().encode('GGML and more bytes after it');
    const e = await expectCode(ggufCodec.read(bytesSource(bytes)), 'malformed', 'gguf.magic');
    expect([e.details.expected, e.details.actual]).toEqual(['GGUF', '47474d4c']);
    expect(e.message).toContain('47474d4c');
  });

  it('says a 0-byte .gguf is not a GGUF file, not the safetensors prefix message', async () => {
    const e = await expectCode(
      readContainerHeader(bytesSource(new Uint8Array(0)), { path: 'empty.gguf' }),
      'malformed',
      'codec.magic',
    );
    expect(e.details.actual).toBe(0);
    expect(e.message).toContain('not a GGUF file');
  });
});
