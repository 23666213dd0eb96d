// GGUF header parsing: ours (readGgufHeader over a file handle) against @huggingface/gguf reading the
// same local file, in the same run. Inputs are generated into a temp dir and removed afterwards.
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gguf } from '@huggingface/gguf';
import { parseGgufHeader, readGgufHeader, writeGgufHeader } from '@tensorfs/format';
import { report, time } from './lib.mjs';

const dir = mkdtempSync(join(tmpdir(), 'tensorfs-bench-gguf-'));

/** Writes the header and extends the file to its full size (sparse: the data is never read). */
async function writeSparse(name, options) {
  const { bytes, header } = writeGgufHeader(options);
  const path = join(dir, name);
  const fh = await open(path, 'w');
  await fh.write(bytes, 0, bytes.length, 0);
  await fh.truncate(header.fileSize);
  await fh.close();
  return { path, header, bytes };
}

/** A ByteSource over a file handle, as cas and cli provide one. */
async function fileSource(path) {
  const fh = await open(path, 'r');
  const { size } = await fh.stat();
  return {
    fh,
    size,
    async read(offset, length) {
      const buf = new Uint8Array(length);
      const { bytesRead } = await fh.read(buf, 0, length, offset);
      return bytesRead === length ? buf : buf.subarray(0, bytesRead);
    },
  };
}

async function ours(path) {
  const source = await fileSource(path);
  try {
    return await readGgufHeader(source);
  } finally {
    await source.fh.close();
  }
}

const peer = (path) => gguf(path, { allowLocalFile: true });

async function bench(name, file, runs) {
  const h = await ours(file.path);
  const p = await peer(file.path);
  if (h.tensors.length !== p.tensorInfos.length || BigInt(h.dataStart) !== p.tensorDataOffset) {
    throw new Error(`${name}: the two readers disagree`);
  }
  const oursMs = await time(() => ours(file.path), { runs, warmup: 2 });
  const peerMs = await time(() => peer(file.path), { runs, warmup: 2 });
  report(
    `${name} (read + parse)`,
    oursMs,
    '@huggingface/gguf',
    peerMs,
    `header ${(h.dataStart / 1024).toFixed(0)} KiB`,
  );
  const parseMs = await time(() => parseGgufHeader(file.bytes, { fileSize: file.header.fileSize }), {
    runs,
    warmup: 2,
  });
  report(`${name} (parse only, in memory)`, parseMs, '@huggingface/gguf', peerMs);
}

try {
  const layers = 2000 / 10;
  const tensors = [];
  for (let l = 0; l < layers; l++) {
    for (const part of ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down']) {
      tensors.push({ name: `blk.${l}.${part}.weight`, type: 'Q4_K', dims: [4096, 256] });
    }
    for (const part of ['attn_norm', 'ffn_norm', 'attn_q_norm']) {
      tensors.push({ name: `blk.${l}.${part}.weight`, type: 'F32', dims: [4096] });
    }
  }
  const small = [
    { key: 'general.architecture', type: 'string', value: 'llama' },
    { key: 'llama.block_count', type: 'uint32', value: layers },
  ];
  const t2000 = await writeSparse('tensors-2000.gguf', { metadata: small, tensors });
  await bench('2,000 tensors', t2000, 30);

  const N = 260_000;
  const tokens = Array.from({ length: N }, (_, i) =>
    i % 3 === 0
      ? `\u0120tok${i.toString(36)}`
      : i % 7 === 0
        ? `<0x${(i % 256).toString(16).padStart(2, '0')}>`
        : `t${i}`,
  );
  const vocab = [
    { key: 'general.architecture', type: 'string', value: 'llama' },
    { key: 'tokenizer.ggml.model', type: 'string', value: 'gpt2' },
    { key: 'tokenizer.ggml.tokens', type: 'array', value: { itemType: 'string', items: tokens } },
    {
      key: 'tokenizer.ggml.scores',
      type: 'array',
      value: { itemType: 'float32', items: tokens.map((_, i) => -i / 7) },
    },
    {
      key: 'tokenizer.ggml.token_type',
      type: 'array',
      value: { itemType: 'int32', items: tokens.map((_, i) => (i % 7 === 0 ? 6 : 1)) },
    },
  ];
  const v260k = await writeSparse('vocab-260k.gguf', {
    metadata: vocab,
    tensors: [{ name: 'token_embd.weight', type: 'Q8_0', dims: [4096, N] }],
  });
  await bench('260,000-token vocabulary', v260k, 15);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
