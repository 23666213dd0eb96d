/**
 * T4 steps — casts, quantization, dequantization, requantization — through the encoders and
 * decoders of `@tensorfs/format/encodings`, streamed: a tensor is read in batches of whole rows
 * (at most `batchBytes` of float32 each, at least one row) and written as it is read, so memory
 * stays bounded by one batch plus one stored object, whatever the tensor's size. Only the small
 * parts (row scales, block scales) are held whole.
 * @internal
 */
import { ggmlTypeByName, TensorFSError, throwIfAborted } from '@tensorfs/format';
import {
  castFloat32,
  type DecodedDtype,
  cublasIndex,
  E4M3FN,
  E5M2,
  type Encoded,
  type EncodeParams,
  encode,
  type EncodedPart,
  f16Table32,
  GGML_DECODABLE,
  type JsonValue,
  prepareDecoder,
} from '@tensorfs/format/encodings';
import type { TensorView, TensorWriter } from '@tensorfs/tensors';
import type { RuleDoc } from './documents.js';
import type { LayoutPart } from './layout.js';

/** Default float32 bytes per batch (4 MiB). */
export const DEFAULT_BATCH_BYTES = 4 * 1024 * 1024;

/** What one T4 row reads: a plain tensor (dense float or GGML block type), or a rule's parts. */
export type T4Source =
  | { kind: 'plain'; view: TensorView }
  | { kind: 'rule'; rule: RuleDoc; shape: readonly number[]; parts: { part: LayoutPart; view: TensorView }[] };

/** What one T4 row writes: a plain tensor of `dtype`, or a rule's emissions. */
export type T4Target =
  | { kind: 'plain'; name: string; dtype: string; shape: readonly number[] }
  | { kind: 'rule'; rule: RuleDoc; shape: readonly number[]; parts: readonly LayoutPart[] };

const fr = Math.fround;
const FLOAT_WIDTH: Readonly<Record<string, number>> = { F64: 8, F32: 4, F16: 2, BF16: 2, F8_E4M3: 1, F8_E5M2: 1 };
const WRITABLE_PLAIN = new Set(['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0']);

function unsupported(why: string, details: Record<string, unknown>): never {
  throw new TensorFSError('unsupported', why, { details: { rule: 'lanes.apply_unsupported', ...details } });
}

const ruleRef = (r: RuleDoc) => `${r.name}@${r.version}`;
const encParams = (r: RuleDoc): Record<string, JsonValue> => (r.encoding?.params ?? {}) as Record<string, JsonValue>;

/** Why no streaming decoder reads `rule`'s layout, or null when one does. */
export function ruleDecodeGap(rule: RuleDoc): string | null {
  const s = rule.encoding?.scheme;
  const p = encParams(rule);
  if (s === 'int8' || s === 'fp8_e4m3fn') return p.granularity === 'row' ? null : `${s} with ${p.granularity} scales`;
  if (s === 'nvfp4')
    return p.scale_layout === 'row_major' || p.scale_layout === 'cublas_128x4'
      ? null
      : `nvfp4 with ${String(p.scale_layout)} scales`;
  if (s === 'ggml') return GGML_DECODABLE.includes(String(p.type)) ? null : `GGML ${String(p.type)} decoding`;
  return `scheme ${String(s)}`;
}

/** Why no encoder of `@tensorfs/format/encodings` writes `rule`'s layout, or null when one does. */
export function ruleEncodeGap(rule: RuleDoc): string | null {
  const s = rule.encoding?.scheme;
  const p = encParams(rule);
  if (s === 'int8') return p.granularity === 'row' && p.scale_kind === 'scale' ? null : 'int8 other than row scales';
  if (s === 'fp8_e4m3fn') return p.granularity === 'row' ? null : `fp8_e4m3fn with ${String(p.granularity)} scales`;
  if (s === 'nvfp4')
    return (p.scale_layout === 'row_major' || p.scale_layout === 'cublas_128x4') &&
      (p.nibble_order === 'lo_first' || p.nibble_order === 'hi_first')
      ? null
      : `nvfp4 with ${String(p.scale_layout)} scales`;
  if (s === 'ggml') return p.type === 'Q8_0' || p.type === 'Q4_0' ? null : `GGML ${String(p.type)} encoding`;
  return `encoding into scheme ${String(s)}`;
}

