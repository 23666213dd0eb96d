/**
 * LocalStore commands: `tfs init`, `import`, `ls`, `ref get|set|rm`, `export`, `verify`, `gc`, `rm`, `du`.
 * Each opens the store at `--store` (read-only where it only reads) and closes it afterwards.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { LocalStore, type RefProblem, type RemoveResult } from '@tensorfs/cas';
import {
  DEFAULT_BRANCH,
  type ObjectId,
  TensorFSError,
  branchRefName,
  decodeCheckpoint,
  isObjectId,
  isTensorFSError,
  listRepositories,
  parseObjectId,
  parseRepoRefName,
  parseRepoSpec,
  tagRefName,
  treeVariants,
  validateRepoId,
} from '@tensorfs/format';
import type { Argv } from 'yargs';
import { importLocal } from './local-import.js';
import { defineCommand } from '../command.js';
import type { CommandContext, GlobalArgs } from '../context.js';
import { formatBytes } from '../progress.js';
import { checkpointLines, inspectCheckpoint, isCheckpoint } from './checkpoint-view.js';
import { defaultHfRef, importFromHub, isHfSource, recordSource, sourceLine } from './hf.js';
import { resolveTarget } from './revision.js';
import { defaultWebRef, importFromWeb, isWebSource, portableFolder, webSourceLine } from './sources.js';
import { SPECS } from './specs.js';

/** Opens the store at `--store`, runs `fn`, closes it (`create`: may create it, as import does). */
export async function withStore<T>(
  ctx: CommandContext,
  readOnly: boolean,
  fn: (s: LocalStore) => Promise<T>,
  create = false,
  recreateMetadata = false,
): Promise<T> {
  // Only import may create a store; every other command needs one that exists.
  // Reads record use (the cache's least-recently-used order), a read-only open too.
  const store = await LocalStore.open(create ? ctx.storeDir : ctx.existingStoreDir(), {
    readOnly,
    recreateMetadata,
    recordUse: true,
  });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/**
 * `local/<base name>` with every character a ref segment cannot hold replaced by `_`. A name with
 * non-ASCII characters also gets 8 hex digits of its SHA-256 (before the extension), so different
 * names (`模型.safetensors`, `权重.safetensors`) do not share one ref.
 */
export function defaultRefName(file: string): string {
  const original = path.basename(path.resolve(file));
  let base = original.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[.-]+/, '');
  if (/[^\x00-\x7f]/.test(original)) {
    const tag = createHash('sha256').update(original).digest('hex').slice(0, 8);
    const dot = base.lastIndexOf('.');
    base = dot > 0 ? `${base.slice(0, dot)}-${tag}${base.slice(dot)}` : `${base}-${tag}`;
  }
  return `local/${(base.replace(/\.(lock|tmp)$/, '_$1') || 'import').slice(0, 150)}`;
}

export const initCommand = defineCommand<{ shared: boolean; group?: string }>({
  ...SPECS.init,
  builder: (y) =>
    y
      .option('shared', {
        type: 'boolean',
        default: false,
        describe: 'group-writable setgid folders and metadata, for several Unix users at once',
      })
      .option('group', {
        type: 'string',
        describe: 'the group (name or gid) that shares the store (default: the folder group); needs --shared',
      }) as unknown as Argv<{ shared: boolean; group?: string } & GlobalArgs>,
  handler: async (args, ctx) => {
    const r = await LocalStore.init(ctx.storeDir, {
      shared: args.shared,
      ...(args.group !== undefined ? { group: args.group } : {}),
    });
    ctx.result(
      r,
      () =>
        `${r.created ? 'created' : 'adopted'} ${r.shared ? 'shared ' : ''}store ${r.root}${r.shared ? ` (group ${r.gid})` : ''}`,
    );
  },
});

interface ImportArgs {
  path: string;
  name?: string;
  threads?: number;
  fileSha256?: boolean;
  expected?: string;
  include?: string[];
  sha256?: string;
}

