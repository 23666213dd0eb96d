/**
 * {@link CheckpointWriter}: builds a cozytensors checkpoint in the store, tensor by tensor, and
 * commits its header (optionally moving a ref by compare-and-swap).
 */
import { checkObject, checkOptions, checkString, checkView } from './args.js';
import * as fsp from 'node:fs/promises';
import type { Lease, Store } from '@tensorfs/format/store';
import {
  type CheckpointAsset,
  type CheckpointEncoding,
  type CheckpointHeader,
  type CheckpointPart,
  type CheckpointTensor,
  checkpointDataSize,
  encodeCheckpoint,
  type JsonValue,
  type ObjectId,
  type Progress,
  progressEvent,
  type RecordRef,
  type SafetensorsDtype,
  safetensorsDtype,
  TensorFSError,
  throwIfAborted,
} from '@tensorfs/format';
import { type Checkpoint, type CheckpointTensorView, openCheckpoint } from './checkpoint.js';
import { expectedRefValue } from './commit.js';
import { recordCheckpointFileSha256 } from './file-sha256.js';
import type { TensorView } from './view.js';
import { cutTensor } from '@tensorfs/planner';
import { cutChunks, type TensorData } from './writer.js';
import {
  type CheckpointDestination,
  checkDestination,
  ObjectMirror,
  type PublishedRevision,
  publishCheckpoint,
} from './destination.js';

/** Options of a {@link CheckpointWriter}. */
export interface CheckpointWriterOptions {
  /**
   * A checkpoint to start from (ref, id or an opened one): its pipeline, components, tensors and
   * assets are kept, none of their bytes read; `component`, `put`, `asset`… override or add.
   */
  base?: string | Checkpoint;
  /** The lease holding written and inherited objects. @default the writer's own, released after commit */
  lease?: Lease;
  /** Cancels pending and later calls (`cancelled`). */
  signal?: AbortSignal;
  /**
   * Called after each tensor or asset: phase `write`, unit `bytes` (no total: a writer does not
   * know what it will be given), with the `tensors`, `assets` and `bytes` stored so far.
   */
  onProgress?: (p: Progress) => void;
  /**
   * A journal file (created if missing) recording each tensor once its objects are stored. A
   * writer given the journal of a killed one takes a `put`/`putEncoded` of a journaled tensor
   * (same component, name, dtype, shape, and for encodings scheme, params and part shapes) from
   * the journal when all its objects are still stored, without reading or hashing `data`: resume
   * only the same conversion, from the same source. `commit` deletes the journal.
   */
  resume?: string;
  /**
   * Publish to a branch of a repository on an origin: every object the writer stores or keeps is
   * sent to the origin while it writes (only what the origin lacks), and `commit()` makes a tree
   * holding the header as `model[.VARIANT].cozytensors` and moves the branch (`draft` unless
   * told) by compare-and-swap. The checkpoint is committed locally first: a failed upload keeps
   * it (and the `resume` journal) and is still an error.
   */
  destination?: CheckpointDestination;
  /**
   * Record the whole-file SHA-256 list of the checkpoint's `--safetensors` export at commit (the
   * side ref `_hf/sha256/<checkpoint hex>`, see `recordCheckpointFileSha256`), so a Hugging Face
   * server answers the first `HEAD` of its files without hashing them. By default (undefined) only
   * what costs nothing: the files the source snapshot's list names (an import with `fileSha256`,
   * an `hf://` import, a pull of a tree that has one); `true` also reads and hashes the others (no
   * source, or a source imported without a list) once more at commit; `false` records nothing.
   * Best effort: a list that cannot be made is left out (a server then hashes on first use). With
   * a `destination`, the list is sent to the origin too.
   */
  fileSha256?: boolean;
}

/** Shape and dtype of {@link CheckpointWriter.put}. */
export interface PutTensorOptions {
  /** A safetensors dtype name. */
  dtype: string;
  shape: readonly (number | bigint)[];
}

/** One part of {@link CheckpointWriter.putEncoded}: its dtype, shape and bytes (or a view to keep). */
export type PartInput = { dtype: string; shape: readonly (number | bigint)[]; data: TensorData } | { view: TensorView };

