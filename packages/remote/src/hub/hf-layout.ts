/** A checkpoint as the tree of its `--safetensors` export: the export code of `@tensorfs/tensors`. */
import type { ObjectId } from '@tensorfs/format';
import type { Store } from '@tensorfs/format/store';
import { openCheckpoint, safetensorsExportTree } from '@tensorfs/tensors';

/** The export tree of the checkpoint header `id`, its new objects put into `store` (an overlay). */
export async function checkpointLayout(store: Store, id: ObjectId): Promise<ObjectId> {
  const checkpoint = await openCheckpoint(store, id);
  return safetensorsExportTree(store, checkpoint);
}
