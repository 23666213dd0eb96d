import * as fsp from 'node:fs/promises';
import path from 'node:path';
import {
  checkShardIndex,
  type ContainerFormat,
  type ContainerHeaderOf,
  detectCodec,
  isCheckpointHeader,
  isTensorFSError,
  MAX_SHARD_INDEX_SIZE,
  parseShardIndex,
  readContainerHeader,
  readSafetensorsHeader,
  type SafetensorsHeader,
  TensorFSError,
} from '@tensorfs/format';
import { defineCommand } from '../command.js';
import type { CommandContext } from '../context.js';
import { openFileSource } from '@tensorfs/cas';
import { describeGguf } from '../describe-gguf.js';
import { describeSafetensors } from '../describe-safetensors.js';
import { formatBytes } from '../progress.js';
import { inspectCheckpointFile, inspectCheckpointRef } from './checkpoint.js';

/** What `inspect` prints for a header: its JSON form and its human lines. */
interface Printed {
  json: unknown;
  lines: () => string[];
}

/**
 * How `inspect` prints each container format of the codec table (a format added to the table
 * without a printer here does not compile).
 */
const PRINTERS: { [F in ContainerFormat]: (header: ContainerHeaderOf<F>) => Printed } = {
  gguf(header) {
    const d = describeGguf(header);
    return {
      json: d,
      lines: () => [
        `gguf v${d.version} ${d.endianness}-endian, alignment ${d.alignment}, data at ${d.data_start}, ${Object.keys(d.metadata).length} metadata keys, ${d.tensors.length} tensors`,
        ...table(d.tensors.map((t) => [t.name, t.type, `[${t.shape.join(', ')}]`, bytes(t.byte_length)])),
      ],
    };
  },
  safetensors(header) {
    const d = describeSafetensors(header);
    const meta = d.metadata ? Object.entries(d.metadata).map(([k, v]) => `${k}=${v}`) : [];
    return {
      json: d,
      lines: () => [
        `safetensors, header ${d.header_size} bytes, ${d.tensors.length} tensors${meta.length ? `, metadata: ${meta.join(' ')}` : ''}`,
        ...table(
          d.tensors.map((t) => [
            t.name,
            t.dtype,
            `[${t.shape.join(', ')}]`,
            bytes(Number(t.data_offsets[1]) - Number(t.data_offsets[0])),
          ]),
        ),
      ],
    };
  },
};

/** `tfs inspect <file>`: validate a safetensors or GGUF file and print its header. */
export const inspectCommand = defineCommand<{ file: string; strict: boolean }>({
  command: 'inspect <file>',
  describe:
    'Validate a .safetensors, .gguf or .cozytensors file (or a sharded *.safetensors.index.json with its shards) and print its header; a name that is not a path is a checkpoint ref',
  builder: (y) =>
    y
      .positional('file', {
        type: 'string',
        demandOption: true,
        describe: 'a .safetensors, .gguf, .cozytensors or .safetensors.index.json file, or a checkpoint ref',
      })
      .option('strict', {
        type: 'boolean',
        default: false,
        describe: 'safetensors: header must start with {, only spaces after it, no unknown descriptor fields',
      }),
  handler: async (args, ctx) => {
    // A path that exists is a file; anything else names a checkpoint in the store.
    const exists = await fsp
      .lstat(args.file)
      .then(() => true)
      .catch(() => false);
    if (!exists) {
      await inspectCheckpointRef(args.file, ctx);
      return;
    }
    const source = await openFileSource(args.file);
    try {
      const head = await source.read(0, Math.min(16, source.size));
      if (isCheckpointHeader(head)) {
        await inspectCheckpointFile((await source.read(0, source.size)).slice(), ctx);
        return;
      }
      if (detectCodec(head, source.size) === undefined && looksLikeJson(head)) {
        await inspectIndex(args.file, await source.read(0, source.size), args.strict, ctx);
      } else {
        // The format comes from the bytes; a name announcing a format with magic bytes (.gguf)
        // that the bytes lack is "not a GGUF file", not a safetensors error.
        const found = await readContainerHeader(source, { path: args.file, strict: args.strict });
        const printed = (PRINTERS[found.format] as (header: unknown) => Printed)(found.header);
        ctx.result(printed.json, printed.lines);
      }
    } finally {
      await source.close();
    }
  },
});

/**
 * A shard index is JSON text; a safetensors file starts with a little-endian u64 whose high
 * bytes are zero for any header under the size limit, so a NUL in the first 8 bytes (or fewer
 * than 8 bytes) means "not JSON".
 */
function looksLikeJson(head: Uint8Array): boolean {
  if (head.length < 8 || head.includes(0)) return false;
  const first = head.find((b) => b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d);
  return first === 0x7b; // '{'
}

async function inspectIndex(file: string, bytes: Uint8Array, strict: boolean, ctx: CommandContext): Promise<void> {
  if (bytes.length > MAX_SHARD_INDEX_SIZE) {
    throw new TensorFSError('limit_exceeded', 'shard index larger than the limit', {
      details: { limit: MAX_SHARD_INDEX_SIZE, actual: bytes.length },
    });
  }
  const index = parseShardIndex(bytes);
  const headers = new Map<string, SafetensorsHeader>();
  for (const shard of index.shards) {
    // Shard names are validated as plain basenames by parseShardIndex, so this stays in the folder.
    const source = await openFileSource(path.join(path.dirname(file), shard)).catch((err) => {
      throw withShard(err, shard);
    });
    try {
      headers.set(shard, await readSafetensorsHeader(source, { strict }));
    } catch (err) {
      throw withShard(err, shard);
    } finally {
      await source.close();
    }
  }
  checkShardIndex(index, headers);
  const shards = [...headers].map(([shard, h]) => ({ file: shard, ...describeSafetensors(h) }));
  const d = {
    format: 'safetensors-index',
    metadata: index.metadata,
    total_size: index.totalSize,
    weight_map: index.weightMap,
    shards,
  };
  ctx.result(d, () => [
    `safetensors index, ${index.weightMap.size} tensors in ${shards.length} shards${index.totalSize === null ? '' : `, total_size ${index.totalSize}`}`,
    ...table(shards.flatMap((s) => s.tensors.map((t) => [t.name, t.dtype, `[${t.shape.join(', ')}]`, s.file]))),
  ]);
}

function withShard(err: unknown, shard: string): unknown {
  if (isTensorFSError(err) && err.details.shard === undefined) {
    return new TensorFSError(err.code, `${shard}: ${err.message}`, { details: { ...err.details, shard }, cause: err });
  }
  return err;
}

function bytes(n: number | string): string {
  return typeof n === 'number' ? formatBytes(n) : `${n} B`;
}

/** Left-aligned columns, two spaces apart. */
export function table(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const r of rows) {
    for (const [i, c] of r.entries()) widths[i] = Math.max(widths[i] ?? 0, c.length);
  }
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  '));
}