/** An encoded tensor for {@link CheckpointWriter.putEncoded}. */
export interface PutEncodedOptions {
  /** The logical dtype decoding produces. */
  dtype: string;
  /** The logical shape. */
  shape: readonly (number | bigint)[];
  /** The scheme name (any scheme is carried; decoding needs a known one). */
  scheme: string;
  /** The scheme's parameters (a JSON value). */
  params: JsonValue;
  /** The stored arrays by role; at least one. */
  parts: Readonly<Record<string, PartInput>>;
}

/** What {@link CheckpointWriter.commit} made. */
export interface CheckpointCommit {
  /** The checkpoint id. */
  readonly id: ObjectId;
  /** The header bytes (a `.cozytensors` file's content). */
  readonly bytes: Uint8Array;
  readonly header: CheckpointHeader;
  /** The base checkpoint's id, if there was a base. */
  readonly base: ObjectId | null;
  /** With a `destination`: the exact tree and revision published. */
  readonly published?: PublishedRevision;
}

/** Options of {@link CheckpointWriter.commit}. */
export interface CheckpointCommitOptions {
  /** A ref to point at the checkpoint (compare-and-swap). */
  name?: string;
  /**
   * The id the ref must hold (`null`: must not exist).
   * @default the base's id when `base` is this ref, else the ref's value when the commit starts
   */
  expected?: ObjectId | null;
}

interface ComponentState {
  cls: string;
  config: JsonValue;
  tensors: Map<string, CheckpointTensor>;
  assets: Map<string, RecordRef[]>;
  /** Set when `component()` was called for it in this writer. */
  declared: boolean;
}

/** A handle on one component of a {@link CheckpointWriter}: the writer's calls, bound to it. */
export interface CheckpointComponentWriter {
  readonly name: string;
  put(name: string, data: TensorData, options: PutTensorOptions): Promise<void>;
  putEncoded(name: string, options: PutEncodedOptions): Promise<void>;
  inherit(view: TensorView, options?: { name?: string }): Promise<void>;
  asset(name: string, data: Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void>;
  assetRecords(name: string, records: readonly RecordRef[]): Promise<void>;
}

/**
 * Writes a checkpoint: components in the order they are declared, tensors in the order they are
 * put (construction order is identity), each tensor cut into objects exactly as the planner cuts
 * a safetensors tensor, so a checkpoint and a safetensors snapshot of the same bytes share them.
 *
 * Every object is held by a lease until the header is committed under a ref; a writer that fails,
 * is cancelled or is abandoned leaves nothing referenced (its objects go at the next GC).
 *
 * @example
 * ```ts
 * const w = new CheckpointWriter(store);
 * const unet = w.component('unet', { cls: 'UNet2DConditionModel', config: { sample_size: 8 } });
 * await unet.put('conv_in.weight', bytes, { dtype: 'F32', shape: [4, 4] });
 * await unet.asset('config.json', configBytes);
 * const { id } = await w.commit({ name: 'local/sd' });
 * ```
 */
export class CheckpointWriter {
  private readonly components = new Map<string, ComponentState>();
  private pipelineValue: CheckpointHeader['pipeline'] = null;
  private sourceValue: ObjectId | null = null;
  private current: string | undefined;
  private held: Lease | undefined;
  private busy = false;
  private state: 'open' | 'committed' | 'failed' = 'open';
  private readonly ready: Promise<ObjectId | null>;
  private counts = { tensors: 0, assets: 0, bytes: 0 };
  private journaled = new Map<string, CheckpointTensor>();
  /** Tensors taken from the journal instead of their data (see `resume`). */
  resumed = 0;
  private baseName: string | undefined;
  private readonly mirror: ObjectMirror | undefined;

  constructor(
    private readonly store: Store,
    private readonly options: CheckpointWriterOptions = {},
  ) {
    checkObject(store, 'store', 'a Store');
    checkOptions(options);
    this.held = options.lease;
    if (options.destination !== undefined) {
      checkDestination(options.destination);
      this.mirror = new ObjectMirror(store, options.destination.origin, {
        ...(options.destination.concurrency !== undefined ? { concurrency: options.destination.concurrency } : {}),
        ...(options.signal !== undefined ? { signal: options.signal } : {}),
      });
    }
    this.ready = this.loadJournal().then(() => this.loadBase());
    // A base that fails to load fails the first call, not the process.
    this.ready.catch(() => {});
  }

