/**
 * GGUF: header parsing and validation, the ggml type table, tensor geometry, the header writer.
 * The exact rules are in spec/gguf.md.
 */
export {
  GGML_MAX_DIMS,
  GGML_MAX_NAME,
  GGUF_DEFAULT_ALIGNMENT,
  type GgmlTensorGeometry,
  ggmlPad,
  ggmlTensorGeometry,
} from './geometry.js';
export { GGML_TYPES, type GgmlTypeInfo, ggmlType, ggmlTypeByName } from './ggml-types.js';
export {
  DEFAULT_MAX_ARRAY_ITEMS,
  DEFAULT_MAX_HEADER_BYTES,
  DEFAULT_MAX_KV_COUNT,
  DEFAULT_MAX_TENSOR_COUNT,
  GGUF_FIXED_HEADER_BYTES,
  GGUF_MAX_KEY_BYTES,
  parseGgufHeader,
} from './parse-header.js';
export { GGUF_INITIAL_READ_BYTES, readGgufHeader } from './read-header.js';
export {
  GGUF_VALUE_TYPES,
  type GgufArray,
  type GgufByteRange,
  type GgufHeader,
  type GgufKV,
  type GgufParseOptions,
  type GgufScalar,
  type GgufTensorInfo,
  type GgufValue,
  type GgufValueType,
} from './types.js';
export {
  type GgufRawMetadata,
  type GgufWriteFileOptions,
  type GgufWriteFileTensor,
  type GgufWriteOptions,
  type GgufWriteResult,
  type GgufWriteTensor,
  writeGguf,
  writeGgufHeader,
} from './write-header.js';
