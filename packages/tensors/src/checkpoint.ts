/**
 * Reading cozytensors checkpoints: {@link openCheckpoint} gives the pipeline, the components in
 * construction order (class, config, tensor views, assets) and the exports loaders need.
 */
import { checkOptions, checkStore, checkString } from './args.js';
import { type Store, sha256Id } from '@tensorfs/format/store';
import {
  type CheckpointComponent,
  type CheckpointHeader,
  type CheckpointTensor,
  checkpointReferences,
  decodeCheckpoint,
  isCheckpointHeader,
  type JsonValue,
  type ObjectId,
  type RecordRef,
  safetensorsDtype,
  TensorFSError,
  throwIfAborted,
} from '@tensorfs/format';
import { resolveModelRef } from './resolve.js';
import { readDecoded, readDecodedInto } from './decoded.js';
import type { ReadOptions, TensorEncoding, TensorPart, TensorView } from './tensor.js';
import { StoredTensorView, type ViewFile } from './view.js';

/** An encoding as a view shows it (see {@link TensorEncoding}). */
export type CheckpointTensorEncoding = TensorEncoding;

/**
 * One tensor of a checkpoint component: a {@link TensorView} (its {@link TensorView.storage} says
 * plain or encoded). A plain tensor reads like any view; an encoded one reports its logical dtype
 * and shape, its parts and their records (its `records` and `byteLength` are theirs), its plain `read`/`readInto`/`pieces` are
 * `unsupported` (rule `tensors.encoded`): read its parts with {@link part}, or its values with
 * `read({ decode: true, dtype? })` / `readInto(…, { decode: true })` (the scheme's decoder;
 * `unsupported` for a scheme it does not know).
 */
export interface CheckpointTensorView extends TensorView {
  /** Every record of the tensor (of all parts, in role order, for an encoded one): its `records`. */
  readonly allRecords: readonly RecordRef[];
  /** A part of an encoded tensor, as a plain view. @throws {TensorFSError} `not_found` */
  part(role: string): CheckpointTensorView;
}

/**
 * Tensors by name, in order: a `ReadonlyMap` whose `get` returns the view or throws `not_found`
 * (as every `get` of a model does), never `undefined`.
 */
export interface TensorMap<V extends TensorView = TensorView> extends ReadonlyMap<string, V> {
  /** The tensor called `name`. @throws {TensorFSError} `not_found` */
  get(name: string): V;
}

/** A {@link TensorMap}. @internal */
export class StrictTensorMap<V extends TensorView> extends Map<string, V> implements TensorMap<V> {
  constructor(
    entries: Iterable<readonly [string, V]>,
    private readonly where: Readonly<Record<string, unknown>>,
    /** Names several files of a snapshot component have, with those files. */
    private readonly ambiguous: ReadonlyMap<string, readonly string[]> = new Map(),
  ) {
    super(entries);
  }

  override get(name: string): V {
    const files = this.ambiguous.get(name);
    if (files !== undefined) {
      throw new TensorFSError('invalid_argument', 'several files have a tensor of this name; say which file', {
        details: { rule: 'tensors.ambiguous_tensor', tensor: name, ...this.where, files: [...files] },
      });
    }
    const found = super.get(name);
    if (found === undefined) {
      throw new TensorFSError('not_found', 'no such tensor', {
        details: { rule: 'tensors.no_tensor', tensor: name, ...this.where },
      });
    }
    return found;
  }
}

/** A component of an opened checkpoint. */
export interface CheckpointComponentView {
  readonly name: string;
  readonly cls: string;
  readonly config: JsonValue;
  /** The tensors in construction order, by name (`get` throws `not_found`). */
  readonly tensors: TensorMap<CheckpointTensorView>;
  /** Asset names, sorted. */
  readonly assets: readonly string[];
  /** An asset's size in bytes. @throws {TensorFSError} `not_found` */
  assetSize(name: string): number;
  /** An asset's bytes, each object length-checked (`verify` rehashes). @throws {TensorFSError} `not_found`, `corrupt` */
  asset(name: string, options?: ReadOptions): Promise<Uint8Array>;
  /** The component as it is stored in the header. */
  readonly header: CheckpointComponent;
}