export const importCommand = defineCommand<ImportArgs>({
  ...SPECS.import,
  builder: (y) =>
    y
      .positional('path', {
        type: 'string',
        demandOption: true,
        describe:
          'file or folder, a portable folder (tfs export --portable), hf://owner/repo[@revision] (Hub: $HF_ENDPOINT, token: $HF_TOKEN), an https:// URL to a file, or civitai://<model-version-id> / a civitai.com model page (token: $CIVITAI_TOKEN)',
      })
      .option('name', {
        type: 'string',
        describe:
          'ref to set (default: local/<base name>, hf/<owner>/<repo>, web/<file name>, civitai/<version id>; a portable folder: its ref; a Hugging Face cache names its own repositories)',
      })
      .option('include', {
        type: 'string',
        array: true,
        describe: 'hf:// and civitai:// only: import just the files matching these globs (e.g. "*.json" "unet/**")',
      })
      .option('sha256', { type: 'string', describe: 'https:// only: the SHA-256 the file must have (else corrupt)' })
      .option('threads', { type: 'number', describe: 'records hashed and written at once (default 4)' })
      .option('file-sha256', {
        type: 'boolean',
        describe:
          'local files: also hash each file whole and record its SHA-256 for `tfs serve` (one more pass over every byte; a server otherwise computes it on first request)',
      })
      .option('expected', {
        type: 'string',
        describe: 'id the ref must hold now, or `none` (must not exist); else exit 7 (conflict)',
      }) as Argv<ImportArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    if (isHfSource(args.path)) {
      const name = args.name ?? (await defaultHfRef(args.path));
      const r = await withStore(
        ctx,
        false,
        (s) =>
          importFromHub(ctx, s, args.path, {
            name,
            expected: parseExpected(args.expected),
            ...(args.include !== undefined ? { include: args.include.map(String) } : {}),
            ...(args.threads !== undefined ? { threads: args.threads } : {}),
          }),
        true,
      );
      sourceImportResult(ctx, name, r, sourceLine(args.path, r));
      return;
    }
    if (isWebSource(args.path)) return importWeb(args, ctx);
    if (args.sha256 !== undefined) {
      throw new TensorFSError('invalid_argument', '--sha256 is for https:// sources', {
        details: { rule: 'cli.sha256_https_only' },
      });
    }
    const portable = await portableFolder(args.path);
    if (portable !== null) return importPortableFolder(args, ctx, portable);
    if (args.include !== undefined) {
      throw new TensorFSError('invalid_argument', '--include selects files of an hf:// source only', {
        details: { rule: 'cli.include_hf_only' },
      });
    }
    // A Hugging Face cache (hub/, models--owner--name, snapshots/<commit>) names its repositories.
    const { detectHfCache } = await import('@tensorfs/cas');
    if ((await detectHfCache(args.path)) !== null) {
      const { runHfCacheImport } = await import('./hf-cache.js');
      await withStore(ctx, false, (s) => runHfCacheImport(ctx, s, args.path, args), true);
      return;
    }
    const name = args.name ?? defaultRefName(args.path);
    const bar = ctx.progress('import');
    const expected = parseExpected(args.expected);
    const r = await withStore(
      ctx,
      false,
      async (s) => {
        const out = await importLocal(s, args.path, {
          name,
          ...(expected !== undefined ? { expected } : {}),
          ...(args.threads !== undefined ? { threads: args.threads } : {}),
          ...(args.fileSha256 === true ? { fileSha256: true } : {}),
          signal: ctx.signal,
          onProgress: bar.update,
        });
        const { snapshot, files, bytes, bytesWritten, objectsWritten } = out;
        return { snapshot, files, bytes, bytesWritten, objectsWritten };
      },
      true,
    ).finally(() => bar.done());
    ctx.result({ ref: name, ...r }, () => [
      `${name} -> ${r.snapshot}`,
      `${r.files} files, ${formatBytes(r.bytes)}; wrote ${r.objectsWritten} new objects (${formatBytes(r.bytesWritten)})`,
    ]);
  },
});

