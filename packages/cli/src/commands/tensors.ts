import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import type { Store } from '@tensorfs/cas';
import { jsonInteger, TensorFSError } from '@tensorfs/format';
import type { ComposeChanges, TensorSet, TensorView } from '@tensorfs/tensors';
import { defineCommand } from '../command.js';
import type { CommandContext } from '../context.js';
import { formatBytes } from '../progress.js';

/** Opens the store, runs `fn`, closes the store. */
let compose: typeof import('@tensorfs/tensors').compose;
let openTensors: typeof import('@tensorfs/tensors').openTensors;

async function withStore<T>(ctx: CommandContext, readOnly: boolean, fn: (store: Store) => Promise<T>): Promise<T> {
  // The store's and tensors' module graphs load with the first command that needs them, not at start-up.
  const { Store } = await import('@tensorfs/cas');
  ({ compose, openTensors } = await import('@tensorfs/tensors'));
  const store = await Store.open(ctx.storeDir, { readOnly });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** `[2048, 2048]`. */
function shapeText(shape: readonly bigint[]): string {
  return `[${shape.join(', ')}]`;
}

/** `tfs tensors <ref>`: every tensor of a snapshot, from headers only. */
export const tensorsCommand = defineCommand<{ ref: string; file?: string }>({
  command: 'tensors <ref>',
  describe: 'List the tensors of a snapshot (name, dtype, shape, bytes, objects), reading headers only',
  builder: (y) =>
    y
      .positional('ref', { type: 'string', demandOption: true, describe: 'ref name or snapshot id' })
      .option('file', { type: 'string', describe: 'only this file (or shard index) of the snapshot' }),
  handler: async (args, ctx) => {
    await withStore(ctx, true, async (store) => {
      const set = await openTensors(store, args.ref, { signal: ctx.signal, ...(args.file ? { file: args.file } : {}) });
      const tensors = [...set].map((v) => ({
        file: v.file,
        name: v.name,
        dtype: v.dtype,
        shape: v.shape.map(jsonInteger),
        bytes: v.byteLength,
        objects: v.digests,
        aligned: v.aligned,
      }));
      ctx.result(
        { snapshot: set.snapshot, files: set.files, indexes: set.indexes, skipped: set.skipped, tensors },
        () => humanList(set),
      );
    });
  },
});

function humanList(set: TensorSet): string[] {
  const lines: string[] = [];
  for (const file of set.files) {
    lines.push(`${file.path} (${file.format}, ${file.tensors.length} tensors, ${formatBytes(file.size)})`);
    const views = [...set].filter((v) => v.file === file.path);
    const width = Math.max(4, ...views.map((v) => v.name.length));
    for (const v of views) {
      const objects = v.aligned ? `${v.digests.length} object${v.digests.length === 1 ? '' : 's'}` : 'ranges';
      lines.push(
        `  ${v.name.padEnd(width)}  ${v.dtype.padEnd(7)}  ${shapeText(v.shape).padEnd(20)}  ${String(v.byteLength).padStart(12)}  ${objects}`,
      );
    }
  }
  for (const s of set.skipped) lines.push(`skipped ${s.path}: ${s.code}: ${s.message}`);
  if (lines.length === 0) lines.push('no safetensors or GGUF files');
  return lines;
}

/** `tfs cat <ref> <tensor>`: a tensor's raw bytes, to stdout or (atomically) to a file. */
export const catCommand = defineCommand<{
  ref: string;
  tensor: string;
  file?: string;
  output?: string;
  verify: boolean;
}>({
  command: 'cat <ref> <tensor>',
  describe: "Write a tensor's raw bytes to stdout, or atomically to a file with -o",
  builder: (y) =>
    y
      .positional('ref', { type: 'string', demandOption: true, describe: 'ref name or snapshot id' })
      .positional('tensor', { type: 'string', demandOption: true, describe: 'tensor name' })
      .option('file', { type: 'string', describe: 'the file (or shard index) holding the tensor' })
      .option('output', { alias: 'o', type: 'string', describe: 'write to this file (atomically) instead of stdout' })
      .option('verify', {
        type: 'boolean',
        default: true,
        describe: 'rehash every object before writing its bytes (--no-verify: length checks only)',
      }),
  handler: async (args, ctx) => {
    // Verifying opens the store for writing, so a corrupt object found here is quarantined.
    await withStore(ctx, !args.verify, async (store) => {
      const set = await openTensors(store, args.ref, { signal: ctx.signal, ...(args.file ? { file: args.file } : {}) });
      const view = set.get(args.tensor, args.file);
      const options = { verify: args.verify, signal: ctx.signal };
      if (args.output === undefined) {
        for await (const piece of view.pieces(options)) {
          if (!ctx.io.stdout.write(piece)) await once(ctx.io.stdout, 'drain');
        }
        return;
      }
      await writeAtomically(path.resolve(args.output), view, options);
      if (!ctx.json) return;
      ctx.result({ tensor: view.name, file: view.file, bytes: view.byteLength, output: path.basename(args.output) });
    });
  },
});

/** Writes a tensor to `dest` through a temp beside it: fsync, rename; nothing is left on failure. */
async function writeAtomically(dest: string, view: TensorView, options: { verify: boolean; signal: AbortSignal }) {
  const temp = path.join(path.dirname(dest), `.${path.basename(dest)}.tfs-${randomBytes(6).toString('hex')}`);
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(temp, 'wx', 0o644);
    for await (const piece of view.pieces(options)) {
      for (let done = 0; done < piece.length; ) done += (await fh.write(piece, done)).bytesWritten;
    }
    await fh.datasync();
    await fh.close();
    fh = undefined;
    await fsp.rename(temp, dest);
  } catch (error) {
    await fh?.close().catch(() => {});
    await fsp.rm(temp, { force: true });
    if (error instanceof TensorFSError) throw error;
    throw new TensorFSError('io', `cannot write ${path.basename(dest)}`, {
      details: { path: path.basename(dest), errno: (error as NodeJS.ErrnoException).code },
      cause: error,
    });
  }
}

