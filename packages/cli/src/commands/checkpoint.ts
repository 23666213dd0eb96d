/**
 * Checkpoint commands: `tfs convert`, and the checkpoint side of `inspect`, `tensors`, `cat`,
 * `ls` and `export` (each of which also works on snapshots).
 */
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  branchRefName,
  comparePaths,
  decodeCheckpoint,
  type ObjectId,
  parseObjectId,
  parseRepoSpec,
  TensorFSError,
} from '@tensorfs/format';
import {
  type CheckpointDestination,
  checkDestination,
  CONVERTERS,
  type ConverterName,
  type ConvertOptions,
  convertSnapshot,
  PRODUCER_CONVENTIONS,
  type ProducerConvention,
  type PublishedRevision,
} from '@tensorfs/tensors';
import type { Argv } from 'yargs';
import { importLocal } from './local-import.js';
import { defineCommand } from '../command.js';
import type { CommandContext, GlobalArgs } from '../context.js';
import { formatBytes } from '../progress.js';
import { importFromHub, isHfSource, sourceLine } from './hf.js';
import { importFromWeb, isWebSource, webSourceLine } from './sources.js';
import { checkpointLines, inspectCheckpoint, isCheckpoint } from './checkpoint-view.js';
import { shapesFrom } from './shapes-from.js';
import { loadRemote, originOf, type TokenArgs } from './remote.js';
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

interface ConvertArgs extends TokenArgs {
  src: string;
  name?: string;
  to?: string;
  repo?: string;
  variant?: string;
  message?: string;
  resume?: string;
  converter?: (ConverterName | ProducerConvention)[];
  dtype?: 'F32' | 'F16' | 'BF16';
  base?: string;
  expected?: string;
  threads?: number;
  fileSha256?: boolean;
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
      .option('name', {
        type: 'string',
        describe: 'ref to point at the checkpoint (required without --to; with it, default the REPO@BRANCH ref)',
      })
      .option('to', {
        type: 'string',
        describe:
          'publish to this origin (hub URL, remote name, folder, s3://) while converting: objects stream as they are written, then a tree on --repo',
      })
      .option('repo', {
        type: 'string',
        describe: 'with --to: REPO[@BRANCH], the branch the tree is appended to (default branch: draft)',
      })
      .option('variant', {
        type: 'string',
        describe: "with --to: the header is the tree's model.VARIANT.cozytensors (default model.cozytensors)",
      })
      .option('message', { type: 'string', describe: 'with --to: the revision message' })
      .option('resume', {
        type: 'string',
        describe:
          'a folder journaling the conversion: run again with the same folder after a crash or kill to continue without rewriting or re-sending what was done',
      })
      .option('token-file', {
        type: 'string',
        describe: 'with --to: read the token from this file (else TENSORFS_TOKEN)',
      })
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
      .option('threads', {
        type: 'number',
        describe: 'records hashed and written at once (default 4)',
      })
      .option('file-sha256', {
        type: 'boolean',
        describe:
          "also record the SHA-256 of each file of the checkpoint's safetensors export for `tfs serve` (hashes what the source's import did not record; a server otherwise computes it on first request)",
      }) as unknown as Argv<ConvertArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    const declared = args.converter ?? [];
    const layouts = declared.filter((c) => (CONVERTERS as readonly string[]).includes(c)) as ConverterName[];
    const producers = declared.filter((c) => !(CONVERTERS as readonly string[]).includes(c)) as ProducerConvention[];
    if (layouts.length > 1 || producers.length > 1) {
      throw new TensorFSError('invalid_argument', '--converter takes at most one layout and one producer', {
        details: { rule: 'cli.converter', converter: declared },
      });
    }
    const target = await convertTarget(args, ctx);
    try {
      await convertTo(args, ctx, target, layouts[0], producers[0]);
    } finally {
      await (target.destination?.origin as { close?: () => Promise<void> } | undefined)?.close?.();
    }
  },
});

