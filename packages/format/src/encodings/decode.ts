/**
 * The scheme registry and the decoding entry points.
 */
import { describe, requireBytes, requireFunction, requireObject, requireOptions } from '../args.js';
import { TensorFSError, isTensorFSError } from '../errors.js';
import { LITTLE_ENDIAN_HOST, f16BitsOf } from './floats.js';
import { withoutBytes } from './params.js';
import { prepareBnb } from './schemes/bnb.js';
import { prepareFp8 } from './schemes/fp8.js';
import { prepareGgml } from './schemes/ggml.js';
import { prepareAwqGemm, prepareGptq } from './schemes/gptq.js';
import { prepareInt8 } from './schemes/int8.js';
import { prepareLora } from './schemes/lora.js';
import { prepareMxfp4, prepareMxfp8, prepareNvfp4 } from './schemes/microscaling.js';
import { prepareRotation } from './schemes/rotation.js';
import type { DecodedDtype, Encoded, PreparedDecoder } from './types.js';

const REGISTRY: Readonly<Record<string, (enc: Encoded) => PreparedDecoder>> = {
  int8: prepareInt8,
  fp8_e4m3fn: prepareFp8,
  fp8_e5m2: prepareFp8,
  mxfp8: prepareMxfp8,
  mxfp4: prepareMxfp4,
  nvfp4: prepareNvfp4,
  bnb_nf4: prepareBnb,
  bnb_fp4: prepareBnb,
  gptq: prepareGptq,
  awq_gemm: prepareAwqGemm,
  ggml: prepareGgml,
  rotation: (enc) => prepareRotation(enc, prepareDecoder),
  lora: prepareLora,
};

/** Every scheme this package decodes (see `spec/v1/encodings.md`). */
export const ENCODING_SCHEMES: readonly string[] = Object.freeze(Object.keys(REGISTRY));

/** True if `scheme` is in the registry. */
export function isDecodableScheme(scheme: string): boolean {
  return typeof scheme === 'string' && Object.hasOwn(REGISTRY, scheme);
}

/**
 * Validates an encoding and returns a row decoder. Unknown scheme → `unsupported`; a missing or
 * inconsistent declared fact or part → `malformed` (`details.part` / `details.param`, and
 * `details.index` where one element is at fault).
 */
export function prepareDecoder(enc: Encoded): PreparedDecoder {
  if (enc === null || typeof enc !== 'object' || typeof enc.scheme !== 'string') {
    throw new TensorFSError('invalid_argument', 'an encoding is {scheme, params, parts}', {
      details: { rule: 'encodings.shape' },
    });
  }
  const prep = Object.hasOwn(REGISTRY, enc.scheme) ? REGISTRY[enc.scheme] : undefined;
  if (!prep) {
    throw new TensorFSError('unsupported', `decoding the scheme "${enc.scheme}" is not supported`, {
      details: { rule: 'encodings.unknown_scheme', scheme: enc.scheme },
    });
  }
  try {
    return prep(enc);
  } catch (err) {
    if (isTensorFSError(err)) throw err;
    throw new TensorFSError('malformed', `${enc.scheme}: the encoding could not be read`, {
      details: { rule: `encodings.${enc.scheme}.invalid`, scheme: enc.scheme },
      cause: err,
    });
  }
}

/**
 * Checks an encoding as {@link prepareDecoder} does, without its parts' bytes: the scheme, every
 * param, each part's dtype and shape against the params (a part's length is its declared one).
 * A part that does carry bytes is checked in full, so facts held in small parts (GPTQ `g_idx`,
 * the NVFP4 global scale) are checked when the caller read them. An encoding this accepts with
 * parts of the declared shapes decodes (bytes of the declared lengths) or fails only on a fact of
 * the bytes it was not given. This is the one check a writer (`tfs convert`) and the decoder share.
 * @throws {TensorFSError} as {@link prepareDecoder}: `unsupported` (scheme, GGML type without a
 *   decoder), `malformed` naming the param or part (`details.param` / `details.part`).
 */
export function checkEncoding(enc: Encoded): void {
  withoutBytes(() => prepareDecoder(enc));
}

