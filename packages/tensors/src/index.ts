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
  type GgufTemplate,
  type OpenTensorsOptions,
  openTensors,
  type SkippedFile,
  type TensorFileHeader,
  type TensorFileInfo,
  type TensorSet,
} from './open.js';
export { RANGE_PIECE_BYTES, type ReadOptions, type TensorFormat, type TensorView } from './view.js';
export { type InheritOptions, type TensorData, TensorWriter, type TensorWriterOptions } from './writer.js';
export {
  type DecodedReadOptions,
  decodedByteLength,
  decodedDtypeOf,
  readDecoded,
  readDecodedInto,
  viewEncoding,
} from './decoded.js';
