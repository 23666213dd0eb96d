/**
 * Composing checkpoints: the checkpoint side of `compose` (rekey, trim). A new header that
 * references the same objects: no tensor byte is read or written.
 */
import type { Lease, Store } from '@tensorfs/format/store';
import { type ObjectId, TensorFSError, throwIfAborted } from '@tensorfs/format';
import { checkObject, checkOptions, checkStore, checkString } from './args.js';
import { openCheckpoint } from './checkpoint.js';
import { CheckpointWriter } from './checkpoint-writer.js';
import { type ComposeChanges, renameMap, selector } from './compose.js';

/** Options of {@link composeCheckpoint}. */
export interface ComposeCheckpointOptions {
  /** Compose only this component; the others are kept as they are. */
  component?: string;
  /** A ref to move to the new checkpoint, by compare-and-swap. */
  ref?: string;
  /** The id the ref must hold (`null`: must not exist). @default the ref's value when the commit starts */
  expected?: ObjectId | null;
  /** A lease to hold the new header with. */
  lease?: Lease;
  /** Cancels before the header is written (`cancelled`). */
  signal?: AbortSignal;
  /**
   * `true`: record the whole-file SHA-256 list of the new checkpoint's export (one extra read of
   * its tensors: the composed checkpoint has no source snapshot); by default none is recorded and
   * a server computes each digest on first request. See `CheckpointWriterOptions.fileSha256`.
   */
  fileSha256?: boolean;
}

/** What {@link composeCheckpoint} made. */
export interface ComposeCheckpointResult {
  /** The new checkpoint's id. */
  readonly id: ObjectId;
  /** The checkpoint it was composed from. */
  readonly base: ObjectId;
  /** Per composed component: its tensors before and after. */
  readonly components: readonly { readonly name: string; readonly before: number; readonly after: number }[];
}

/**
 * Drops and renames tensors of a checkpoint (of one component with `component`, else of every
 * component): a new header, every kept tensor (plain or encoded) keeping its objects; assets,
 * configs, the pipeline and the construction order kept. The result is no longer a conversion of
 * the source snapshot, so its `source` is cleared. Every check runs before the header is written.
 * @throws {TensorFSError} `not_found` (checkpoint, component, or a listed name not in it),
 *   `invalid_argument` (two tensors of a component would share a name, or the ref is a snapshot),
 *   `conflict` (the ref moved), `cancelled`.
 */
export async function composeCheckpoint(
  store: Store,
  checkpoint: string,
  changes: ComposeChanges,
  options: ComposeCheckpointOptions = {},
): Promise<ComposeCheckpointResult> {
  checkStore(store);
  checkString(checkpoint, 'checkpoint');
  checkObject(changes, 'changes');
  checkOptions(options);
  const cp = await openCheckpoint(store, checkpoint, options.signal ? { signal: options.signal } : {});
  const scope = options.component === undefined ? [...cp.components.values()] : [cp.component(options.component)];
  const inScope = new Set(scope.map((c) => c.name));
  const where = options.component ?? 'the checkpoint';
  const present = new Set(scope.flatMap((c) => [...c.tensors.keys()]));
  const drop = selector(changes.drop, present, where);
  const renames = renameMap(changes.rename);
  for (const from of renames.keys()) {
    if (!present.has(from)) {
      throw new TensorFSError('not_found', 'a tensor to rename is not in the checkpoint', {
        details: { rule: 'tensors.compose_missing', tensor: from, component: where },
      });
    }
  }
  // Plan every component first: nothing is written unless all of it holds.
  const plans = [...cp.components.values()].map((c) => {
    const views = [...c.tensors.values()];
    if (!inScope.has(c.name)) return { c, placed: views.map((view) => ({ view, name: view.name })) };
    const from = new Map<string, string>();
    const placed = views
      .filter((view) => !drop(view.name))
      .map((view) => {
        const name = renames.get(view.name) ?? view.name;
        const earlier = from.get(name);
        if (earlier !== undefined) {
          throw new TensorFSError('invalid_argument', 'two tensors would have the same name', {
            details: { rule: 'tensors.compose_duplicate', tensor: name, from: [earlier, view.name], component: c.name },
          });
        }
        from.set(name, view.name);
        return { view, name };
      });
    return { c, placed };
  });
  throwIfAborted(options.signal);
  const writer = new CheckpointWriter(store, {
    ...(options.lease ? { lease: options.lease } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.fileSha256 !== undefined ? { fileSha256: options.fileSha256 } : {}),
  });
  try {
    writer.pipeline(cp.pipeline === null ? null : { cls: cp.pipeline.cls, config: cp.pipeline.config });
    for (const { c, placed } of plans) {
      const comp = writer.component(c.name, { cls: c.cls, config: c.config });
      for (const { view, name } of placed) await comp.inherit(view, name !== view.name ? { name } : {});
      for (const a of c.header.assets) await comp.assetRecords(a.name, a.records);
    }
    const done = await writer.commit({
      ...(options.ref !== undefined ? { name: options.ref } : {}),
      ...(options.expected !== undefined ? { expected: options.expected } : {}),
    });
    return {
      id: done.id,
      base: cp.id,
      components: plans
        .filter(({ c }) => inScope.has(c.name))
        .map(({ c, placed }) => ({ name: c.name, before: c.tensors.size, after: placed.length })),
    };
  } catch (error) {
    await writer.close();
    throw error;
  }
}
