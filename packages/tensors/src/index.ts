/**
 * `@tensorfs/tensors`: read single tensors straight out of a TensorFS store, write converted
 * files back without building them, and compose snapshots (rekey, trim) from their own objects.
 * @packageDocumentation
 */
export * from './read.js';
export {
  type ComposeCheckpointOptions,
  type ComposeCheckpointResult,
  composeCheckpoint,
} from './compose-checkpoint.js';
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
  type CheckpointDestination,
  checkDestination,
  ObjectMirror,
  type PublishedRevision,
  publishCheckpoint,
  variantPath,
} from './destination.js';
export {
  type CheckpointExportFormat,
  type CheckpointExportOptions,
  type CheckpointExportResult,
  exportCheckpoint,
  exportComponentFiles,
  importPortable,
  safetensorsExportTree,
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
  type CheckpointFileSha256,
  type CheckpointFileSha256Options,
  checkpointFileSha256,
  OverlayStore,
  recordCheckpointFileSha256,
} from './file-sha256.js';
