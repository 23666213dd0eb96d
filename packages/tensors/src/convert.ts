/**
 * Converting to checkpoints: a Diffusers folder, a Transformers folder, a single `.safetensors` or
 * `.gguf` file, or a snapshot already in the store becomes a cozytensors checkpoint whose tensors
 * are the snapshot's own objects (nothing re-read, nothing re-written) and whose `source` is the
 * snapshot, so export gives the original files back byte for byte.
 */
import { checkObject, checkOptions, checkStore, checkString } from './args.js';
import type { ObjectId as ImportedId } from '@tensorfs/format';
import type { Store } from '@tensorfs/format/store';

/**
 * A store that imports a file or folder from a path as a snapshot (the local store's `importPath`):
 * what {@link convertPath} needs beyond the storage contract. Named by what it does, not cut from
 * one implementation.
 */
export interface PathImporter {
  importPath(
    path: string,
    options?: { signal?: AbortSignal; threads?: number },
  ): Promise<{ snapshot: ImportedId; bytesWritten: number }>;
}
import {
  type JsonValue,
  type ManifestFileEntry,
  type ObjectId,
  parseConfigJson,
  safetensorsDtype,
  TensorFSError,
  throwIfAborted,
} from '@tensorfs/format';
import {
  type DecodedDtype,
  importGgufTensor,
  PRODUCER_CONVENTIONS,
  type ProducerConvention,
} from '@tensorfs/format/encodings';
import { ggmlTypeByName } from '@tensorfs/format';
import { openCheckpoint } from './checkpoint.js';
import { modelKind } from './model.js';
import { CheckpointWriter, type CheckpointWriterOptions } from './checkpoint-writer.js';
import type { CheckpointDestination, PublishedRevision } from './destination.js';
import { INDEX_SUFFIX, openTensors } from './open.js';
import { checkDecodable, configDtype, importProducerTensors, quantizationConfigOf } from './producers.js';
import { SnapshotTree } from './snapshot.js';
import { importPeftTensors, PEFT_CONFIG, PEFT_WEIGHTS, type PeftAdapterInfo, peftAdapterInfo } from './peft.js';
import { retyped, type TensorView } from './view.js';

export { PRODUCER_CONVENTIONS, type ProducerConvention };

/** The source layouts {@link convertSnapshot} recognises (or is told with `converter`). */
export const CONVERTERS = ['diffusers', 'transformers', 'peft', 'single-file'] as const;
/** A source layout. */
export type ConverterName = (typeof CONVERTERS)[number];

/** Options of {@link convertSnapshot} and {@link convertPath}. */
export interface ConvertOptions {
  /** A ref to point at the checkpoint (compare-and-swap with `expected`). */
  name?: string;
  /** The id the ref must hold (`null`: must not exist). @default the ref's value when the convert starts */
  expected?: ObjectId | null;
  /** Declare the layout instead of detecting it (for layouts that cannot be inferred safely). */
  converter?: ConverterName;
  /**
   * Declare the producer of quantized weights (`bitsandbytes_4bit`, `gptq`, `modelopt_nvfp4`…)
   * where the files do not say it (packed weights without a config, NVFP4 without a ModelOpt
   * config, a layer two conventions claim). Detected otherwise; ambiguity is `unsupported`.
   */
  producer?: ProducerConvention;
  /**
   * Declare the logical dtype of quantized weights whose producer does not record it (LLM.int8,
   * scaled FP8, ModelOpt, comfy_quant). @default config.json `torch_dtype` when there is one
   */
  dtype?: DecodedDtype;
  /** A checkpoint this one derives from: the result reports how many tensors changed against it. */
  base?: string;
  /**
   * Logical shapes by tensor name (`<layer>.weight` → `[out, in]`), for layouts that store only a
   * padded shape (ComfyUI NVFP4 and MXFP8): usually the unquantized model's header
   * (`tfs convert --shapes-from`). Each is checked against the stored padding.
   */
  logicalShapes?: ReadonlyMap<string, readonly number[]>;
  signal?: AbortSignal;
  /** Hashing threads for {@link convertPath}'s import. */
  threads?: number;
  /** Publish to a branch of a repository on an origin while converting (see {@link CheckpointWriterOptions.destination}). */
  destination?: CheckpointDestination;
  /** The checkpoint writer's journal file (see {@link CheckpointWriterOptions.resume}). */
  resume?: string;
  /**
   * Record the whole-file SHA-256 list of the checkpoint's export (see
   * {@link CheckpointWriterOptions.fileSha256}): by default what the source snapshot's list names
   * (free; none when the import recorded none); `true` also hashes the source's other
   * multi-record files (one extra read); `false` records nothing.
   */
  fileSha256?: boolean;
}

