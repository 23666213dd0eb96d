import type { Lease, Store } from '@tensorfs/cas';
import { type ManifestFileEntry, type ObjectId, TensorFSError } from '@tensorfs/format';
import { type CommitResult, commit } from './commit.js';
import { openTensors } from './open.js';
import type { TensorView } from './view.js';
import { TensorWriter, type TensorWriterOptions } from './writer.js';

/** Options of {@link rekey} and {@link trim}. */
export interface ComposeOptions {
  /** A ref to move to the new snapshot, by compare-and-swap. */
  ref?: string;
  /**
   * The id the ref must hold (`null`: must not exist).
   * @default the opened snapshot's id when `ref` is the ref it was opened from, else the ref's value when the commit starts
   */
  expected?: ObjectId | null;
  /**
   * The lease holding the new header object and manifest. Without one, the composition's own lease
   * is released once `ref` points at the result, and kept (until it expires) when there is no `ref`.
   */
  lease?: Lease;
  /** Cancels the composition before its manifest is written (`cancelled`). */
  signal?: AbortSignal;
}

/** What a composition made. */
export interface ComposeResult extends CommitResult {
  /** The new entry of the composed file. */
  readonly entry: ManifestFileEntry;
  /** The new header object (the entry's first record). */
  readonly header: ObjectId;
}

/** A selection of tensors: exact names (each must exist), a pattern, or a predicate. */
export type TensorSelection = readonly string[] | RegExp | ((name: string) => boolean);

/** What a composition changes in one file: tensors to drop, then tensors to rename. */
export interface ComposeChanges {
  /** The tensors to drop: exact names (each must exist), a pattern, or a predicate. */
  drop?: TensorSelection;
  /** Old name to new name (each old name must exist); names not in the map keep theirs. */
  rename?: ReadonlyMap<string, string> | Readonly<Record<string, string>>;
}

/**
 * Drops and renames tensors of one `.safetensors` or `.gguf` file of a committed snapshot. The file
 * keeps its layout and metadata: the result costs one new header object and one manifest, and every
 * kept tensor keeps its objects. Every check runs before anything is written.
 *
 * @param snapshot - a ref name or snapshot id.
 * @throws {TensorFSError} `not_found` (snapshot, file, or a listed name not in the file),
 *   `invalid_argument` (two tensors would share a name, or a name the format refuses),
 *   `unsupported` (a shard index: compose its shards), `conflict` (the ref moved).
 */
export async function compose(
  store: Store,
  snapshot: string,
  file: string,
  changes: ComposeChanges,
  options: ComposeOptions = {},
): Promise<ComposeResult> {
  return composeWith(store, snapshot, file, options, (views) => {
    const present = new Set(views.map((v) => v.name));
    const drop = selector(changes.drop, present, file);
    const renames: ReadonlyMap<string, string> =
      changes.rename === undefined
        ? new Map()
        : changes.rename instanceof Map
          ? changes.rename
          : new Map(Object.entries(changes.rename));
    for (const from of renames.keys()) {
      if (!present.has(from)) {
        throw new TensorFSError('not_found', 'a tensor to rename is not in the file', {
          details: { tensor: from, path: file },
        });
      }
    }
    const from = new Map<string, string>();
    return views
      .filter((view) => !drop(view.name))
      .map((view) => {
        const name = renames.get(view.name) ?? view.name;
        const earlier = from.get(name);
        if (earlier !== undefined) {
          throw new TensorFSError('invalid_argument', 'two tensors would have the same name', {
            details: { tensor: name, from: [earlier, view.name], path: file },
          });
        }
        from.set(name, view.name);
        return { view, name };
      });
  });
}

/**
 * Renames tensors of one file of a committed snapshot ({@link compose} with `rename`): one new
 * header object and one manifest; every tensor object is shared with the source.
 */
export function rekey(
  store: Store,
  snapshot: string,
  file: string,
  map: ReadonlyMap<string, string> | Readonly<Record<string, string>>,
  options: ComposeOptions = {},
): Promise<ComposeResult> {
  return compose(store, snapshot, file, { rename: map }, options);
}

/**
 * Drops tensors from one file of a committed snapshot ({@link compose} with `drop`): one new
 * header object and one manifest; every kept tensor keeps its objects.
 */
export function trim(
  store: Store,
  snapshot: string,
  file: string,
  select: TensorSelection,
  options: ComposeOptions = {},
): Promise<ComposeResult> {
  return compose(store, snapshot, file, { drop: select }, options);
}

/** A predicate for a selection; listed names must all be present. */
function selector(
  select: TensorSelection | undefined,
  present: ReadonlySet<string>,
  file: string,
): (name: string) => boolean {
  if (select === undefined) return () => false;
  if (select instanceof RegExp) {
    return (name) => {
      select.lastIndex = 0;
      return select.test(name);
    };
  }
  if (typeof select === 'function') return select;
  const names = new Set<string>(select);
  for (const name of names) {
    if (!present.has(name)) {
      throw new TensorFSError('not_found', 'a tensor to drop is not in the file', {
        details: { tensor: name, path: file },
      });
    }
  }
  return (name) => names.has(name);
}

/** One tensor of a composed file: a source view and its new name. */
interface Placement {
  readonly view: TensorView;
  readonly name: string;
}

/** Opens `file`, plans its new tensor list (validating it before anything is written), writes, commits. */
async function composeWith(
  store: Store,
  snapshot: string,
  file: string,
  options: ComposeOptions,
  plan: (views: readonly TensorView[]) => Placement[],
): Promise<ComposeResult> {
  if (file.endsWith('.safetensors.index.json')) {
    throw new TensorFSError('unsupported', 'compose one shard at a time; shard indexes are not rewritten', {
      details: { path: file },
    });
  }
  const set = await openTensors(store, snapshot, { file, ...(options.signal ? { signal: options.signal } : {}) });
  const path = set.files[0]!.path;
  const source = set.header(path);
  const placements = plan([...set]);
  const writerOptions: TensorWriterOptions = {
    mode: set.entry(path).mode as 0o644 | 0o755,
    ...(options.lease ? { lease: options.lease } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(source.format === 'gguf'
      ? { ggufHeader: set.ggufHeader(path) }
      : source.header.metadata !== null
        ? { metadata: source.header.metadata }
        : {}),
  };
  const writer = new TensorWriter(store, path, writerOptions);
  // Without a ref, only the lease keeps the new snapshot: leave it to expire rather than release it.
  let keepLease = false;
  try {
    for (const { view, name } of placements) await writer.inherit(view, { name });
    const entry = await writer.finish();
    const result = await commit(store, {
      base: set.snapshot,
      put: [entry],
      lease: writer.lease,
      ...(options.ref !== undefined ? { ref: options.ref } : {}),
      ...(options.expected !== undefined
        ? { expected: options.expected }
        : options.ref !== undefined && options.ref === snapshot
          ? { expected: set.snapshot }
          : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    keepLease = options.ref === undefined;
    return { ...result, entry, header: entry.records[0]!.digest };
  } finally {
    if (!keepLease) await writer.close();
  }
}