/** An opened checkpoint. */
export interface Checkpoint {
  /** The checkpoint id (the SHA-256 of its header bytes). */
  readonly id: ObjectId;
  /** The header bytes (what a `.cozytensors` file holds). */
  readonly bytes: Uint8Array;
  /** The decoded header. */
  readonly header: CheckpointHeader;
  readonly pipeline: { readonly cls: string; readonly config: JsonValue } | null;
  /** The snapshot the checkpoint was converted from, if any. */
  readonly source: ObjectId | null;
  /** The components in construction order, by name. */
  readonly components: ReadonlyMap<string, CheckpointComponentView>;
  /** A component by name. @throws {TensorFSError} `not_found` */
  component(name: string): CheckpointComponentView;
  /** Every object the header references (tensors, parts, assets, source), each once. */
  references(): ObjectId[];
}

/** Options of {@link openCheckpoint}. */
export interface OpenCheckpointOptions {
  /**
   * For header bytes: check that every object the header references is in the store (`not_found`
   * naming the first missing one). Refs and ids are whole by construction.
   * @default true for bytes
   */
  requireObjects?: boolean;
  signal?: AbortSignal;
}

/**
 * Opens a checkpoint from a ref name, a checkpoint id, or header bytes (a `.cozytensors` file's
 * content). Opening reads the header only.
 * @throws {TensorFSError} `not_found` (no such ref or object; for bytes, an object the header names
 *   is missing), `invalid_argument` (the ref names a snapshot, not a checkpoint), `malformed`.
 */
export async function openCheckpoint(
  store: Store,
  source: string | Uint8Array,
  options: OpenCheckpointOptions = {},
): Promise<Checkpoint> {
  checkStore(store);
  if (!(source instanceof Uint8Array)) checkString(source, 'source');
  checkOptions(options);
  let bytes: Uint8Array;
  let id: ObjectId;
  if (typeof source === 'string') {
    id = (await resolveModelRef(store, source)).id;
    bytes = await store.readObject(id, { verify: true });
    if (!isCheckpointHeader(bytes)) {
      throw new TensorFSError('invalid_argument', 'this ref names a snapshot, not a checkpoint (convert it first)', {
        details: { rule: 'cozytensors.not_checkpoint', ref: source, id },
      });
    }
  } else {
    bytes = source;
    // WebCrypto (the storage contract's hasher): native in Node and in browsers' secure contexts.
    id = await sha256Id(bytes);
  }
  const header = decodeCheckpoint(bytes);
  const checkpoint = new OpenedCheckpoint(store, id, bytes, header);
  if (typeof source !== 'string' && options.requireObjects !== false) {
    for (const ref of checkpoint.references()) {
      throwIfAborted(options.signal);
      if (!(await store.has(ref))) {
        throw new TensorFSError('not_found', 'an object of the checkpoint is not in the store', {
          details: { rule: 'cozytensors.missing_object', digest: ref, checkpoint: id },
        });
      }
    }
  }
  return checkpoint;
}

/** Opens the checkpoint `id` names (known to be a checkpoint header). @internal */
export async function openOpenedCheckpoint(store: Store, id: ObjectId): Promise<Checkpoint> {
  const bytes = await store.readObject(id, { verify: true });
  return new OpenedCheckpoint(store, id, bytes, decodeCheckpoint(bytes));
}

class OpenedCheckpoint implements Checkpoint {
  readonly pipeline: Checkpoint['pipeline'];
  readonly source: ObjectId | null;
  readonly components: ReadonlyMap<string, CheckpointComponentView>;