/** What a conversion made. */
export interface ConvertResult {
  /** The checkpoint id. */
  readonly id: ObjectId;
  /** The snapshot the checkpoint was built from (its `source`). */
  readonly snapshot: ObjectId;
  /** The layout that was recognised or declared. */
  readonly converter: ConverterName;
  readonly components: number;
  readonly tensors: number;
  readonly assets: number;
  /** Tensors that are producer-quantized weights, imported as encodings (and GGUF block types). */
  readonly encoded: number;
  /** The producer conventions found (or declared and used), sorted. */
  readonly conventions: readonly ProducerConvention[];
  /** Bytes written to the store by the import (0 for a snapshot already stored) plus the header. */
  readonly bytesWritten: number;
  /** With `base`: tensors whose records differ from the base's tensor of the same component and name (or are new). */
  readonly changedTensors?: number;
  /** A PEFT adapter: its type, the base model it names (and revision) and its LoRA pairs. */
  readonly adapter?: {
    readonly type: string;
    readonly baseModel: string | null;
    readonly revision: string | null;
    readonly pairs: number;
  };
  /** With `destination`: the exact tree and revision published. */
  readonly published?: PublishedRevision;
}

/**
 * Imports a folder or file as a snapshot (each byte hashed once, only new objects written), then
 * converts the snapshot. See {@link convertSnapshot}.
 */
export async function convertPath(
  store: Store & PathImporter,
  path: string,
  options: ConvertOptions = {},
): Promise<ConvertResult> {
  checkStore(store);
  if (typeof (store as Partial<typeof store>).importPath !== 'function')
    checkObject(null, 'store.importPath', 'a function');
  checkString(path, 'path');
  checkOptions(options);
  const imported = await store.importPath(path, {
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
  });
  const result = await convertSnapshot(store, imported.snapshot, options);
  return { ...result, bytesWritten: result.bytesWritten + imported.bytesWritten };
}

interface Plan {
  converter: ConverterName;
  pipeline: { cls: string; config: JsonValue } | null;
  components: {
    name: string;
    cls: string;
    config: JsonValue;
    dir: string;
    weights: string[];
    skip: Set<string>;
    /** quantize_config.json / hf_quant_config.json of the component, parsed. */
    quantization: JsonValue[];
    /** A PEFT adapter's checked config (its tensors are imported as LoRA pairs). */
    peft?: { config: Record<string, JsonValue>; info: PeftAdapterInfo };
  }[];
}

/** Side files that state a component's quantization (config.json's `quantization_config` first). */
const QUANT_FILES = ['quantize_config.json', 'hf_quant_config.json'];

/**
 * Builds a checkpoint from a stored snapshot (ref or id) with no tensor byte read: tensors are the
 * snapshot's records, configs and assets its files.
 * - Diffusers (`model_index.json`): the pipeline is its `_class_name` and content; every entry
 *   `[library, class]` is a component in the file's order, in its folder, with `config.json`,
 *   `scheduler_config.json` or `tokenizer_config.json` as config, its `*.safetensors` (or shard
 *   index) as tensors and every other file as an asset. A named component with no folder is
 *   `not_found`.
 * - Transformers (`config.json` + safetensors weights at the root): one component `model`.
 * - Single file: the only `.safetensors` or `.gguf` file, as component `model` (GGUF block types
 *   become `ggml` encodings with one `blocks` part; the metadata stays in the source).
 * Producer-quantized weights (bitsandbytes NF4/FP4, LLM.int8, ComfyUI scaled_fp8 and comfy_quant,
 * DeepSeek block FP8, ModelOpt NVFP4, GPTQ, AWQ, Kohya LoRA) are detected from tensor names, the
 * safetensors metadata and the quantization config, and each becomes one encoded tensor whose parts
 * are the producer's tensors (`options.producer` settles what the files do not state). Export
 * `--safetensors` still gives the source files back byte for byte.
 * Anything else is `unsupported` (`convert.layout`) unless `converter` declares it.
 * A checkpoint ref converts its `source` snapshot again (`unsupported`,
 * `convert.checkpoint_without_source`, when it has none in the store).
 * @throws {TensorFSError} `not_found`, `malformed` (a config that is not JSON, a weight file that
 *   does not parse), `unsupported` (layout, ambiguous weights), `conflict` (ref moved).
 */
