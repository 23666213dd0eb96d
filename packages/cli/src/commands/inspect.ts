import { once } from 'node:events';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import type { Writable } from 'node:stream';
import {
  checkShardIndex,
  type ContainerFormat,
  type ContainerHeaderOf,
  detectCodec,
  type GgufHeader,
  isCheckpointHeader,
  isTensorFSError,
  jsonInteger,
  MAX_SHARD_INDEX_SIZE,
  parseShardIndex,
  readContainerHeader,
  readSafetensorsHeader,
  type SafetensorsHeader,
  TensorFSError,
} from '@tensorfs/format';
import { defineCommand } from '../command.js';
import type { CommandContext } from '../context.js';
import { openFileSource } from '@tensorfs/cas/file';
import { describeGguf } from '../describe-gguf.js';
import { describeSafetensors } from '../describe-safetensors.js';
import { formatBytes } from '../progress.js';
import { SPECS } from './specs.js';

/** Checkpoint files and refs need the tensors and store packages; a plain file header does not. */
const loadCheckpoint = () => import('./checkpoint.js');

/** Names that end like the files `inspect` reads. */
const FILE_LIKE = /\.(safetensors|gguf|cozytensors|json)$/i;

/** What `inspect` prints for a header: its JSON form and its human lines. */
interface Printed {
  /** The `--json` value, built only when asked for (a GGUF vocabulary is 262k strings). */
  json: () => unknown;
  lines: () => string[];
}

/**
 * How `inspect` prints each container format of the codec table (a format added to the table
 * without a printer here does not compile).
 */
const PRINTERS: { [F in ContainerFormat]: (header: ContainerHeaderOf<F>) => Printed } = {
  gguf(header) {
    return {
      json: () => describeGguf(header),
      // The human form never decodes metadata values: it counts keys (unique, the parser checks).
      lines: () => [
        `gguf v${header.version} ${header.endianness}-endian, alignment ${header.alignment}, data at ${header.dataStart}, ${header.metadata.length} metadata keys, ${header.tensors.length} tensors`,
        ...table(
          header.tensors.map((t) => [
            t.name,
            t.typeName,
            `[${t.shape.map(String).join(', ')}]`,
            bytes(jsonInteger(t.byteLength)),
          ]),
        ),
      ],
    };
  },
  safetensors(header) {
    const d = describeSafetensors(header);
    const meta = d.metadata ? Object.entries(d.metadata).map(([k, v]) => `${k}=${v}`) : [];
    return {
      json: () => d,
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
  ...SPECS.inspect,
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
      // A ref name is never absolute and never starts with a dot; one that ends like a file and
      // names no ref either is reported as the missing file it most likely is.
      const noSuchFile = () =>
        new TensorFSError('not_found', `no such file: ${path.basename(args.file)}`, {
          details: { rule: 'cli.no_such_file', file: path.basename(args.file) },
        });
      if (path.isAbsolute(args.file) || args.file.startsWith('.')) throw noSuchFile();
      try {
        await (await loadCheckpoint()).inspectCheckpointRef(args.file, ctx);
      } catch (err) {
        const missing = isTensorFSError(err) && (err.code === 'not_found' || err.code === 'invalid_argument');
        throw missing && FILE_LIKE.test(args.file) ? noSuchFile() : err;
      }
      return;
    }
    const source = await openFileSource(args.file);
    try {
      const head = await source.read(0, Math.min(16, source.size));
      if (isCheckpointHeader(head)) {
        await (await loadCheckpoint()).inspectCheckpointFile((await source.read(0, source.size)).slice(), ctx);
        return;
      }
      if (detectCodec(head, source.size) === undefined && looksLikeJson(head)) {
        await inspectIndex(args.file, await source.read(0, source.size), args.strict, ctx);
      } else {
        // The format comes from the bytes; a name announcing a format with magic bytes (.gguf)
        // that the bytes lack is "not a GGUF file", not a safetensors error.
        const found = await readContainerHeader(source, { path: args.file, strict: args.strict });
        if (found.format === 'gguf' && ctx.json) {
          // A 262k-token vocabulary is megabytes of JSON: write it in pieces, not as one string.
          await writeChunks(ctx.io.stdout, ggufJsonChunks(found.header as GgufHeader));
          return;
        }
        const printed = (PRINTERS[found.format] as (header: unknown) => Printed)(found.header);
        ctx.result(ctx.json ? printed.json() : undefined, printed.lines);
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
      details: { rule: 'tensors.shard_index_limit', limit: MAX_SHARD_INDEX_SIZE, actual: bytes.length },
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

/** Items per written piece of a large array. */
const CHUNK_ITEMS = 8192;

/**
 * `toJson(describeGguf(h))` + newline, byte for byte, as pieces: every piece but the array items
 * is `JSON.stringify` of the described value, and large arrays are written a slice at a time.
 * @internal exported for the test that compares the two
 */
export function* ggufJsonChunks(h: GgufHeader): Generator<string> {
  const { metadata: _, tensors, ...head } = describeGguf({ ...h, metadata: [] });
  const fields = JSON.stringify(head);
  yield `${fields.slice(0, -1)},"metadata":{`;
  // An object puts integer-like keys first, in numeric order: describeGguf's object does, so must we.
  const index = (k: string) => (/^(0|[1-9]\d*)$/.test(k) && Number(k) < 2 ** 32 - 1 ? Number(k) : -1);
  const order = [
    ...h.metadata.filter((kv) => index(kv.key) >= 0).sort((a, b) => index(a.key) - index(b.key)),
    ...h.metadata.filter((kv) => index(kv.key) < 0),
  ];
  let first = true;
  for (const kv of order) {
    const name = `${first ? '' : ','}${JSON.stringify(kv.key)}:`;
    first = false;
    if (typeof kv.value !== 'object') {
      yield name + JSON.stringify(describeGguf({ ...h, metadata: [kv], tensors: [] }).metadata[kv.key]);
      continue;
    }
    const items = kv.value.items;
    yield `${name}[`;
    for (let i = 0; i < items.length; i += CHUNK_ITEMS) {
      const part = JSON.stringify(
        describeGguf({
          ...h,
          metadata: [{ ...kv, value: { itemType: kv.value.itemType, items: items.slice(i, i + CHUNK_ITEMS) } }],
          tensors: [],
        }).metadata[kv.key],
      );
      yield (i === 0 ? '' : ',') + part.slice(1, -1);
    }
    yield ']';
  }
  yield `},"tensors":${JSON.stringify(tensors)}}\n`;
}

/** Writes pieces to a stream, waiting for it to drain when its buffer is full. */
async function writeChunks(out: Writable, chunks: Iterable<string>): Promise<void> {
  let pending = '';
  for (const chunk of chunks) {
    pending += chunk;
    if (pending.length < 1 << 16) continue;
    if (!out.write(pending)) await once(out, 'drain');
    pending = '';
  }
  if (pending && !out.write(pending)) await once(out, 'drain');
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
