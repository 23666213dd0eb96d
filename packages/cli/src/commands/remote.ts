/**
 * Remote commands: `tfs pull`, `tfs push`, `tfs serve` and `tfs remote add|ls|rm`.
 * Tokens come from `--token-file` (re-read for every request) or `TENSORFS_TOKEN`; they are never
 * printed. Remote names are kept in `remotes.json` in the store folder.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalStore, RefFolder, siblingTemp } from '@tensorfs/cas';
import {
  type ObjectId,
  TensorFSError,
  isObjectId,
  parseObjectId,
  parseRepoSpec,
  resolveRevision,
} from '@tensorfs/format';
import type { Credential, FetchingStore, Origin, TokensConfig } from '@tensorfs/remote';
import type { Argv } from 'yargs';
import { defineCommand } from '../command.js';
import type { CommandContext, GlobalArgs } from '../context.js';
import { formatBytes } from '../progress.js';
import { SPECS } from './specs.js';

/**
 * `@tensorfs/remote` (and undici, ~110 ms to load) only for the commands that move bytes: every
 * other command shares this module's chunk.
 */
export const loadRemote = () => import('@tensorfs/remote');

const REMOTE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export interface TokenArgs {
  'token-file'?: string;
}

function remotesFile(ctx: CommandContext): string {
  return path.join(ctx.storeDir, 'remotes.json');
}

async function readRemotes(ctx: CommandContext): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await fsp.readFile(remotesFile(ctx), 'utf8');
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return {};
    throw new TensorFSError('io', 'cannot read remotes.json', { details: { rule: 'cli.remotes_io' } });
  }
  try {
    const v = JSON.parse(text) as { remotes?: Record<string, string> };
    return { ...(v.remotes ?? {}) };
  } catch {
    throw new TensorFSError('malformed', 'remotes.json is not valid JSON', { details: { rule: 'cli.remotes_json' } });
  }
}

async function writeRemotes(ctx: CommandContext, remotes: Record<string, string>): Promise<void> {
  const file = remotesFile(ctx);
  await fsp.mkdir(path.dirname(file), { recursive: true });
  const tmp = siblingTemp(file);
  await fsp.writeFile(tmp, `${JSON.stringify({ remotes }, null, 2)}\n`);
  await fsp.rename(tmp, file);
}

/**
 * The token in `file`, trimmed. A path that does not exist is `not_found`; one that is a folder
 * (or another non-file) is `invalid_argument`; one that cannot be read is `io` with the system's
 * code: each names the problem, so it is not reported as the origin refusing the credential.
 */
function readTokenFile(file: string): string {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new TensorFSError('not_found', 'the token file does not exist', { details: { rule: 'cli.token_file' } });
    }
    throw new TensorFSError('io', `the token file cannot be read (${code ?? 'error'})`, {
      details: { rule: 'cli.token_file_unreadable', code: code ?? 'error' },
    });
  }
  if (!stat.isFile()) {
    throw new TensorFSError(
      'invalid_argument',
      `the token file is ${stat.isDirectory() ? 'a folder' : 'not a regular file'}; name the file holding the token`,
      { details: { rule: 'cli.token_file_not_file' } },
    );
  }
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new TensorFSError('io', `the token file cannot be read (${code})`, {
      details: { rule: 'cli.token_file_unreadable', code },
    });
  }
}

function credentialOf(args: TokenArgs, ctx: CommandContext): Credential | undefined {
  const file = args['token-file'];
  if (file !== undefined) {
    readTokenFile(file); // a missing, unreadable or non-file path is a local error now, not `denied` later
    // Read afresh for every request, so a rotated token is picked up mid-transfer.
    return () => readTokenFile(file);
  }
  const env = ctx.io.env.TENSORFS_TOKEN;
  return env && env.length > 0 ? env : undefined;
}

