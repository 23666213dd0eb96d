/**
 * Safetensors: strict header parsing, the canonical writer, sharded indexes and the dtype table.
 * @packageDocumentation
 */
export {
  type DtypeInfo,
  SAFETENSORS_DTYPES,
  type SafetensorsDtype,
  safetensorsByteLength,
  safetensorsDtype,
} from '../dtypes.js';
export { MAX_SAFETENSORS_HEADER_SIZE, parseSafetensorsHeader, readSafetensorsHeader } from './parse-header.js';
export type { SafetensorsHeader, SafetensorsParseOptions, SafetensorsTensorInfo } from './types.js';
export {
  type SafetensorsWriteOptions,
  type SafetensorsWriteResult,
  type SafetensorsWriteTensor,
  type SafetensorsWriteTensorData,
  writeSafetensors,
  writeSafetensorsHeader,
} from './write-header.js';
export { type ExactJsonValue, JsonNumberText, MAX_JSON_DEPTH } from './json-cursor.js';
export {
  checkShardIndex,
  isSafeShardName,
  MAX_SHARD_INDEX_SIZE,
  MAX_SHARDS,
  parseShardIndex,
  type SafetensorsShardIndex,
  type ShardIndexInput,
  type ShardIndexParseOptions,
  shardIndexTotalSize,
  writeShardIndex,
} from './shard-index.js';
