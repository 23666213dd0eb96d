import { resolveModelId, VARIANT_OPTION } from './revision.js';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { LocalStore, openFileSource } from '@tensorfs/cas';
import {
  checkShardIndex,
  MAX_SHARD_INDEX_SIZE,
  parseShardIndex,
  readGgufHeader,
  readSafetensorsHeader,
  type SafetensorsHeader,
  TensorFSError,
} from '@tensorfs/format';
import {
  BUNDLED_CATALOG,
  type BindResult,
  bind,
  type Catalog,
  type CatalogIndex,
  type CandidateHeaders,
  candidateFromGguf,
  candidateFromSafetensors,
  candidateFromTensors,
  defaultCatalog,
  deriveTopology,
  documentDigest,
  laneSeams,
  layoutToJson,
  loadCatalog,
  refOf,
} from '@tensorfs/lanes';
import { applyLane } from '@tensorfs/lanes/apply';
import { modelKind, openModel, type TensorView } from '@tensorfs/tensors';
import type { Argv } from 'yargs';
import { importLocal } from './local-import.js';
import { defineCommand } from '../command.js';
import type { CommandContext, GlobalArgs } from '../context.js';
import { formatBytes } from '../progress.js';
import { table } from './inspect.js';
import { fetchingStore } from './remote.js';
import { SPECS } from './specs.js';
import { fileDestination, writeAtomically } from '../destination.js';

const GGUF_MAGIC = [0x47, 0x47, 0x55, 0x46];

const FIELDS = { topologies: 'topologies', rules: 'rules', morphisms: 'morphisms' } as const;

/** A user catalog folder: `catalog.json` pinning documents under `topologies/`, `rules/`, `morphisms/`. */
async function readUserCatalog(dir: string): Promise<{ index: CatalogIndex; documents: unknown[] }> {
  const text = await fsp.readFile(path.join(dir, 'catalog.json'), 'utf8').catch(() => null);
  const index: CatalogIndex = text
    ? (JSON.parse(text) as CatalogIndex)
    : { kind: 'tensorfs.lanes.catalog', version: 1, topologies: {}, rules: {}, morphisms: {} };
  const documents: unknown[] = [];
  for (const field of Object.values(FIELDS))
    for (const ref of Object.keys(index[field] ?? {})) {
      if (!/^[a-z0-9][a-z0-9._-]*@[1-9][0-9]*$/.test(ref))
        throw new TensorFSError('malformed', `catalog.json pins ${JSON.stringify(ref)}, not a name@version`, {
          details: { rule: 'lanes.schema', document: ref },
        });
      const doc = await fsp.readFile(path.join(dir, field, `${ref}.json`), 'utf8').catch(() => null);
      if (doc !== null) documents.push(JSON.parse(doc));
    }
  return { index, documents };
}

async function writeAtomic(file: string, text: string): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await fsp.writeFile(tmp, text);
  await fsp.rename(tmp, file);
}

/** The bundled catalog, or the bundled catalog plus a user folder (`--catalog`), verified. */
async function catalogOf(dir: string | undefined): Promise<Catalog> {
  if (!dir) return defaultCatalog();
  const user = await readUserCatalog(dir);
  const index: CatalogIndex = { ...BUNDLED_CATALOG.index };
  for (const field of Object.values(FIELDS)) index[field] = { ...BUNDLED_CATALOG.index[field], ...user.index[field] };
  return loadCatalog({ index, documents: [...BUNDLED_CATALOG.documents, ...user.documents] });
}

