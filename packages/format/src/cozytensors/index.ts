/**
 * The cozytensors checkpoint header: a self-describing model (pipeline, components, configs,
 * tensors, encodings, assets) as deterministic CBOR after the magic `TFC1`. See
 * `spec/v1/cozytensors.md`. Also published as the subpath `@tensorfs/format/cozytensors`.
 * @packageDocumentation
 */
export {
  type CheckpointAsset,
  type CheckpointComponent,
  checkpointDataSize,
  type CheckpointEncoding,
  type CheckpointHeader,
  checkpointId,
  type CheckpointPart,
  checkpointReferences,
  type CheckpointTensor,
  COZYTENSORS_MAGIC,
  COZYTENSORS_VERSION,
  decodeCheckpoint,
  encodeCheckpoint,
  isCheckpointHeader,
  MAX_CHECKPOINT_RECORDS,
  MAX_CHECKPOINT_TENSORS,
  MAX_COMPONENTS,
  MAX_DIMS,
  MAX_NAME_BYTES,
} from './header.js';
export { checkpointToJSON, type CheckpointJSON } from './json.js';
export { type JsonValue, MAX_CONFIG_DEPTH, parseConfigJson } from './json-value.js';