export async function convertSnapshot(
  store: Store,
  refOrId: string,
  options: ConvertOptions = {},
): Promise<ConvertResult> {
  checkStore(store);
  checkString(refOrId, 'refOrId');
  checkOptions(options);
  const { id, kind } = await modelKind(store, refOrId);
  if (kind === 'checkpoint') {
    // A checkpoint converts again from the snapshot it was converted from (the same checkpoint
    // for the same options); one without that snapshot has nothing to convert.
    const cp = await openCheckpoint(store, id);
    if (cp.source === null || !(await store.has(cp.source))) {
      throw new TensorFSError(
        'unsupported',
        `this ref is already a checkpoint and ${cp.source === null ? 'records no source snapshot' : 'its source snapshot is not in this store'}: there is nothing to convert (tfs ref set names it; tfs export --safetensors gives files to convert)`,
        { details: { rule: 'convert.checkpoint_without_source', ref: refOrId, id, source: cp.source } },
      );
    }
    return convertSnapshot(store, cp.source, options);
  }
  const tree = await SnapshotTree.load(store, id);
  const plan = await planConversion(store, tree, options.converter);
  const writer = new CheckpointWriter(store, {
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
    ...(options.destination !== undefined ? { destination: options.destination } : {}),
    ...(options.resume !== undefined ? { resume: options.resume } : {}),
    ...(options.fileSha256 !== undefined ? { fileSha256: options.fileSha256 } : {}),
  });
  try {
    writer.setSource(tree.id);
    writer.pipeline(plan.pipeline);
    let tensors = 0;
    let assets = 0;
    let encoded = 0;
    const conventions = new Set<ProducerConvention>();
    const written = new Map<string, Map<string, string>>();
    let adapter: ConvertResult['adapter'];
    const perComponent: { name: string; tensors: number; files: string[]; hasModelConfig: boolean }[] = [];
    for (const c of plan.components) {
      throwIfAborted(options.signal);
      const comp = writer.component(c.name, { cls: c.cls, config: c.config });
      const seen = new Map<string, string>();
      const views: TensorView[] = [];
      const metadata: Record<string, string> = {};
      for (const weight of c.weights) {
        const set = await openTensors(store, tree.id, {
          file: weight,
          ...(options.signal ? { signal: options.signal } : {}),
        });
        for (const info of set.files) {
          const h = set.header(info.path);
          if (h.format === 'safetensors' && h.header.metadata) {
            for (const [k, v] of h.header.metadata) metadata[k] = v;
          }
        }
        for (const view of set) {
          const prior = seen.get(view.name);
          if (prior !== undefined) {
            throw new TensorFSError(
              'unsupported',
              'two weight files of a component define the same tensor (variants?)',
              {
                details: {
                  rule: 'convert.ambiguous_weights',
                  component: c.name,
                  tensor: view.name,
                  files: [prior, view.file],
                },
              },
            );
          }
          seen.set(view.name, view.file);
          views.push(view);
        }
      }
      let imported: Awaited<ReturnType<typeof importProducerTensors>>;
      if (c.peft !== undefined) {
        const peft = importPeftTensors(views, c.peft.config);
        imported = { tensors: peft.tensors, conventions: [] };
        adapter = { ...c.peft.info, pairs: peft.pairs };
      } else {
        const quantizationConfig = quantizationConfigOf(c.config, c.quantization);
        const dtype = options.dtype ?? configDtype(c.config);
        imported = await importProducerTensors(views, {
          ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
          ...(quantizationConfig ? { quantizationConfig } : {}),
          ...(options.producer ? { declared: options.producer } : {}),
          ...(dtype ? { dtype } : {}),
          ...(options.logicalShapes ? { logicalShapes: options.logicalShapes } : {}),
          read: (v) => v.read({ ...(options.signal ? { signal: options.signal } : {}) }),
        });
      }
      for (const conv of imported.conventions) conventions.add(conv);
      for (const t of imported.tensors) {
        throwIfAborted(options.signal);
        if (t.kind === 'plain') {
          if (await putView(comp, t.view)) encoded++;
        } else {
          const params = t.encoding.params as { shape: number[]; dtype: string };
          await comp.putEncoded(t.name, {
            dtype: params.dtype,
            shape: params.shape,
            scheme: t.encoding.scheme,
            params: t.encoding.params,
            parts: Object.fromEntries(Object.entries(t.parts).map(([role, view]) => [role, { view }])),
          });
          encoded++;
        }
        tensors++;
      }
      written.set(c.name, new Map([...seen.keys()].map((k) => [k, k])));
      const prefix = c.dir === '' ? '' : `${c.dir}/`;
      const files: string[] = [];
      for (const entry of tree.files()) {
        if (!entry.path.startsWith(prefix) || c.skip.has(entry.path)) continue;
        // At the root of a single-component layout, component folders of nothing else exist.
        // The file's own objects: nothing re-read, nothing re-hashed.
        await comp.assetRecords(entry.path.slice(prefix.length), entry.records);
        files.push(entry.path);
        assets++;
      }
      perComponent.push({
        name: c.name,
        tensors: views.length,
        files,
        hasModelConfig: tree.byPath.has(`${prefix}config.json`),
      });
    }
    refuseEmpty(plan.converter, perComponent);
    if (options.producer !== undefined && !conventions.has(options.producer)) {
      throw new TensorFSError(
        'invalid_argument',
        `--converter ${options.producer} was declared, but no tensor of this ${plan.converter} layout follows it`,
        {
          details: {
            rule: 'convert.converter_mismatch',
            converter: options.producer,
            layout: plan.converter,
            found: [...conventions].sort(),
          },
        },
      );
    }
    const committed = await writer.commit({
      ...(options.name !== undefined ? { name: options.name } : {}),
      ...(options.expected !== undefined ? { expected: options.expected } : {}),
    });
    let changedTensors: number | undefined;
    if (options.base !== undefined) changedTensors = await changedAgainst(store, options.base, committed.header);
    return {
      id: committed.id,
      snapshot: tree.id,
      converter: plan.converter,
      components: plan.components.length,
      tensors,
      assets,
      encoded,
      conventions: [...conventions].sort(),
      bytesWritten: committed.bytes.length,
      ...(changedTensors !== undefined ? { changedTensors } : {}),
      ...(adapter !== undefined ? { adapter } : {}),
      ...(committed.published !== undefined ? { published: committed.published } : {}),
    };
  } catch (error) {
    await writer.close().catch(() => {});
    throw error;
  }
}