  private async loadJournal(): Promise<void> {
    if (this.options.resume === undefined) return;
    let text: string;
    try {
      text = await fsp.readFile(this.options.resume, 'utf8');
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') return;
      throw new TensorFSError('io', 'cannot read the resume journal', {
        details: { rule: 'tensors.journal_io', code: (error as { code?: string }).code },
        cause: error,
      });
    }
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      try {
        const entry = JSON.parse(line) as { component: string; tensor: CheckpointTensor };
        this.journaled.set(journalKey(entry.component, entry.tensor.name), entry.tensor);
      } catch {
        // A line torn by the kill ends the journal: what follows it was never confirmed.
        break;
      }
    }
  }

  /** The journaled tensor for this put, if it matches and every object is still stored. */
  private async fromJournal(
    component: string,
    wanted: Omit<CheckpointTensor, 'records' | 'encoding'> & { encoding?: unknown },
  ): Promise<CheckpointTensor | undefined> {
    const prior = this.journaled.get(journalKey(component, wanted.name));
    if (
      prior === undefined ||
      prior.dtype !== wanted.dtype ||
      JSON.stringify(prior.shape) !== JSON.stringify(wanted.shape)
    )
      return undefined;
    if (JSON.stringify(describeEncoding(prior)) !== JSON.stringify(wanted.encoding ?? null)) return undefined;
    const records = prior.records ?? Object.values(prior.encoding!.parts).flatMap((p) => p.records);
    for (const r of records) if (!(await this.store.has(r.digest))) return undefined;
    if (records.length > 0) this.lease.add(records.map((r) => r.digest));
    this.resumed++;
    return prior;
  }

  private async journal(component: string, tensor: CheckpointTensor): Promise<void> {
    if (this.options.resume === undefined) return;
    const fh = await fsp.open(this.options.resume, 'a');
    try {
      await fh.write(`${JSON.stringify({ component, tensor })}\n`);
      await fh.sync();
    } finally {
      await fh.close();
    }
  }

  private async loadBase(): Promise<ObjectId | null> {
    const { base } = this.options;
    if (base === undefined) return null;
    if (typeof base === 'string') this.baseName = base;
    const cp = typeof base === 'string' ? await openCheckpoint(this.store, base) : base;
    this.pipelineValue = cp.header.pipeline;
    this.sourceValue = null;
    // Components declared before the base loaded keep their place after the base's.
    const declared = [...this.components];
    this.components.clear();
    for (const c of cp.header.components) {
      this.components.set(c.name, {
        cls: c.cls,
        config: c.config,
        tensors: new Map(c.tensors.map((t) => [t.name, t])),
        assets: new Map(c.assets.map((a) => [a.name, a.records])),
        declared: false,
      });
    }
    for (const [name, state] of declared) {
      const existing = this.components.get(name);
      if (existing === undefined) this.components.set(name, state);
      else {
        existing.cls = state.cls;
        existing.config = state.config;
        existing.declared = true;
        for (const [k, v] of state.tensors) existing.tensors.set(k, v);
        for (const [k, v] of state.assets) existing.assets.set(k, v);
      }
    }
    return cp.id;
  }

  /** Sets the pipeline class and config (`null` for none). */
  pipeline(pipeline: { cls: string; config: JsonValue } | null): void {
    if (pipeline !== null) checkObject(pipeline, 'pipeline', 'an object { cls, config } or null');
    this.open();
    this.pipelineValue = pipeline === null ? null : { cls: pipeline.cls, config: pipeline.config };
  }

  /** Names the snapshot the checkpoint was converted from (converters use it; see the spec). */
  setSource(snapshot: ObjectId | null): void {
    this.open();
    this.sourceValue = snapshot;
  }

