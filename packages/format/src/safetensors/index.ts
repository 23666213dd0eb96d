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
export { describeSafetensors, type SafetensorsDescription, type SafetensorsTensorDescription } from './describe.js';
export { MAX_SAFETENSORS_HEADER_SIZE, parseSafetensorsHeader, readSafetensorsHeader } from './parse-header.js';
export type { SafetensorsHeader, SafetensorsParseOptions, SafetensorsTensorInfo } from './types.js';