/** Why a plain dtype cannot be read as float32 here, or null. */
export function plainReadGap(dtype: string): string | null {
  if (FLOAT_WIDTH[dtype] !== undefined) return null;
  const g = ggmlTypeByName(dtype);
  if (g && g.blockSize > 1) return GGML_DECODABLE.includes(g.name) ? null : `GGML ${dtype} decoding`;
  return `reading ${dtype} as values`;
}

/** Why a plain dtype cannot be written from float32 here, or null. */
export function plainWriteGap(dtype: string): string | null {
  return WRITABLE_PLAIN.has(dtype) ? null : `casting into ${dtype}`;
}

/** Part name of an encoding for a rule emission role. */
const encPart = (role: string) => (role === 'codes' ? 'q' : role);

/** Fixed-size windows over a view's bytes (the last may be shorter); one buffer, reused. */
async function* byteWindows(view: TensorView, size: number, signal?: AbortSignal): AsyncGenerator<Uint8Array> {
  if (view.byteLength === 0) return;
  const buf = new Uint8Array(Math.min(size, view.byteLength));
  let fill = 0;
  for await (const piece of view.pieces(signal ? { signal } : {})) {
    let at = 0;
    while (at < piece.length) {
      const take = Math.min(buf.length - fill, piece.length - at);
      buf.set(piece.subarray(at, at + take), fill);
      fill += take;
      at += take;
      if (fill === buf.length) {
        yield buf;
        fill = 0;
      }
    }
  }
  if (fill > 0) yield buf.subarray(0, fill);
}

let F16: Float32Array | undefined;

/** Plain bytes of `dtype` to float32 values (little-endian). */
function toFloat32(bytes: Uint8Array, dtype: string, out: Float32Array): number {
  const w = FLOAT_WIDTH[dtype] as number;
  const n = bytes.length / w;
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  if (dtype === 'F32') {
    if (bytes.byteOffset % 4 === 0) out.set(new Float32Array(bytes.buffer, bytes.byteOffset, n));
    else for (let i = 0; i < n; i++) out[i] = dv.getFloat32(i * 4, true);
  } else if (dtype === 'F16' || dtype === 'BF16') {
    // Windows start at offset 0 of their own buffer: read the halves in place when aligned.
    const h = bytes.byteOffset % 2 === 0 ? new Uint16Array(bytes.buffer, bytes.byteOffset, n) : null;
    if (dtype === 'F16') {
      F16 ??= f16Table32();
      if (h) for (let i = 0; i < n; i++) out[i] = F16[h[i] as number] as number;
      else for (let i = 0; i < n; i++) out[i] = F16[dv.getUint16(i * 2, true)] as number;
    } else {
      const u = new Uint32Array(out.buffer, out.byteOffset, n);
      if (h) for (let i = 0; i < n; i++) u[i] = (h[i] as number) << 16;
      else for (let i = 0; i < n; i++) u[i] = dv.getUint16(i * 2, true) << 16;
    }
  } else if (w === 1) {
    const t = dtype === 'F8_E4M3' ? E4M3FN : E5M2;
    for (let i = 0; i < n; i++) out[i] = t[bytes[i] as number] as number;
  } else for (let i = 0; i < n; i++) out[i] = dv.getFloat64(i * 8, true);
  return n;
}

/** Rows × cols of a logical shape (all dims but the last × the last; a scalar is 1 × 1). */
function matrix(shape: readonly number[]): { rows: number; cols: number } {
  if (shape.length === 0) return { rows: 1, cols: 1 };
  const cols = shape[shape.length - 1] as number;
  return { rows: shape.slice(0, -1).reduce((a, b) => a * b, 1), cols };
}

/** One batch of float32 rows. */
interface Batch {
  values: Float32Array;
  rows: number;
}

/**
 * The source's values in batches of whole rows of `cols` (one row of a dense cast may be one
 * element: `elementwise`), each at most `batchBytes` of float32, at least one row.
 */
