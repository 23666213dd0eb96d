/**
 * `@tensorfs/format/encodings`: the quantized-encoding registry, reference decoders and encoders.
 * No I/O; runs in Node, browsers and workers. Spec: `spec/v1/encodings.md`.
 * @packageDocumentation
 */
export type { DecodedDtype, Encoded, EncodedPart, JsonValue, PreparedDecoder } from './types.js';
export {
  ENCODING_SCHEMES,
  castFloat32,
  checkEncoding,
  decode,
  decodeChunks,
  decodeInto,
  decodeRange,
  decodeRowsOf,
  isDecodableScheme,
  prepareDecoder,
  type DecodeOptions,
  type DecodedChunk,
} from './decode.js';
export { encode, type EncodeParams } from './encode.js';
export { E2M1, E4M3FN, E5M2, E8M0, f16Table32 } from './floats.js';
export { GGML_DECODABLE } from './schemes/ggml.js';
export type {
  ImportedEncoding,
  ProducerTensor,
  ProducerTensors,
} from './importers.js';
export {
  type DetectedWeight,
  type DetectionInput,
  PRODUCER_CONVENTIONS,
  type ProducerConvention,
} from './detect.js';
// Checked public forms (wrong-typed arguments are invalid_argument, never a TypeError).
export {
  bf16BitsOf,
  cublasIndex,
  detectConventions,
  e4m3fnCodeOf,
  f16BitsOf,
  hadamardH4,
  importAwq,
  importBitsandbytes4bit,
  importBlockFp8,
  importComfyQuant,
  importGgufTensor,
  importGptq,
  importKohyaLora,
  importLlmInt8,
  importModelOptNvfp4,
  importScaledFp8,
} from './public.js';
