/**
 * Decoded reads: a tensor view's values as plain little-endian F32, F16 or BF16, whatever its stored
 * type. A GGUF tensor's ggml type is its encoding (`ggml` scheme of `@tensorfs/format/encodings`);
 * plain float dtypes are converted (float32 in between, one round-to-nearest-even cast).
 */
import { checkBytes, checkCount, checkObject, checkOptions, checkView } from './args.js';
import { TensorFSError, ggmlTypeByName, isTensorFSError } from '@tensorfs/format';
import {
  type DecodedDtype,
  type Encoded,
  castFloat32,
  decodeInto,
  f16Table32,
  importGgufTensor,
} from '@tensorfs/format/encodings';
import type { ReadOptions, TensorEncoding, TensorView } from './tensor.js';

/** An encoded tensor: {@link TensorView.storage} `encoded`, with its encoding. */
type EncodedTensorView = TensorView & { readonly storage: 'encoded'; readonly encoding: TensorEncoding };

function encodedView(view: TensorView): EncodedTensorView | undefined {
  return view.storage === 'encoded' && view.encoding !== null && typeof view.part === 'function'
    ? (view as EncodedTensorView)
    : undefined;
}

/**
 * The encoding of a checkpoint tensor with every part's bytes read (each length-checked, rehashed
 * with `verify`). `undefined` for a view that is not an encoded checkpoint tensor.
 */