async function* floatBatches(
  src: T4Source,
  shape: readonly number[],
  elementwise: boolean,
  batchBytes: number,
  signal?: AbortSignal,
): AsyncGenerator<Batch> {
  const { rows: r0, cols: c0 } = matrix(shape);
  const rows = elementwise ? r0 * c0 : r0;
  const cols = elementwise ? 1 : c0;
  if (rows * cols === 0) return;
  const per = Math.max(1, Math.min(rows, Math.floor(batchBytes / (cols * 4))));
  const scratch = new Float32Array(per * cols);
  if (src.kind === 'plain') {
    const v = src.view;
    if (v.byteOrder === 'big') unsupported(`${v.name}: big-endian tensor data`, { tensor: v.name });
    const rowBytes = v.byteLength / rows;
    const block = ggmlTypeByName(v.dtype);
    for await (const w of byteWindows(v, per * rowBytes, signal)) {
      throwIfAborted(signal);
      const n = w.length / rowBytes;
      if (FLOAT_WIDTH[v.dtype] !== undefined) toFloat32(w, v.dtype, scratch);
      else {
        const enc: Encoded = {
          scheme: 'ggml',
          params: { shape: [n, cols], dtype: 'F32', type: (block as { name: string }).name },
          parts: { blocks: { dtype: 'U8', shape: [w.length], bytes: w } },
        };
        prepareDecoder(enc).decodeRows(0, n, scratch);
      }
      yield { values: scratch.subarray(0, n * cols), rows: n };
    }
    return;
  }
  // A rule's parts: the codes (or GGML blocks) stream, the others (scales) are read whole.
  const streamed =
    src.parts.find((p) => p.part.role === 'codes' || p.part.role === 'blocks') ??
    src.parts.reduce((a, b) => (b.view.byteLength > a.view.byteLength ? b : a));
  const whole = new Map<string, Uint8Array>();
  for (const p of src.parts)
    if (p !== streamed) whole.set(p.part.role, (await p.view.read({ ...(signal ? { signal } : {}) })).slice());
  const rowBytes = streamed.view.byteLength / rows;
  const params = { ...encParams(src.rule) };
  // Tiled (cuBLAS 128x4) NVFP4 scales are not row-sliceable: untile them once (they are held whole).
  const shapeOf = new Map(src.parts.map((p) => [p.part.role, p.part.shape]));
  if (src.rule.encoding?.scheme === 'nvfp4' && params.scale_layout === 'cublas_128x4') {
    const sc = c0 / 16;
    whole.set('block_scale', untileScales(whole.get('block_scale') as Uint8Array, r0, sc));
    shapeOf.set('block_scale', [r0, sc]);
    params.scale_layout = 'row_major';
  }
  let at = 0;
  for await (const w of byteWindows(streamed.view, per * rowBytes, signal)) {
    throwIfAborted(signal);
    const n = w.length / rowBytes;
    const parts: Record<string, EncodedPart> = {};
    for (const p of src.parts) {
      const role = p.part.role;
      const dtype = src.rule.encoding?.scheme === 'ggml' ? 'U8' : p.view.dtype;
      if (p === streamed) {
        parts[encPart(role)] = { dtype, shape: [n, ...p.part.shape.slice(1)], bytes: w };
        continue;
      }
      const b = whole.get(role) as Uint8Array;
      const shape = shapeOf.get(role) as readonly number[];
      const pr = shape.length > 0 && shape[0] === rows ? b.length / rows : 0;
      parts[encPart(role)] = pr
        ? { dtype, shape: [n, ...shape.slice(1)], bytes: b.subarray(at * pr, (at + n) * pr) }
        : { dtype, shape: [...shape], bytes: b };
    }
    if (src.rule.encoding?.scheme === 'ggml') {
      const blocks = parts.blocks as EncodedPart;
      parts.blocks = { dtype: 'U8', shape: [w.length], bytes: blocks.bytes as Uint8Array };
    }
    const enc: Encoded = {
      scheme: src.rule.encoding?.scheme as string,
      params: { ...params, shape: [n, cols], dtype: 'F32' },
      parts,
    };
    prepareDecoder(enc).decodeRows(0, n, scratch);
    yield { values: scratch.subarray(0, n * cols), rows: n };
    at += n;
  }
}