/** `tfs import https://…|civitai://…`: through the import pipeline, the source recorded. */
async function importWeb(args: ImportArgs, ctx: CommandContext): Promise<void> {
  const name = args.name ?? (await defaultWebRef(args.path));
  const r = await withStore(
    ctx,
    false,
    (s) =>
      importFromWeb(ctx, s, args.path, {
        name,
        expected: parseExpected(args.expected),
        ...(args.include !== undefined ? { include: args.include.map(String) } : {}),
        ...(args.sha256 !== undefined ? { sha256: args.sha256 } : {}),
        ...(args.threads !== undefined ? { threads: args.threads } : {}),
      }),
    true,
  );
  sourceImportResult(ctx, name, r, webSourceLine(args.path, r));
}

/** The result of an import through the source pipeline (hf://, https://, civitai://): one shape for all. */
function sourceImportResult(
  ctx: CommandContext,
  name: string,
  r: {
    snapshot: ObjectId;
    files: number;
    bytes: number;
    bytesFetched: number;
    bytesWritten: number;
    objectsWritten: number;
    source: unknown;
  },
  source: string,
): void {
  const { snapshot, files, bytes, bytesFetched, bytesWritten, objectsWritten } = r;
  ctx.result(
    { ref: name, snapshot, files, bytes, bytesFetched, bytesWritten, objectsWritten, source: r.source },
    () => [
      `${name} -> ${snapshot}`,
      source,
      `${files} files, ${formatBytes(bytes)}; wrote ${objectsWritten} new objects (${formatBytes(bytesWritten)})`,
    ],
  );
}

/** `tfs import <portable folder>`: the checkpoint it holds, each chunk checked against its name. */
async function importPortableFolder(
  args: ImportArgs,
  ctx: CommandContext,
  portable: { variant: string; refs: string[] },
): Promise<void> {
  const name = args.name ?? (portable.refs.length === 1 ? portable.refs[0]! : defaultRefName(args.path));
  const r = await withStore(
    ctx,
    false,
    async (s) => {
      const { importPortable } = await import('@tensorfs/tensors');
      const cp = await importPortable(s, args.path, {
        variant: portable.variant,
        name,
        expected: parseExpected(args.expected),
        signal: ctx.signal,
      });
      await recordSource(s.root, cp.id, {
        kind: 'portable',
        path: path.resolve(args.path),
        variant: portable.variant,
        refs: portable.refs,
      });
      return { checkpoint: cp.id, objects: cp.references().length + 1 };
    },
    true,
  );
  ctx.result({ ref: name, ...r }, () => [`${name} -> ${r.checkpoint} (checkpoint from a portable folder)`]);
}