/**
 * A snapshot view into a checkpoint component: plain dtypes keep their records; a GGUF block type
 * becomes a `ggml` encoding (its ggml type is its encoding) with one `blocks` part. Returns true
 * for an encoded tensor.
 */
async function putView(comp: ReturnType<CheckpointWriter['component']>, view: TensorView): Promise<boolean> {
  if (safetensorsDtype(view.dtype) !== undefined) {
    await comp.inherit(view);
    return false;
  }
  const type = ggmlTypeByName(view.dtype);
  if (view.byteOrder === 'big') {
    throw new TensorFSError(
      'unsupported',
      `ggml type ${view.dtype} blocks of a big-endian GGUF file are not supported`,
      {
        details: { rule: 'convert.byte_order', tensor: view.name, type: view.dtype, fact: 'byte_order' },
      },
    );
  }
  if (type === undefined) {
    throw new TensorFSError('unsupported', `ggml type ${view.dtype} has no encoding`, {
      details: { rule: 'convert.ggml_type', tensor: view.name, type: view.dtype },
    });
  }
  const enc = importGgufTensor(type.id, [...view.shape].reverse().map(Number), undefined);
  const blocks = retyped(view, 'U8', [view.byteLength], 1);
  checkDecodable(view.name, 'gguf', { ...enc, parts: { blocks: { dtype: 'U8', shape: [view.byteLength] } } });
  const params = enc.params as { dtype: string };
  await comp.putEncoded(view.name, {
    dtype: params.dtype,
    shape: view.shape,
    scheme: enc.scheme,
    params: enc.params,
    parts: { blocks: { view: blocks } },
  });
  return true;
}

async function readEntry(store: Store, entry: ManifestFileEntry): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for (const r of entry.records) {
    const bytes = await store.readObject(r.digest);
    if (bytes.length !== r.length) {
      throw new TensorFSError('corrupt', 'a stored object does not have its recorded length', {
        details: { rule: 'convert.object_length', path: entry.path, digest: r.digest },
      });
    }
    out.push(bytes);
  }
  return out;
}