/** Row-major `[rows, sc]` NVFP4 block scales into the cuBLAS 128x4 tiled layout, padded with zeros. */
export function tileScales(flat: Uint8Array, rows: number, sc: number): Uint8Array {
  const c4 = Math.ceil(sc / 4) * 4;
  const out = new Uint8Array(Math.ceil(rows / 128) * 128 * c4);
  for (let r = 0; r < rows; r++) for (let c = 0; c < sc; c++) out[cublasIndex(r, c, c4)] = flat[r * sc + c] as number;
  return out;
}

/** The inverse of {@link tileScales}: the `[rows, sc]` row-major scales (padding dropped). */
export function untileScales(tiled: Uint8Array, rows: number, sc: number): Uint8Array {
  const c4 = Math.ceil(sc / 4) * 4;
  const out = new Uint8Array(rows * sc);
  for (let r = 0; r < rows; r++) for (let c = 0; c < sc; c++) out[r * sc + c] = tiled[cublasIndex(r, c, c4)] as number;
  return out;
}

/** `encode`, naming the tensor when it refuses a value that is NaN or infinite. */
function encodeNamed(values: Float32Array, scheme: string, params: EncodeParams, tensor: string): Encoded {
  try {
    return encode(values, scheme, params);
  } catch (err) {
    const index = (err as { details?: { index?: unknown } }).details?.index;
    if (typeof index === 'number')
      throw new TensorFSError(
        'invalid_argument',
        `${tensor} holds a value that is not finite; it cannot be quantized`,
        {
          details: { rule: 'lanes.apply_not_finite', tensor },
          cause: err,
        },
      );
    throw err;
  }
}

/**
 * Converts one T4 row: reads `src` in bounded batches and writes `dst` through `writer` (the
 * streamed part first, then the small parts collected on the way).
 */
export async function convertT4(
  src: T4Source,
  dst: T4Target,
  writer: TensorWriter,
  batchBytes: number,
  signal?: AbortSignal,
): Promise<void> {
  const shape = dst.shape;
  const { cols } = matrix(shape);
  const name = src.kind === 'plain' ? src.view.name : (src.parts[0] as { view: TensorView }).view.name;
  if (dst.kind === 'plain') {
    const block = ggmlTypeByName(dst.dtype);
    const isBlock = block !== undefined && block.blockSize > 1;
    const elementwise = !isBlock && src.kind === 'plain' && FLOAT_WIDTH[src.view.dtype] !== undefined;
    const gen = async function* (): AsyncGenerator<Uint8Array> {
      for await (const b of floatBatches(src, shape, elementwise, batchBytes, signal)) {
        if (isBlock) {
          const e = encodeNamed(b.values, 'ggml', { shape: [b.rows, cols], type: dst.dtype as 'Q8_0' | 'Q4_0' }, name);
          yield (e.parts.blocks as EncodedPart).bytes as Uint8Array;
        } else {
          const out = new Uint8Array(b.values.length * (FLOAT_WIDTH[dst.dtype] as number));
          castFloat32(b.values, b.values.length, dst.dtype as DecodedDtype, out);
          yield out;
        }
      }
    };
    await writer.add(dst.name, dst.dtype, dst.shape, gen());
    return;
  }
  const rule = dst.rule;
  const scheme = rule.encoding?.scheme as string;
  const params = encParams(rule);
  let global: number | undefined;
  if (scheme === 'nvfp4') {
    // The global scale is the whole tensor's: one pass for amax first (as encoding it whole would).
    let amax = 0;
    for await (const b of floatBatches(src, shape, false, batchBytes, signal))
      for (let i = 0; i < b.values.length; i++) amax = Math.max(amax, Math.abs(b.values[i] as number));
    if (!Number.isFinite(amax))
      throw new TensorFSError('invalid_argument', `${name} holds a value that is not finite; it cannot be quantized`, {
        details: { rule: 'lanes.apply_not_finite', tensor: name },
      });
    global = amax > 0 ? fr(amax / fr(6 * 448)) : 1;
  }
  const streamedRole = scheme === 'ggml' ? 'blocks' : 'codes';
  const collected = new Map<string, Uint8Array[]>();
  const gen = async function* (): AsyncGenerator<Uint8Array> {
    for await (const b of floatBatches(src, shape, false, batchBytes, signal)) {
      const p: EncodeParams = { shape: [b.rows, cols] };
      if (scheme === 'int8' || scheme === 'fp8_e4m3fn') p.granularity = 'row';
      if (scheme === 'nvfp4') {
        p.nibble_order = params.nibble_order as 'lo_first' | 'hi_first';
        p.global_scale = global as number;
      }
      if (scheme === 'ggml') p.type = params.type as 'Q8_0' | 'Q4_0';
      const e = encodeNamed(b.values, scheme, p, name);
      for (const [role, part] of Object.entries(e.parts)) {
        if (encPart(streamedRole) === role) continue;
        if (role === 'global_scale') {
          collected.set(role, [part.bytes as Uint8Array]);
          continue;
        }
        let list = collected.get(role);
        if (!list) collected.set(role, (list = []));
        list.push(part.bytes as Uint8Array);
      }
      yield e.parts[encPart(streamedRole)]?.bytes as Uint8Array;
    }
  };
  const streamed = dst.parts.find((p) => p.role === streamedRole) as LayoutPart;
  await writer.add(streamed.name, streamed.dtypes[0] as string, streamed.shape, gen());
  for (const p of dst.parts) {
    if (p === streamed) continue;
    let bytes = collected.get(encPart(p.role));
    if (!bytes && p.role === 'global_scale') bytes = [new Uint8Array(new Float32Array([global ?? 1]).buffer)];
    if (scheme === 'nvfp4' && p.role === 'block_scale' && params.scale_layout === 'cublas_128x4') {
      const flat = new Uint8Array((bytes ?? []).reduce((a, b) => a + b.length, 0));
      let o = 0;
      for (const b of bytes ?? []) {
        flat.set(b, o);
        o += b.length;
      }
      bytes = [tileScales(flat, matrix(shape).rows, cols / 16)];
    }
    await writer.add(p.name, p.dtypes[0] as string, p.shape, bytes ?? []);
  }
}

