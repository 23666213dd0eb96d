/**
 * `@tensorfs/tensors`: read single tensors straight out of a TensorFS store, write converted
 * files back without building them, and compose snapshots (rekey, trim) from their own objects.
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
  type ComposeCheckpointOptions,
  type ComposeCheckpointResult,
  composeCheckpoint,
} from './compose-checkpoint.js';
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
export {
  type Model,
  type ModelComponent,
  type ModelKind,
  modelKind,
  type OpenModelOptions,
  openModel,
} from './model.js';
export {
  ARENA_ALIGN,
  type LoadableModel,
  type LoadableTensor,
  type LoadOptions,
  type LoadProgress,
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
  type CheckpointCommit,
  type CheckpointCommitOptions,
  type CheckpointComponentWriter,
  CheckpointWriter,
  type CheckpointWriterOptions,
  type PartInput,
  type PutEncodedOptions,
  type PutTensorOptions,
} from './checkpoint-writer.js';
export {
  type CheckpointExportFormat,
  type CheckpointExportOptions,
  type CheckpointExportResult,
  exportCheckpoint,
  exportComponentFiles,
  importPortable,
} from './checkpoint-export.js';
export {
  CONVERTERS,
  type ConverterName,
  PRODUCER_CONVENTIONS,
  type ProducerConvention,
  type ConvertOptions,
  type ConvertResult,
  convertPath,
  convertSnapshot,
} from './convert.js';
export {
  type DecodedReadOptions,
  decodedByteLength,
  decodedDtypeOf,
  readDecoded,
  readDecodedInto,
  readEncoding,
  viewEncoding,
} from './decoded.js';
