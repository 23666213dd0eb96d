/**
 * `@tensorfs/tensors/read`: the part of `@tensorfs/tensors` that runs anywhere (Node, browsers,
 * workers) over any store of the storage contract (`@tensorfs/format/store`, e.g. `MemoryStore`):
 * open a model, read and slice its tensors, load many at once, decode encodings, diff, and write
 * or compose snapshots in the store. No `node:*` module is reached from here
 * (`scripts/check-layers.mjs` checks it); converting and exporting files on disk and the checkpoint
 * writer (its resume journal is a file) are in the main entry only.
 * @packageDocumentation
 */
export { type CommitOptions, type CommitResult, commit } from './commit.js';
export {
  type ComposeChanges,
  type ComposeOptions,
  type ComposeResult,
  compose,
  rekey,
  type TensorSelection,
  trim,
} from './compose.js';
export {
  type ChangedTensor,
  checkpointDiffInputs,
  type ConfigChange,
  type DiffOptions,
  type DiffTensor,
  type DiffInput,
  diffInputs,
  diffJson,
  diffSnapshots,
  diffTensorLists,
  diffTensors,
  type FileChange,
  type JsonChange,
  MAX_CONFIG_DIFF_BYTES,
  type PullCost,
  type RenamedTensor,
  type SnapshotDiff,
  type TensorDiff,
} from './diff.js';
export {
  type GgufTemplate,
  type OpenTensorsOptions,
  openTensors,
  type SkippedFile,
  type TensorFileHeader,
  type TensorFileInfo,
  type TensorSet,
} from './open.js';
export {
  RANGE_PIECE_BYTES,
  type ReadOptions,
  type TensorEncoding,
  type TensorFormat,
  type TensorPart,
  type TensorStorage,
  type TensorView,
} from './view.js';
export { type CheckpointSelection, selectCheckpoint } from './select.js';
export { type OpenRepoOptions, openRepo } from './repo.js';
export { type ResolvedModelRef, resolveModelRef } from './resolve.js';
export {
  type Model,
  type ModelComponent,
  type ModelKind,
  modelKind,
  type OpenModelOptions,
  openModel,
} from './model.js';
export {
  defaultTensorPool,
  type TensorAllocator,
  TensorPool,
  type TensorPoolOptions,
} from './pool.js';
export {
  ARENA_ALIGN,
  LoadedTensors,
  type LoadableModel,
  type LoadableTensor,
  type LoadOptions,
  loadedByteLength,
  loadTensors,
} from './load.js';
export {
  type EncodedSliceable,
  planSlice,
  readEncodedSlice,
  readSliceOf,
  type RangeReader,
  readSliceWith,
  SLICE_GAP_BYTES,
  type SliceableTensor,
  type SliceOptions,
  type SlicePlan,
  type SliceRange,
  sliceBytes,
  sliceReadBytes,
  sliceReads,
} from './slice.js';
export { type InheritOptions, type TensorData, TensorWriter, type TensorWriterOptions } from './writer.js';
export {
  type Checkpoint,
  type CheckpointComponentView,
  type CheckpointTensorEncoding,
  type CheckpointTensorView,
  type OpenCheckpointOptions,
  openCheckpoint,
  type TensorMap,
} from './checkpoint.js';
export {
  type DecodedReadOptions,
  decodedByteLength,
  decodedDtypeOf,
  readDecoded,
  readDecodedInto,
  readEncoding,
  viewEncoding,
} from './decoded.js';
