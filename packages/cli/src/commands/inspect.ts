import { describeGguf, describeSafetensors, readGgufHeader, readSafetensorsHeader } from '@tensorfs/format';
import { defineCommand } from '../command.js';
import { openFileSource } from '../files.js';
import { formatBytes } from '../progress.js';

const GGUF_MAGIC = [0x47, 0x47, 0x55, 0x46]; // "GGUF"

/** `tfs inspect <file>`: validate a safetensors or GGUF file and print its header. */
export const inspectCommand = defineCommand<{ file: string; strict: boolean }>({
  command: 'inspect <file>',
  describe: 'Validate a .safetensors or .gguf file and print its header (reads the header only)',
  builder: (y) =>
    y
      .positional('file', { type: 'string', demandOption: true, describe: 'a .safetensors or .gguf file' })
      .option('strict', {
        type: 'boolean',
        default: false,
        describe: 'safetensors: header must start with {, only spaces after it, no unknown descriptor fields',
      }),
  handler: async (args, ctx) => {
    const source = await openFileSource(args.file);
    try {
      const head = await source.read(0, Math.min(4, source.size));
      const isGguf = head.length === 4 && GGUF_MAGIC.every((b, i) => head[i] === b);
      if (isGguf) {
        const d = describeGguf(await readGgufHeader(source));
        ctx.result(d, () => [
          `gguf v${d.version} ${d.endianness}-endian, alignment ${d.alignment}, data at ${d.data_start}, ${Object.keys(d.metadata).length} metadata keys, ${d.tensors.length} tensors`,
          ...table(d.tensors.map((t) => [t.name, t.type, `[${t.shape.join(', ')}]`, bytes(t.byte_length)])),
        ]);
      } else {
        const d = describeSafetensors(await readSafetensorsHeader(source, { strict: args.strict }));
        const meta = d.metadata ? Object.entries(d.metadata).map(([k, v]) => `${k}=${v}`) : [];
        ctx.result(d, () => [
          `safetensors, header ${d.header_size} bytes, ${d.tensors.length} tensors${meta.length ? `, metadata: ${meta.join(' ')}` : ''}`,
          ...table(
            d.tensors.map((t) => [
              t.name,
              t.dtype,
              `[${t.shape.join(', ')}]`,
              bytes(Number(t.data_offsets[1]) - Number(t.data_offsets[0])),
            ]),
          ),
        ]);
      }
    } finally {
      await source.close();
    }
  },
});

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