/** An origin from a remote name (see `tfs remote add`), a URL or a folder path. */
export async function originOf(ctx: CommandContext, spec: string, args: TokenArgs): Promise<Origin> {
  const remotes = REMOTE_NAME.test(spec) && !fs.existsSync(spec) ? await readRemotes(ctx) : {};
  const url = remotes[spec] ?? spec;
  const { connectOrigin } = await loadRemote();
  return connectOrigin(url, {
    token: credentialOf(args, ctx),
    signal: ctx.signal,
    offline: ctx.offline,
    s3: { env: ctx.io.env, offline: ctx.offline },
  });
}

/**
 * The origin a command talks to when none is named: `TENSORFS_ENDPOINT`, else the remote named
 * `origin` (see `tfs remote add origin URL`); `invalid_argument` (`cli.no_origin`) when neither.
 */
export async function defaultOriginSpec(ctx: CommandContext): Promise<string> {
  const env = ctx.io.env.TENSORFS_ENDPOINT;
  if (env !== undefined && env.length > 0) return env;
  const remotes = await readRemotes(ctx);
  if (remotes.origin !== undefined) return remotes.origin;
  throw new TensorFSError(
    'invalid_argument',
    'name an origin, set TENSORFS_ENDPOINT or add a remote named origin (tfs remote add origin URL)',
    { details: { rule: 'cli.no_origin' } },
  );
}

/** A store that fetches from `spec` what a read needs (for `tfs cat --from`); close() releases it. */
export async function fetchingStore(
  ctx: CommandContext,
  local: LocalStore,
  spec: string,
  args: TokenArgs,
): Promise<FetchingStore> {
  const origin = await originOf(ctx, spec, args);
  const { FetchingStore } = await loadRemote();
  // What is fetched on read is cached (evictable under TENSORFS_CACHE_MAX, kept by GC).
  const fs = new FetchingStore(local, origin, {
    partsDir: path.join(local.root, 'tmp'),
    signal: ctx.signal,
    onFetched: (ids) => local.addCachedObjects(ids, origin.display),
  });
  const close = fs.close.bind(fs);
  fs.close = async () => {
    await close();
    await origin.close();
    if (fs.fetched.objects > 0) await (await import('./cache-budget.js')).applyCacheBudget(ctx, local);
  };
  return fs;
}

/** The `<origin>` positional of pull and push. */
const ORIGIN_POSITIONAL = {
  type: 'string',
  demandOption: true,
  describe: 'remote name, URL (http, https, s3, file) or folder',
} as const;

export function tokenOption<T>(y: Argv<T>): Argv<T & TokenArgs> {
  return y.option('token-file', {
    type: 'string',
    describe: 'file holding the token (read per request); default $TENSORFS_TOKEN',
  }) as Argv<T & TokenArgs>;
}

/**
 * `tfs gc <origin>`: retention on a remote (folder, S3, or a hub with an admin token): mark from
 * every ref there, sweep unreachable objects older than `--grace` seconds (default 3600).
 */
export async function gcRemote(
  args: TokenArgs & { origin: string; dryRun: boolean; grace?: number },
  ctx: CommandContext,
): Promise<void> {
  const origin = await originOf(ctx, args.origin, args);
  const bar = ctx.progress('gc');
  try {
    const { gcOrigin } = await loadRemote();
    const r = await gcOrigin(origin, {
      dryRun: args.dryRun,
      signal: ctx.signal,
      onProgress: bar.update,
      ...(args.grace !== undefined ? { graceMs: Math.round(args.grace * 1000) } : {}),
    }).finally(() => bar.done());
    ctx.result(r, () => [
      `${r.dryRun ? 'would remove' : 'removed'} ${r.removed} objects (${formatBytes(r.bytes)}, ${r.bytes} B) from ${r.origin}; kept ${r.kept}${r.young === null ? '' : ` (${r.young} unreachable but younger than the grace period)`}; ${r.refs} refs`,
      ...(r.dryRun ? r.ids.map((id) => `would remove ${id}`) : []),
    ]);
  } finally {
    await origin.close();
  }
}