  /**
   * Declares a component (or, with a base, replaces a base component's class and config, keeping
   * its tensors) and makes it the current one for `put`, `inherit` and `asset`.
   * @throws {TensorFSError} `invalid_argument` if declared twice in this writer.
   */
  component(name: string, options: { cls: string; config: JsonValue }): CheckpointComponentWriter {
    checkString(name, 'name');
    checkObject(options, 'options');
    this.open();
    const existing = this.components.get(name);
    if (existing?.declared) {
      throw new TensorFSError('invalid_argument', 'a component is declared once per writer', {
        details: { rule: 'cozytensors.duplicate_component', component: name },
      });
    }
    if (existing !== undefined) {
      existing.cls = options.cls;
      existing.config = options.config;
      existing.declared = true;
    } else {
      this.components.set(name, {
        cls: options.cls,
        config: options.config,
        tensors: new Map(),
        assets: new Map(),
        declared: true,
      });
    }
    this.current = name;
    return {
      name,
      put: (t, data, o) => this.putIn(name, t, data, o),
      putEncoded: (t, o) => this.putEncodedIn(name, t, o),
      inherit: (view, o) => this.inheritIn(name, view, o),
      asset: (a, data) => this.assetIn(name, a, data),
      assetRecords: (a, records) => this.assetRecordsIn(name, a, records),
    };
  }

  /** Adds (or replaces) a plain tensor of the current component from its bytes. */
  put(name: string, data: TensorData, options: PutTensorOptions): Promise<void> {
    return this.putIn(this.currentComponent(), name, data, options);
  }

  /** Adds (or replaces) an encoded tensor of the current component. */
  putEncoded(name: string, options: PutEncodedOptions): Promise<void> {
    return this.putEncodedIn(this.currentComponent(), name, options);
  }

  /**
   * Adds a tensor of a snapshot or checkpoint, keeping its objects (nothing read when the view is
   * record-aligned); an encoded checkpoint tensor keeps its encoding and parts.
   */
  inherit(view: TensorView, options: { name?: string } = {}): Promise<void> {
    return this.inheritIn(this.currentComponent(), view, options);
  }

  /** Adds (or replaces) an asset of the current component. */
  asset(name: string, data: Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    return this.assetIn(this.currentComponent(), name, data);
  }

  /**
   * Writes the header object and, with `name`, points the ref at it (compare-and-swap). The
   * writer's own lease is released once a ref holds the checkpoint; without a ref the lease is
   * left to expire (ten minutes), after which an unreferenced checkpoint goes at the next GC.
   * @throws {TensorFSError} `invalid_argument` (a header rule, e.g. records that do not add up),
   *   `conflict` (the ref moved), `cancelled`.
   */
  async commit(options: CheckpointCommitOptions = {}): Promise<CheckpointCommit> {
    let result: CheckpointCommit | undefined;
    let keepLease = this.options.lease !== undefined;
    await this.step(async () => {
      const base = await this.ready;
      const header: CheckpointHeader = {
        pipeline: this.pipelineValue,
        source: this.sourceValue,
        components: [...this.components].map(([name, c]) => ({
          name,
          cls: c.cls,
          config: c.config,
          tensors: [...c.tensors.values()],
          assets: [...c.assets]
            .map(([n, records]): CheckpointAsset => ({ name: n, records }))
            .sort((a, b) => compareUtf8(a.name, b.name)),
        })),
      };
      const bytes = encodeCheckpoint(header);
      const expected = await expectedRefValue(this.store, options.name, options.expected, this.baseName, base);
      throwIfAborted(this.options.signal);
      const { id } = await this.store.put([bytes], { lease: this.lease });
      if (options.name !== undefined) {
        await this.store.setRef(options.name, id, { expected: expected ?? null, lease: this.lease });
      } else {
        keepLease = true;
      }
      result = { id, bytes, header, base };
      if (this.options.fileSha256 !== false) {
        // After the ref: the checkpoint is committed whatever happens to its list.
        await recordCheckpointFileSha256(this.store, bytes, {
          lease: this.lease,
          hash: this.options.fileSha256 === true,
          ...(this.options.signal ? { signal: this.options.signal } : {}),
        }).catch(() => {});
      }
    }, false);
    this.state = 'committed';
    const destination = this.options.destination;
    if (destination !== undefined && this.mirror !== undefined) {
      let published: PublishedRevision;
      try {
        published = await publishCheckpoint(this.store, this.mirror, destination, result!, this.options.signal);
      } catch (error) {
        // Committed here, not there: the local checkpoint (and the journal) stay for a retry.
        if (!keepLease) await this.close();
        throw publishFailed(error, result!.id);
      }
      result = { ...result!, published };
    }
    if (this.options.resume !== undefined) await fsp.rm(this.options.resume, { force: true });
    if (!keepLease) await this.close();
    return result!;
  }