/** Options for {@link decode} and {@link decodeChunks}. */
export interface DecodeOptions {
  /** Output dtype; default the encoding's logical dtype (`params.dtype`). */
  dtype?: DecodedDtype;
  /** Largest chunk of output in bytes for {@link decodeChunks} (default 16 MiB; at least one row). */
  maxChunkBytes?: number;
  /** Abort between chunks → `cancelled`. */
  signal?: AbortSignal;
}

/** One chunk of decoded rows. */
export interface DecodedChunk {
  /** First row (of the decoder's `rows × cols` view) in this chunk. */
  rowStart: number;
  /** One past the last row. */
  rowEnd: number;
  /** The rows as little-endian bytes of the output dtype. */
  bytes: Uint8Array;
}

const WIDTH: Readonly<Record<DecodedDtype, number>> = { F32: 4, F16: 2, BF16: 2 };

function outDtype(dec: PreparedDecoder, dtype: DecodedDtype | undefined): DecodedDtype {
  const d = dtype ?? dec.dtype;
  if (d !== 'F32' && d !== 'F16' && d !== 'BF16') {
    throw new TensorFSError('invalid_argument', 'the output dtype must be F32, F16 or BF16', {
      details: { rule: 'encodings.out_dtype', actual: String(d) },
    });
  }
  return d;
}

/** Casts float32 values into `dst` as `dtype` little-endian bytes (one rounding, to nearest even). */
export function castFloat32(src: Float32Array, n: number, dtype: DecodedDtype, dst: Uint8Array): void {
  if (!(src instanceof Float32Array)) requireFloat32Array(src, 'src');
  requireBytes(dst, 'dst', 'encodings');
  if (
    !Number.isSafeInteger(n) ||
    n < 0 ||
    n > src.length ||
    typeof dtype !== 'string' ||
    !Object.hasOwn(WIDTH, dtype) ||
    dst.length < n * WIDTH[dtype]
  ) {
    throw new TensorFSError(
      'invalid_argument',
      'castFloat32 takes n ≤ src.length, a dtype F32/F16/BF16 and dst of n × its width',
      {
        details: { rule: 'encodings.argument', actual: describe(n) },
      },
    );
  }
  if (!LITTLE_ENDIAN_HOST)
    throw new TensorFSError('unsupported', 'decoding needs a little-endian host', {
      details: { rule: 'encodings.big_endian_host' },
    });
  if (dtype === 'F32') {
    dst.set(new Uint8Array(src.buffer, src.byteOffset, n * 4));
    return;
  }
  const bits = new Uint32Array(src.buffer, src.byteOffset, n);
  for (let i = 0, o = 0; i < n; i++, o += 2) {
    let h: number;
    if (dtype === 'BF16') {
      const x = bits[i] as number;
      h =
        (x & 0x7fffffff) > 0x7f800000
          ? ((x >>> 16) & 0x8000) | 0x7fc0
          : ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
    } else h = f16BitsOf(src[i] as number);
    dst[o] = h & 0xff;
    dst[o + 1] = h >>> 8;
  }
}

function checkRows(dec: PreparedDecoder, r0: number, r1: number): void {
  if (!Number.isSafeInteger(r0) || !Number.isSafeInteger(r1) || r0 < 0 || r1 < r0 || r1 > dec.rows) {
    throw new TensorFSError('invalid_argument', `rows [${r0}, ${r1}) are outside [0, ${dec.rows})`, {
      details: { rule: 'encodings.row_range', rows: dec.rows },
    });
  }
}

/** Decodes rows `[r0, r1)` of a prepared decoder into bytes of `dtype`. */
export function decodeRowsOf(dec: PreparedDecoder, r0: number, r1: number, dtype?: DecodedDtype): Uint8Array {
  requireObject(dec, 'dec', 'encodings');
  requireFunction(dec.decodeRows, 'dec.decodeRows', 'encodings');
  const dt = outDtype(dec, dtype);
  checkRows(dec, r0, r1);
  const n = (r1 - r0) * dec.cols;
  const f = new Float32Array(n);
  dec.decodeRows(r0, r1, f);
  if (dt === 'F32') return new Uint8Array(f.buffer);
  const out = new Uint8Array(n * WIDTH[dt]);
  castFloat32(f, n, dt, out);
  return out;
}

