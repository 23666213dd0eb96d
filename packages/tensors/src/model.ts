/**
 * One front door for reading a model: {@link openModel} opens a ref or id that names a snapshot
 * (its safetensors and GGUF files, shard indexes included) or a cozytensors checkpoint, and gives
 * both behind one {@link TensorView} type, named as the model names its tensors and grouped in
 * components (a checkpoint's; a snapshot's top folders, `model` at the root).
 */
import type { Store } from '@tensorfs/format/store';
import { isCheckpointHeader, type ObjectId, TensorFSError, throwIfAborted } from '@tensorfs/format';
import { checkOptions, checkStore, checkString } from './args.js';
import { type Checkpoint, openOpenedCheckpoint, StrictTensorMap, type TensorMap } from './checkpoint.js';
import { openTensors, type TensorSet } from './open.js';
import { resolveModelRef } from './resolve.js';
import type { TensorView } from './tensor.js';

/** What a ref or id names: a snapshot (a TFM1 manifest) or a checkpoint (a cozytensors header). */
export type ModelKind = 'snapshot' | 'checkpoint';

/** A component of an opened model. */
export interface ModelComponent {
  /** The component's name (what `--component` selects). */
  readonly name: string;
  /** Its tensors in order, by name (`get` throws `not_found`). */
  readonly tensors: TensorMap;
}

/** An opened snapshot or checkpoint (see {@link openModel}). */
export interface Model extends Iterable<TensorView> {
  /** What the ref names. */
  readonly kind: ModelKind;
  /** The snapshot or checkpoint id. */
  readonly id: ObjectId;
  /** The components in order (a checkpoint's construction order; a snapshot's path order), by name. */
  readonly components: ReadonlyMap<string, ModelComponent>;
  /** The number of tensors. */
  readonly size: number;
  /** The snapshot's tensor set (its files, headers, templates); `null` for a checkpoint. */
  readonly snapshot: TensorSet | null;
  /** The opened checkpoint (header, pipeline, assets); `null` for a snapshot. */
  readonly checkpoint: Checkpoint | null;
  /** A component by name. @throws {TensorFSError} `not_found` naming the components there are. */
  component(name: string): ModelComponent;
  /** True if a tensor of this name exists (in `component`, if given). */
  has(name: string, component?: string): boolean;
  /**
   * The tensor called `name` (in `component`, if given).
   * @throws {TensorFSError} `not_found`; `invalid_argument` if several components (or several files
   *   of one snapshot component) have it and none is named.
   */
  get(name: string, component?: string): TensorView;
  /** The distinct tensor names, in iteration order. */
  names(): string[];
}

/** Options of {@link openModel}. */
export interface OpenModelOptions {
  /**
   * The variant of a repository tree with several `.cozytensors` files (`model.NAME.cozytensors`;
   * `''` is `model.cozytensors`); with one it is chosen, with several and none named
   * `invalid_argument` (`repo.variant_required`) lists them.
   */
  variant?: string;
  /** Cancels opening (`cancelled`). */
  signal?: AbortSignal;
}

/**
 * What `refOrId` names (a ref, `owner/name[@revision]` or an id; in a tree with variants, the
 * variant: see {@link resolveModelRef}), from the first bytes of its object, and its id.
 * @throws {TensorFSError} `not_found` (no such ref, revision, variant or object), `invalid_argument`.
 */
export async function modelKind(
  store: Store,
  refOrId: string,
  options: { variant?: string } = {},
): Promise<{ id: ObjectId; kind: ModelKind }> {
  checkStore(store);
  checkString(refOrId, 'refOrId');
  const { id } = await resolveModelRef(store, refOrId, options);
  let head: Uint8Array;
  try {
    head = await store.readObjectRange(id, 0, 4);
  } catch (error) {
    // An object shorter than a magic is neither; the snapshot reader says what it is not.
    if (!(await store.has(id))) throw error;
    head = new Uint8Array(0);
  }
  return { id, kind: isCheckpointHeader(head) ? 'checkpoint' : 'snapshot' };
}

