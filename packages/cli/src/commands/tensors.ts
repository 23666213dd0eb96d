import { once } from 'node:events';
import { constants as fsConstants } from 'node:fs';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { LocalStore, type Store } from '@tensorfs/cas';
import {
  jsonInteger,
  type ObjectId,
  RECORD_GRID_BYTES,
  type RecordRef,
  TensorFSError,
  throwIfAborted,
  toTensorFSError,
} from '@tensorfs/format';
import {
  type ComposeChanges,
  compose,
  composeCheckpoint,
  modelKind,
  openCheckpoint,
  openModel,
  openTensors,
  readDecoded,
  type TensorSet,
  type TensorView,
} from '@tensorfs/tensors';
import { defineCommand } from '../command.js';
import type { CommandContext, GlobalArgs } from '../context.js';
import type { Argv } from 'yargs';
import { formatBytes } from '../progress.js';
import { checkpointTensorRows, isCheckpoint } from './checkpoint-view.js';
import { fetchingStore } from './remote.js';
import { type FetchingStore, globMatcher } from '@tensorfs/remote';
import { resolveModelId, VARIANT_OPTION } from './revision.js';
import { SPECS } from './specs.js';
import { fileDestination, outputError, writeAtomically } from '../destination.js';

/** Opens the store, runs `fn`, closes the store. */
async function withStore<T>(
  ctx: CommandContext,
  readOnly: boolean,
  fn: (store: LocalStore) => Promise<T>,
  create = false,
): Promise<T> {
  // Only import may create a store; every other command needs one that exists.
  // Reads record use (the cache's least-recently-used order), a read-only open too.
  const store = await LocalStore.open(create ? ctx.storeDir : ctx.existingStoreDir(), { readOnly, recordUse: true });
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
export const tensorsCommand = defineCommand<{ ref: string; file?: string; component?: string; variant?: string }>({
  ...SPECS.tensors,
  builder: (y) =>
    y
      .positional('ref', {
        type: 'string',
        demandOption: true,
        describe: 'owner/name[@revision], ref name, snapshot id or checkpoint id',
      })
      .option('variant', VARIANT_OPTION)
      .option('file', { type: 'string', describe: 'only this file (or shard index) of the snapshot' })
      .option('component', {
        type: 'string',
        describe: "only this component: a checkpoint's, or a snapshot's top folder (model for files at its root)",
      }),
  handler: async (args, ctx) => {
    await withStore(ctx, true, async (store) => {
      const id = await resolveModelId(store, args.ref, args.variant);
      if (await isCheckpoint(store, id)) {
        if (args.file !== undefined) throw fileOfCheckpoint(args.ref);
        const cp = await openCheckpoint(store, id);
        const tensors = checkpointTensorRows(cp, args.component);
        ctx.result({ checkpoint: id, tensors }, () =>
          tensors.map(
            (t) =>
              `${t.component}  ${t.name}  ${t.dtype}  [${t.shape.join(', ')}]  ${t.bytes}${t.encoding ? `  ${t.encoding}` : ''}`,
          ),
        );
        return;
      }
      const opened = await openTensors(store, args.ref, {
        signal: ctx.signal,
        ...(args.file ? { file: args.file } : {}),
      });
      // A snapshot's component is its top folder (`model` at the root), as in a conversion.
      const set = args.component === undefined ? opened : componentOfSet(opened, args.component);
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

/** A snapshot's tensor set narrowed to one component (its files and tensors). @throws `not_found` */
function componentOfSet(set: TensorSet, component: string): TensorSet {
  const views = [...set].filter((v) => v.component === component);
  if (views.length === 0) {
    throw new TensorFSError(
      'invalid_argument',
      `the snapshot has no component ${JSON.stringify(component)} with tensors`,
      {
        details: {
          rule: 'cli.no_component',
          component,
          components: [...new Set([...set].map((v) => v.component))],
        },
      },
    );
  }
  const files = new Set(views.map((v) => v.file));
  const narrowed: TensorSet = {
    snapshot: set.snapshot,
    files: set.files.filter((f) => files.has(f.path)),
    indexes: set.indexes.filter((i) => set.files.some((f) => f.index === i && files.has(f.path))),
    skipped: [],
    size: views.length,
    [Symbol.iterator]: () => views[Symbol.iterator](),
    has: (name) => views.some((v) => v.name === name),
    get: (name, file) => set.get(name, file),
    names: () => [...new Set(views.map((v) => v.name))],
    header: (file) => set.header(file),
    ggufHeader: (file) => set.ggufHeader(file),
    template: (file) => set.template(file),
    entry: (file) => set.entry(file),
    shardIndex: (index) => set.shardIndex(index),
  };
  return narrowed;
}

/** `--file` names a snapshot's file; a checkpoint has components. */
function fileOfCheckpoint(ref: string): TensorFSError {
  return new TensorFSError('unsupported', 'a checkpoint has components, not files: use --component, not --file', {
    details: { rule: 'cli.file_of_checkpoint', ref },
  });
}

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
  component?: string;
  output?: string;
  verify: boolean;
  decode: boolean;
  dtype?: 'F32' | 'F16' | 'BF16';
  from?: string;
  variant?: string;
  'token-file'?: string;
}>({
  ...SPECS.cat,
  builder: (y) =>
    y
      .positional('ref', { type: 'string', demandOption: true, describe: 'owner/name[@revision], ref name or id' })
      .option('variant', VARIANT_OPTION)
      .positional('tensor', { type: 'string', demandOption: true, describe: 'tensor name' })
      .option('file', { type: 'string', describe: 'the file (or shard index) holding the tensor' })
      .option('component', {
        type: 'string',
        describe:
          'checkpoint: the component holding the tensor (default: the only one that has it); name#role reads a part',
      })
      .option('output', { alias: 'o', type: 'string', describe: 'write to this file (atomically) instead of stdout' })
      .option('verify', {
        type: 'boolean',
        default: true,
        describe: 'rehash every object before writing its bytes (--no-verify: length checks only)',
      })
      .option('decode', {
        type: 'boolean',
        default: false,
        describe: 'write the values as little-endian floats: GGML block types decoded, F32/F16/BF16 converted',
      })
      .option('dtype', {
        type: 'string',
        choices: ['F32', 'F16', 'BF16'] as const,
        describe: 'with --decode: the output dtype (default F32 for block types, else the stored dtype)',
      })
      .option('from', {
        type: 'string',
        describe: 'read from this origin, fetching (and verifying) only the objects the tensor needs',
      })
      .option('token-file', {
        type: 'string',
        describe: 'with --from: file holding the token; default $TENSORFS_TOKEN',
      }),
  handler: async (args, ctx) => {
    if (args.dtype !== undefined && !args.decode) {
      throw new TensorFSError('invalid_argument', '--dtype needs --decode', { details: { rule: 'cli.cat_dtype' } });
    }
    // The destination is checked before anything is read or fetched (checked again when written).
    if (args.output !== undefined) await fileDestination(path.resolve(args.output), '-o');
    // Verifying opens the store for writing, so a corrupt object found here is quarantined.
    await withStore(
      ctx,
      !args.verify && args.from === undefined,
      async (local) => {
        const remote = args.from === undefined ? undefined : await fetchingStore(ctx, local, args.from, args);
        try {
          const store = remote ?? local;
          // Resolved once: a second pass must read the same snapshot even if the ref moves.
          const at = { ...args, ref: await resolveModelId(store, args.ref, args.variant) };
          const view = await catView(store, at);
          const options = { verify: args.verify, signal: ctx.signal };
          const decoded = args.decode
            ? await readDecoded(view, { ...options, ...(args.dtype ? { dtype: args.dtype } : {}) })
            : undefined;
          const pieces = (): AsyncIterable<Uint8Array> | Uint8Array[] => (decoded ? [decoded] : view.pieces(options));
          // What cannot be taken back (stdout, a FIFO, a device) gets no byte before all are verified.
          const direct = (): AsyncIterable<Uint8Array> | Uint8Array[] =>
            decoded || !args.verify ? pieces() : verifiedFirst(store, view, () => catView(store, at), options);
          if (args.output === undefined) {
            for await (const piece of direct()) {
              if (!ctx.io.stdout.write(piece)) await once(ctx.io.stdout, 'drain');
            }
            return;
          }
          await writeOutput(path.resolve(args.output), pieces, direct);
          if (!ctx.json) return;
          ctx.result({
            tensor: view.name,
            file: view.file,
            bytes: decoded ? decoded.length : view.byteLength,
            output: path.basename(args.output),
            ...(decoded
              ? {
                  decoded: true,
                  dtype: args.dtype ?? (view.dtype === 'F16' || view.dtype === 'BF16' ? view.dtype : 'F32'),
                }
              : {}),
            ...(remote ? { fetched: { ...remote.fetched } } : {}),
          });
        } finally {
          await remote?.close();
        }
      },
      args.from !== undefined,
    );
  },
});

type Pieces = AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

/**
 * Writes a tensor's bytes to `dest`. A character device (`/dev/null`, a terminal) or a FIFO is written
 * straight into, as `cat > dest` would, from `direct` (all verified before the first byte): the
 * temp-and-rename below would replace the device node with a regular file (or fail,
 * unprivileged, in `/dev`). Other special files (sockets, block devices, folders) are refused;
 * anything else is written atomically from `pieces`.
 */
async function writeOutput(dest: string, pieces: () => Pieces, direct: () => Pieces) {
  const st = await fileDestination(dest, '-o');
  if (st === undefined || st.isFile()) return writeAtomically(dest, pieces());
  if (!st.isCharacterDevice() && !st.isFIFO()) {
    throw new TensorFSError(
      'invalid_argument',
      `-o must name a file, a character device or a FIFO; ${path.basename(dest)} is another special file`,
      { details: { rule: 'cli.output_type', path: path.basename(dest) } },
    );
  }
  let fh: fsp.FileHandle | undefined;
  try {
    // No O_CREAT, no O_TRUNC: a device or FIFO is written as it is, never replaced.
    fh = await fsp.open(dest, fsConstants.O_WRONLY | fsConstants.O_NOCTTY);
    for await (const piece of direct()) {
      for (let done = 0; done < piece.length; ) done += (await fh.write(piece, done)).bytesWritten;
    }
  } catch (error) {
    if (error instanceof TensorFSError) throw error;
    throw outputError(dest, error);
  } finally {
    await fh?.close().catch(() => {});
  }
}

/**
 * The leading bytes the first pass of {@link verifiedFirst} keeps: one object of the planner's grid,
 * so a tensor of one object (most tensors) is read and hashed once.
 */
const KEEP_BYTES = RECORD_GRID_BYTES;

/**
 * A tensor's bytes for a destination that cannot take bytes back (stdout, a FIFO, a device): none
 * is handed out before every object the tensor's bytes come from has been read, length-checked
 * and (with `verify`) rehashed. The first pass reads every piece and keeps the leading ones up to
 * {@link KEEP_BYTES}; when that was the whole tensor they are all it writes. Otherwise the kept
 * pieces go out and the rest is read and rehashed again as it streams: an object that changed
 * after the first pass fails loudly (`corrupt`, `details.pass` 2) instead of being written.
 */
async function* verifiedFirst(
  store: Pick<Store, 'readObject'>,
  view: TensorView,
  reopen: () => Promise<TensorView>,
  options: { verify: boolean; signal: AbortSignal },
): AsyncGenerator<Uint8Array> {
  const kept: Uint8Array[] = [];
  let keptBytes = 0;
  let count = 0;
  for await (const piece of view.pieces(options)) {
    if (kept.length === count && keptBytes + piece.length <= KEEP_BYTES) {
      kept.push(piece);
      keptBytes += piece.length;
    }
    count++;
  }
  yield* kept;
  if (kept.length === count) return;
  if (!view.aligned) {
    // Byte ranges of the file's records: a fresh view has a fresh source, so every object is rehashed.
    let i = 0;
    for await (const piece of (await reopen()).pieces(options)) if (i++ >= kept.length) yield piece;
    return;
  }
  // One piece per record: read the rest again, one ahead of the consumer.
  const read = async (r: RecordRef): Promise<Uint8Array> => {
    throwIfAborted(options.signal);
    let bytes: Uint8Array;
    try {
      bytes = await store.readObject(r.digest, { verify: options.verify });
    } catch (error) {
      const e = toTensorFSError(error, 'io');
      throw new TensorFSError(e.code, `${e.message} (tensor ${JSON.stringify(view.name)}, after the first pass)`, {
        details: { ...e.details, tensor: view.name, path: view.file, pass: 2 },
        cause: error,
      });
    }
    if (bytes.length !== r.length) {
      throw new TensorFSError('corrupt', 'a stored object changed length after the first pass', {
        details: { rule: 'tensors.object_length', tensor: view.name, path: view.file, digest: r.digest, pass: 2 },
      });
    }
    return bytes;
  };
  const rest = view.records.slice(kept.length);
  let next: Promise<Uint8Array> | null = read(rest[0]!);
  for (let i = 0; i < rest.length; i++) {
    const current = next!;
    next = i + 1 < rest.length ? read(rest[i + 1]!) : null;
    next?.catch(() => {}); // a consumer that stops early leaves no unhandled rejection
    yield await current;
  }
}

/** The view `tfs cat` reads: a snapshot tensor, or a checkpoint tensor (or part, `name#role`). */
async function catView(
  store: LocalStore | FetchingStore,
  args: { ref: string; tensor: string; file?: string; component?: string },
): Promise<TensorView> {
  const id = await store.resolve(args.ref);
  if (await isCheckpoint(store, id)) {
    if (args.file !== undefined) throw fileOfCheckpoint(args.ref);
    const cp = await openCheckpoint(store, id);
    // `name#role` reads a part, unless a tensor is called exactly that.
    const whole = [...cp.components.values()].some((c) => c.tensors.has(args.tensor));
    const [name, role] = whole ? [args.tensor, undefined] : splitRole(args.tensor);
    const holders = [...cp.components.values()].filter(
      (c) => (args.component === undefined || c.name === args.component) && c.tensors.has(name),
    );
    if (args.component !== undefined) cp.component(args.component);
    if (holders.length === 0) {
      throw new TensorFSError('not_found', 'no such tensor in the checkpoint', {
        details: { rule: 'cli.no_tensor', tensor: name, ...(args.component ? { component: args.component } : {}) },
      });
    }
    if (holders.length > 1) {
      throw new TensorFSError('invalid_argument', 'several components have this tensor: name one with --component', {
        details: { rule: 'cli.ambiguous_tensor', tensor: name, components: holders.map((c) => c.name) },
      });
    }
    const view = holders[0]!.tensors.get(name)!;
    return role === undefined ? view : view.part(role);
  }
  if (args.component !== undefined) {
    // A snapshot's component is its top folder (`model` at the root).
    const model = await openModel(store, id);
    if (args.file === undefined) return model.get(args.tensor, args.component);
    const view = (await openTensors(store, id, { file: args.file })).get(args.tensor, args.file);
    if (view.component !== args.component) {
      throw new TensorFSError('not_found', 'no such tensor in that file of the component', {
        details: { rule: 'cli.no_tensor', tensor: args.tensor, path: args.file, component: args.component },
      });
    }
    return view;
  }
  const set = await openTensors(store, id, args.file ? { file: args.file } : {});
  return set.get(args.tensor, args.file);
}

/** `name#role` → [name, role]; a name without `#` has no role. */
function splitRole(tensor: string): [string, string | undefined] {
  const at = tensor.lastIndexOf('#');
  return at < 0 ? [tensor, undefined] : [tensor.slice(0, at), tensor.slice(at + 1)];
}

/** Writes a tensor to `dest` through a temp beside it: fsync, rename; nothing is left on failure. */

/** The only tensor file of a snapshot (for `compose` without `--file`). */
function onlyFile(set: TensorSet): string {
  if (set.files.length !== 1) {
    throw new TensorFSError('invalid_argument', 'the snapshot has several tensor files: name one with --file', {
      details: { rule: 'cli.file_required', files: set.files.map((f) => f.path) },
    });
  }
  return set.files[0]!.path;
}

/** `tfs compose <ref>`: a snapshot whose file has tensors renamed or dropped, sharing every tensor object. */
interface ComposeArgs {
  ref: string;
  file?: string;
  component?: string;
  rekey?: string;
  trim?: string[];
  name: string;
  allowEmpty: boolean;
  fileSha256?: boolean;
}

export const composeCommand = defineCommand<ComposeArgs>({
  ...SPECS.compose,
  builder: (y) =>
    y
      .positional('ref', { type: 'string', demandOption: true, describe: 'ref name, snapshot or checkpoint id' })
      .option('file', { type: 'string', describe: 'snapshot: the .safetensors or .gguf file (default: the only one)' })
      .option('component', {
        type: 'string',
        describe: 'checkpoint: compose this component only (default: every component)',
      })
      .option('rekey', { type: 'string', describe: 'a JSON file mapping old tensor names to new ones' })
      .option('trim', {
        type: 'string',
        array: true,
        describe: 'drop tensors whose name matches this glob (the dialect of --tensors)',
      })
      .option('name', {
        type: 'string',
        demandOption: true,
        describe: 'the ref to point at the result (must not exist, unless it is <ref>)',
      })
      .option('allow-empty', {
        type: 'boolean',
        default: false,
        describe: 'succeed even when a --trim pattern matches no tensor',
      })
      .option('file-sha256', {
        type: 'boolean',
        describe:
          "checkpoint: also hash the new checkpoint's safetensors export and record each file's SHA-256 for `tfs serve` (a server otherwise computes it on first request)",
      }) as unknown as Argv<ComposeArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    if (args.rekey === undefined && (args.trim === undefined || args.trim.length === 0)) {
      throw new TensorFSError('invalid_argument', 'nothing to compose: give --rekey and/or --trim', {
        details: { rule: 'cli.compose_nothing' },
      });
    }
    const changes: ComposeChanges = {
      ...(args.rekey !== undefined ? { rename: await readRekeyMap(args.rekey) } : {}),
      ...(args.trim?.length ? { drop: globMatcher(args.trim) } : {}),
    };
    await withStore(ctx, false, async (store) => {
      const { id, kind } = await modelKind(store, args.ref);
      if (kind === 'checkpoint') return composeCheckpointRef(store, id, args, changes, ctx);
      if (args.component !== undefined) {
        throw new TensorFSError('invalid_argument', '--component is for checkpoints; this is a snapshot (use --file)', {
          details: { rule: 'cli.compose_component', ref: args.ref },
        });
      }
      const snapshot = id;
      const file = args.file ?? onlyFile(await openTensors(store, snapshot, { signal: ctx.signal }));
      if (args.trim?.length && !args.allowEmpty) {
        const names = [...(await openTensors(store, snapshot, { file, signal: ctx.signal }))].map((v) => v.name);
        checkTrimMatches(args.trim, names, { file });
      }
      const result = await compose(store, snapshot, file, changes, {
        ref: args.name,
        expected: args.name === args.ref ? snapshot : null,
        signal: ctx.signal,
      });
      // The ref is set: nothing after this point may fail the command. A file whose every tensor
      // was trimmed is gone from the snapshot (0 tensors); a count that cannot be made is null.
      const tensors = result.removed.includes(file)
        ? 0
        : await openTensors(store, result.snapshot, { file })
            .then((set) => set.size)
            .catch(() => null);
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
          result.removed.includes(file) ? `${file}: removed (no tensors left)` : `${file}: ${tensors ?? '?'} tensors`,
          ...written.map((w) => `  wrote ${w.path} (${w.header})`),
          ...result.removed.map((r) => `  removed ${r}`),
        ],
      );
    });
  },
});

/** A `--trim` pattern that matches no tensor is `not_found` (unless `--allow-empty`). */
function checkTrimMatches(trim: readonly string[], names: readonly string[], where: Record<string, string>): void {
  const idle = trim.filter((t) => {
    const match = globMatcher(t);
    return !names.some((n) => match(n));
  });
  if (idle.length > 0) {
    throw new TensorFSError('not_found', `--trim ${idle.join(', ')} matches no tensor (--allow-empty to go on)`, {
      details: { rule: 'cli.trim_no_match', patterns: idle, ...where },
    });
  }
}

/** `tfs compose` of a checkpoint: a new header over the same objects (`--component` limits it). */
async function composeCheckpointRef(
  store: LocalStore,
  id: ObjectId,
  args: ComposeArgs,
  changes: ComposeChanges,
  ctx: CommandContext,
): Promise<void> {
  if (args.file !== undefined) {
    throw new TensorFSError('unsupported', 'a checkpoint has components, not files: use --component, not --file', {
      details: { rule: 'cli.compose_file_of_checkpoint', ref: args.ref, id },
    });
  }
  if (args.trim?.length && !args.allowEmpty) {
    const model = await openModel(store, id, { signal: ctx.signal });
    const scope = args.component === undefined ? [...model.components.values()] : [model.component(args.component)];
    checkTrimMatches(
      args.trim,
      scope.flatMap((c) => [...c.tensors.keys()]),
      args.component !== undefined ? { component: args.component } : {},
    );
  }
  const result = await composeCheckpoint(store, id, changes, {
    ref: args.name,
    expected: args.name === args.ref ? id : null,
    signal: ctx.signal,
    ...(args.component !== undefined ? { component: args.component } : {}),
    ...(args.fileSha256 === true ? { fileSha256: true } : {}),
  });
  ctx.result({ checkpoint: result.id, ref: args.name, base: result.base, components: result.components }, () => [
    `${args.name} -> ${result.id}`,
    ...result.components.map((c) => `${c.name}: ${c.after} tensors (was ${c.before})`),
  ]);
}

/** Reads a `{ "old": "new" }` JSON file. */
async function readRekeyMap(file: string): Promise<Map<string, string>> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (error) {
    throw new TensorFSError('not_found', `cannot read ${path.basename(file)}`, {
      details: { rule: 'cli.rekey_read', path: path.basename(file), errno: (error as NodeJS.ErrnoException).code },
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new TensorFSError('invalid_argument', 'the rekey map is not JSON', {
      details: { rule: 'cli.rekey_json', path: path.basename(file) },
      cause: error,
    });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TensorFSError('invalid_argument', 'the rekey map is a JSON object of old name to new name', {
      details: { rule: 'cli.rekey_shape' },
    });
  }
  const dup = duplicateKey(text);
  if (dup !== undefined) {
    throw new TensorFSError('invalid_argument', `the rekey map names ${JSON.stringify(dup)} twice`, {
      details: { rule: 'cli.rekey_duplicate', tensor: dup, path: path.basename(file) },
    });
  }
  const map = new Map<string, string>();
  for (const [from, to] of Object.entries(value)) {
    if (typeof to !== 'string') {
      throw new TensorFSError('invalid_argument', 'every new name in the rekey map is a string', {
        details: { rule: 'cli.rekey_shape', tensor: from },
      });
    }
    map.set(from, to);
  }
  return map;
}

/**
 * The first key that appears twice in the top-level object of valid JSON `text` (JSON.parse keeps
 * the last silently), or undefined.
 */
export function duplicateKey(text: string): string | undefined {
  const seen = new Set<string>();
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    else if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const raw = text.slice(i, j + 1);
      i = j;
      if (depth !== 1) continue;
      let k = j + 1;
      while (/\s/.test(text[k] ?? '')) k++;
      if (text[k] !== ':') continue; // a value, not a key
      const key = JSON.parse(raw) as string;
      if (seen.has(key)) return key;
      seen.add(key);
    }
  }
  return undefined;
}
