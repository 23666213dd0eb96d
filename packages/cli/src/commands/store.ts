/**
 * Store commands: `tfs import`, `ls`, `ref get|set|rm`, `export`, `verify`, `gc`, `du`.
 * Each opens the store at `--store` (read-only where it only reads) and closes it afterwards.
 */
import path from 'node:path';
import type { Store } from '@tensorfs/cas';
import { type ObjectId, TensorFSError, parseObjectId } from '@tensorfs/format';
import type { Argv } from 'yargs';
import { defineCommand } from '../command.js';
import type { CommandContext, GlobalArgs } from '../context.js';
import { formatBytes } from '../progress.js';

async function withStore<T>(ctx: CommandContext, readOnly: boolean, fn: (s: Store) => Promise<T>): Promise<T> {
  // The store's module graph loads with the first command that needs it, not at start-up.
  const { Store } = await import('@tensorfs/cas');
  const store = await Store.open(ctx.storeDir, { readOnly });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** `local/<base name>` with every character a ref segment cannot hold replaced by `_`. */
export function defaultRefName(file: string): string {
  const base = path
    .basename(path.resolve(file))
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^[.-]+/, '');
  return `local/${(base.replace(/\.(lock|tmp)$/, '_$1') || 'import').slice(0, 150)}`;
}

export const importCommand = defineCommand<{ path: string; name?: string; threads?: number; expected?: string }>({
  command: 'import <path>',
  describe: 'Import a file or a folder as a snapshot and name it with a ref',
  builder: (y) =>
    y
      .positional('path', { type: 'string', demandOption: true, describe: 'file or folder to import' })
      .option('name', { type: 'string', describe: 'ref to set (default: local/<base name>)' })
      .option('threads', { type: 'number', describe: 'hashing threads (default: one per core)' })
      .option('expected', {
        type: 'string',
        describe: 'id the ref must hold now, or `none` (must not exist); else exit 7 (conflict)',
      }) as Argv<{ path: string; name?: string; threads?: number; expected?: string } & GlobalArgs>,
  handler: async (args, ctx) => {
    const name = args.name ?? defaultRefName(args.path);
    const bar = ctx.progress('import');
    const r = await withStore(ctx, false, (s) =>
      s.importPath(args.path, {
        name,
        expected: parseExpected(args.expected),
        threads: args.threads,
        signal: ctx.signal,
        onProgress: (p) => bar.update(p.bytes, p.bytesTotal),
      }),
    ).finally(() => bar.done());
    ctx.result({ ref: name, ...r }, () => [
      `${name} -> ${r.snapshot}`,
      `${r.files} files, ${formatBytes(r.bytes)}; wrote ${r.objectsWritten} new objects (${formatBytes(r.bytesWritten)})`,
    ]);
  },
});

export const lsCommand = defineCommand<{ ref?: string }>({
  command: 'ls [ref]',
  describe: 'List refs, or the files of one snapshot',
  builder: (y) =>
    y.positional('ref', { type: 'string', describe: 'ref or snapshot id to list' }) as Argv<
      { ref?: string } & GlobalArgs
    >,
  handler: async (args, ctx) => {
    await withStore(ctx, true, async (s) => {
      if (args.ref === undefined) {
        const refs = await s.listRefs();
        ctx.result({ refs }, () => refs.map((r) => `${r.id}  ${r.name}`));
        return;
      }
      const id = await s.resolve(args.ref);
      const m = await s.getManifest(id);
      const entries = m.entries.map((e) =>
        e.kind === 'file'
          ? { path: e.path, kind: e.kind, mode: e.mode, size: e.size, profile: e.profile, records: e.records.length }
          : { path: e.path, kind: e.kind, target: e.target },
      );
      ctx.result({ snapshot: id, entries }, () =>
        entries.map((e) =>
          e.kind === 'file'
            ? `${(e.mode ?? 0).toString(8)} ${String(e.size).padStart(14)}  ${e.path}`
            : `lnk ${''.padStart(14)}  ${e.path} -> ${e.target}`,
        ),
      );
    });
  },
});

function parseExpected(value: string | undefined): ObjectId | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  return parseObjectId(value);
}

interface RefArgs {
  action: 'get' | 'set' | 'rm';
  name: string;
  target?: string;
  expected?: string;
}

export const refCommand = defineCommand<RefArgs>({
  command: 'ref <action> <name> [target]',
  describe: 'Read (get), point (set <name> <target>) or delete (rm) a ref; --expected makes it a compare-and-swap',
  builder: (y) =>
    y
      .positional('action', { choices: ['get', 'set', 'rm'] as const, demandOption: true, describe: 'get, set or rm' })
      .positional('name', { type: 'string', demandOption: true, describe: 'ref name, e.g. local/example' })
      .positional('target', { type: 'string', describe: 'for set: a snapshot id or another ref' })
      .option('expected', {
        type: 'string',
        describe: 'id the ref must hold now, or `none` (set only: it must not exist); else exit 7 (conflict)',
      }) as unknown as Argv<RefArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    if (args.action === 'get') {
      const id = await withStore(ctx, true, (s) => s.getRef(args.name));
      if (id === null) throw new TensorFSError('not_found', 'no such ref', { details: { ref: args.name } });
      ctx.result({ name: args.name, id }, () => id);
    } else if (args.action === 'set') {
      if (args.target === undefined) {
        throw new TensorFSError('invalid_argument', 'ref set needs a target (an id or a ref)', {
          details: { ref: args.name },
        });
      }
      await withStore(ctx, false, async (s) => {
        const id = await s.resolve(args.target!);
        await s.setRef(args.name, id, { expected: parseExpected(args.expected) });
        ctx.result({ name: args.name, id }, () => `${args.name} -> ${id}`);
      });
    } else {
      const expected = parseExpected(args.expected);
      if (expected === null) {
        throw new TensorFSError('invalid_argument', 'ref rm --expected takes the id the ref must hold, not none', {
          details: { ref: args.name },
        });
      }
      await withStore(ctx, false, (s) => s.deleteRef(args.name, { expected }));
      ctx.result({ name: args.name, deleted: true }, () => `deleted ${args.name}`);
    }
  },
});