interface PullArgs extends TokenArgs {
  origin: string;
  ref?: string;
  component?: string[];
  tensors?: string[];
  variant?: string;
  file?: string;
  name?: string;
  expected?: string;
  concurrency: number;
  directIo: boolean;
  cache: boolean;
}

export const pullCommand = defineCommand<PullArgs>({
  ...SPECS.pull,
  builder: (y) =>
    tokenOption(
      y
        .positional('origin', {
          type: 'string',
          demandOption: true,
          describe:
            'remote name, URL (http, https, s3, file) or folder; omit it (give only the repository) to use $TENSORFS_ENDPOINT or the remote named origin',
        })
        .positional('ref', {
          type: 'string',
          describe: 'owner/name[@branch|tag|sha256:<id>] (bare: @main), an older ref name, or a snapshot id',
        })
        .option('variant', {
          type: 'string',
          describe: 'of a tree with several .cozytensors files: this one (model.NAME.cozytensors)',
        })
        .option('file', { type: 'string', describe: 'pull this one file of the tree only' })
        .option('component', {
          type: 'string',
          array: true,
          describe: 'keep only this snapshot folder or file, or checkpoint component (repeatable)',
        })
        .option('tensors', {
          type: 'string',
          array: true,
          describe: 'keep only tensors matching this glob, e.g. "*.attn.*" (repeatable; headers are read first)',
        })
        .option('name', {
          type: 'string',
          describe: 'local ref to set (default: the same branch or tag of the same repository, or the remote ref name)',
        })
        .option('expected', { type: 'string', describe: 'id the local ref must hold now, or `none`; else exit 7' })
        .option('concurrency', { type: 'number', default: 4, describe: 'objects fetched at once' })
        .option('cache', {
          type: 'boolean',
          default: false,
          describe: 'set the ref cached (evictable under $TENSORFS_CACHE_MAX, least recently used first), not saved',
        })
        .option('direct-io', {
          type: 'boolean',
          default: true,
          describe: 'write large objects with O_DIRECT, past the page cache (--no-direct-io: through it)',
        }),
    ) as unknown as Argv<PullArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    const [originSpec, ref] =
      args.ref === undefined ? [await defaultOriginSpec(ctx), args.origin] : [args.origin, args.ref];
    const origin = await originOf(ctx, originSpec, args);
    const store = await LocalStore.open(ctx.storeDir);
    const bar = ctx.progress('pull');
    try {
      const { isRepoSpec, pull, pullRevision } = await loadRemote();
      const options = {
        name: args.name,
        components: args.component,
        tensors: args.tensors,
        expected: parseExpected(args.expected),
        concurrency: args.concurrency,
        directIO: args.directIo,
        partsDir: path.join(store.root, 'tmp'),
        signal: ctx.signal,
        onProgress: bar.update,
        ...(args.cache ? { cached: true } : {}),
      };
      if (!isRepoSpec(ref) && (args.variant !== undefined || args.file !== undefined)) {
        throw new TensorFSError('invalid_argument', '--variant and --file take a repository (owner/name[@revision])', {
          details: { rule: 'cli.repo_required' },
        });
      }
      // A bare ref (a repository's main) with nothing selected is the ref as it is: the plain pull,
      // which asks the origin for nothing beyond the closure. A revision, a variant, a file or a
      // selection resolves through the repository.
      const viaRevision =
        isRepoSpec(ref) &&
        (ref.includes('@') ||
          args.variant !== undefined ||
          args.file !== undefined ||
          (args.component?.length ?? 0) > 0 ||
          (args.tensors?.length ?? 0) > 0);
      const r = viaRevision
        ? await pullRevision(store, origin, ref, {
            ...options,
            ...(args.variant !== undefined ? { variant: args.variant } : {}),
            ...(args.file !== undefined ? { file: args.file } : {}),
            author: authorName(ctx),
            source: originSpec,
          })
        : await pull(store, origin, ref, options);
      bar.done();
      // A cached pull adds cached bytes: the budget applies now (the pulled ref is the newest use).
      const pruned = args.cache ? await (await import('./cache-budget.js')).applyCacheBudget(ctx, store) : null;
      ctx.result({ ...r, cached: args.cache, ...(pruned ? { pruned } : {}) }, () => [
        `${r.name} -> ${r.id}`,
        `fetched ${r.objects.fetched} objects (${formatBytes(r.bytes.fetched)}), already present ${r.objects.present} (${formatBytes(r.bytes.present)})${r.bytes.resumed ? `, resumed ${formatBytes(r.bytes.resumed)}` : ''}`,
      ]);
    } finally {
      bar.done();
      await store.close();
      await origin.close();
    }
  },
});

