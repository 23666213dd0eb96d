/**
 * The public forms of the per-value kernels and of the producer importers: each checks its
 * arguments once and answers a wrong-typed one with `invalid_argument` (rule
 * `encodings.argument`), never a `TypeError`. The decoders inside this package call the
 * unchecked kernels directly, so no per-value loop pays for the checks.
 */
import { wrongArgument } from '../args.js';
import { isTensorFSError, TensorFSError } from '../errors.js';
import * as detect from './detect.js';
import * as floats from './floats.js';
import * as importers from './importers.js';
import * as microscaling from './schemes/microscaling.js';
import * as rotation from './schemes/rotation.js';
import type { DecodedDtype, Encoded, JsonValue } from './types.js';

function wrong(what: string, expected: string, value: unknown): never {
  return wrongArgument('encodings', what, expected, value);
}

function number(value: unknown, what: string): number {
  if (typeof value !== 'number') wrong(what, 'a number', value);
  return value;
}

function int(value: unknown, what: string): number {
  if (!Number.isSafeInteger(value) || (value as number) < 0) wrong(what, 'an integer ≥ 0', value);
  return value as number;
}

function object(value: unknown, what: string): void {
  if (typeof value !== 'object' || value === null) wrong(what, 'an object', value);
}

function options(value: unknown): void {
  if (value !== undefined) object(value, 'options');
}

/**
 * Runs an importer whose inputs passed the shape checks. The importers do no I/O, so a
 * `TypeError` or `RangeError` escaping one can only come from a value of the wrong shape inside
 * `tensors` or `config` (a tensor whose `shape` is not an array...): that is `invalid_argument`.
 */
function run<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (isTensorFSError(err) || !(err instanceof TypeError || err instanceof RangeError)) throw err;
    throw new TensorFSError('invalid_argument', 'a producer tensor or config value has the wrong type', {
      details: { rule: 'encodings.argument' },
      cause: err,
    });
  }
}

function layerArgs(tensors: unknown, layer: unknown, opts: unknown): void {
  object(tensors, 'tensors');
  if (typeof layer !== 'string') wrong('layer', 'a string', layer);
  options(opts);
}

/** The checked form of an importer of one layer (`tensors`, `layer`, options). */
function checkedLayer<O>(
  f: (tensors: importers.ProducerTensors, layer: string, opts?: O) => importers.ImportedEncoding,
): (tensors: importers.ProducerTensors, layer: string, opts?: O) => importers.ImportedEncoding {
  return (tensors, layer, opts) => {
    layerArgs(tensors, layer, opts);
    return run(() => f(tensors, layer, opts));
  };
}

/** The checked form of an importer of one layer that also reads the producer's quantization config. */
function checkedConfigLayer(
  f: (
    tensors: importers.ProducerTensors,
    layer: string,
    config: Record<string, JsonValue>,
    opts?: { dtype?: DecodedDtype },
  ) => importers.ImportedEncoding,
): (
  tensors: importers.ProducerTensors,
  layer: string,
  config: Record<string, JsonValue>,
  opts?: { dtype?: DecodedDtype },
) => importers.ImportedEncoding {
  return (tensors, layer, config, opts = {}) => {
    layerArgs(tensors, layer, opts);
    object(config, 'config');
    return run(() => f(tensors, layer, config, opts));
  };
}

/** {@inheritDoc floats.f16BitsOf} */
export function f16BitsOf(value: number): number {
  return floats.f16BitsOf(number(value, 'value'));
}

/** {@inheritDoc floats.bf16BitsOf} */
export function bf16BitsOf(value: number): number {
  return floats.bf16BitsOf(number(value, 'value'));
}

/** {@inheritDoc floats.e4m3fnCodeOf} */
export function e4m3fnCodeOf(value: number): number {
  return floats.e4m3fnCodeOf(number(value, 'value'));
}

/** {@inheritDoc microscaling.cublasIndex} */
export function cublasIndex(r: number, c: number, c4: number): number {
  return microscaling.cublasIndex(int(r, 'r'), int(c, 'c'), int(c4, 'c4'));
}

/** {@inheritDoc rotation.hadamardH4} */
export function hadamardH4(x: Float32Array, o: number, g: number): void {
  if (!(x instanceof Float32Array)) wrong('x', 'a Float32Array', x);
  if (int(o, 'o') + int(g, 'g') > x.length) wrong('o + g', `at most x.length (${x.length})`, o + g);
  rotation.hadamardH4(x, o, g);
}

/** {@inheritDoc importers.importBitsandbytes4bit} */
export function importBitsandbytes4bit(tensors: importers.ProducerTensors, prefix: string): importers.ImportedEncoding {
  layerArgs(tensors, prefix, undefined);
  return run(() => importers.importBitsandbytes4bit(tensors, prefix));
}

/** {@inheritDoc importers.importLlmInt8} */
export const importLlmInt8 = checkedLayer(importers.importLlmInt8);

/** {@inheritDoc importers.importScaledFp8} */
export const importScaledFp8 = checkedLayer(importers.importScaledFp8);

/** {@inheritDoc importers.importBlockFp8} */
export const importBlockFp8 = checkedLayer(importers.importBlockFp8);

/** {@inheritDoc importers.importModelOptNvfp4} */
export const importModelOptNvfp4 = checkedLayer(importers.importModelOptNvfp4);

/** {@inheritDoc importers.importComfyQuant} */
export const importComfyQuant = checkedLayer(importers.importComfyQuant);

/** {@inheritDoc importers.importGptq} */
export const importGptq = checkedConfigLayer(importers.importGptq);

/** {@inheritDoc importers.importAwq} */
export const importAwq = checkedConfigLayer(importers.importAwq);

/** {@inheritDoc importers.importKohyaLora} */
export const importKohyaLora = checkedLayer(importers.importKohyaLora);

/** {@inheritDoc importers.importGgufTensor} */
export function importGgufTensor(
  typeId: number,
  dims: readonly number[],
  bytes: Uint8Array | undefined,
  opts: { dtype?: DecodedDtype } = {},
): Encoded {
  if (typeof typeId !== 'number') wrong('typeId', 'a number', typeId);
  if (!Array.isArray(dims)) wrong('dims', 'an array', dims);
  for (const d of dims) int(d, 'dims[]');
  if (bytes !== undefined && !(bytes instanceof Uint8Array)) wrong('bytes', 'a Uint8Array or undefined', bytes);
  options(opts);
  return run(() => importers.importGgufTensor(typeId, dims, bytes, opts));
}

/** {@inheritDoc detect.detectConventions} */
export function detectConventions(input: detect.DetectionInput): detect.DetectedWeight[] {
  object(input, 'input');
  object(input.tensors, 'input.tensors');
  if (input.metadata !== undefined) object(input.metadata, 'input.metadata');
  if (input.quantizationConfig !== undefined) object(input.quantizationConfig, 'input.quantizationConfig');
  return run(() => detect.detectConventions(input));
}
