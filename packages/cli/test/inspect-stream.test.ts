// `tfs inspect --json` on GGUF streams its output: it must be byte for byte what one
// `JSON.stringify` of the description gives, large arrays, odd keys and odd numbers included.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseGgufHeader, writeGgufHeader } from '@tensorfs/format';
import { describeGguf } from '../src/describe-gguf.js';
import { afterAll, describe, expect, it } from 'vitest';
import { ggufJsonChunks } from '../src/commands/inspect.js';
import { toJson } from '../src/context.js';
import { tfs } from './helpers.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tfs-inspect-stream-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function file() {
  const tokens = Array.from({ length: 20_000 }, (_, i) => (i % 5 ? `tok${i}` : `\u2581"q\\${i}\n`));
  const { bytes, header } = writeGgufHeader({
    version: 3,
    endianness: 'little',
    metadata: [
      { key: 'general.name', type: 'string', value: 'x' },
      { key: '42', type: 'uint32', value: 1 }, // an integer-like key: JS objects list it first
      { key: 'tokenizer.ggml.tokens', type: 'array', value: { itemType: 'string', items: tokens } },
      {
        key: 'scores',
        type: 'array',
        value: { itemType: 'float32', items: Array.from({ length: 9000 }, (_, i) => (i === 7 ? Infinity : i / 3)) },
      },
      { key: 'big', type: 'array', value: { itemType: 'uint64', items: [1n, 2n ** 60n] } },
      { key: '7', type: 'array', value: { itemType: 'bool', items: [] } },
    ],
    tensors: [{ name: 'w', type: 'F32', dims: [3n, 2n] }],
  });
  const out = new Uint8Array(header.fileSize);
  out.set(bytes);
  return out;
}

describe('tfs inspect --json on GGUF', () => {
  it('streams exactly the JSON of describeGguf', async () => {
    const bytes = file();
    const expected = `${toJson(describeGguf(parseGgufHeader(bytes)))}\n`;
    expect([...ggufJsonChunks(parseGgufHeader(bytes))].join('')).toBe(expected);
    const p = path.join(tmp, 'vocab.gguf');
    fs.writeFileSync(p, bytes);
    const r = await tfs(['inspect', p, '--json']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(expected);
  });

  it('prints the summary without describing metadata', async () => {
    const p = path.join(tmp, 'vocab2.gguf');
    fs.writeFileSync(p, file());
    const r = await tfs(['inspect', p]);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toMatch(
      /^gguf v3 little-endian, alignment 32, data at \d+, 6 metadata keys, 1 tensors$/,
    );
    expect(r.stdout.split('\n')[1]).toMatch(/^w +F32 +\[2, 3\] +24 B$/);
  });
});