/** The author a branch move records: `TENSORFS_AUTHOR`, else the user running the command. */
export function authorName(ctx: CommandContext): string {
  const env = ctx.io.env.TENSORFS_AUTHOR;
  if (env !== undefined && env.length > 0) return env;
  try {
    return os.userInfo().username || 'unknown';
  } catch {
    return 'unknown';
  }
}

interface PushArgs extends TokenArgs {
  origin: string;
  ref: string;
  name?: string;
  expected?: string;
  concurrency: number;
}

export const pushCommand = defineCommand<PushArgs>({
  ...SPECS.push,
  builder: (y) =>
    tokenOption(
      y
        .positional('origin', ORIGIN_POSITIONAL)
        .positional('ref', {
          type: 'string',
          demandOption: true,
          describe: 'local ref, owner/name@branch|tag (pushed under the same name) or snapshot id',
        })
        .option('name', { type: 'string', describe: 'remote ref to move (default: the local ref name)' })
        .option('expected', {
          type: 'string',
          describe: 'id the remote ref must hold, or `none` (default: what it held when the push began); else exit 7',
        })
        .option('concurrency', { type: 'number', default: 4, describe: 'objects sent at once' }),
    ) as unknown as Argv<PushArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    const origin = await originOf(ctx, args.origin, args);
    const store = await LocalStore.open(ctx.storeDir, { readOnly: true });
    const bar = ctx.progress('push');
    try {
      const { push } = await loadRemote();
      // owner/name@branch|tag: that local ref, pushed under the same name (an id needs --name).
      let ref = args.ref;
      let name = args.name;
      if (ref.includes('@') && !isObjectId(ref)) {
        const spec = parseRepoSpec(ref);
        const res = await resolveRevision(store, spec.repo, spec.revision ?? undefined);
        ref = res.head;
        name ??= res.ref ?? undefined;
      }
      const r = await push(store, origin, ref, {
        name,
        expected: parseExpected(args.expected),
        concurrency: args.concurrency,
        signal: ctx.signal,
        onProgress: bar.update,
      });
      bar.done();
      ctx.result(r, () => [
        `${r.name} -> ${r.id}${r.previous && r.previous !== r.id ? ` (was ${r.previous})` : ''}`,
        `sent ${r.objects.sent} objects (${formatBytes(r.bytes.sent)}), already there ${r.objects.present} (${formatBytes(r.bytes.present)})`,
      ]);
    } finally {
      bar.done();
      await store.close();
      await origin.close();
    }
  },
});

interface ServeArgs {
  objects?: string;
  refs?: string;
  host: string;
  port: number;
  tokens?: string;
  'max-concurrent': number;
  upstream?: string;
  'upstream-token-file'?: string;
  offline?: boolean;
}