async function readJson(store: Store, tree: SnapshotTree, path: string): Promise<JsonValue> {
  const entry = tree.file(path);
  const parts = await readEntry(store, entry);
  const bytes = new Uint8Array(entry.size);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  try {
    return parseConfigJson(bytes);
  } catch (error) {
    if (error instanceof TensorFSError) {
      throw new TensorFSError(error.code, `${path}: ${error.message}`, {
        details: { ...error.details, path },
        cause: error,
      });
    }
    throw error;
  }
}

async function sideFiles(store: Store, tree: SnapshotTree, prefix: string): Promise<JsonValue[]> {
  const out: JsonValue[] = [];
  for (const n of QUANT_FILES)
    if (tree.byPath.has(`${prefix}${n}`)) out.push(await readJson(store, tree, `${prefix}${n}`));
  return out;
}

const CONFIG_NAMES = ['config.json', 'scheduler_config.json', 'tokenizer_config.json'];

/** The weight files of a folder: its shard indexes, and the `.safetensors` files no index names. */
function weightsIn(tree: SnapshotTree, dir: string, store: Store): Promise<{ weights: string[]; skip: Set<string> }> {
  return (async () => {
    const prefix = dir === '' ? '' : `${dir}/`;
    const direct = tree
      .files()
      .map((e) => e.path)
      .filter((p) => p.startsWith(prefix) && !p.slice(prefix.length).includes('/'));
    const indexes = direct.filter((p) => p.endsWith(INDEX_SUFFIX));
    const sharded = new Set<string>();
    for (const index of indexes) {
      const value = await readJson(store, tree, index);
      const map = (value as { weight_map?: Record<string, string> } | null)?.weight_map;
      if (map && typeof map === 'object') for (const shard of Object.values(map)) sharded.add(`${prefix}${shard}`);
    }
    const files = direct.filter((p) => p.endsWith('.safetensors') && !sharded.has(p));
    const weights = [...indexes, ...files];
    return { weights, skip: new Set([...weights, ...sharded]) };
  })();
}

async function planConversion(store: Store, tree: SnapshotTree, declared?: ConverterName): Promise<Plan> {
  const files = tree.files().map((e) => e.path);
  const has = (p: string) => tree.byPath.has(p);
  const rootTensorFiles = files.filter((p) => !p.includes('/') && (p.endsWith('.safetensors') || p.endsWith('.gguf')));
  let converter = declared;
  if (converter === undefined) {
    if (has('model_index.json')) converter = 'diffusers';
    else if (has(PEFT_CONFIG) && has(PEFT_WEIGHTS)) converter = 'peft';
    else if (has('config.json') && rootTensorFiles.some((p) => p.endsWith('.safetensors'))) converter = 'transformers';
    else if (files.length === 1 && rootTensorFiles.length === 1) converter = 'single-file';
    else {
      throw new TensorFSError('unsupported', `not a recognised layout (${LAYOUTS}); declare one with --converter`, {
        details: { rule: 'convert.layout', files: files.slice(0, 20) },
      });
    }
  } else {
    // A declared layout must be what the files are: never a silent fallback to another reading.
    const missing =
      converter === 'diffusers'
        ? has('model_index.json')
          ? null
          : 'model_index.json'
        : converter === 'peft'
          ? [PEFT_CONFIG, PEFT_WEIGHTS].filter((p) => !has(p)).join(' and ') || null
          : converter === 'single-file'
            ? rootTensorFiles.length === 1
              ? null
              : 'exactly one .safetensors or .gguf file at the root'
            : null;
    if (missing !== null) {
      throw new TensorFSError(
        'invalid_argument',
        `--converter ${converter} was declared, but the files have no ${missing}`,
        { details: { rule: 'convert.converter_mismatch', converter, missing, files: files.slice(0, 20) } },
      );
    }
  }
  if (converter === 'peft') {
    const config = await readJson(store, tree, PEFT_CONFIG);
    const info = peftAdapterInfo(config);
    return {
      converter,
      pipeline: null,
      components: [
        {
          name: 'adapter',
          cls: info.cls,
          config,
          dir: '',
          weights: [PEFT_WEIGHTS],
          skip: new Set([PEFT_WEIGHTS]),
          quantization: [],
          peft: { config: config as Record<string, JsonValue>, info },
        },
      ],
    };
  }
  if (converter === 'diffusers') {
    const index = await readJson(store, tree, 'model_index.json');
    if (index === null || typeof index !== 'object' || Array.isArray(index)) {
      throw new TensorFSError('malformed', 'model_index.json is not a JSON object', {
        details: { rule: 'convert.model_index', path: 'model_index.json' },
      });
    }
    const cls = typeof index._class_name === 'string' ? index._class_name : '';
    const components: Plan['components'] = [];
    for (const [name, value] of Object.entries(index)) {
      if (!Array.isArray(value) || value.length !== 2 || value[0] === null || value[1] === null) continue;
      if (!files.some((p) => p.startsWith(`${name}/`))) {
        throw new TensorFSError('not_found', 'model_index.json names a component with no folder', {
          details: { rule: 'convert.missing_component', component: name },
        });
      }
      const configPath = CONFIG_NAMES.map((n) => `${name}/${n}`).find(has);
      const config = configPath === undefined ? null : await readJson(store, tree, configPath);
      const { weights, skip } = await weightsIn(tree, name, store);
      const quantization = await sideFiles(store, tree, `${name}/`);
      components.push({
        name,
        cls: typeof value[1] === 'string' ? value[1] : '',
        config,
        dir: name,
        weights,
        skip,
        quantization,
      });
    }
    return { converter, pipeline: { cls, config: index }, components };
  }
  if (converter === 'transformers') {
    const config = has('config.json') ? await readJson(store, tree, 'config.json') : null;
    const arch = (config as { architectures?: unknown } | null)?.architectures;
    const cls = Array.isArray(arch) && typeof arch[0] === 'string' ? arch[0] : '';
    const { weights, skip } = await weightsIn(tree, '', store);
    const quantization = await sideFiles(store, tree, '');
    return {
      converter,
      pipeline: null,
      components: [{ name: 'model', cls, config, dir: '', weights, skip, quantization }],
    };
  }
  // single-file
  if (rootTensorFiles.length !== 1) {
    throw new TensorFSError(
      'unsupported',
      'a single-file conversion needs exactly one .safetensors or .gguf file at the root',
      {
        details: { rule: 'convert.layout', actual: rootTensorFiles.length },
      },
    );
  }
  const file = rootTensorFiles[0]!;
  return {
    converter,
    pipeline: null,
    components: [
      { name: 'model', cls: '', config: null, dir: '', weights: [file], skip: new Set([file]), quantization: [] },
    ],
  };
}

