/**
 * Encoders for the common targets: `int8` (tensor or row scales), `fp8_e4m3fn` (tensor or row
 * scales), `nvfp4` (row-major scales), GGML `Q8_0` and `Q4_0` (bit-identical to gguf-py's
 * `gguf.quants.quantize`). Each returns an {@link Encoded} that {@link decode} reads back.
 */
import { TensorFSError } from '../errors.js';
import { E4M3FN, e2m1CodeOf, e4m3fnCodeOf, f16BitsOf } from './floats.js';
import type { DecodedDtype, Encoded, JsonValue } from './types.js';

/** What {@link encode} accepts as params (a subset of each scheme's params). */
export interface EncodeParams {
  /** Logical shape, row-major. */
  shape: readonly number[];
  /** Logical dtype recorded in the result (default F32). */
  dtype?: DecodedDtype;
  /** int8 / fp8: `tensor` or `row`. */
  granularity?: 'tensor' | 'row';
  /** nvfp4: `lo_first` (ModelOpt) or `hi_first` (ComfyUI). */
  nibble_order?: 'lo_first' | 'hi_first';
  /** ggml: `Q8_0` or `Q4_0`. */
  type?: 'Q8_0' | 'Q4_0';
  /**
   * nvfp4: the global scale to use instead of `amax / (6·448)` of `values` (a positive finite
   * float32), so a tensor can be encoded in row chunks that share the scale of the whole tensor.
   */
  global_scale?: number;
}

function bad(message: string, details: Record<string, unknown> = {}): TensorFSError {
  return new TensorFSError('invalid_argument', message, { details: { rule: 'encodings.encode', ...details } });
}

function f32bytes(values: Float32Array): Uint8Array {
  return new Uint8Array(values.buffer.slice(values.byteOffset, values.byteOffset + values.byteLength));
}

const fr = Math.fround;