  constructor(
    readonly store: Store,
    readonly id: ObjectId,
    readonly bytes: Uint8Array,
    readonly header: CheckpointHeader,
  ) {
    this.pipeline = header.pipeline;
    this.source = header.source;
    this.components = new Map(header.components.map((c) => [c.name, new ComponentView(store, c)]));
  }

  component(name: string): CheckpointComponentView {
    const c = this.components.get(name);
    if (c === undefined) {
      throw new TensorFSError('not_found', 'no such component in the checkpoint', {
        details: { rule: 'tensors.no_component', component: name, checkpoint: this.id },
      });
    }
    return c;
  }

  references(): ObjectId[] {
    return checkpointReferences(this.bytes);
  }
}

class ComponentView implements CheckpointComponentView {
  readonly name: string;
  readonly cls: string;
  readonly config: JsonValue;
  readonly tensors: TensorMap<CheckpointTensorView>;
  readonly assets: readonly string[];
  private readonly assetRecords: ReadonlyMap<string, readonly RecordRef[]>;

  constructor(
    private readonly store: Store,
    readonly header: CheckpointComponent,
  ) {
    this.name = header.name;
    this.cls = header.cls;
    this.config = header.config;
    this.tensors = new StrictTensorMap(
      header.tensors.map((t) => [t.name, tensorView(store, header.name, t)] as const),
      { component: header.name },
    );
    this.assets = header.assets.map((a) => a.name);
    this.assetRecords = new Map(header.assets.map((a) => [a.name, a.records]));
  }

  private recordsOf(name: string): readonly RecordRef[] {
    const records = this.assetRecords.get(name);
    if (records === undefined) {
      throw new TensorFSError('not_found', 'no such asset in the component', {
        details: { rule: 'tensors.no_asset', component: this.name, asset: name },
      });
    }
    return records;
  }

  assetSize(name: string): number {
    return this.recordsOf(name).reduce((n, r) => n + r.length, 0);
  }

  async asset(name: string, options: ReadOptions = {}): Promise<Uint8Array> {
    const records = this.recordsOf(name);
    const out = new Uint8Array(this.assetSize(name));
    let at = 0;
    for (const r of records) {
      throwIfAborted(options.signal);
      const bytes = await this.store.readObject(r.digest, { verify: options.verify ?? false });
      if (bytes.length !== r.length) {
        throw new TensorFSError('corrupt', 'a stored object does not have its recorded length', {
          details: { rule: 'checkpoint.object_length', component: this.name, asset: name, digest: r.digest },
        });
      }
      out.set(bytes, at);
      at += bytes.length;
    }
    return out;
  }
}

/** A view over a plain tensor's (or part's) records. */
class PlainView extends StoredTensorView implements CheckpointTensorView {
  readonly allRecords: readonly RecordRef[];

  constructor(file: ViewFile, name: string, dtype: string, shape: readonly number[], records: readonly RecordRef[]) {
    const byteLength = records.reduce((n, r) => n + r.length, 0);
    super(file, {
      name,
      dtype,
      shape: shape.map(BigInt),
      blockSize: 1,
      typeSize: safetensorsDtype(dtype)!.bits / 8,
      byteOffset: 0,
      byteLength,
      records,
    });
    this.allRecords = this.records;
  }

  override part(role: string): CheckpointTensorView {
    throw new TensorFSError('not_found', 'a plain tensor has no parts', {
      details: { rule: 'tensors.no_part', component: this.component, tensor: this.name, role },
    });
  }
}

/**
 * An encoded tensor: its logical dtype and shape, its parts' records and lengths; its values need
 * the scheme's decoder (`decode`), its stored form is the parts.
 */
class EncodedView extends StoredTensorView implements CheckpointTensorView {
  override readonly storage = 'encoded' as const;
  override readonly encoding: TensorEncoding;
  override readonly parts: Readonly<Record<string, TensorPart>>;
  readonly allRecords: readonly RecordRef[];
  private readonly partViews: ReadonlyMap<string, PlainView>;