export const serveCommand = defineCommand<ServeArgs>({
  ...SPECS.serve,
  builder: (y) =>
    y
      .option('objects', { type: 'string', describe: 'serve s3://bucket/prefix instead of the store (stateless hub)' })
      .option('refs', {
        type: 'string',
        describe:
          'with --objects: keep the refs in this folder (compare-and-swap on local disk), not in the bucket; for buckets without conditional writes',
      })
      .option('host', { type: 'string', default: '127.0.0.1', describe: 'interface to listen on (default loopback)' })
      .option('port', { type: 'number', demandOption: true, describe: 'port to listen on (0: any free port)' })
      .option('tokens', {
        type: 'string',
        describe: 'tokens file {"tokens":[{"token","read":[globs],"write":[globs]}]}; without it: anonymous, read-only',
      })
      .option('max-concurrent', {
        type: 'number',
        default: 64,
        describe: 'requests served at once',
      })
      .option('upstream', {
        type: 'string',
        describe:
          'pull-through: a Hugging Face compatible endpoint (the Hub, a mirror, another tfs serve); what a client asks for and the store lacks is imported from it, verified, then served',
      })
      .option('upstream-token-file', {
        type: 'string',
        describe: "the hub's own token for the upstream (re-read per request); clients' tokens are never sent upstream",
      })
      .option('offline', {
        type: 'boolean',
        describe: 'with --upstream: never ask it; serve only what the store holds',
      }) as unknown as Argv<ServeArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    const { LocalRefsOrigin, S3Origin, StoreOrigin, parseTokensConfig, serveHub } = await loadRemote();
    if (args.refs !== undefined && args.objects === undefined) {
      throw new TensorFSError('invalid_argument', '--refs needs --objects s3://bucket/prefix', {
        details: { rule: 'cli.refs_without_objects' },
      });
    }
    let tokens: TokensConfig | undefined;
    if (args.tokens !== undefined) {
      let text: string;
      try {
        text = await fsp.readFile(args.tokens, 'utf8');
      } catch {
        throw new TensorFSError('not_found', 'cannot read the tokens file', { details: { rule: 'cli.tokens_file' } });
      }
      try {
        tokens = parseTokensConfig(JSON.parse(text));
      } catch (err) {
        if (err instanceof SyntaxError) {
          throw new TensorFSError('malformed', 'the tokens file is not JSON', {
            details: { rule: 'hub.bad_tokens_file' },
          });
        }
        throw err;
      }
    }
    if ((args['upstream-token-file'] !== undefined || args.offline) && args.upstream === undefined) {
      throw new TensorFSError('invalid_argument', '--upstream-token-file and --offline need --upstream URL', {
        details: { rule: 'cli.upstream_required' },
      });
    }
    const tokenFile = args['upstream-token-file'];
    if (tokenFile !== undefined) {
      await fsp.access(tokenFile).catch(() => {
        throw new TensorFSError('not_found', 'cannot read the upstream token file', {
          details: { rule: 'cli.upstream_token_file' },
        });
      });
    }
    // Pull-through writes what it fetches into the store; serving is use (the cache's
    // least-recently-used order), read-only too.
    const pulls = args.upstream !== undefined && !args.offline;
    const store = args.objects
      ? undefined
      : await LocalStore.open(ctx.storeDir, { readOnly: tokens === undefined && !pulls, recordUse: true });
    // Over a bucket: its credentials and the bucket are checked now (`denied`, `not_found`), not
    // on the first request. With --refs the refs live on this disk and the bucket holds objects.
    const bucket = args.objects
      ? new S3Origin(args.objects, { env: ctx.io.env, refsElsewhere: args.refs !== undefined, offline: ctx.offline })
      : undefined;
    const refs = args.refs !== undefined ? await RefFolder.open(path.resolve(args.refs)) : undefined;
    const backend = bucket ? (refs ? new LocalRefsOrigin(bucket, refs) : bucket) : new StoreOrigin(store!);
    try {
      // The web page at / (read-only, same tokens): only over a store, not a bucket.
      await bucket?.check({ signal: ctx.signal });
      const web = store ? (await import('../web/handler.js')).webHandler(store) : undefined;
      const hub = await serveHub(backend, {
        host: args.host,
        port: args.port,
        tokens,
        maxConcurrent: args['max-concurrent'],
        // Upload sessions beside the store's own temps, so an interrupted push resumes across restarts.
        ...(store && tokens ? { uploadsDir: path.join(store.root, 'tmp') } : {}),
        ...(refs && tokens ? { uploadsDir: path.join(refs.root, 'tmp') } : {}),
        ...(web ? { pages: (req, res, read) => web(req, res, read ?? false) } : {}),
        ...(pulls
          ? {
              huggingFace: {
                upstream: {
                  endpoint: args.upstream!,
                  ...(tokenFile !== undefined
                    ? { token: async () => (await fsp.readFile(tokenFile, 'utf8')).trim() || undefined }
                    : {}),
                },
              },
            }
          : {}),
      });
      ctx.result(
        { url: hub.url, writable: tokens !== undefined },
        () =>
          `serving ${hub.url}${tokens ? '' : ' (read-only, anonymous)'}${pulls ? `, pulling through from ${args.upstream}` : args.upstream ? ' (offline)' : ''}`,
      );
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGTERM', stop);
        ctx.signal.addEventListener('abort', stop, { once: true });
      });
      await hub.close();
    } finally {
      await backend.close();
      await bucket?.close();
      await refs?.close();
      await store?.close();
    }
  },
});