  /** Releases the writer's own lease (not one passed in): what it wrote is no longer kept. */
  async close(): Promise<void> {
    if (this.held !== undefined && this.held !== this.options.lease) await this.held.release();
  }

  // -------------------------------------------------------------------------------------------

  private get lease(): Lease {
    return this.held!;
  }

  private open(): void {
    if (this.state !== 'open') {
      throw new TensorFSError('invalid_argument', `the writer is ${this.state}`, {
        details: { rule: 'tensors.writer_state' },
      });
    }
  }

  private currentComponent(): string {
    if (this.current === undefined) {
      throw new TensorFSError('invalid_argument', 'declare a component before adding tensors or assets', {
        details: { rule: 'cozytensors.no_component' },
      });
    }
    return this.current;
  }

  private putIn(component: string, name: string, data: TensorData, options: PutTensorOptions): Promise<void> {
    return this.step(async () => {
      const { dtype, shape } = plainShape(name, options.dtype, options.shape);
      const prior = await this.fromJournal(component, { name, dtype, shape });
      if (prior !== undefined) {
        this.setTensor(component, prior);
        return;
      }
      const records = await this.writeData(name, data, checkpointDataSize(dtype, shape));
      this.setTensor(component, { name, dtype, shape, records });
      await this.journal(component, { name, dtype, shape, records });
    });
  }

  private putEncodedIn(component: string, name: string, options: PutEncodedOptions): Promise<void> {
    return this.step(async () => {
      const { dtype, shape } = plainShape(name, options.dtype, options.shape);
      const roles = Object.keys(options.parts ?? {});
      if (roles.length === 0) {
        throw new TensorFSError('invalid_argument', 'an encoded tensor has at least one part', {
          details: { rule: 'cozytensors.parts_empty', tensor: name },
        });
      }
      const wanted = {
        scheme: options.scheme,
        params: options.params,
        parts: Object.fromEntries(
          roles.map((role) => {
            const input = options.parts[role]!;
            const p = 'view' in input ? input.view : input;
            return [role, { dtype: p.dtype, shape: p.shape.map(Number) }];
          }),
        ),
      };
      const prior = await this.fromJournal(component, { name, dtype, shape, encoding: wanted });
      if (prior !== undefined) {
        this.setTensor(component, prior);
        return;
      }
      const parts: Record<string, CheckpointPart> = {};
      for (const role of roles) {
        const input = options.parts[role]!;
        let part: CheckpointPart;
        if ('view' in input) {
          part = await this.partOfView(input.view, `${name}#${role}`);
        } else {
          const p = plainShape(`${name}#${role}`, input.dtype, input.shape);
          part = {
            ...p,
            records: await this.writeData(`${name}#${role}`, input.data, checkpointDataSize(p.dtype, p.shape)),
          };
        }
        Object.defineProperty(parts, role, { value: part, enumerable: true, writable: true, configurable: true });
      }
      const encoding: CheckpointEncoding = { scheme: options.scheme, params: options.params, parts };
      this.setTensor(component, { name, dtype, shape, encoding });
      await this.journal(component, { name, dtype, shape, encoding });
    });
  }

  private inheritIn(component: string, view: TensorView, options: { name?: string } = {}): Promise<void> {
    try {
      checkView(view);
      checkOptions(options);
    } catch (error) {
      return Promise.reject(error);
    }
    const name = options.name ?? view.name;
    return this.step(async () => {
      const encoding = (view as Partial<CheckpointTensorView>).encoding;
      if (encoding) {
        const cv = view as CheckpointTensorView;
        const parts: Record<string, CheckpointPart> = {};
        for (const role of Object.keys(encoding.parts)) {
          Object.defineProperty(parts, role, {
            value: await this.partOfView(cv.part(role), `${name}#${role}`),
            enumerable: true,
            writable: true,
            configurable: true,
          });
        }
        const { dtype, shape } = plainShape(name, view.dtype, view.shape);
        this.setTensor(component, {
          name,
          dtype,
          shape,
          encoding: { scheme: encoding.scheme, params: encoding.params, parts },
        });
        return;
      }
      const part = await this.partOfView(view, name);
      this.setTensor(component, { name, ...part });
    });
  }