export const lsCommand = defineCommand<{ ref?: string }>({
  ...SPECS.ls,
  builder: (y) =>
    y.positional('ref', {
      type: 'string',
      describe: 'owner/name[@revision], ref or snapshot id to list (none: every repository and ref)',
    }) as Argv<{ ref?: string } & GlobalArgs>,
  handler: async (args, ctx) => {
    await withStore(ctx, true, async (s) => {
      if (args.ref === undefined) {
        const { refs, problems } = await s.checkRefs({ signal: ctx.signal });
        const repositories = await listRepositories(s);
        // One line a ref; a repository's other branches and its tags read as owner/name@branch|tag.
        ctx.result({ repositories, refs, problems }, () =>
          refs.map((r) => {
            const at = parseRepoRefName(r.name);
            const name =
              at === null ? r.name : at.name === 'main' && at.kind === 'branch' ? at.repo : `${at.repo}@${at.name}`;
            const kind = at?.kind === 'tag' ? '  (tag)' : r.kind === 'checkpoint' ? '  (checkpoint)' : '';
            return `${r.id}  ${name}${kind}`;
          }),
        );
        failOnProblems(ctx, problems, refs.length);
        return;
      }
      const id = await resolveTarget(s, args.ref);
      if (await isCheckpoint(s, id)) {
        const d = inspectCheckpoint(id, decodeCheckpoint(await s.readObject(id, { verify: true })));
        ctx.result(d, () => checkpointLines(d));
        return;
      }
      const m = await s.getManifest(id);
      const variants = treeVariants(m);
      const variantOf = new Map(variants.map((v) => [v.path, v.name]));
      const entries = m.entries.map((e) =>
        e.kind === 'file'
          ? {
              path: e.path,
              kind: e.kind,
              mode: e.mode,
              size: e.size,
              profile: e.profile,
              records: e.records.length,
              ...(variantOf.has(e.path) ? { variant: variantOf.get(e.path)! } : {}),
            }
          : { path: e.path, kind: e.kind, target: e.target },
      );
      ctx.result({ snapshot: id, variants: variants.map((v) => v.name), entries }, () =>
        entries.map((e) =>
          e.kind === 'file'
            ? `${(e.mode ?? 0).toString(8)} ${String(e.size).padStart(14)}  ${e.path}${'variant' in e ? `  (variant ${e.variant === '' ? '(unnamed)' : e.variant})` : ''}`
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
  ...SPECS.ref,
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
      if (id === null)
        throw new TensorFSError('not_found', 'no such ref', { details: { rule: 'store.no_ref', ref: args.name } });
      ctx.result({ name: args.name, id }, () => id);
    } else if (args.action === 'set') {
      if (args.target === undefined) {
        throw new TensorFSError('invalid_argument', 'ref set needs a target (an id or a ref)', {
          details: { rule: 'cli.ref_target', ref: args.name },
        });
      }
      await withStore(ctx, false, async (s) => {
        const id = await resolveTarget(s, args.target!);
        // A ref names a snapshot: a tensor or any other object is refused (malformed).
        await s.getManifest(id).catch((err) => {
          if (isTensorFSError(err) && err.code === 'malformed') {
            throw new TensorFSError('invalid_argument', 'the target is not a snapshot (a ref names a manifest)', {
              details: { rule: 'cli.not_a_snapshot', digest: id },
              cause: err,
            });
          }
          throw err;
        });
        await s.setRef(args.name, id, { expected: parseExpected(args.expected) });
        ctx.result({ name: args.name, id }, () => `${args.name} -> ${id}`);
      });
    } else {
      const expected = parseExpected(args.expected);
      if (expected === null) {
        throw new TensorFSError('invalid_argument', 'ref rm --expected takes the id the ref must hold, not none', {
          details: { rule: 'cli.rm_expected_none', ref: args.name },
        });
      }
      await withStore(ctx, false, (s) => s.deleteRef(args.name, { expected }));
      ctx.result({ name: args.name, deleted: true }, () => `deleted ${args.name}`);
    }
  },
});

interface ExportArgs {
  ref: string;
  dir: string;
  verify: boolean;
  safetensors: boolean;
  cozytensors: boolean;
  portable: boolean;
  hfCache: boolean;
  variant?: string;
}

export const exportCommand = defineCommand<ExportArgs>({
  ...SPECS.export,
  builder: (y) =>
    y
      .positional('ref', { type: 'string', demandOption: true, describe: 'ref, snapshot id or checkpoint id' })
      .positional('dir', { type: 'string', demandOption: true, describe: 'destination folder (created if missing)' })
      .option('verify', {
        type: 'boolean',
        default: true,
        describe: 'rehash every object before its bytes are written (--no-verify: length checks only)',
      })
      .option('safetensors', {
        type: 'boolean',
        default: false,
        describe: 'checkpoint: the Hugging Face layout (the default), byte-identical to what was converted',
      })
      .option('cozytensors', { type: 'boolean', default: false, describe: 'checkpoint: only <variant>.cozytensors' })
      .option('portable', {
        type: 'boolean',
        default: false,
        describe:
          'checkpoint: an origin folder (chunks/<sha256-hex> for every object, refs/<ref>) plus <variant>.cozytensors',
      })
      .option('hf-cache', {
        type: 'boolean',
        default: false,
        describe:
          'repository revision (<repo>[@<rev>]) into <dir> as a Hugging Face cache root: models--owner--name/ with blobs/<etag>, snapshots/<commit>/ links and refs/ (HF_HUB_CACHE=<dir> loads it)',
      })
      .option('variant', { type: 'string', describe: 'header file name stem (default: model)' }) as unknown as Argv<
      ExportArgs & GlobalArgs
    >,
  handler: async (args, ctx) => {
    if (args.hfCache) {
      if (args.safetensors || args.cozytensors || args.portable || args.variant !== undefined) {
        throw new TensorFSError(
          'invalid_argument',
          '--hf-cache exports a tree; it takes none of --safetensors, --cozytensors, --portable, --variant',
          {
            details: { rule: 'cli.hf_cache_mode' },
          },
        );
      }
      const { runHfCacheExport } = await import('./hf-cache.js');
      await withStore(ctx, !args.verify, (s) => runHfCacheExport(ctx, s, args.ref, args.dir, { verify: args.verify }));
      return;
    }
    const modes = [args.safetensors, args.cozytensors, args.portable].filter(Boolean).length;
    if (modes > 1) {
      throw new TensorFSError('invalid_argument', 'choose one of --safetensors, --cozytensors and --portable', {
        details: { rule: 'cli.export_format' },
      });
    }
    const bar = ctx.progress('export');
    // Verifying opens the store for writing, so a corrupt object found here is quarantined for
    // every later reader too.
    const r = await withStore(ctx, !args.verify, async (s) => {
      const id = await resolveTarget(s, args.ref);
      if (await isCheckpoint(s, id)) {
        const { exportCheckpoint, openCheckpoint } = await import('@tensorfs/tensors');
        const cp = await openCheckpoint(s, id);
        const format = args.portable ? 'portable' : args.cozytensors ? 'cozytensors' : 'safetensors';
        const out = await exportCheckpoint(s, cp, args.dir, {
          format,
          signal: ctx.signal,
          ...(args.variant !== undefined ? { variant: args.variant } : {}),
          ...(isObjectId(args.ref) ? {} : { ref: args.ref }),
          onProgress: bar.update,
        });
        return { checkpoint: id, format, ...out };
      }
      if (args.cozytensors || args.portable || args.variant !== undefined) {
        throw new TensorFSError(
          'invalid_argument',
          '--cozytensors, --portable and --variant are for checkpoints; this is a snapshot',
          {
            details: { rule: 'cli.export_snapshot_format', ref: args.ref },
          },
        );
      }
      const out = await s.exportSnapshot(id, args.dir, {
        verify: args.verify,
        signal: ctx.signal,
        onProgress: bar.update,
      });
      return { snapshot: id, ...out };
    }).finally(() => bar.done());
    ctx.result(r, () => `${r.files} files, ${formatBytes(r.bytes)} -> ${args.dir}`);
  },
});

export const verifyCommand = defineCommand<{
  data: boolean;
  sample?: number;
  all: boolean;
  recreateMetadata: boolean;
}>({
  ...SPECS.verify,
  builder: (y) =>
    y
      .option('data', { type: 'boolean', default: false, describe: 'rehash object bytes, not just lengths' })
      .option('sample', { type: 'number', describe: 'with --data, rehash this fraction (0..1] of objects' })
      .option('all', { type: 'boolean', default: false, describe: 'also check unreferenced objects' })
      .option('recreate-metadata', {
        type: 'boolean',
        default: false,
        describe: 'start an empty metadata.sqlite3 if it is missing or empty (roots and quarantine are lost)',
      }) as unknown as Argv<{ data: boolean; sample?: number; all: boolean; recreateMetadata: boolean } & GlobalArgs>,
  handler: async (args, ctx) => {
    const bar = ctx.progress('verify');
    const r = await withStore(
      ctx,
      false,
      (s) =>
        s.verify({
          data: args.data,
          sample: args.sample,
          all: args.all,
          signal: ctx.signal,
          onProgress: bar.update,
        }),
      false,
      args.recreateMetadata,
    ).finally(() => bar.done());
    ctx.result(r, () => [
      `${r.objects} objects (${formatBytes(r.bytes)}), ${r.rehashed} rehashed`,
      ...r.missing.map((id) => `missing ${id}`),
      ...r.corrupt.map((id) => `corrupt ${id}`),
      ...r.unreadable.map((id) => `unreadable ${id}`),
    ]);
    if (r.missing.length + r.corrupt.length > 0) {
      throw new TensorFSError('corrupt', 'the store has missing or corrupt objects', {
        details: {
          rule: 'cli.verify_corrupt',
          missing: r.missing.length,
          corrupt: r.corrupt.length,
          unreadable: r.unreadable.length,
        },
      });
    }
    if (r.unreadable.length > 0) {
      throw new TensorFSError('io', 'some objects could not be read', {
        details: { rule: 'cli.verify_unreadable', unreadable: r.unreadable.length },
      });
    }
  },
});

interface GcArgs {
  origin?: string;
  dryRun: boolean;
  grace?: number;
  'token-file'?: string;
}

export const gcCommand = defineCommand<GcArgs>({
  ...SPECS.gc,
  builder: (y) =>
    y
      .positional('origin', {
        type: 'string',
        describe: 'collect on this origin instead (a remote name, folder, s3:// bucket or hub URL with an admin token)',
      })
      .option('dry-run', { type: 'boolean', default: false, describe: 'report what would go, remove nothing' })
      .option('grace', {
        type: 'number',
        describe: 'keep unreachable objects younger than this many seconds (default 3600)',
      })
      .option('token-file', {
        type: 'string',
        describe: 'with an origin: file holding the token (read per request); default $TENSORFS_TOKEN',
      }) as unknown as Argv<GcArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    if (args.grace !== undefined) graceMs(args.grace);
    if (args.origin !== undefined) {
      const { gcRemote } = await import('./remote.js');
      return gcRemote({ ...args, origin: args.origin }, ctx);
    }
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

interface RmArgs {
  ref: string;
  keepObjects: boolean;
  grace?: number;
  expected?: string;
  all: boolean;
  tags: boolean;
}

/**
 * The refs `tfs rm <target>` removes, and the tags it keeps. `R@B`: branch B (a tag only with
 * `--tags`); `R --all`: every branch (and with `--tags` every tag); a bare `R` (or any other ref
 * name): that ref, refused when it is a repository's main and the repository has other branches
 * or tags (what `R` alone should remove would be a guess).
 */
async function rmTargets(
  s: LocalStore,
  target: string,
  all: boolean,
  tags: boolean,
): Promise<{ repo: string | null; refs: string[]; keptTags: string[] }> {
  const listing = async (repo: string) => {
    const found = (await listRepositories(s)).find((r) => r.repo === repo);
    if (found === undefined) {
      throw new TensorFSError('not_found', 'no such repository', { details: { rule: 'repo.no_such_repo', repo } });
    }
    return found;
  };
  if (target.includes('@')) {
    if (all) {
      throw new TensorFSError('invalid_argument', '--all removes a whole repository: name it without @revision', {
        details: { rule: 'cli.rm_all_revision' },
      });
    }
    const spec = parseRepoSpec(target);
    const repo = await listing(spec.repo);
    const name = spec.revision ?? DEFAULT_BRANCH;
    if (repo.branches.some((b) => b.name === name))
      return { repo: spec.repo, refs: [branchRefName(spec.repo, name)], keptTags: [] };
    if (repo.tags.some((t) => t.name === name)) {
      if (!tags) {
        throw new TensorFSError('invalid_argument', `${name} is a tag (a release): pass --tags to remove it`, {
          details: { rule: 'repo.tag_needs_flag', repo: spec.repo, tag: name },
        });
      }
      return { repo: spec.repo, refs: [tagRefName(spec.repo, name)], keptTags: [] };
    }
    throw new TensorFSError('not_found', 'no such branch or tag', {
      details: { rule: 'repo.no_such_revision', repo: spec.repo, revision: name },
    });
  }
  if (all) {
    validateRepoId(target);
    const repo = await listing(target);
    const refs = repo.branches.map((b) => branchRefName(target, b.name));
    const tagRefs = repo.tags.map((t) => tagRefName(target, t.name));
    return tags
      ? { repo: target, refs: [...refs, ...tagRefs], keptTags: [] }
      : { repo: target, refs, keptTags: repo.tags.map((t) => t.name) };
  }
  const p = (() => {
    try {
      return parseRepoRefName(target);
    } catch {
      return null;
    }
  })();
  if (p !== null && p.kind === 'branch' && p.name === DEFAULT_BRANCH) {
    const repo = (await listRepositories(s)).find((r) => r.repo === p.repo);
    const others = repo === undefined ? [] : repo.branches.filter((b) => b.name !== DEFAULT_BRANCH).map((b) => b.name);
    const tagNames = repo?.tags.map((t) => t.name) ?? [];
    if (others.length + tagNames.length > 0) {
      throw new TensorFSError(
        'conflict',
        `${p.repo} has ${[others.length ? `branches ${others.join(', ')}` : '', tagNames.length ? `tags ${tagNames.join(', ')}` : ''].filter(Boolean).join(' and ')}: tfs rm ${p.repo}@main removes just main, --all every branch (--tags its tags too)`,
        { details: { rule: 'repo.rm_ambiguous', repo: p.repo, branches: others, tags: tagNames } },
      );
    }
  }
  return { repo: p?.repo ?? null, refs: [target], keptTags: [] };
}

export const rmCommand = defineCommand<RmArgs>({
  ...SPECS.rm,
  builder: (y) =>
    y
      .positional('ref', {
        type: 'string',
        demandOption: true,
        describe: 'ref or repository to delete: local/example, owner/name@branch, owner/name --all',
      })
      .option('all', {
        type: 'boolean',
        default: false,
        describe: 'every branch of the repository (its tags stay unless --tags)',
      })
      .option('tags', {
        type: 'boolean',
        default: false,
        describe:
          'tags too: with --all every tag, with owner/name@tag that tag (tags are releases: never removed without it)',
      })
      .option('keep-objects', {
        type: 'boolean',
        default: false,
        describe: 'delete just the ref; leave its objects to tfs gc',
      })
      .option('grace', {
        type: 'number',
        describe: 'keep objects younger than this many seconds, as tfs gc does (default 3600)',
      })
      .option('expected', {
        type: 'string',
        describe: 'id the ref must hold now; else exit 7 (conflict) and nothing is removed',
      }) as unknown as Argv<RmArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    const expected = parseExpected(args.expected);
    if (expected === null) {
      throw new TensorFSError('invalid_argument', 'rm --expected takes the id the ref must hold, not none', {
        details: { rule: 'cli.rm_expected_none', ref: args.ref },
      });
    }
    const out = await withStore(ctx, false, async (s) => {
      const t = await rmTargets(s, args.ref, args.all, args.tags);
      if (expected !== undefined && t.refs.length !== 1) {
        throw new TensorFSError('invalid_argument', '--expected needs a single ref', {
          details: { rule: 'cli.rm_expected_many', refs: t.refs },
        });
      }
      const results: RemoveResult[] = [];
      // One at a time: what two branches share is freed with the last of them.
      for (const name of t.refs) {
        results.push(
          await s.remove(name, {
            keepObjects: args.keepObjects,
            signal: ctx.signal,
            ...(expected !== undefined ? { expected } : {}),
            ...(args.grace !== undefined ? { graceMs: graceMs(args.grace) } : {}),
          }),
        );
      }
      return { ...t, results };
    });
    const lines = (r: RemoveResult): string[] => {
      if (r.keptObjects) return [`deleted ${r.name}; its objects are left to tfs gc`];
      const l = [
        `deleted ${r.name}: freed ${formatBytes(r.bytes)} (${r.removed} objects); ${formatBytes(r.sharedBytes)} kept (${r.shared} objects something else reaches)`,
      ];
      if (r.left > 0) {
        l.push(`${formatBytes(r.leftBytes)} (${r.left} objects) younger than the grace period are left for tfs gc`);
      }
      return l;
    };
    const kept = out.keptTags.length > 0 ? [`kept tags ${out.keptTags.join(', ')} (--tags removes them)`] : [];
    if (out.results.length === 1 && out.keptTags.length === 0 && !args.all) {
      const r = out.results[0]!;
      ctx.result(r, () => lines(r));
      return;
    }
    const sum = (f: (r: RemoveResult) => number) => out.results.reduce((n, r) => n + f(r), 0);
    const total = {
      removed: sum((r) => r.removed),
      bytes: sum((r) => r.bytes),
      left: sum((r) => r.left),
      leftBytes: sum((r) => r.leftBytes),
    };
    ctx.result({ repo: out.repo, refs: out.results, keptTags: out.keptTags, ...total }, () => [
      ...out.results.flatMap(lines),
      ...kept,
      `${out.repo ?? args.ref}: freed ${formatBytes(total.bytes)} (${total.removed} objects)`,
    ]);
  },
});

/** `--grace SECONDS` as milliseconds; `invalid_argument` unless a non-negative number. */
function graceMs(seconds: number): number {
  if (!Number.isFinite(seconds) || seconds < 0) {
    throw new TensorFSError('invalid_argument', '--grace takes a non-negative number of seconds', {
      details: { rule: 'cli.grace', actual: String(seconds) },
    });
  }
  return Math.round(seconds * 1000);
}

export const duCommand = defineCommand({
  ...SPECS.du,
  handler: async (_args, ctx) => {
    const u = await withStore(ctx, true, (s) => s.usage({ signal: ctx.signal }));
    const col = (n: number) => formatBytes(n).padStart(10);
    ctx.result(u, () => [
      `logical ${formatBytes(u.logicalBytes)}, stored ${formatBytes(u.storedBytes)} in ${u.objects} objects, dedup ${u.dedupRatio.toFixed(2)}x, unreferenced ${formatBytes(u.unreferencedBytes)}; per ref: logical, stored, exclusive, shared`,
      ...u.refs.map(
        (r) => `${col(r.logicalBytes)} ${col(r.storedBytes)} ${col(r.exclusiveBytes)} ${col(r.sharedBytes)}  ${r.name}`,
      ),
      ...(u.repositories.length > 0 ? ['per repository (its branches and tags together):'] : []),
      ...u.repositories.map(
        (r) =>
          `${col(r.logicalBytes)} ${col(r.storedBytes)} ${col(r.exclusiveBytes)} ${col(r.sharedBytes)}  ${r.repo} (${r.refs.length} ref${r.refs.length === 1 ? '' : 's'})`,
      ),
    ]);
    failOnProblems(ctx, u.problems, u.refs.length);
  },
});

/**
 * After a listing was printed: one warning line per bad ref (human mode; `--json` has them in
 * `problems`), then the failure that sets the exit code. It is `corrupt` (exit 4) when any ref is
 * damaged, else the first problem's code (`io` 11, `denied` 8); its details name the first such
 * ref and rule, and every bad ref in `refs`.
 */
function failOnProblems(ctx: CommandContext, problems: readonly RefProblem[], good: number): void {
  if (problems.length === 0) return;
  for (const p of problems) ctx.warn(`refs/${p.name}: ${p.message} [${p.code}, ${p.rule}]`);
  const worst = problems.find((p) => p.code === 'corrupt') ?? problems[0]!;
  const n = problems.length;
  throw new TensorFSError(worst.code, `${n} ref${n === 1 ? '' : 's'} could not be read or measured (${good} listed)`, {
    details: { rule: worst.rule, ref: worst.name, refs: problems.map((p) => p.name) },
  });
}