/** The rule's ref, for messages. */
export { ruleRef };

/**
 * A T3 convention relayout between two NVFP4 rules with the same values (`cozy.nvfp4-flat` ↔
 * `bfl.nvfp4-preswizzled`): a byte permutation, never a re-encoding. Codes are inherited, or
 * streamed with their nibbles swapped when the nibble orders differ; block scales are tiled or
 * untiled (held whole); the global scale is inherited.
 */
export async function relayoutNvfp4(
  from: { rule: RuleDoc; shape: readonly number[]; parts: { part: LayoutPart; view: TensorView }[] },
  to: { rule: RuleDoc; parts: readonly LayoutPart[] },
  writer: TensorWriter,
  signal?: AbortSignal,
): Promise<void> {
  const sp = encParams(from.rule);
  const dp = encParams(to.rule);
  const { rows, cols } = matrix(from.shape);
  const sc = cols / 16;
  for (const d of to.parts) {
    const s = from.parts.find((p) => p.part.role === d.role);
    if (!s) unsupported(`${d.name}: no ${d.role} part to relayout from`, { tensor: d.name });
    if (d.role === 'codes' && sp.nibble_order !== dp.nibble_order) {
      const swapped = async function* (): AsyncGenerator<Uint8Array> {
        for await (const piece of s.view.pieces(signal ? { signal } : {})) {
          const out = new Uint8Array(piece.length);
          for (let i = 0; i < piece.length; i++) {
            const b = piece[i] as number;
            out[i] = ((b << 4) | (b >> 4)) & 0xff;
          }
          yield out;
        }
      };
      await writer.add(d.name, d.dtypes[0] as string, d.shape, swapped());
    } else if (d.role === 'block_scale' && sp.scale_layout !== dp.scale_layout) {
      const held = (await s.view.read(signal ? { signal } : {})).slice();
      const flat = sp.scale_layout === 'cublas_128x4' ? untileScales(held, rows, sc) : held;
      const out = dp.scale_layout === 'cublas_128x4' ? tileScales(flat, rows, sc) : flat;
      await writer.add(d.name, d.dtypes[0] as string, d.shape, out);
    } else await writer.inherit(s.view, { name: d.name });
  }
}
