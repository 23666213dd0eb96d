/**
 * Checkpoint commands: `tfs convert`, and the checkpoint side of `inspect`, `tensors`, `cat`,
 * `ls` and `export` (each of which also works on snapshots).
 */
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { decodeCheckpoint, type ObjectId, parseObjectId, TensorFSError } from '@tensorfs/format';
import {
  CONVERTERS,
  type ConverterName,
  type ConvertOptions,
  convertPath,
  convertSnapshot,
  PRODUCER_CONVENTIONS,
  type ProducerConvention,
} from '@tensorfs/tensors';
import type { Argv } from 'yargs';
import { defineCommand } from '../command.js';
import type { CommandContext, GlobalArgs } from '../context.js';
import { formatBytes } from '../progress.js';
import { importFromHub, isHfSource, sourceLine } from './hf.js';
import { importFromWeb, isWebSource, webSourceLine } from './sources.js';
import { checkpointLines, inspectCheckpoint, isCheckpoint } from './checkpoint-view.js';
import { shapesFrom } from './shapes-from.js';
import { withStore } from './store.js';
import { resolveModelId } from './revision.js';
import { SPECS } from './specs.js';

/** `tfs inspect` of a `.cozytensors` file (header bytes only: no store needed). */
export async function inspectCheckpointFile(bytes: Uint8Array, ctx: CommandContext): Promise<void> {
  const { createHash } = await import('node:crypto');
  const id = `sha256:${createHash('sha256').update(bytes).digest('hex')}` as ObjectId;
  const d = inspectCheckpoint(id, decodeCheckpoint(bytes));
  ctx.result(d, () => checkpointLines(d));
}

/** `tfs inspect` of a ref or id naming a checkpoint. */
export async function inspectCheckpointRef(ref: string, ctx: CommandContext): Promise<void> {
  await withStore(ctx, true, async (store) => {
    const id = await resolveModelId(store, ref);
    if (!(await isCheckpoint(store, id))) {
      throw new TensorFSError(
        'unsupported',
        'inspect shows one header: a file, or a checkpoint ref; this ref is a snapshot of many files (use tfs ls / tfs tensors, or tfs inspect a file path)',
        { details: { rule: 'cli.inspect_snapshot_ref', ref, id } },
      );
    }
    const d = inspectCheckpoint(id, decodeCheckpoint(await store.readObject(id, { verify: true })));
    ctx.result(d, () => checkpointLines(d));
  });
}

interface ConvertArgs {
  src: string;
  name: string;
  converter?: (ConverterName | ProducerConvention)[];
  dtype?: 'F32' | 'F16' | 'BF16';
  base?: string;
  expected?: string;
  threads?: number;
  include?: string[];
  'shapes-from'?: string;
}

/** `tfs convert <src> --name REF`. */
export const convertCommand = defineCommand<ConvertArgs>({
  ...SPECS.convert,
  builder: (y) =>
    y
      .positional('src', {
        type: 'string',
        demandOption: true,
        describe:
          'a folder or file (a path that exists), hf://owner/repo[@revision], an https:// URL to a file, civitai://<model-version-id> or a civitai.com model page, else a snapshot ref or id',
      })
      .option('include', {
        type: 'string',
        array: true,
        describe: 'hf:// and civitai:// only: fetch just the files matching these globs',
      })
      .option('name', { type: 'string', demandOption: true, describe: 'ref to point at the checkpoint' })
      .option('converter', {
        type: 'string',
        array: true,
        choices: [...CONVERTERS, ...PRODUCER_CONVENTIONS],
        describe:
          'declare the layout (diffusers, transformers, peft, single-file) and/or the producer of quantized weights (bitsandbytes_4bit, gptq, modelopt_nvfp4, kohya_lora, ...) instead of detecting it; repeat for both. A declared one the files do not match is an error (exit 2)',
      })
      .option('shapes-from', {
        type: 'string',
        describe:
          "logical shapes for padded layers (ComfyUI NVFP4/MXFP8): the unquantized model's .safetensors file, a ref in the store, or lane:<topology>",
      })
      .epilog(
        [
          'Recognised layouts (detected in this order):',
          '  diffusers     model_index.json, one component per entry (its folder: config + *.safetensors or a shard index)',
          '  peft          adapter_config.json + adapter_model.safetensors (PEFT LoRA; LoHa/LoKr/IA3… are refused by name)',
          '  transformers  config.json + *.safetensors (or a *.safetensors.index.json) at the root',
          '  single-file   exactly one .safetensors or .gguf file',
          'Sources: a folder or file path, hf://owner/repo[@revision], or a snapshot ref/id in the store.',
          'Producer-quantized weights (bitsandbytes, LLM.int8, scaled FP8, comfy_quant, block FP8, ModelOpt NVFP4, GPTQ, AWQ, Kohya LoRA) are detected and become encodings.',
        ].join('\n'),
      )
      .option('dtype', {
        choices: ['F32', 'F16', 'BF16'] as const,
        describe:
          'the logical dtype of quantized weights whose producer does not record it (default: config.json torch_dtype)',
      })
      .option('base', { type: 'string', describe: 'a checkpoint this one derives from (reports changed tensors)' })
      .option('expected', {
        type: 'string',
        describe: 'id the ref must hold now, or `none` (must not exist); else exit 7 (conflict)',
      })
      .option('threads', { type: 'number', describe: 'hashing threads (default: one per core)' }) as unknown as Argv<
      ConvertArgs & GlobalArgs
    >,
  handler: async (args, ctx) => {
    const declared = args.converter ?? [];
    const layouts = declared.filter((c) => (CONVERTERS as readonly string[]).includes(c)) as ConverterName[];
    const producers = declared.filter((c) => !(CONVERTERS as readonly string[]).includes(c)) as ProducerConvention[];
    if (layouts.length > 1 || producers.length > 1) {
      throw new TensorFSError('invalid_argument', '--converter takes at most one layout and one producer', {
        details: { rule: 'cli.converter', converter: declared },
      });
    }
    const options = {
      name: args.name,
      signal: ctx.signal,
      ...(layouts[0] !== undefined ? { converter: layouts[0] } : {}),
      ...(producers[0] !== undefined ? { producer: producers[0] } : {}),
      ...(args.dtype !== undefined ? { dtype: args.dtype } : {}),
      ...(args.base !== undefined ? { base: args.base } : {}),
      ...(args.expected !== undefined
        ? { expected: args.expected === 'none' ? null : parseObjectId(args.expected) }
        : {}),
      ...(args.threads !== undefined ? { threads: args.threads } : {}),
    };
    if (isHfSource(args.src)) return convertFromHub(args, options, ctx);
    if (isWebSource(args.src)) return convertFromWeb(args, options, ctx);
    const shapesOf = async (store: Parameters<typeof convertSnapshot>[0]): Promise<ConvertOptions> =>
      args['shapes-from'] === undefined
        ? options
        : { ...options, logicalShapes: await shapesFrom(args['shapes-from'], async () => store, ctx.signal) };
    const exists = await fsp
      .lstat(args.src)
      .then(() => true)
      .catch(() => false);
    // Converting a folder or file may create the store, as import does; a ref needs one that exists.
    const r = await withStore(
      ctx,
      false,
      async (store) => {
        const o = await shapesOf(store);
        return exists ? convertPath(store, path.resolve(args.src), o) : convertSnapshot(store, args.src, o);
      },
      exists,
    );
    ctx.result({ ref: args.name, ...r }, () => [
      `${args.name} -> ${r.id}`,
      ...adapterLines(r),
      `${r.converter}: ${r.components} components, ${r.tensors} tensors (${r.encoded} encoded${
        r.conventions.length > 0 ? `: ${r.conventions.join(', ')}` : ''
      }), ${r.assets} assets; wrote ${formatBytes(r.bytesWritten)}${
        r.changedTensors !== undefined ? `; ${r.changedTensors} tensors changed against ${args.base}` : ''
      }`,
    ]);
  },
});