/** `*` any run, `?` one character: a whole-name pattern. */
function globToRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 'u');
}

/** The only tensor file of a snapshot (for `compose` without `--file`). */
function onlyFile(set: TensorSet): string {
  if (set.files.length !== 1) {
    throw new TensorFSError('invalid_argument', 'the snapshot has several tensor files: name one with --file', {
      details: { files: set.files.map((f) => f.path) },
    });
  }
  return set.files[0]!.path;
}

/** `tfs compose <ref>`: a snapshot whose file has tensors renamed or dropped, sharing every tensor object. */
export const composeCommand = defineCommand<{
  ref: string;
  file?: string;
  rekey?: string;
  trim?: string[];
  name: string;
}>({
  command: 'compose <ref>',
  describe: 'Rename (--rekey) or drop (--trim) tensors of a file: one new header object, every tensor shared',
  builder: (y) =>
    y
      .positional('ref', { type: 'string', demandOption: true, describe: 'ref name or snapshot id' })
      .option('file', { type: 'string', describe: 'the .safetensors or .gguf file (default: the only one)' })
      .option('rekey', { type: 'string', describe: 'a JSON file mapping old tensor names to new ones' })
      .option('trim', { type: 'string', array: true, describe: 'drop tensors whose name matches (* and ?)' })
      .option('name', {
        type: 'string',
        demandOption: true,
        describe: 'the ref to point at the result (must not exist, unless it is <ref>)',
      }),
  handler: async (args, ctx) => {
    if (args.rekey === undefined && (args.trim === undefined || args.trim.length === 0)) {
      throw new TensorFSError('invalid_argument', 'nothing to compose: give --rekey and/or --trim');
    }
    const changes: ComposeChanges = {
      ...(args.rekey !== undefined ? { rename: await readRekeyMap(args.rekey) } : {}),
      ...(args.trim?.length ? { drop: matchAny(args.trim.map(globToRegExp)) } : {}),
    };
    await withStore(ctx, false, async (store) => {
      const snapshot = await store.resolve(args.ref);
      const file = args.file ?? onlyFile(await openTensors(store, snapshot, { signal: ctx.signal }));
      const result = await compose(store, snapshot, file, changes, {
        ref: args.name,
        expected: args.name === args.ref ? snapshot : null,
        signal: ctx.signal,
      });
      const tensors = (await openTensors(store, result.snapshot, { file, signal: ctx.signal })).size;
      const written = result.entries.map((e) => ({ path: e.path, header: e.records[0]?.digest ?? null }));
      ctx.result(
        {
          snapshot: result.snapshot,
          ref: args.name,
          base: result.base,
          file,
          tensors,
          written,
          removed: result.removed,
        },
        () => [
          `${args.name} -> ${result.snapshot}`,
          `${file}: ${tensors} tensors`,
          ...written.map((w) => `  wrote ${w.path} (${w.header})`),
          ...result.removed.map((r) => `  removed ${r}`),
        ],
      );
    });
  },
});

function matchAny(patterns: readonly RegExp[]): (name: string) => boolean {
  return (name) => patterns.some((p) => p.test(name));
}

/** Reads a `{ "old": "new" }` JSON file. */
async function readRekeyMap(file: string): Promise<Map<string, string>> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (error) {
    throw new TensorFSError('not_found', `cannot read ${path.basename(file)}`, {
      details: { path: path.basename(file), errno: (error as NodeJS.ErrnoException).code },
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new TensorFSError('invalid_argument', 'the rekey map is not JSON', {
      details: { path: path.basename(file) },
      cause: error,
    });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TensorFSError('invalid_argument', 'the rekey map is a JSON object of old name to new name');
  }
  const map = new Map<string, string>();
  for (const [from, to] of Object.entries(value)) {
    if (typeof to !== 'string') {
      throw new TensorFSError('invalid_argument', 'every new name in the rekey map is a string', {
        details: { tensor: from },
      });
    }
    map.set(from, to);
  }
  return map;
}