async function convertTo(
  args: ConvertArgs,
  ctx: CommandContext,
  target: ConvertTarget,
  converter: ConverterName | undefined,
  producer: ProducerConvention | undefined,
): Promise<void> {
  const name = target.name;
  const options = {
    name,
    signal: ctx.signal,
    ...(target.destination !== undefined ? { destination: target.destination } : {}),
    ...(target.resume !== undefined ? { resume: target.resume } : {}),
    ...(converter !== undefined ? { converter } : {}),
    ...(producer !== undefined ? { producer } : {}),
    ...(args.dtype !== undefined ? { dtype: args.dtype } : {}),
    ...(args.base !== undefined ? { base: args.base } : {}),
    ...(args.expected !== undefined
      ? { expected: args.expected === 'none' ? null : parseObjectId(args.expected) }
      : {}),
    ...(args.threads !== undefined ? { threads: args.threads } : {}),
    ...(args.fileSha256 === true ? { fileSha256: true } : {}),
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
  // The folder or file goes through the one import pipeline, as `tfs import` takes it.
  const importOptions = {
    signal: ctx.signal,
    ...(args.threads !== undefined ? { threads: args.threads } : {}),
    // Hashed whole while it is read (the writer then takes the list: no second read).
    ...(args.fileSha256 === true ? { fileSha256: true } : {}),
  };
  let resumedImport = false;
  const r = await withStore(
    ctx,
    false,
    async (store) => {
      const o = await shapesOf(store);
      if (!exists) return convertSnapshot(store, args.src, o);
      if (target.resume === undefined) {
        const imported = await importLocal(store, path.resolve(args.src), importOptions);
        const converted = await convertSnapshot(store, imported.snapshot, o);
        return { ...converted, bytesWritten: converted.bytesWritten + imported.bytesWritten };
      }
      // With --resume, the import is journaled too: a source that did not change since it was
      // imported (same paths, sizes and modification times) is not read or hashed again.
      const journal = path.join(path.dirname(target.resume), 'import.json');
      const signature = await sourceSignature(path.resolve(args.src));
      const prior = await fsp
        .readFile(journal, 'utf8')
        .then((t) => JSON.parse(t) as { signature?: unknown; snapshot?: unknown })
        .catch(() => undefined);
      if (
        prior !== undefined &&
        JSON.stringify(prior.signature) === JSON.stringify(signature) &&
        typeof prior.snapshot === 'string' &&
        (await store.has(parseObjectId(prior.snapshot)))
      ) {
        resumedImport = true;
        return convertSnapshot(store, prior.snapshot, o);
      }
      const imported = await importLocal(store, path.resolve(args.src), importOptions);
      await fsp.writeFile(journal, `${JSON.stringify({ signature, snapshot: imported.snapshot })}\n`);
      const converted = await convertSnapshot(store, imported.snapshot, o);
      return { ...converted, bytesWritten: converted.bytesWritten + imported.bytesWritten };
    },
    exists,
  );
  const resumed = target.resume !== undefined && exists ? { resumed: { import: resumedImport } } : {};
  ctx.result({ ref: name, ...r, ...resumed }, () => [
    `${name} -> ${r.id}`,
    ...publishedLines(r, target),
    ...adapterLines(r),
    `${r.converter}: ${r.components} components, ${r.tensors} tensors (${r.encoded} encoded${
      r.conventions.length > 0 ? `: ${r.conventions.join(', ')}` : ''
    }), ${r.assets} assets; wrote ${formatBytes(r.bytesWritten)}${
      r.changedTensors !== undefined ? `; ${r.changedTensors} tensors changed against ${args.base}` : ''
    }`,
  ]);
}

interface ConvertTarget {
  name: string;
  destination?: CheckpointDestination;
  resume?: string;
  display?: string;
}

/**
 * Where `tfs convert` puts the checkpoint: the local ref (`--name`, or with `--to` the local
 * `REPO@BRANCH` ref), the origin destination, and the resume journal in `--resume DIR`.
 */
async function convertTarget(args: ConvertArgs, ctx: CommandContext): Promise<ConvertTarget> {
  let resume: string | undefined;
  if (args.resume !== undefined) {
    const dir = path.resolve(args.resume);
    await fsp.mkdir(dir, { recursive: true });
    // The journal is for one conversion: the same source to the same place, or it is refused.
    const what = `${JSON.stringify({ src: args.src, to: args.to ?? null, repo: args.repo ?? null, variant: args.variant ?? null, name: args.name ?? null })}\n`;
    const file = path.join(dir, 'conversion.json');
    const prior = await fsp.readFile(file, 'utf8').catch(() => undefined);
    if (prior !== undefined && prior !== what) {
      throw new TensorFSError(
        'invalid_argument',
        '--resume names the journal of another conversion: use a new folder',
        {
          details: { rule: 'cli.resume_mismatch' },
        },
      );
    }
    if (prior === undefined) await fsp.writeFile(file, what);
    resume = path.join(dir, 'checkpoint.journal');
  }
  if (args.to === undefined) {
    if (args.repo !== undefined || args.variant !== undefined || args.message !== undefined) {
      throw new TensorFSError('invalid_argument', '--repo, --variant and --message go with --to', {
        details: { rule: 'cli.convert_to' },
      });
    }
    if (args.name === undefined) {
      throw new TensorFSError('invalid_argument', 'tfs convert needs --name (or --to with --repo)', {
        details: { rule: 'cli.convert_name' },
      });
    }
    return { name: args.name, ...(resume !== undefined ? { resume } : {}) };
  }
  if (args.repo === undefined) {
    throw new TensorFSError('invalid_argument', '--to needs --repo REPO[@BRANCH]', {
      details: { rule: 'cli.convert_repo' },
    });
  }
  const spec = parseRepoSpec(args.repo);
  const branch = spec.revision ?? 'draft';
  const origin = await originOf(ctx, args.to, args);
  const { authorFor } = await loadRemote();
  const fallback = ctx.io.env.TENSORFS_AUTHOR || userInfoName();
  const destination: CheckpointDestination = {
    origin,
    repo: spec.repo,
    branch,
    author: await authorFor(origin, fallback, { signal: ctx.signal }),
    ...(args.variant !== undefined ? { variant: args.variant } : {}),
    ...(args.message !== undefined ? { message: args.message } : {}),
  };
  checkDestination(destination);
  return {
    name: args.name ?? branchRefName(spec.repo, branch),
    destination,
    display: origin.display,
    ...(resume !== undefined ? { resume } : {}),
  };
}

/** What identifies a source folder or file for `--resume`: every file's path, size and modification time. */
async function sourceSignature(root: string): Promise<[string, number, number][]> {
  const out: [string, number, number][] = [];
  const walk = async (p: string, rel: string): Promise<void> => {
    const st = await fsp.stat(p);
    if (st.isDirectory()) {
      for (const name of (await fsp.readdir(p)).sort(comparePaths))
        await walk(path.join(p, name), rel === '' ? name : `${rel}/${name}`);
    } else out.push([rel, st.size, st.mtimeMs]);
  };
  await walk(root, '');
  return out;
}

function userInfoName(): string {
  try {
    return os.userInfo().username || 'unknown';
  } catch {
    return 'unknown';
  }
}

function publishedLines(r: { published?: PublishedRevision }, target: ConvertTarget | undefined): string[] {
  const p = r.published;
  if (p === undefined) return [];
  return [
    `published ${p.repo}@${p.branch}${target?.display ? ` on ${target.display}` : ''}: tree ${p.tree} (${p.path}), revision ${p.revision}; sent ${p.sent.objects} objects, ${formatBytes(p.sent.bytes)}`,
  ];
}

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
        { ref: options.name, ...r, bytesWritten: r.bytesWritten + imported.bytesWritten, source: imported.source },
        () => [
          `${options.name} -> ${r.id}`,
          ...publishedLines(r, undefined),
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