/** The line a PEFT adapter's conversion adds: its type, its base model and its LoRA pairs. */
function adapterLines(r: Awaited<ReturnType<typeof convertSnapshot>>): string[] {
  if (r.adapter === undefined) return [];
  const base = r.adapter.baseModel ?? '(no base model named)';
  return [
    `PEFT ${r.adapter.type} adapter of ${base}${r.adapter.revision ? `@${r.adapter.revision}` : ''}: ${r.adapter.pairs} LoRA pairs`,
  ];
}

/** `tfs convert hf://…`: import the repository from the Hub (commit recorded), then convert that snapshot. */
async function convertFromHub(args: ConvertArgs, options: ConvertOptions, ctx: CommandContext): Promise<void> {
  await withStore(
    ctx,
    false,
    async (store) => {
      const imported = await importFromHub(ctx, store, args.src, {
        ...(args.include !== undefined ? { include: args.include.map(String) } : {}),
        ...(args.threads !== undefined ? { threads: args.threads } : {}),
      });
      const r = await convertSnapshot(
        store,
        imported.snapshot,
        args['shapes-from'] === undefined
          ? options
          : { ...options, logicalShapes: await shapesFrom(args['shapes-from'], async () => store, ctx.signal) },
      );
      ctx.result(
        { ref: args.name, ...r, bytesWritten: r.bytesWritten + imported.bytesWritten, source: imported.source },
        () => [
          `${args.name} -> ${r.id}`,
          sourceLine(args.src, imported),
          ...adapterLines(r),
          `${r.converter}: ${r.components} components, ${r.tensors} tensors (${r.encoded} encoded${
            r.conventions.length > 0 ? `: ${r.conventions.join(', ')}` : ''
          }), ${r.assets} assets; wrote ${formatBytes(r.bytesWritten + imported.bytesWritten)}${
            r.changedTensors !== undefined ? `; ${r.changedTensors} tensors changed against ${args.base}` : ''
          }`,
        ],
      );
    },
    true,
  );
}

/** `tfs convert https://…|civitai://…`: import the file(s) (source recorded), then convert that snapshot. */
async function convertFromWeb(args: ConvertArgs, options: ConvertOptions, ctx: CommandContext): Promise<void> {
  await withStore(
    ctx,
    false,
    async (store) => {
      const imported = await importFromWeb(ctx, store, args.src, {
        ...(args.include !== undefined ? { include: args.include.map(String) } : {}),
        ...(args.threads !== undefined ? { threads: args.threads } : {}),
      });
      const r = await convertSnapshot(store, imported.snapshot, options);
      ctx.result(
        { ref: args.name, ...r, bytesWritten: r.bytesWritten + imported.bytesWritten, source: imported.source },
        () => [
          `${args.name} -> ${r.id}`,
          webSourceLine(args.src, imported),
          `${r.converter}: ${r.components} components, ${r.tensors} tensors (${r.encoded} encoded), ${r.assets} assets; wrote ${formatBytes(r.bytesWritten + imported.bytesWritten)}`,
        ],
      );
    },
    true,
  );
}