export const exportCommand = defineCommand<{ ref: string; dir: string; verify: boolean }>({
  command: 'export <ref> <dir>',
  describe: 'Rebuild a snapshot as ordinary files under a folder, byte-exact',
  builder: (y) =>
    y
      .positional('ref', { type: 'string', demandOption: true, describe: 'ref or snapshot id' })
      .positional('dir', { type: 'string', demandOption: true, describe: 'destination folder (created if missing)' })
      .option('verify', {
        type: 'boolean',
        default: true,
        describe: 'rehash every object before its bytes are written (--no-verify: length checks only)',
      }) as Argv<{ ref: string; dir: string; verify: boolean } & GlobalArgs>,
  handler: async (args, ctx) => {
    const bar = ctx.progress('export');
    // Verifying opens the store for writing, so a corrupt object found here is quarantined for
    // every later reader too.
    const r = await withStore(ctx, !args.verify, async (s) => {
      const id = await s.resolve(args.ref);
      const out = await s.exportSnapshot(id, args.dir, {
        verify: args.verify,
        signal: ctx.signal,
        onProgress: (p) => bar.update(p.bytes, p.bytesTotal),
      });
      return { snapshot: id, ...out };
    }).finally(() => bar.done());
    ctx.result(r, () => `${r.files} files, ${formatBytes(r.bytes)} -> ${args.dir}`);
  },
});

export const verifyCommand = defineCommand<{ data: boolean; sample?: number; all: boolean }>({
  command: 'verify',
  describe: 'Check that everything refs and roots reach is present and intact (exit 4 if not)',
  builder: (y) =>
    y
      .option('data', { type: 'boolean', default: false, describe: 'rehash object bytes, not just lengths' })
      .option('sample', { type: 'number', describe: 'with --data, rehash this fraction (0..1] of objects' })
      .option('all', { type: 'boolean', default: false, describe: 'also check unreferenced objects' }) as Argv<
      { data: boolean; sample?: number; all: boolean } & GlobalArgs
    >,
  handler: async (args, ctx) => {
    const bar = ctx.progress('verify');
    const r = await withStore(ctx, false, (s) =>
      s.verify({
        data: args.data,
        sample: args.sample,
        all: args.all,
        signal: ctx.signal,
        onProgress: (p) => bar.update(p.bytes),
      }),
    ).finally(() => bar.done());
    ctx.result(r, () => [
      `${r.objects} objects (${formatBytes(r.bytes)}), ${r.rehashed} rehashed`,
      ...r.missing.map((id) => `missing ${id}`),
      ...r.corrupt.map((id) => `corrupt ${id}`),
    ]);
    if (r.missing.length + r.corrupt.length > 0) {
      throw new TensorFSError('corrupt', 'the store has missing or corrupt objects', {
        details: { missing: r.missing.length, corrupt: r.corrupt.length },
      });
    }
  },
});

export const gcCommand = defineCommand<{ dryRun: boolean; grace?: number }>({
  command: 'gc',
  describe: 'Remove objects no ref, root or live lease reaches',
  builder: (y) =>
    y
      .option('dry-run', { type: 'boolean', default: false, describe: 'report what would go, remove nothing' })
      .option('grace', {
        type: 'number',
        describe: 'keep unreachable objects younger than this many seconds (default 3600)',
      }) as unknown as Argv<{ dryRun: boolean; grace?: number } & GlobalArgs>,
  handler: async (args, ctx) => {
    const r = await withStore(ctx, args.dryRun, (s) =>
      s.gc({
        dryRun: args.dryRun,
        graceMs: args.grace === undefined ? undefined : Math.round(args.grace * 1000),
        signal: ctx.signal,
      }),
    );
    ctx.result(
      r,
      () => `${r.dryRun ? 'would remove' : 'removed'} ${r.removed} objects (${formatBytes(r.bytes)}), kept ${r.kept}`,
    );
  },
});

export const duCommand = defineCommand({
  command: 'du',
  describe: 'Show logical and stored bytes, the dedup ratio and per-ref figures',
  handler: async (_args, ctx) => {
    const u = await withStore(ctx, true, (s) => s.usage());
    ctx.result(u, () => [
      `logical ${formatBytes(u.logicalBytes)}, stored ${formatBytes(u.storedBytes)} in ${u.objects} objects, dedup ${u.dedupRatio.toFixed(2)}x`,
      ...u.refs.map(
        (r) => `${formatBytes(r.logicalBytes).padStart(10)} ${formatBytes(r.storedBytes).padStart(10)}  ${r.name}`,
      ),
    ]);
  },
});