export async function readEncoding(view: TensorView, options: ReadOptions = {}): Promise<Encoded | undefined> {
  checkView(view);
  checkOptions(options);
  const ev = encodedView(view);
  if (ev === undefined) return undefined;
  const parts: Record<string, { dtype: string; shape: number[]; bytes: Uint8Array }> = {};
  for (const [role, p] of Object.entries(ev.encoding.parts)) {
    const bytes = await ev.part(role).read({
      ...(options.verify ? { verify: true } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    Object.defineProperty(parts, role, {
      value: { dtype: p.dtype, shape: p.shape.map(Number), bytes },
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return { scheme: ev.encoding.scheme, params: ev.encoding.params as Encoded['params'], parts };
}

function withTensor(err: unknown, view: TensorView): unknown {
  if (isTensorFSError(err) && !('tensor' in err.details)) {
    return new TensorFSError(err.code, `${view.name}: ${err.message}`, {
      details: { ...err.details, tensor: view.name },
      cause: err,
    });
  }
  return err;
}

/** Options of a decoded read. */
export interface DecodedReadOptions extends ReadOptions {
  /** Output dtype; default F32 for ggml block types, the stored dtype for F32/F16/BF16. */
  dtype?: DecodedDtype;
}

const WIDTH: Readonly<Record<DecodedDtype, number>> = { F32: 4, F16: 2, BF16: 2 };

function elements(view: TensorView): number {
  let n = 1;
  for (const d of view.shape) n *= Number(d);
  return n;
}

/** The encoding of a view's stored bytes (GGUF block types), or `null` for a plain dtype. */
export function viewEncoding(view: TensorView, bytes?: Uint8Array): Encoded | null {
  checkView(view);
  if (bytes !== undefined) checkBytes(bytes, 'bytes');
  if (view.format !== 'gguf' || view.blockSize <= 1) return null;
  const type = ggmlTypeByName(view.dtype);
  if (!type)
    throw new TensorFSError('unsupported', `no encoding for ${view.dtype}`, {
      details: { rule: 'tensors.decode_no_encoding', tensor: view.name },
    });
  return importGgufTensor(type.id, [...view.shape].reverse().map(Number), bytes);
}

/** The dtype a decoded read of `view` produces by default. */
export function decodedDtypeOf(view: TensorView): DecodedDtype {
  checkView(view);
  return view.dtype === 'F16' || view.dtype === 'BF16' ? view.dtype : 'F32';
}

/** The byte length of `view` decoded as `dtype`. */
export function decodedByteLength(view: TensorView, dtype: DecodedDtype = decodedDtypeOf(view)): number {
  checkView(view);
  if (typeof dtype !== 'string' || !Object.hasOwn(WIDTH, dtype)) checkObject(null, 'dtype', 'F32, F16 or BF16');
  return elements(view) * WIDTH[dtype];
}

function widen(dtype: string, bytes: Uint8Array, n: number): Float32Array {
  const out = new Float32Array(n);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  if (dtype === 'F32') for (let i = 0; i < n; i++) out[i] = dv.getFloat32(i * 4, true);
  else if (dtype === 'F16') {
    const t = f16Table32();
    for (let i = 0; i < n; i++) out[i] = t[dv.getUint16(i * 2, true)] as number;
  } else {
    const u = new Uint32Array(out.buffer);
    for (let i = 0; i < n; i++) u[i] = dv.getUint16(i * 2, true) << 16;
  }
  return out;
}

/** A copy of `bytes` with every `width`-byte element reversed (big- to little-endian). */
function swapped(bytes: Uint8Array, width: number): Uint8Array {
  const out = new Uint8Array(bytes.length);
  for (let i = 0; i + width <= bytes.length; i += width)
    for (let j = 0; j < width; j++) out[i + j] = bytes[i + width - 1 - j] as number;
  return out;
}

/**
 * Reads `view` and writes its values as `options.dtype` into `buffer` at `offset`; returns the
 * filled subarray. Supported: encoded checkpoint tensors (every scheme of
 * `@tensorfs/format/encodings`; the default dtype is the tensor's logical dtype), GGML block types and plain F32/F16/BF16 (big-endian GGUF elements are
 * swapped; big-endian GGML blocks are `unsupported`); other dtypes are `unsupported`.
 * @throws {TensorFSError} `invalid_argument` (buffer too small), `unsupported`, `malformed`, and what `read` throws.
 */
export async function readDecodedInto(
  view: TensorView,
  buffer: Uint8Array,
  offset = 0,
  options: DecodedReadOptions = {},
): Promise<Uint8Array> {
  checkView(view);
  checkBytes(buffer, 'buffer');
  checkCount(offset, 'offset');
  checkOptions(options);
  const dtype = options.dtype ?? decodedDtypeOf(view);
  if (dtype !== 'F32' && dtype !== 'F16' && dtype !== 'BF16') {
    throw new TensorFSError('invalid_argument', 'the decoded dtype must be F32, F16 or BF16', {
      details: { rule: 'tensors.decode_dtype', tensor: view.name, actual: String(dtype) },
    });
  }
  const n = elements(view);
  const length = n * WIDTH[dtype];
  if (!Number.isSafeInteger(offset) || offset < 0 || offset + length > buffer.length) {
    throw new TensorFSError('invalid_argument', 'the buffer is too small for the decoded tensor', {
      details: {
        rule: 'tensors.buffer_size',
        tensor: view.name,
        limit: buffer.length - offset,
        actual: length,
        offset,
      },
    });
  }
  const ev = encodedView(view);
  if (ev !== undefined) {
    // A checkpoint tensor's encoding: its parts read, then the scheme's decoder (bounded chunks).
    const target = buffer.subarray(offset, offset + length);
    try {
      const enc = (await readEncoding(ev, options))!;
      decodeInto(enc, target, { dtype, ...(options.signal ? { signal: options.signal } : {}) });
    } catch (err) {
      throw withTensor(err, view);
    }
    return target;
  }
  const plain = view.blockSize <= 1;
  if (plain && view.dtype !== 'F32' && view.dtype !== 'F16' && view.dtype !== 'BF16') {
    throw new TensorFSError('unsupported', `decoding ${view.dtype} to ${dtype} is not supported`, {
      details: { rule: 'tensors.decode_dtype', tensor: view.name, dtype: view.dtype },
    });
  }
  const big = view.byteOrder === 'big';
  if (big && !plain) {
    throw new TensorFSError('unsupported', `decoding ${view.dtype} blocks of a big-endian GGUF file is not supported`, {
      details: { rule: 'tensors.decode_byte_order', tensor: view.name, type: view.dtype, fact: 'byte_order' },
    });
  }
  const raw0 = await view.read({
    decode: false,
    ...(options.verify ? { verify: true } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const raw = big ? swapped(raw0, view.dtype === 'F32' ? 4 : 2) : raw0;
  const target = buffer.subarray(offset, offset + length);
  if (plain) {
    if (view.dtype === dtype) target.set(raw);
    else castFloat32(widen(view.dtype, raw, n), n, dtype, target);
    return target;
  }
  const enc = viewEncoding(view, raw);
  if (!enc)
    throw new TensorFSError('internal', 'no encoding for a block type', {
      details: { rule: 'tensors.decode_no_encoding' },
    });
  try {
    decodeInto(enc, target, { dtype, ...(options.signal ? { signal: options.signal } : {}) });
  } catch (err) {
    throw withTensor(err, view);
  }
  return target;
}

/** Reads `view` decoded to plain values of `options.dtype` (see {@link readDecodedInto}). */
export async function readDecoded(view: TensorView, options: DecodedReadOptions = {}): Promise<Uint8Array> {
  checkView(view);
  checkOptions(options);
  const dtype = options.dtype ?? decodedDtypeOf(view);
  return readDecodedInto(view, new Uint8Array(decodedByteLength(view, dtype)), 0, { ...options, dtype });
}