  constructor(
    file: ViewFile,
    tensor: Extract<CheckpointTensor, { encoding: object }>,
    parts: ReadonlyMap<string, PlainView>,
    records: readonly RecordRef[],
  ) {
    super(file, {
      name: tensor.name,
      dtype: tensor.dtype,
      shape: tensor.shape.map(BigInt),
      blockSize: 1,
      typeSize: safetensorsDtype(tensor.dtype)!.bits / 8,
      byteOffset: 0,
      byteLength: records.reduce((n, r) => n + r.length, 0),
      records,
    });
    this.partViews = parts;
    this.encoding = Object.freeze({
      scheme: tensor.encoding.scheme,
      params: tensor.encoding.params,
      parts: Object.freeze(
        Object.fromEntries([...parts].map(([role, p]) => [role, Object.freeze({ dtype: p.dtype, shape: p.shape })])),
      ),
    });
    this.parts = Object.freeze(
      Object.fromEntries(
        [...parts].map(([role, p]) => [
          role,
          Object.freeze({ dtype: p.dtype, shape: p.shape, records: p.records, byteLength: p.byteLength }),
        ]),
      ),
    );
    this.allRecords = this.records;
  }

  override part(role: string): CheckpointTensorView {
    const p = this.partViews.get(role);
    if (p === undefined) {
      throw new TensorFSError('not_found', 'no such part in the encoded tensor', {
        details: { rule: 'tensors.no_part', component: this.component, tensor: this.name, role },
      });
    }
    return p;
  }

  private encoded(): TensorFSError {
    return new TensorFSError(
      'unsupported',
      `tensor ${JSON.stringify(this.name)} is encoded (${this.encoding.scheme}): its values need decode (read({ decode: true }), tfs cat --decode); its stored form is its parts (part(role), name#role)`,
      {
        details: {
          rule: 'tensors.encoded',
          component: this.component,
          tensor: this.name,
          scheme: this.encoding.scheme,
          parts: Object.keys(this.encoding.parts),
        },
      },
    );
  }

  override pieces(): AsyncIterable<Uint8Array> {
    const error = this.encoded();
    return {
      [Symbol.asyncIterator]: () => ({
        next: () => Promise.reject(error),
      }),
    };
  }

  /** With `decode`: the values (see `readDecoded`); the stored form is the parts. */
  override async read(options: ReadOptions = {}): Promise<Uint8Array> {
    if (options.decode) return readDecoded(this, options);
    throw this.encoded();
  }

  /** With `decode`: the values into `buffer` (see `readDecodedInto`); the stored form is the parts. */
  override async readInto(buffer: Uint8Array, offset = 0, options: ReadOptions = {}): Promise<Uint8Array> {
    if (options.decode) return readDecodedInto(this, buffer, offset, options);
    throw this.encoded();
  }
}

function fileOf(store: Store, component: string, path: string, records: readonly RecordRef[]): ViewFile {
  const sources = new Map<boolean, ReturnType<Store['recordsSource']>>();
  return {
    store,
    path,
    component,
    format: 'safetensors',
    source(verify) {
      let source = sources.get(verify);
      if (source === undefined) sources.set(verify, (source = store.recordsSource(records, { verify })));
      return source;
    },
  };
}

function tensorView(store: Store, component: string, t: CheckpointTensor): CheckpointTensorView {
  const path = `${component}/${t.name}`;
  if (t.records !== undefined) {
    return new PlainView(fileOf(store, component, path, t.records), t.name, t.dtype, t.shape, t.records);
  }
  const parts = new Map<string, PlainView>();
  for (const [role, p] of Object.entries(t.encoding.parts)) {
    const partPath = `${path}#${role}`;
    parts.set(
      role,
      new PlainView(fileOf(store, component, partPath, p.records), `${t.name}#${role}`, p.dtype, p.shape, p.records),
    );
  }
  const records = [...parts.values()].flatMap((p) => [...p.records]);
  return new EncodedView(fileOf(store, component, path, records), t, parts, records);
}