  /** A plain view as a part: its records when aligned (leased, not read), else its bytes copied. */
  private async partOfView(view: TensorView, what: string): Promise<CheckpointPart> {
    const { dtype, shape } = plainShape(what, view.dtype, view.shape);
    const expected = checkpointDataSize(dtype, shape);
    if (expected !== view.byteLength) {
      throw new TensorFSError('invalid_argument', 'the view does not have the length its dtype and shape need', {
        details: { rule: 'tensors.tensor_length', tensor: what, expected, actual: view.byteLength },
      });
    }
    if (view.aligned && view.records.every((r) => r.length <= 64 * 1024 * 1024)) {
      if (view.records.length > 0) this.lease.add(view.records.map((r) => r.digest));
      this.counts.tensors++;
      return { dtype, shape, records: [...view.records] };
    }
    return {
      dtype,
      shape,
      records: await this.writeData(what, view.pieces({ signal: this.options.signal }), expected),
    };
  }

  private async assetIn(
    component: string,
    name: string,
    data: Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>,
  ): Promise<void> {
    await this.step(async () => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      const input = data instanceof Uint8Array ? [data] : data;
      for await (const c of input) {
        throwIfAborted(this.options.signal);
        if (!(c instanceof Uint8Array)) {
          throw new TensorFSError('invalid_argument', 'asset data must be Uint8Array pieces', {
            details: { rule: 'tensors.asset_data', asset: name },
          });
        }
        chunks.push(c);
        size += c.length;
      }
      const records: RecordRef[] = [];
      if (size > 0) {
        const { id, length } = await this.store.put(chunks, { lease: this.lease });
        records.push({ digest: id, length });
      }
      this.stateOf(component).assets.set(name, records);
      this.mirror?.add(records.map((r) => r.digest));
      this.counts.assets++;
      this.counts.bytes += size;
      this.report();
    });
  }

  /**
   * Adds an asset from objects already stored (a snapshot file's records): nothing is read; each
   * object must be stored (`not_found`) and is held by the writer's lease.
   */
  assetRecords(name: string, records: readonly RecordRef[]): Promise<void> {
    return this.assetRecordsIn(this.currentComponent(), name, records);
  }

  private assetRecordsIn(component: string, name: string, records: readonly RecordRef[]): Promise<void> {
    return this.step(async () => {
      for (const r of records) {
        if (!(await this.store.has(r.digest))) {
          throw new TensorFSError('not_found', 'an object of the asset is not in the store', {
            details: { rule: 'tensors.missing_object', component, asset: name, digest: r.digest },
          });
        }
      }
      if (records.length > 0) this.lease.add(records.map((r) => r.digest));
      this.stateOf(component).assets.set(
        name,
        records.map(({ digest, length }) => ({ digest, length })),
      );
      this.mirror?.add(records.map((r) => r.digest));
      this.counts.assets++;
      this.report();
    });
  }

  /** Stores bytes cut by the planner's tensor rule (every 64 MiB from the start); checks the length. */
  private async writeData(name: string, data: TensorData, byteLength: number): Promise<RecordRef[]> {
    const records: RecordRef[] = [];
    let total = 0;
    for await (const group of cutChunks(data, cutTensor(byteLength))) {
      throwIfAborted(this.options.signal);
      total += group.reduce((n, c) => n + c.length, 0);
      if (total > byteLength) break;
      const { id, length } = await this.store.put(group, { lease: this.lease });
      records.push({ digest: id, length });
    }
    if (total !== byteLength) {
      throw new TensorFSError('invalid_argument', 'tensor data does not have the length its dtype and shape need', {
        details: {
          rule: 'tensors.tensor_length',
          tensor: name,
          expected: byteLength,
          actual: total > byteLength ? `more than ${byteLength}` : total,
        },
      });
    }
    this.counts.tensors++;
    this.counts.bytes += byteLength;
    this.report();
    return records;
  }

  private report(): void {
    this.options.onProgress?.(progressEvent('write', 'bytes', this.counts));
  }

  private stateOf(component: string): ComponentState {
    const c = this.components.get(component);
    if (c === undefined) {
      throw new TensorFSError('not_found', 'no such component in the writer', {
        details: { rule: 'tensors.no_component', component },
      });
    }
    return c;
  }

  private setTensor(component: string, tensor: CheckpointTensor): void {
    const c = this.stateOf(component);
    this.mirror?.add(
      (tensor.records ?? Object.values(tensor.encoding?.parts ?? {}).flatMap((p) => p.records)).map((r) => r.digest),
    );
    // Replacing a tensor (a base's, or one put earlier) keeps its place in construction order.
    c.tensors.set(tensor.name, tensor);
  }

  /** Runs one call: one at a time, only while open; a failure fails the writer and drops its lease. */
  private async step(run: () => Promise<void>, failOnError = true): Promise<void> {
    if (this.busy) {
      throw new TensorFSError('invalid_argument', 'wait for the previous call to finish (tensors keep their order)', {
        details: { rule: 'tensors.writer_busy' },
      });
    }
    this.open();
    this.busy = true;
    try {
      throwIfAborted(this.options.signal);
      await this.ready;
      this.held ??= await this.store.lease({ purpose: 'write checkpoint' });
      await run();
    } catch (error) {
      if (failOnError || !(error instanceof TensorFSError && error.code === 'conflict')) {
        this.state = 'failed';
        await this.close().catch(() => {});
      }
      throw error;
    } finally {
      this.busy = false;
    }
  }
}