/** The headers of every shard a `*.safetensors.index.json` names (each read for its header only). */
async function shardHeaders(index: string, ctx: CommandContext): Promise<SafetensorsHeader[]> {
  const bytes = await fsp.readFile(index);
  if (bytes.length > MAX_SHARD_INDEX_SIZE)
    throw new TensorFSError('limit_exceeded', 'shard index larger than the limit', {
      details: { rule: 'tensors.shard_index_limit', limit: MAX_SHARD_INDEX_SIZE, actual: bytes.length },
    });
  const parsed = parseShardIndex(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length));
  const headers = new Map<string, SafetensorsHeader>();
  for (const shard of parsed.shards) {
    // parseShardIndex accepts plain basenames only, so this stays in the index's folder.
    const source = await openFileSource(path.join(path.dirname(index), shard));
    try {
      headers.set(shard, await readSafetensorsHeader(source, { signal: ctx.signal }));
    } finally {
      await source.close();
    }
  }
  checkShardIndex(parsed, headers);
  return [...headers.values()];
}

/**
 * The headers of a local file (read for its header only; a `*.safetensors.index.json` brings the
 * headers of all its shards) or, when no such file exists, of a store ref (headers from the
 * manifest, no tensor byte), as one shard-flattened component.
 */
async function candidateOf(
  target: string,
  component: string,
  ctx: CommandContext,
  variant?: string,
): Promise<CandidateHeaders> {
  const stat = await fsp.stat(target).catch(() => null);
  if (stat?.isFile() && variant === undefined) return fileCandidate(target, component, ctx);
  const store = await LocalStore.open(ctx.existingStoreDir(), { readOnly: true });
  try {
    // A repository tree with several variants: the one named (`repo.variant_required` without).
    const id = variant === undefined ? target : await resolveModelId(store, target, variant);
    return await refCandidate(store, id, component, ctx);
  } finally {
    await store.close();
  }
}

/** A tensor file's (or shard index's) candidate, from its header(s) only. */
async function fileCandidate(target: string, component: string, ctx: CommandContext): Promise<CandidateHeaders> {
  if (target.endsWith('.json')) return candidateFromSafetensors(await shardHeaders(target, ctx), component);
  const source = await openFileSource(target);
  try {
    const head = await source.read(0, Math.min(4, source.size));
    const isGguf = head.length === 4 && GGUF_MAGIC.every((b, i) => head[i] === b);
    return isGguf
      ? candidateFromGguf(await readGgufHeader(source, { signal: ctx.signal }), component)
      : candidateFromSafetensors(await readSafetensorsHeader(source, { signal: ctx.signal }), component);
  } finally {
    await source.close();
  }
}

/**
 * A ref's candidate from its headers (no tensor byte), in any store (local or fetching): a
 * snapshot's tensors as one component; a checkpoint's components that have tensors, each under its
 * own name (what `--component` selects), a ggml-encoded tensor under its ggml type as GGUF stores it.
 */
async function refCandidate(
  store: Parameters<typeof openModel>[0],
  target: string,
  component: string,
  ctx: CommandContext,
): Promise<CandidateHeaders> {
  const model = await openModel(store, target, { signal: ctx.signal });
  if (model.kind === 'snapshot') return candidateFromTensors(model, component);
  const out: CandidateHeaders = {};
  for (const c of model.components.values()) {
    if (c.tensors.size > 0) Object.assign(out, candidateFromTensors([...c.tensors.values()].map(asStored), c.name));
  }
  return out;
}

/** A checkpoint tensor as bind compares it: as a file stores it (a ggml encoding under its type). */
function asStored(v: TensorView): { name: string; dtype: string; shape: readonly bigint[] } {
  if (v.storage === 'plain') return v;
  const type = (v.encoding?.params as { type?: unknown } | null)?.type;
  if (v.encoding?.scheme === 'ggml' && typeof type === 'string') return { name: v.name, dtype: type, shape: v.shape };
  throw new TensorFSError(
    'unsupported',
    `${v.component}/${v.name} is encoded (${v.encoding?.scheme}): bind compares tensors as files store them, and only ggml encodings have one form; bind the snapshot it was converted from`,
    { details: { rule: 'cli.bind_encoded', component: v.component, tensor: v.name, scheme: v.encoding?.scheme } },
  );
}

/**
 * Imports a tensor file (or the tensor files directly in a folder) for `--apply`, cut at the
 * lane's seams (`laneSeams`), so a T2 split or fuse then costs no new tensor byte.
 */