/**
 * Opens the model a ref or id names, snapshot or checkpoint: a ref name, `owner/name[@revision]`
 * (a branch, a tag or `sha256:<hex>` of a revision document, tree or header) or an object id;
 * in a tree with `.cozytensors` variants, the variant (`options.variant`, or the only one). Only headers are read (a snapshot's
 * manifest and tensor file headers, a checkpoint's header); no tensor byte is touched until a view
 * is read. Every tensor is a {@link TensorView} whose `storage` says whether it is plain or encoded.
 * @throws {TensorFSError} `not_found` (ref or object missing), `malformed` (a manifest, header or
 *   index that does not parse), `corrupt`, `cancelled`: what `openTensors` / `openCheckpoint` throw.
 */
export async function openModel(store: Store, refOrId: string, options: OpenModelOptions = {}): Promise<Model> {
  checkStore(store);
  checkString(refOrId, 'refOrId');
  checkOptions(options);
  throwIfAborted(options.signal);
  if (options.variant !== undefined) checkString(options.variant, 'options.variant');
  const { id, kind } = await modelKind(
    store,
    refOrId,
    options.variant !== undefined ? { variant: options.variant } : {},
  );
  if (kind === 'checkpoint') {
    const cp = await openOpenedCheckpoint(store, id);
    const components = new Map<string, ModelComponent>(
      [...cp.components.values()].map((c) => [c.name, { name: c.name, tensors: c.tensors }]),
    );
    return new OpenedModel('checkpoint', id, components, null, cp);
  }
  const set = await openTensors(store, id, options.signal ? { signal: options.signal } : {});
  const grouped = new Map<string, TensorView[]>();
  for (const view of set) {
    const list = grouped.get(view.component);
    if (list === undefined) grouped.set(view.component, [view]);
    else list.push(view);
  }
  const components = new Map<string, ModelComponent>();
  for (const [name, views] of grouped) {
    const files = new Map<string, string[]>();
    for (const v of views) files.set(v.name, [...(files.get(v.name) ?? []), v.file]);
    const ambiguous = new Map([...files].filter(([, f]) => f.length > 1));
    const first = new Map<string, TensorView>();
    for (const v of views) if (!first.has(v.name)) first.set(v.name, v);
    components.set(name, { name, tensors: new StrictTensorMap(first, { component: name }, ambiguous) });
  }
  return new OpenedModel('snapshot', id, components, set, null);
}

/** The {@link Model} of {@link openModel}. */
class OpenedModel implements Model {
  readonly size: number;
  private readonly ordered: TensorView[];

  constructor(
    readonly kind: ModelKind,
    readonly id: ObjectId,
    readonly components: ReadonlyMap<string, ModelComponent>,
    readonly snapshot: TensorSet | null,
    readonly checkpoint: Checkpoint | null,
  ) {
    this.ordered = snapshot !== null ? [...snapshot] : [...components.values()].flatMap((c) => [...c.tensors.values()]);
    this.size = this.ordered.length;
  }

  [Symbol.iterator](): Iterator<TensorView> {
    return this.ordered[Symbol.iterator]();
  }

  component(name: string): ModelComponent {
    const c = this.components.get(name);
    if (c === undefined) {
      throw new TensorFSError('not_found', `no component ${JSON.stringify(name)} in the ${this.kind}`, {
        details: {
          rule: 'tensors.no_component',
          component: name,
          id: this.id,
          components: [...this.components.keys()],
        },
      });
    }
    return c;
  }

  has(name: string, component?: string): boolean {
    return this.ordered.some((v) => v.name === name && (component === undefined || v.component === component));
  }

  get(name: string, component?: string): TensorView {
    checkString(name, 'name');
    if (component !== undefined) {
      checkString(component, 'component');
      return this.component(component).tensors.get(name);
    }
    const found = this.ordered.filter((v) => v.name === name);
    if (found.length === 0) {
      throw new TensorFSError('not_found', 'no such tensor', {
        details: { rule: 'tensors.no_tensor', tensor: name, id: this.id },
      });
    }
    if (found.length > 1) {
      const components = [...new Set(found.map((v) => v.component))];
      throw new TensorFSError(
        'invalid_argument',
        components.length > 1
          ? 'several components have a tensor of this name; say which component'
          : 'several files have a tensor of this name; say which file',
        {
          details: {
            rule: 'tensors.ambiguous_tensor',
            tensor: name,
            components,
            files: found.map((v) => v.file),
          },
        },
      );
    }
    return found[0]!;
  }

  names(): string[] {
    return [...new Set(this.ordered.map((v) => v.name))];
  }
}