interface RemoteArgs {
  action: 'add' | 'ls' | 'rm';
  name?: string;
  url?: string;
}

export const remoteCommand = defineCommand<RemoteArgs>({
  ...SPECS.remote,
  builder: (y) =>
    y
      .positional('action', { choices: ['add', 'ls', 'rm'] as const, demandOption: true, describe: 'add, ls or rm' })
      .positional('name', { type: 'string', describe: 'remote name' })
      .positional('url', {
        type: 'string',
        describe: 'for add: http(s)://, s3://, file:// URL or a folder',
      }) as unknown as Argv<RemoteArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    const remotes = await readRemotes(ctx);
    if (args.action === 'ls') {
      const list = Object.entries(remotes)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([name, url]) => ({ name, url }));
      ctx.result({ remotes: list }, () => list.map((r) => [r.name, r.url]));
      return;
    }
    if (args.name === undefined || !REMOTE_NAME.test(args.name)) {
      throw new TensorFSError('invalid_argument', 'a remote name is 1-64 letters, digits, ".", "_" or "-"', {
        details: { rule: 'cli.remote_name' },
      });
    }
    if (args.action === 'add') {
      if (!args.url)
        throw new TensorFSError('invalid_argument', 'remote add needs a URL', { details: { rule: 'cli.remote_url' } });
      if (/^[a-z][a-z0-9+.-]*:\/\/[^/]*@/i.test(args.url)) {
        throw new TensorFSError(
          'invalid_argument',
          'credentials do not belong in a remote URL; use --token-file or TENSORFS_TOKEN',
          {
            details: { rule: 'cli.remote_credentials' },
          },
        );
      }
      if (remotes[args.name] !== undefined) {
        throw new TensorFSError('conflict', 'a remote of that name exists', {
          details: { rule: 'cli.remote_exists', name: args.name },
        });
      }
      const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(args.url) ? args.url : path.resolve(args.url);
      remotes[args.name] = url;
      await writeRemotes(ctx, remotes);
      ctx.result({ name: args.name, url }, () => [[args.name!, url]]);
      return;
    }
    if (remotes[args.name] === undefined) {
      throw new TensorFSError('not_found', 'no remote of that name', {
        details: { rule: 'cli.no_remote', name: args.name },
      });
    }
    delete remotes[args.name];
    await writeRemotes(ctx, remotes);
    ctx.result({ removed: args.name }, () => `removed ${args.name}`);
  },
});

function parseExpected(value: string | undefined): ObjectId | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  return parseObjectId(value);
}
