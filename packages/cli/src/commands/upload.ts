/**
 * `tfs upload <folder> <repo>[@<branch>]`: a folder of ordinary files, `.cozytensors` headers
 * (their objects taken from the local store) and/or a portable export (`chunks/<sha256-hex>`)
 * becomes a new tree on a branch. The tree is built in the local store; with `--to` only the
 * objects the origin lacks are sent (push's machinery), then the branch moves by
 * compare-and-swap, last, so a failed upload leaves the branch where it was.
 */
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import {
  type ManifestEntry,
  type ObjectId,
  TensorFSError,
  comparePaths,
  decodeCheckpoint,
  isObjectId,
  moveBranch,
  parseObjectId,
  parseRepoSpec,
  treeVariants,
} from '@tensorfs/format';
import type { Lease } from '@tensorfs/format/store';
import type { SendResult } from '@tensorfs/remote';
import type { Argv } from 'yargs';
import { importLocal } from './local-import.js';
import { defineCommand } from '../command.js';
import type { GlobalArgs } from '../context.js';
import { formatBytes } from '../progress.js';
import { type TokenArgs, authorName, loadRemote, originOf, tokenOption } from './remote.js';
import { SPECS } from './specs.js';

/** Missing objects named in an upload's `not_found` (the count is always given). */
const MISSING_NAMED = 20;

interface UploadArgs extends TokenArgs {
  folder: string;
  repo: string;
  to?: string;
  expected?: string;
  message?: string;
  concurrency: number;
}

/** `--expected`: a head id, or `none` (the branch must not exist). */
export function parseHeadExpected(value: string | undefined): ObjectId | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  return parseObjectId(value);
}

/** What {@link buildTree} made of a folder. */
export interface BuiltTree {
  tree: ObjectId;
  files: number;
  bytes: number;
  variants: string[];
  /** Objects admitted from the folder's `chunks/`. */
  chunks: number;
}

/**
 * Builds the tree of `folder` in `store` under `lease`: every file except a top-level `chunks/`
 * folder (a portable export's objects, admitted by their names, each checked against its
 * digest). Every `.cozytensors` file must be a checkpoint header whose objects are in the store
 * or in `chunks/`; else `not_found` (`repo.missing_objects`) naming them, and nothing is named.
 */
export async function buildTree(
  store: LocalStore,
  folder: string,
  lease: Lease,
  signal: AbortSignal,
): Promise<BuiltTree> {
  const root = path.resolve(folder);
  const st = await fsp.stat(root).catch(() => null);
  if (st === null) {
    throw new TensorFSError('not_found', 'the folder to upload does not exist', {
      details: { rule: 'upload.no_folder' },
    });
  }
  if (!st.isDirectory()) {
    throw new TensorFSError('invalid_argument', 'upload takes a folder', { details: { rule: 'upload.not_a_folder' } });
  }
  const top = await fsp.readdir(root, { withFileTypes: true });
  const chunksDir = top.some((d) => d.name === 'chunks' && d.isDirectory()) ? path.join(root, 'chunks') : null;
  let entries: ManifestEntry[] = [];
  let files = 0;
  let bytes = 0;
  if (chunksDir === null) {
    const r = await importLocal(store, root, { signal });
    entries = [...(await store.getManifest(r.snapshot)).entries];
    files = r.files;
    bytes = r.bytes;
  } else {
    // Each top-level entry but chunks/ on its own, so the objects are not imported as files.
    for (const d of top) {
      if (d.name === 'chunks') continue;
      const r = await importLocal(store, path.join(root, d.name), { signal });
      const m = await store.getManifest(r.snapshot);
      for (const e of m.entries) entries.push({ ...e, path: d.isDirectory() ? `${d.name}/${e.path}` : d.name });
      files += r.files;
      bytes += r.bytes;
    }
    entries.sort((a, b) => comparePaths(a.path, b.path));
  }
  if (entries.length === 0) {
    throw new TensorFSError('invalid_argument', 'the folder has no files to upload', {
      details: { rule: 'upload.empty' },
    });
  }
  for (const e of entries) if (e.kind === 'file') lease.add(e.records.map((r) => r.digest));

  // Each header's closure, from the store or chunks/.
  let chunks = 0;
  const missing = new Set<ObjectId>();
  const missingFiles = new Set<string>();
  const fromChunks = async (id: ObjectId): Promise<boolean> => {
    if (await store.has(id)) {
      lease.add([id]);
      return true;
    }
    if (chunksDir === null) return false;
    let b: Buffer;
    try {
      b = await fsp.readFile(path.join(chunksDir, id.slice('sha256:'.length)));
    } catch {
      return false;
    }
    await store.put([b], { expected: id, lease });
    chunks++;
    return true;
  };
  for (const e of entries) {
    if (e.kind !== 'file' || !e.path.endsWith('.cozytensors')) continue;
    signal.throwIfAborted();
    const record = e.records[0];
    if (e.records.length !== 1 || record === undefined) {
      throw new TensorFSError('malformed', 'a .cozytensors file of the folder is not a checkpoint header', {
        details: { rule: 'upload.not_a_header', path: e.path },
      });
    }
    let header: ReturnType<typeof decodeCheckpoint>;
    try {
      header = decodeCheckpoint(await store.readObject(record.digest));
    } catch (err) {
      throw new TensorFSError('malformed', 'a .cozytensors file of the folder is not a checkpoint header', {
        details: { rule: 'upload.not_a_header', path: e.path },
        cause: err,
      });
    }
    const { openCheckpoint } = await import('@tensorfs/tensors');
    const probe = await openCheckpoint(store, await store.readObject(record.digest), { requireObjects: false });
    const wanted = [...probe.references()];
    for (let i = 0; i < wanted.length; i++) {
      const id = wanted[i]!;
      if (!(await fromChunks(id))) {
        missing.add(id);
        missingFiles.add(e.path);
        continue;
      }
      // A source snapshot's files are objects of the checkpoint too.
      if (id === header.source) {
        for (const f of (await store.getManifest(id)).entries) {
          if (f.kind === 'file') for (const r of f.records) if (!wanted.includes(r.digest)) wanted.push(r.digest);
        }
      }
    }
  }
  if (missing.size > 0) {
    const list = [...missing];
    throw new TensorFSError(
      'not_found',
      `${list.length} object${list.length === 1 ? '' : 's'} of the folder's checkpoints ${list.length === 1 ? 'is' : 'are'} neither in the store nor in chunks/: ${list.slice(0, 3).join(', ')}${list.length > 3 ? ', …' : ''}`,
      {
        details: {
          rule: 'repo.missing_objects',
          count: list.length,
          missing: list.slice(0, MISSING_NAMED),
          files: [...missingFiles],
        },
      },
    );
  }
  const tree = await store.putManifest({ entries }, { lease });
  const variants = treeVariants({ entries }).map((v) => v.name);
  return { tree, files, bytes, variants, chunks };
}