/** Encodes float values (row-major, `params.shape`) into `scheme`. */
export function encode(values: Float32Array, scheme: string, params: EncodeParams): Encoded {
  const shape = [...(params?.shape ?? [])];
  if (!shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw bad('shape must be non-negative integers');
  const n = shape.reduce((a, b) => a * b, 1);
  if (!(values instanceof Float32Array) || values.length !== n) {
    throw bad(`values must be a Float32Array of ${n} elements`, { expected: n });
  }
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(values[i] as number)) throw bad(`values[${i}] is not finite`, { index: i });
  }
  const dtype = params.dtype ?? 'F32';
  const cols = shape.length ? (shape[shape.length - 1] as number) : 1;
  const rows = cols === 0 ? 0 : n / cols;
  switch (scheme) {
    case 'int8':
    case 'fp8_e4m3fn': {
      const gran = params.granularity ?? 'row';
      if (gran !== 'row' && gran !== 'tensor') throw bad('granularity must be row or tensor');
      const fp8 = scheme === 'fp8_e4m3fn';
      const groups = gran === 'row' ? rows : 1;
      const span = gran === 'row' ? cols : n;
      const scales = new Float32Array(groups);
      const q = new Uint8Array(n);
      for (let g = 0; g < groups; g++) {
        let amax = 0;
        for (let i = g * span; i < (g + 1) * span; i++) amax = Math.max(amax, Math.abs(values[i] as number));
        // comfy-kitchen int8: max(amax/127, 1e-30); fp8: amax/448, 1 for an all-zero group
        const s = fp8 ? (amax > 0 ? fr(amax / 448) : 1) : Math.max(fr(amax / 127), fr(1e-30));
        scales[g] = s;
        for (let i = g * span; i < (g + 1) * span; i++) {
          const x = fr((values[i] as number) / s);
          if (fp8) q[i] = e4m3fnCodeOf(x);
          else {
            // torch.round: half to even
            let r = Math.round(x);
            if (Math.abs(x % 1) === 0.5 && r % 2 !== 0) r -= 1;
            q[i] = Math.min(127, Math.max(-128, r)) & 0xff;
          }
        }
      }
      const params2: Record<string, JsonValue> = { shape, dtype, granularity: gran };
      if (!fp8) params2.scale_kind = 'scale';
      return {
        scheme,
        params: params2,
        parts: {
          q: { dtype: fp8 ? 'F8_E4M3' : 'I8', shape, bytes: q },
          scale: { dtype: 'F32', shape: gran === 'row' ? [rows] : [], bytes: f32bytes(scales) },
        },
      };
    }
    case 'nvfp4': {
      const order = params.nibble_order;
      if (order !== 'lo_first' && order !== 'hi_first') throw bad('nvfp4 needs nibble_order lo_first or hi_first');
      if (cols % 16 !== 0) throw bad('nvfp4 needs a row length that is a multiple of 16', { actual: cols });
      let amax = 0;
      for (let i = 0; i < n; i++) amax = Math.max(amax, Math.abs(values[i] as number));
      // ModelOpt: weight_scale_2 = amax / (6·448); block scale = e4m3(amax_b / (6·global)) in [2^-9, 448]
      const given = params.global_scale;
      if (given !== undefined && !(Number.isFinite(given) && given > 0))
        throw bad('nvfp4 global_scale must be a positive finite number', { actual: String(given) });
      const global = given !== undefined ? fr(given) : amax > 0 ? fr(amax / fr(6 * 448)) : 1;
      const six = fr(6 * global);
      const nb = n / 16;
      const bs = new Uint8Array(nb);
      const q = new Uint8Array(n / 2);
      for (let b = 0; b < nb; b++) {
        let bmax = 0;
        for (let i = b * 16; i < b * 16 + 16; i++) bmax = Math.max(bmax, Math.abs(values[i] as number));
        let s = bmax === 0 ? 1 : fr(bmax / six);
        s = Math.min(448, Math.max(2 ** -9, s));
        const code = e4m3fnCodeOf(s);
        bs[b] = code;
        const eff = fr((E4M3FN[code] as number) * global);
        for (let j = 0; j < 16; j += 2) {
          const c0 = e2m1CodeOf(fr((values[b * 16 + j] as number) / eff));
          const c1 = e2m1CodeOf(fr((values[b * 16 + j + 1] as number) / eff));
          q[(b * 16 + j) >> 1] = order === 'lo_first' ? c0 | (c1 << 4) : (c0 << 4) | c1;
        }
      }
      return {
        scheme,
        params: { shape, dtype, block_size: 16, nibble_order: order, scale_layout: 'row_major' },
        parts: {
          q: { dtype: 'U8', shape: [rows, cols / 2], bytes: q },
          block_scale: { dtype: 'F8_E4M3', shape: [rows, cols / 16], bytes: bs },
          global_scale: { dtype: 'F32', shape: [], bytes: f32bytes(new Float32Array([global])) },
        },
      };
    }
    case 'ggml': {
      const type = params.type;
      if (type !== 'Q8_0' && type !== 'Q4_0') throw bad('ggml encoding supports Q8_0 and Q4_0');
      if (cols % 32 !== 0) throw bad('a GGML row must be a multiple of 32 elements', { actual: cols });
      const nb = n / 32;
      const ts = type === 'Q8_0' ? 34 : 18;
      const out = new Uint8Array(nb * ts);
      for (let b = 0; b < nb; b++) {
        const x0 = b * 32;
        const o = b * ts;
        let d: number;
        if (type === 'Q8_0') {
          let amax = 0;
          for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(values[x0 + j] as number));
          d = fr(amax / 127);
          const id = d === 0 ? 0 : fr(1 / d);
          for (let j = 0; j < 32; j++) {
            const v = fr((values[x0 + j] as number) * id);
            const a = Math.abs(v);
            const r = Math.floor(a) + Math.floor(2 * (a - Math.floor(a)));
            out[o + 2 + j] = (v < 0 ? -r : r) & 0xff;
          }
        } else {
          let max = 0;
          let amax = -1;
          for (let j = 0; j < 32; j++) {
            const v = values[x0 + j] as number;
            if (Math.abs(v) > amax) {
              amax = Math.abs(v);
              max = v;
            }
          }
          d = fr(max / -8);
          const id = d === 0 ? 0 : fr(1 / d);
          for (let j = 0; j < 16; j++) {
            const a = Math.min(15, Math.trunc(fr(fr((values[x0 + j] as number) * id) + 8.5)));
            const c = Math.min(15, Math.trunc(fr(fr((values[x0 + j + 16] as number) * id) + 8.5)));
            out[o + 2 + j] = a | (c << 4);
          }
        }
        const hb = f16BitsOf(d);
        out[o] = hb & 0xff;
        out[o + 1] = hb >> 8;
      }
      return {
        scheme,
        params: { shape, dtype, type },
        parts: { blocks: { dtype: 'U8', shape: [out.length], bytes: out } },
      };
    }
    default:
      throw new TensorFSError('unsupported', `encoding into "${scheme}" is not supported`, {
        details: { rule: 'encodings.encode_unsupported', scheme },
      });
  }
}