/**
 * Decodes rows `[r0, r1)` (rows of the logical shape's `rows × last-dim` view) to little-endian bytes
 * of the logical dtype or `options.dtype`.
 */
export function decodeRange(enc: Encoded, r0: number, r1: number, options: DecodeOptions = {}): Uint8Array {
  requireOptions(options, 'options', 'encodings');
  return decodeRowsOf(prepareDecoder(enc), r0, r1, options.dtype);
}

/**
 * Decodes the whole tensor to little-endian bytes of the logical dtype (or `options.dtype`).
 * Arithmetic is float32; the one cast to F16/BF16 rounds to nearest even.
 */
export function decode(enc: Encoded, options: DecodeOptions = {}): Uint8Array {
  requireOptions(options, 'options', 'encodings');
  const dec = prepareDecoder(enc);
  const dt = outDtype(dec, options.dtype);
  const total = dec.rows * dec.cols;
  if (dt === 'F32' && !options.signal) return decodeRowsOf(dec, 0, dec.rows, dt);
  const out = new Uint8Array(total * WIDTH[dt]);
  let at = 0;
  for (const chunk of chunksOf(dec, dt, options)) {
    out.set(chunk.bytes, at);
    at += chunk.bytes.length;
  }
  return out;
}

function* chunksOf(dec: PreparedDecoder, dt: DecodedDtype, options: DecodeOptions): Generator<DecodedChunk> {
  const max = options.maxChunkBytes ?? 16 * 1024 * 1024;
  const rowBytes = Math.max(1, dec.cols * WIDTH[dt]);
  const per = Math.max(1, Math.floor(max / rowBytes));
  const scratch = new Float32Array(Math.min(dec.rows, per) * dec.cols);
  for (let r0 = 0; r0 < dec.rows; r0 += per) {
    if (options.signal?.aborted) {
      throw new TensorFSError('cancelled', 'decoding was cancelled', { details: { rule: 'encodings.cancelled' } });
    }
    const r1 = Math.min(dec.rows, r0 + per);
    const n = (r1 - r0) * dec.cols;
    dec.decodeRows(r0, r1, scratch);
    const bytes = new Uint8Array(n * WIDTH[dt]);
    castFloat32(scratch, n, dt, bytes);
    yield { rowStart: r0, rowEnd: r1, bytes };
  }
}

/**
 * Decodes the whole tensor into `dst` (exactly `count × width(dtype)` bytes), e.g. a reused buffer or
 * a caller's mapped memory. F32 output is written in place; F16/BF16 go through bounded chunks.
 */
export function decodeInto(enc: Encoded, dst: Uint8Array, options: DecodeOptions = {}): void {
  requireOptions(options, 'options', 'encodings');
  const dec = prepareDecoder(enc);
  const dt = outDtype(dec, options.dtype);
  const need = dec.rows * dec.cols * WIDTH[dt];
  if (!(dst instanceof Uint8Array) || dst.length !== need) {
    throw new TensorFSError('invalid_argument', `the destination must be ${need} bytes`, {
      details: { rule: 'encodings.destination', expected: need, actual: dst?.length ?? null },
    });
  }
  if (dt === 'F32' && dst.byteOffset % 4 === 0 && !options.signal) {
    dec.decodeRows(0, dec.rows, new Float32Array(dst.buffer, dst.byteOffset, dec.rows * dec.cols));
    return;
  }
  let at = 0;
  for (const chunk of chunksOf(dec, dt, options)) {
    dst.set(chunk.bytes, at);
    at += chunk.bytes.length;
  }
}

/**
 * Decodes in chunks of whole rows, each at most `maxChunkBytes` of output (at least one row), so a
 * large tensor never needs its full float32 image in memory. Validation happens before the first chunk.
 */
export function decodeChunks(enc: Encoded, options: DecodeOptions = {}): Iterable<DecodedChunk> {
  requireOptions(options, 'options', 'encodings');
  const dec = prepareDecoder(enc);
  const dt = outDtype(dec, options.dtype);
  return { [Symbol.iterator]: () => chunksOf(dec, dt, options) };
}

function requireFloat32Array(value: unknown, what: string): never {
  throw new TensorFSError('invalid_argument', `${what} must be a Float32Array`, {
    details: { rule: 'encodings.argument', argument: what, actual: describe(value) },
  });
}