export const uploadCommand = defineCommand<UploadArgs>({
  ...SPECS.upload,
  builder: (y) =>
    tokenOption(
      y
        .positional('folder', {
          type: 'string',
          demandOption: true,
          describe: 'folder of files, .cozytensors headers and/or a portable export (chunks/)',
        })
        .positional('repo', {
          type: 'string',
          demandOption: true,
          describe: 'repository and branch, owner/name[@branch] (default branch: main)',
        })
        .option('to', {
          type: 'string',
          describe: 'origin to publish to (remote name, URL or folder); default: the local store',
        })
        .option('expected', {
          type: 'string',
          describe: 'head the branch must hold now (a revision id), or `none` (must not exist); else exit 7',
        })
        .option('message', { type: 'string', default: '', describe: 'what the branch move records as its message' })
        .option('concurrency', { type: 'number', default: 4, describe: 'objects sent at once' }),
    ) as unknown as Argv<UploadArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    const spec = parseRepoSpec(args.repo);
    if (spec.revision !== null && (spec.revision.startsWith('sha256:') || isObjectId(spec.revision))) {
      throw new TensorFSError('invalid_argument', 'upload moves a branch; name one (owner/name@branch), not an id', {
        details: { rule: 'upload.branch_required' },
      });
    }
    const branch = spec.revision ?? 'main';
    const expected = parseHeadExpected(args.expected);
    const origin = args.to !== undefined ? await originOf(ctx, args.to, args) : undefined;
    const store = await LocalStore.open(ctx.storeDir);
    const lease = await store.lease({ purpose: `upload ${spec.repo}@${branch}` });
    const bar = ctx.progress('upload');
    try {
      const built = await buildTree(store, args.folder, lease, ctx.signal);
      // On a hub the author is the token's owner id (the hub checks it, so the log says truthfully
      // which token moved the branch); elsewhere TENSORFS_AUTHOR or the user running the command.
      const author =
        origin !== undefined ? await (await loadRemote()).authorFor(origin, authorName(ctx)) : authorName(ctx);
      const message = args.message ?? '';
      let sent: SendResult | null = null;
      let moved: { commit: ObjectId; previous: ObjectId | null };
      if (origin !== undefined) {
        const { publishTree } = await loadRemote();
        const r = await publishTree(store, origin, built.tree, {
          repo: spec.repo,
          branch,
          ...(expected !== undefined ? { expected } : {}),
          author,
          message,
          concurrency: args.concurrency,
          signal: ctx.signal,
          onProgress: bar.update,
        });
        sent = { objects: r.objects, bytes: r.bytes };
        moved = r;
      } else {
        moved = await moveBranch(store, {
          repo: spec.repo,
          branch,
          target: built.tree,
          ...(expected !== undefined ? { expected } : {}),
          author,
          message,
        });
      }
      bar.done();
      const result = {
        repo: spec.repo,
        branch,
        tree: built.tree,
        commit: moved.commit,
        previous: moved.previous,
        files: built.files,
        bytes: built.bytes,
        variants: built.variants,
        ...(sent ? { sent } : {}),
      };
      ctx.result(result, () => [
        `${spec.repo}@${branch} -> ${moved.commit}${moved.previous ? ` (was ${moved.previous})` : ''}`,
        `tree ${built.tree}: ${built.files} files, ${formatBytes(built.bytes)}${built.variants.length ? `; variants ${built.variants.map((v) => (v === '' ? '(unnamed)' : v)).join(', ')}` : ''}`,
        ...(sent
          ? [
              `sent ${sent.objects.sent} objects (${formatBytes(sent.bytes.sent)}), already there ${sent.objects.present} (${formatBytes(sent.bytes.present)})`,
            ]
          : []),
      ]);
    } finally {
      bar.done();
      await lease.release().catch(() => {});
      await store.close();
      await origin?.close();
    }
  },
});