function plainShape(
  name: string,
  dtype: string,
  shape: readonly (number | bigint)[],
): { dtype: SafetensorsDtype; shape: number[] } {
  if (typeof name !== 'string' || name.length === 0) {
    throw new TensorFSError('invalid_argument', 'a tensor needs a name', {
      details: { rule: 'cozytensors.tensor_name' },
    });
  }
  if (typeof dtype !== 'string' || safetensorsDtype(dtype) === undefined) {
    throw new TensorFSError('invalid_argument', 'a checkpoint tensor has a safetensors dtype (encode others)', {
      details: { rule: 'cozytensors.dtype', tensor: name, dtype: String(dtype) },
    });
  }
  if (!Array.isArray(shape)) {
    throw new TensorFSError('invalid_argument', 'shape must be an array', {
      details: { rule: 'cozytensors.shape', tensor: name },
    });
  }
  const dims = shape.map((d) => {
    const n = typeof d === 'bigint' ? Number(d) : d;
    if (
      (typeof d === 'bigint' && d > BigInt(Number.MAX_SAFE_INTEGER)) ||
      (Number.isInteger(n) && n > Number.MAX_SAFE_INTEGER)
    ) {
      // A file's dimension (valid there up to 2^64 − 1) past what a checkpoint addresses: a limit,
      // not the caller's mistake; the same answer bind and lanes derive give for that file.
      throw new TensorFSError(
        'limit_exceeded',
        `${name}: a dimension (${d}) exceeds 2^53 − 1, the largest TensorFS addresses`,
        {
          details: { rule: 'cozytensors.dimension_limit', tensor: name, actual: String(d) },
        },
      );
    }
    if (!Number.isSafeInteger(n) || n < 0 || (typeof d === 'bigint' && BigInt(n) !== d)) {
      throw new TensorFSError('invalid_argument', 'a dimension is an integer in 0…2^53−1', {
        details: { rule: 'cozytensors.shape', tensor: name },
      });
    }
    return n;
  });
  return { dtype: dtype as SafetensorsDtype, shape: dims };
}

const utf8 = new TextEncoder();

/** A failed publish: its own code, saying the checkpoint is committed locally (its id in `details.checkpoint`). */
function publishFailed(error: unknown, checkpoint: ObjectId): unknown {
  if (!(error instanceof TensorFSError)) return error;
  return new TensorFSError(error.code, `${error.message} (publishing failed; the checkpoint is kept locally)`, {
    details: { ...error.details, checkpoint },
    cause: error,
  });
}

function journalKey(component: string, name: string): string {
  return `${component}\u0000${name}`;
}

/** What a resumed put must match of a journaled encoding: scheme, params, part dtypes and shapes. */
function describeEncoding(t: CheckpointTensor): unknown {
  if (t.encoding === undefined) return null;
  return {
    scheme: t.encoding.scheme,
    params: t.encoding.params,
    parts: Object.fromEntries(
      Object.entries(t.encoding.parts).map(([role, p]) => [role, { dtype: p.dtype, shape: p.shape }]),
    ),
  };
}

function compareUtf8(a: string, b: string): number {
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}
