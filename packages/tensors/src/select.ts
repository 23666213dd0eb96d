/**
 * Selecting part of a checkpoint (what `pull --component/--tensors` keeps): a new header over a
 * subset of the same objects, from the header alone (nothing read, nothing needs to be stored).
 */
import { type CheckpointHeader, TensorFSError } from '@tensorfs/format';
import { checkObject, checkOptions } from './args.js';

/** What {@link selectCheckpoint} keeps. */
export interface CheckpointSelection {
  /** Keep only these components (each must exist: `not_found`). */
  components?: readonly string[];
  /**
   * Keep only the tensors whose name this accepts. A component that had tensors and keeps none is
   * left out; components without tensors (a scheduler, a tokenizer) are kept. `not_found` when no
   * tensor is kept at all.
   */
  tensors?: (name: string) => boolean;
}

/**
 * The header of a checkpoint with only the selected components and tensors: the pipeline, the
 * kept components' classes, configs and assets, and every kept tensor (plain or encoded) as it
 * was. A selection that changes anything clears `source` (the subset is not a conversion of that
 * snapshot, and pulling it must not bring the whole snapshot along).
 * @throws {TensorFSError} `not_found` (rule `tensors.no_component` or `tensors.no_tensor_selected`).
 */
export function selectCheckpoint(header: CheckpointHeader, selection: CheckpointSelection): CheckpointHeader {
  checkObject(header, 'header', 'a CheckpointHeader');
  const comps = (header as Partial<CheckpointHeader>).components;
  if (!Array.isArray(comps) || !comps.every((c) => typeof c?.name === 'string' && Array.isArray(c.tensors))) {
    checkObject(null, 'header', 'a CheckpointHeader (components with names and tensors)');
  }
  checkOptions(selection, 'selection');
  if (
    selection.components !== undefined &&
    (!Array.isArray(selection.components) || !selection.components.every((c) => typeof c === 'string'))
  ) {
    checkObject(null, 'selection.components', 'an array of component names');
  }
  if (selection.tensors !== undefined && typeof selection.tensors !== 'function') {
    checkObject(null, 'selection.tensors', 'a function of a tensor name');
  }
  let components = header.components;
  if (selection.components !== undefined) {
    const wanted = new Set(selection.components);
    for (const name of wanted) {
      if (!components.some((c) => c.name === name)) {
        throw new TensorFSError('not_found', `no component ${JSON.stringify(name)} in the checkpoint`, {
          details: { rule: 'tensors.no_component', component: name, components: components.map((c) => c.name) },
        });
      }
    }
    components = components.filter((c) => wanted.has(c.name));
  }
  const keep = selection.tensors;
  if (keep !== undefined) {
    let kept = 0;
    components = components.flatMap((c) => {
      if (c.tensors.length === 0) return [c];
      const tensors = c.tensors.filter((t) => keep(t.name));
      kept += tensors.length;
      return tensors.length === 0 ? [] : [{ ...c, tensors }];
    });
    if (kept === 0) {
      throw new TensorFSError('not_found', 'no tensor of the checkpoint matches', {
        details: { rule: 'tensors.no_tensor_selected' },
      });
    }
  }
  const same = components.length === header.components.length && components.every((c, i) => c === header.components[i]);
  return same ? header : { ...header, source: null, components };
}