/** The layouts detection recognises, as messages name them. */
export const LAYOUTS =
  'Diffusers: model_index.json; PEFT: adapter_config.json + adapter_model.safetensors; Transformers: config.json + *.safetensors; or one .safetensors/.gguf file';

/**
 * A model layout whose weights all ended up as assets (or were never there) is refused: a
 * checkpoint without a tensor, or a component with a model `config.json` and no tensor, would
 * say "converted" about nothing. Names what was found instead.
 */
function refuseEmpty(
  converter: ConverterName,
  components: readonly { name: string; tensors: number; files: string[]; hasModelConfig: boolean }[],
): void {
  const total = components.reduce((n, c) => n + c.tensors, 0);
  const empty = total === 0 ? components[0] : components.find((c) => c.tensors === 0 && c.hasModelConfig);
  if (empty === undefined && total > 0) return;
  const found = (empty?.files ?? []).slice(0, 20);
  throw new TensorFSError(
    'invalid_argument',
    `the ${converter} layout${empty && components.length > 1 ? ` component ${empty.name}` : ''} has no tensors: ${
      found.length > 0 ? `found only ${found.join(', ')}` : 'found no files'
    } (weights must be .safetensors files, or a shard index naming them)`,
    {
      details: {
        rule: 'convert.no_tensors',
        converter,
        ...(empty ? { component: empty.name } : {}),
        found,
        files: (empty?.files ?? []).length,
      },
    },
  );
}

/** Tensors of `header` whose records differ from the same component/tensor of checkpoint `base`. */
async function changedAgainst(
  store: Store,
  base: string,
  header: { components: { name: string; tensors: { name: string; records?: unknown; encoding?: unknown }[] }[] },
): Promise<number> {
  const cp = await openCheckpoint(store, base);
  let changed = 0;
  for (const c of header.components) {
    const old = cp.components.get(c.name);
    for (const t of c.tensors) {
      const prior = old?.header.tensors.find((x) => x.name === t.name);
      if (
        prior === undefined ||
        JSON.stringify(prior.records ?? prior.encoding) !== JSON.stringify(t.records ?? t.encoding)
      ) {
        changed++;
      }
    }
  }
  return changed;
}