async function importForApply(
  store: LocalStore,
  target: string,
  lane: string,
  catalog: Catalog,
  component: string,
  options: { component?: string; conventions?: Record<string, string> },
  ctx: CommandContext,
): Promise<{ snapshot: string; seams: Record<string, Record<string, number[]>> }> {
  const st = await fsp.stat(target);
  if (st.isFile() && target.endsWith('.json'))
    throw new TensorFSError('invalid_argument', '--apply on a shard index: pass the folder holding it and its shards', {
      details: { rule: 'cli.bind' },
    });
  const files = st.isFile()
    ? [{ rel: path.basename(target), abs: target }]
    : (await fsp.readdir(target, { withFileTypes: true }))
        .filter((e) => e.isFile() && /\.(safetensors|gguf)$/.test(e.name))
        .map((e) => ({ rel: e.name, abs: path.join(target, e.name) }));
  const seams: Record<string, Record<string, number[]>> = {};
  for (const f of files) {
    const s = laneSeams(await fileCandidate(f.abs, component, ctx), lane, catalog, options);
    if (Object.keys(s).length) seams[f.rel] = s;
  }
  const r = await importLocal(store, target, { seams, signal: ctx.signal });
  return { snapshot: r.snapshot, seams };
}

function parseConventions(list: string[] | undefined): Record<string, string> | undefined {
  if (!list?.length) return undefined;
  const out: Record<string, string> = {};
  for (const item of list) {
    const eq = item.indexOf('=');
    if (eq <= 0)
      throw new TensorFSError('invalid_argument', `--convention takes name=value, not ${JSON.stringify(item)}`, {
        details: { rule: 'cli.convention' },
      });
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

function humanBind(r: BindResult): string[] {
  const lines = [`${r.verdict}: ${r.lane}${r.source ? ` (from ${r.source})` : ''}`];
  if (r.refuse) {
    const e = r.refuse.expected;
    const a = r.refuse.actual;
    lines.push(`  ${r.refuse.rule}: ${r.refuse.message}`);
    lines.push(
      `  expected ${e ? `[${e.shape.join(', ')}] ${e.dtypes.join('|')}` : 'nothing'}, actual ${a ? `[${a.shape.join(', ')}] ${a.dtype}` : 'nothing'}`,
    );
    lines.push(`  compared with ${r.refuse.against}`);
  }
  lines.push(
    ...table(
      r.steps.map((s) => [
        s.tier,
        s.op,
        s.via,
        `${s.tensors.length} tensors`,
        `reads ${formatBytes(s.bytes)}`,
        `new ${formatBytes(s.newBytes)}`,
        s.lossy ? 'LOSSY' : '',
      ]),
    ).map((l) => `  ${l}`),
  );
  if (r.verdict === 'derivable')
    lines.push(`  new bytes: ${formatBytes(r.newBytes)}${r.lossy ? ' (lossy: needs an explicit allowance)' : ''}`);
  return lines;
}

/** `tfs bind <file|ref> --lane L`: admit, derivable (with priced steps) or refuse, from headers only. */
type BindArgs = {
  target: string;
  lane: string;
  component?: string;
  convention?: string[];
  apply: boolean;
  name?: string;
  'allow-lossy': boolean;
  catalog?: string;
  from?: string;
  'token-file'?: string;
  variant?: string;
};

export const bindCommand = defineCommand<BindArgs>({
  ...SPECS.bind,
  builder: (y) =>
    y
      .positional('target', {
        type: 'string',
        demandOption: true,
        describe: 'a .safetensors/.gguf file (header read only) or a ref (snapshot or checkpoint)',
      })
      .option('lane', { type: 'string', demandOption: true, describe: "'<topology>[@v][+<rule>[@v]]'" })
      .option('component', { type: 'string', describe: 'bind only this component of the lane' })
      .option('variant', VARIANT_OPTION)
      .option('convention', {
        type: 'string',
        array: true,
        describe: 'a convention the checkpoint declares, name=value (e.g. scale_layout=row_major); repeatable',
      })
      .option('apply', {
        type: 'boolean',
        default: false,
        describe:
          "perform the steps (T1 renames, T2 seams, T3 permutations, T4 casts/quantization) on a ref, or on a file/folder imported cut at the lane's seams, and create ref --name",
      })
      .option('name', { type: 'string', describe: 'with --apply: the new ref (must not exist)' })
      .option('allow-lossy', {
        type: 'boolean',
        default: false,
        describe: 'with --apply: perform lossy T4 steps (narrowing casts, quantization); refused without it',
      })
      .option('catalog', {
        type: 'string',
        describe: 'a folder of your own lane documents, added to the bundled catalog',
      })
      .option('from', {
        type: 'string',
        describe: 'bind a ref of this origin: only its manifest and headers are fetched, no tensor byte',
      })
      .option('token-file', {
        type: 'string',
        describe: 'with --from: file holding the token; default $TENSORFS_TOKEN',
      }) as unknown as Argv<BindArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    const catalog = await catalogOf(args.catalog);
    const lane = catalog.lane(args.lane);
    const conv = parseConventions(args.convention);
    const component = args.component ?? (Object.keys(catalog.topology(lane.topology).components)[0] as string);
    const bindOpts = {
      ...(args.component ? { component: args.component } : {}),
      ...(conv ? { conventions: conv } : {}),
    };
    if (args.variant !== undefined && (args.apply || args.from !== undefined)) {
      throw new TensorFSError(
        'invalid_argument',
        '--variant binds a local repository tree (not with --apply or --from)',
        {
          details: { rule: 'cli.bind_variant' },
        },
      );
    }
    if (args.apply) {
      if (!args.name)
        throw new TensorFSError('invalid_argument', '--apply needs --name NEW', { details: { rule: 'cli.bind' } });
      if (args.from !== undefined)
        throw new TensorFSError('invalid_argument', '--apply works on the local store: tfs pull the ref first', {
          details: { rule: 'cli.bind' },
        });
      const st = await fsp.stat(args.target).catch(() => null);
      const store = await LocalStore.open(st ? ctx.storeDir : ctx.existingStoreDir());
      try {
        if (!st && (await modelKind(store, args.target)).kind === 'checkpoint')
          throw new TensorFSError(
            'unsupported',
            '--apply rewrites a snapshot; this ref is a checkpoint: bind it without --apply, or apply to the snapshot it was converted from',
            { details: { rule: 'cli.bind_apply_checkpoint', ref: args.target } },
          );
        // A file or folder is imported first, cut where the lane's T2 seams fall.
        const imported = st
          ? await importForApply(store, args.target, args.lane, catalog, component, bindOpts, ctx)
          : null;
        const bar = ctx.progress('bind');
        const done = await applyLane(store, imported ? imported.snapshot : args.target, args.lane, catalog, {
          name: args.name,
          signal: ctx.signal,
          allowLossy: args['allow-lossy'],
          onProgress: bar.update,
          ...bindOpts,
        }).finally(() => bar.done());
        const applied = {
          ref: args.name,
          snapshot: done.snapshot,
          entries: done.entries,
          seams: done.seams,
          ...(imported ? { imported: imported.snapshot, importSeams: imported.seams } : {}),
        };
        ctx.result({ ...done.bind, applied }, () => [
          ...humanBind(done.bind),
          ...(imported
            ? [
                `imported ${imported.snapshot} (cut at ${Object.values(imported.seams).reduce((a, x) => a + Object.keys(x).length, 0)} fused tensors' seams)`,
              ]
            : []),
          ...(done.seams.objects
            ? [
                `seams off object boundaries: wrote ${done.seams.objects} boundary objects (${formatBytes(done.seams.bytes)})`,
              ]
            : []),
          `applied: ${args.name} -> ${done.snapshot}`,
        ]);
      } finally {
        await store.close();
      }
      return;
    }
    if (args.from !== undefined) {
      const local = await LocalStore.open(ctx.storeDir);
      try {
        const remote = await fetchingStore(ctx, local, args.from, args);
        try {
          const cand = await refCandidate(remote, args.target, component, ctx);
          const r = bind(cand, lane, catalog, bindOpts);
          ctx.result({ ...r, fetched: { ...remote.fetched } }, () => humanBind(r));
          if (r.verdict === 'refuse' && r.refuse)
            throw new TensorFSError('conflict', `does not bind to ${r.lane}: ${r.refuse.message}`, {
              details: { ...r.refuse, lane: r.lane },
            });
        } finally {
          await remote.close();
        }
      } finally {
        await local.close();
      }
      return;
    }
    const cand = await candidateOf(args.target, component, ctx, args.variant);
    const r = bind(cand, lane, catalog, bindOpts);
    ctx.result(r, () => humanBind(r));
    if (r.verdict === 'refuse' && r.refuse)
      throw new TensorFSError('conflict', `does not bind to ${r.lane}: ${r.refuse.message}`, {
        details: { ...r.refuse, lane: r.lane },
      });
  },
});

type LanesArgs = {
  action: string;
  arg?: string;
  name?: string;
  component?: string;
  docVersion?: number;
  out?: string;
  catalog?: string;
};

/** `tfs lanes ls|show|layout|derive`. */
export const lanesCommand = defineCommand<LanesArgs>({
  ...SPECS.lanes,
  builder: (y) =>
    y
      .positional('action', {
        type: 'string',
        choices: ['ls', 'show', 'layout', 'derive'],
        demandOption: true,
        describe: 'what to do',
      })
      .positional('arg', { type: 'string', describe: 'show: name[@v]; layout: a lane; derive: a file or ref' })
      .option('name', { type: 'string', describe: 'derive: the new topology name' })
      .option('component', { type: 'string', describe: 'derive: component name (default model)' })
      .option('doc-version', { type: 'number', describe: 'derive: the topology version (default 1)' })
      .option('out', {
        type: 'string',
        describe: 'derive: write the document to this file instead of stdout',
      })
      .option('catalog', {
        type: 'string',
        describe:
          'a folder of your own lane documents (added to the bundled ones); derive writes and pins the topology there',
      }) as unknown as Argv<LanesArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    const catalog = await catalogOf(args.catalog);
    const need = (what: string) => {
      if (!args.arg)
        throw new TensorFSError('invalid_argument', `tfs lanes ${args.action} needs ${what}`, {
          details: { rule: 'cli.lanes' },
        });
      return args.arg;
    };
    if (args.action === 'ls') {
      const topologies = [...catalog.topologies.values()].map((t) => ({
        ref: refOf(t),
        digest: catalog.digests.get(refOf(t)),
        components: Object.fromEntries(Object.entries(t.components).map(([c, v]) => [c, Object.keys(v.keys).length])),
      }));
      const rules = [...catalog.rules.values()].map((r) => ({
        ref: refOf(r),
        digest: catalog.digests.get(refOf(r)),
        encoding: r.encoding?.scheme ?? null,
      }));
      const morphisms = [...catalog.morphisms.values()].map((m) => ({
        ref: refOf(m),
        digest: catalog.digests.get(refOf(m)),
        pairs: m.pairs.map((p) => `${p.from} -> ${p.to}`),
      }));
      ctx.result({ topologies, rules, morphisms }, () => [
        'topologies:',
        ...table(
          topologies.map((t) => [
            `  ${t.ref}`,
            Object.entries(t.components)
              .map(([c, n]) => `${c}: ${n} keys`)
              .join(', '),
            String(t.digest),
          ]),
        ),
        'rules:',
        ...table(rules.map((r) => [`  ${r.ref}`, r.encoding ?? 'dense', String(r.digest)])),
        'morphisms:',
        ...table(morphisms.map((m) => [`  ${m.ref}`, m.pairs.join(', '), String(m.digest)])),
      ]);
    } else if (args.action === 'show') {
      const ref = need('a document name');
      const found = [
        [catalog.topologies, 'topology'],
        [catalog.rules, 'rule'],
        [catalog.morphisms, 'morphism'],
      ].flatMap(([docs, what]) => {
        try {
          const r = catalog.resolve(
            ref,
            docs as Map<`${string}@${number}`, { name: string; version: number }>,
            what as string,
          );
          return [(docs as Map<string, unknown>).get(r)];
        } catch {
          return [];
        }
      });
      if (found.length !== 1)
        throw new TensorFSError(
          found.length ? 'conflict' : 'not_found',
          `${found.length ? 'more than one' : 'no'} lane document named ${ref}`,
          {
            details: { rule: 'lanes.unknown_document', document: ref },
          },
        );
      const doc = found[0] as { name: string; version: number };
      ctx.result({ digest: catalog.digests.get(refOf(doc)), document: doc });
    } else if (args.action === 'layout') {
      const layout = catalog.layout(catalog.lane(need('a lane')));
      const json = layoutToJson(layout);
      ctx.result(json, () =>
        Object.entries(layout.components).flatMap(([c, comp]) => [
          `${json.lane} ${c}:`,
          ...table(
            comp.entries.flatMap((e) =>
              e.parts.map((p) => [`  ${p.name}`, p.dtypes.join('|'), `[${p.shape.join(', ')}]`, p.role]),
            ),
          ),
        ]),
      );
    } else {
      const target = need('a file or ref');
      if (!args.name)
        throw new TensorFSError('invalid_argument', 'tfs lanes derive needs --name', {
          details: { rule: 'cli.lanes' },
        });
      const cand = await candidateOf(target, args.component ?? 'model', ctx);
      // A checkpoint's candidate is its components: --component names one (default: its only one).
      const names = Object.keys(cand);
      const component = args.component ?? (names.length === 1 ? (names[0] as string) : 'model');
      if (!cand[component])
        throw new TensorFSError('not_found', `${target} has no component ${component} with tensors`, {
          details: { rule: 'cli.lanes_component', component, components: names },
        });
      const doc = deriveTopology(
        { tensors: [...(cand[component] ?? [])] },
        { name: args.name, version: args.docVersion ?? 1, component, header: path.basename(target) },
      );
      const digest = documentDigest(doc);
      if (args.catalog) {
        const ref = refOf(doc);
        if (catalog.topologies.has(ref) && catalog.digests.get(ref) !== digest)
          throw new TensorFSError('conflict', `topology ${ref} already exists with another digest`, {
            details: {
              rule: 'lanes.duplicate_document',
              document: ref,
              expected: catalog.digests.get(ref),
              actual: digest,
            },
          });
        const user = await readUserCatalog(args.catalog);
        user.index.topologies = { ...user.index.topologies, [ref]: digest };
        await fsp.mkdir(path.join(args.catalog, 'topologies'), { recursive: true });
        await writeAtomic(path.join(args.catalog, 'topologies', `${ref}.json`), `${JSON.stringify(doc, null, 2)}\n`);
        await writeAtomic(path.join(args.catalog, 'catalog.json'), `${JSON.stringify(user.index, null, 2)}\n`);
        await catalogOf(args.catalog); // the folder still loads, verified
        ctx.result(
          { ref, digest, keys: Object.keys(doc.components[component]?.keys ?? {}).length },
          () => `${ref} ${digest}`,
        );
      } else if (args.out) {
        const out = path.resolve(args.out);
        const st = await fileDestination(out, '--out');
        if (st !== undefined && !st.isFile()) {
          throw new TensorFSError(
            'invalid_argument',
            `--out must name a file; ${path.basename(out)} is a special file`,
            {
              details: { rule: 'cli.output_type', path: path.basename(out) },
            },
          );
        }
        await writeAtomically(out, [new TextEncoder().encode(`${JSON.stringify(doc, null, 2)}\n`)]);
        ctx.result(
          { ref: refOf(doc), digest, keys: Object.keys(doc.components[component]?.keys ?? {}).length },
          () => `${refOf(doc)} ${digest}`,
        );
      } else ctx.result({ digest, document: doc });
    }
  },
});
