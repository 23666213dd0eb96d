/**
 * Checkpoint commands: `tfs convert`, and the checkpoint side of `inspect`, `tensors`, `cat`,
 * `ls` and `export` (each of which also works on snapshots).
 */
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import type { LocalStore } from '@tensorfs/cas';
import {
  type CheckpointHeader,
  decodeCheckpoint,
  isCheckpointHeader,
  type ObjectId,
  parseObjectId,
  TensorFSError,
} from '@tensorfs/format';
import {
  type Checkpoint,
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
import { withStore } from './store.js';
import { SPECS } from './specs.js';

/** True when `id` is a checkpoint header (reads its first four bytes). */
export async function isCheckpoint(
  store: Pick<LocalStore, 'objectSize' | 'readObjectRange'>,
  id: ObjectId,
): Promise<boolean> {
  const size = await store.objectSize(id);
  return size >= 4 && isCheckpointHeader(await store.readObjectRange(id, 0, 4));
}

/** The `tfs inspect --json` form of a checkpoint header (issue 12's exact shape). */
export function inspectCheckpoint(id: ObjectId, header: CheckpointHeader) {
  return {
    format: 'cozytensors',
    id,
    pipeline: header.pipeline === null ? null : { cls: header.pipeline.cls, config: header.pipeline.config },
    components: header.components.map((c) => ({
      name: c.name,
      cls: c.cls,
      config: c.config,
      tensors: c.tensors.map((t) => ({
        name: t.name,
        dtype: t.dtype,
        shape: t.shape,
        encoding:
          t.encoding === undefined
            ? null
            : {
                scheme: t.encoding.scheme,
                params: t.encoding.params,
                parts: Object.fromEntries(
                  Object.entries(t.encoding.parts).map(([role, p]) => [role, { dtype: p.dtype, shape: p.shape }]),
                ),
              },
      })),
      assets: c.assets.map((a) => ({ name: a.name, size: a.records.reduce((n, r) => n + r.length, 0) })),
    })),
  };
}

/** Human lines for an inspected checkpoint. */
export function checkpointLines(d: ReturnType<typeof inspectCheckpoint>): string[] {
  const lines = [`cozytensors checkpoint ${d.id}${d.pipeline ? `, pipeline ${d.pipeline.cls || '(no class)'}` : ''}`];
  for (const c of d.components) {
    lines.push(`  ${c.name} (${c.cls || 'no class'}): ${c.tensors.length} tensors, ${c.assets.length} assets`);
    for (const t of c.tensors) {
      const enc = t.encoding
        ? `  ${t.encoding.scheme} ${paramsText(t.encoding.params)} [${Object.entries(t.encoding.parts)
            .map(([role, p]) => `${role}: ${p.dtype} [${p.shape.join(', ')}]`)
            .join('; ')}]`
        : '';
      lines.push(`    ${t.name}  ${t.dtype}  [${t.shape.join(', ')}]${enc}`);
    }
    for (const a of c.assets) lines.push(`    asset ${a.name}  ${formatBytes(a.size)}`);
  }
  return lines;
}

/** An encoding's params for a human line: compact JSON without the logical shape and dtype (shown already). */
function paramsText(params: unknown): string {
  if (params === null || typeof params !== 'object' || Array.isArray(params)) return JSON.stringify(params);
  const { shape: _shape, dtype: _dtype, ...rest } = params as Record<string, unknown>;
  return JSON.stringify(rest);
}

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
    const id = await store.resolve(ref);
    if (!(await isCheckpoint(store, id))) {
      throw new TensorFSError(
        'invalid_argument',
        'inspect takes a file or a checkpoint ref; this ref is a snapshot (use tfs ls / tfs tensors)',
        {
          details: { ref, id },
        },
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
}

/** `tfs convert <src> --name REF`. */
export const convertCommand = defineCommand<ConvertArgs>({
  ...SPECS.convert,
  builder: (y) =>
    y
      .positional('src', {
        type: 'string',
        demandOption: true,
        describe: 'a folder or file (a path that exists), hf://owner/repo[@revision], else a snapshot ref or id',
      })
      .option('include', {
        type: 'string',
        array: true,
        describe: 'hf:// only: fetch just the repository paths matching these globs',
      })
      .option('name', { type: 'string', demandOption: true, describe: 'ref to point at the checkpoint' })
      .option('converter', {
        type: 'string',
        array: true,
        choices: [...CONVERTERS, ...PRODUCER_CONVENTIONS],
        describe:
          'declare the layout (diffusers, transformers, single-file) and/or the producer of quantized weights (bitsandbytes_4bit, gptq, modelopt_nvfp4, ...) instead of detecting it; repeat for both',
      })
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
    const exists = await fsp
      .lstat(args.src)
      .then(() => true)
      .catch(() => false);
    // Converting a folder or file may create the store, as import does; a ref needs one that exists.
    const r = await withStore(
      ctx,
      false,
      (store) =>
        exists ? convertPath(store, path.resolve(args.src), options) : convertSnapshot(store, args.src, options),
      exists,
    );
    ctx.result({ ref: args.name, ...r }, () => [
      `${args.name} -> ${r.id}`,
      `${r.converter}: ${r.components} components, ${r.tensors} tensors (${r.encoded} encoded${
        r.conventions.length > 0 ? `: ${r.conventions.join(', ')}` : ''
      }), ${r.assets} assets; wrote ${formatBytes(r.bytesWritten)}${
        r.changedTensors !== undefined ? `; ${r.changedTensors} tensors changed against ${args.base}` : ''
      }`,
    ]);
  },
});

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
      const r = await convertSnapshot(store, imported.snapshot, options);
      ctx.result(
        { ref: args.name, ...r, bytesWritten: r.bytesWritten + imported.bytesWritten, source: imported.source },
        () => [
          `${args.name} -> ${r.id}`,
          sourceLine(args.src, imported),
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

/** The `tfs tensors --json` rows of a checkpoint (optionally one component). */
export function checkpointTensorRows(cp: Checkpoint, component?: string) {
  const comps = component === undefined ? [...cp.components.values()] : [cp.component(component)];
  return comps.flatMap((c) =>
    [...c.tensors.values()].map((v) => ({
      component: c.name,
      name: v.name,
      dtype: v.dtype,
      shape: v.shape.map(Number),
      bytes: v.allRecords.reduce((n, r) => n + r.length, 0),
      objects: v.allRecords.map((r) => r.digest),
      encoding: v.encoding === null ? null : v.encoding.scheme,
    })),
  );
}
