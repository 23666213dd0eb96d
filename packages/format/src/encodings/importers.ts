/**
 * Producer conventions → encodings: pure translations of one quantized weight's producer tensors
 * (and the producer's metadata) into `{scheme, params, parts}`, so the convention is resolved once,
 * at import. A fact the source does not state is never guessed: the translation refuses with
 * `unsupported` naming the fact (`details.fact`), unless the caller declares it in the options.
 * These functions do no I/O; `tfs convert` finds the tensors and metadata and calls them.
 */
import { TensorFSError } from '../errors.js';
import { ggmlType } from '../gguf/ggml-types.js';
import type { DecodedDtype, Encoded, EncodedPart, JsonValue } from './types.js';

/** A producer tensor: its safetensors dtype, shape and (optionally) bytes. */
export type ProducerTensor = EncodedPart;

/** A producer file's tensors by name. */
export type ProducerTensors = Readonly<Record<string, ProducerTensor | undefined>>;

/** An imported weight: its encoding and the producer tensor names it consumed (they are not tensors any more). */
export interface ImportedEncoding {
  readonly encoding: Encoded;
  readonly consumed: readonly string[];
}

function unsupported(convention: string, fact: string, message: string): TensorFSError {
  return new TensorFSError('unsupported', `${convention}: ${message}`, {
    details: { rule: `encodings.import.${convention}`, convention, fact },
  });
}

function malformedImport(convention: string, message: string, facts: Record<string, unknown>): TensorFSError {
  return new TensorFSError('malformed', `${convention}: ${message}`, {
    details: { rule: `encodings.import.${convention}`, convention, ...facts },
  });
}

function need(convention: string, tensors: ProducerTensors, name: string, used: string[]): ProducerTensor {
  const t = tensors[name];
  if (!t) throw malformedImport(convention, `the tensor "${name}" is missing`, { tensor: name });
  used.push(name);
  return t;
}

function maybe(tensors: ProducerTensors, name: string, used: string[]): ProducerTensor | undefined {
  const t = tensors[name];
  if (t) used.push(name);
  return t;
}

function dtypeOrRefuse(convention: string, dtype: DecodedDtype | undefined): DecodedDtype {
  if (dtype !== 'F32' && dtype !== 'F16' && dtype !== 'BF16') {
    throw unsupported(convention, 'dtype', 'the logical dtype is not recorded by this producer; declare it');
  }
  return dtype;
}

function jsonBytes(convention: string, t: ProducerTensor, name: string): Record<string, JsonValue> {
  if (!t.bytes) throw malformedImport(convention, `the tensor "${name}" has no bytes`, { tensor: name });
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(t.bytes));
  } catch {
    throw malformedImport(convention, `the tensor "${name}" is not UTF-8 JSON`, { tensor: name });
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw malformedImport(convention, `the tensor "${name}" is not a JSON object`, { tensor: name });
  }
  return v as Record<string, JsonValue>;
}

const TORCH_DTYPES: Readonly<Record<string, DecodedDtype>> = {
  bfloat16: 'BF16',
  float16: 'F16',
  float32: 'F32',
  'torch.bfloat16': 'BF16',
  'torch.float16': 'F16',
  'torch.float32': 'F32',
};

/**
 * bitsandbytes 4-bit (`<p>.weight`, `.absmax`, `.quant_map`, `.quant_state.bitsandbytes__nf4|fp4`,
 * nested `.nested_absmax` / `.nested_quant_map`) → `bnb_nf4` / `bnb_fp4` (`hi_first`).
 * `prefix` is the weight's name (`model.layers.0.mlp.down_proj.weight`).
 */
export function importBitsandbytes4bit(tensors: ProducerTensors, prefix: string): ImportedEncoding {
  const c = 'bitsandbytes_4bit';
  const used: string[] = [];
  const nf4 = tensors[`${prefix}.quant_state.bitsandbytes__nf4`];
  const fp4 = tensors[`${prefix}.quant_state.bitsandbytes__fp4`];
  if ((nf4 ? 1 : 0) + (fp4 ? 1 : 0) !== 1) {
    throw malformedImport(c, 'exactly one quant_state.bitsandbytes__nf4 or __fp4 tensor is required', {
      tensor: prefix,
    });
  }
  const stateName = `${prefix}.quant_state.bitsandbytes__${nf4 ? 'nf4' : 'fp4'}`;
  const state = jsonBytes(c, need(c, tensors, stateName, used), stateName);
  const qt = state.quant_type;
  if (qt === undefined)
    throw malformedImport(c, 'the quant_state has no "quant_type"', { tensor: stateName, key: 'quant_type' });
  if (qt !== (nf4 ? 'nf4' : 'fp4'))
    throw malformedImport(c, 'quant_type disagrees with the quant_state key', { tensor: stateName });
  const shape = state.shape;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) {
    throw unsupported(c, 'shape', 'the quant_state has no logical shape (bitsandbytes before PR #868); declare it');
  }
  const dtype = TORCH_DTYPES[String(state.dtype)];
  if (!dtype) {
    throw unsupported(
      c,
      'dtype',
      state.dtype === undefined
        ? 'the quant_state has no "dtype"'
        : `the quant_state dtype ${JSON.stringify(state.dtype)} is not F32, F16 or BF16`,
    );
  }
  if (!Number.isSafeInteger(state.blocksize)) {
    throw malformedImport(
      c,
      state.blocksize === undefined ? 'the quant_state has no "blocksize"' : 'quant_state.blocksize is not an integer',
      { tensor: stateName, key: 'blocksize' },
    );
  }
  const codes = need(c, tensors, prefix, used);
  const absmax = need(c, tensors, `${prefix}.absmax`, used);
  const table = need(c, tensors, `${prefix}.quant_map`, used);
  const nestedAbsmax = maybe(tensors, `${prefix}.nested_absmax`, used);
  const nestedTable = maybe(tensors, `${prefix}.nested_quant_map`, used);
  const nested = state.nested_blocksize !== undefined || nestedAbsmax !== undefined;
  const params: Record<string, JsonValue> = {
    shape: shape as number[],
    dtype,
    blocksize: state.blocksize as number,
    nibble_order: 'hi_first',
    nested,
  };
  const parts: Record<string, EncodedPart> = { codes, absmax, code_table: table };
  if (nested) {
    if (!nestedAbsmax || !nestedTable) throw malformedImport(c, 'nested statistics are incomplete', { tensor: prefix });
    if (!Number.isSafeInteger(state.nested_blocksize) || typeof state.nested_offset !== 'number') {
      throw malformedImport(c, 'quant_state lacks nested_blocksize or nested_offset', { tensor: stateName });
    }
    params.nested_blocksize = state.nested_blocksize as number;
    params.nested_offset = state.nested_offset as number;
    parts.nested_absmax = nestedAbsmax;
    parts.nested_table = nestedTable;
  }
  return { encoding: { scheme: nf4 ? 'bnb_nf4' : 'bnb_fp4', params, parts }, consumed: used };
}

/** LLM.int8 (`<p>.weight` I8, `<p>.SCB`, optional `<p>.weight_format` = 0) → `int8`, row, absmax/127. */
export function importLlmInt8(
  tensors: ProducerTensors,
  layer: string,
  options: { dtype?: DecodedDtype } = {},
): ImportedEncoding {
  const c = 'llm_int8';
  const used: string[] = [];
  const w = need(c, tensors, `${layer}.weight`, used);
  const scb = need(c, tensors, `${layer}.SCB`, used);
  const fmt = maybe(tensors, `${layer}.weight_format`, used);
  if (fmt?.bytes && fmt.bytes.length > 0 && fmt.bytes[0] !== 0) {
    throw unsupported(c, 'weight_format', `weight_format ${fmt.bytes[0]} (a legacy tiled layout) is not supported`);
  }
  return {
    encoding: {
      scheme: 'int8',
      params: {
        shape: [...w.shape],
        dtype: dtypeOrRefuse(c, options.dtype),
        granularity: 'row',
        scale_kind: 'absmax_over_127',
      },
      parts: { q: w, scale: scb },
    },
    consumed: used,
  };
}

function fp8Scheme(c: string, dtype: string): 'fp8_e4m3fn' | 'fp8_e5m2' {
  if (dtype === 'F8_E4M3') return 'fp8_e4m3fn';
  if (dtype === 'F8_E5M2') return 'fp8_e5m2';
  throw unsupported(c, 'element_type', `an FP8 weight stored as ${dtype}`);
}

/**
 * Per-tensor-scaled FP8: ComfyUI legacy `scale_weight` (with the `scaled_fp8` marker), comfy_quant
 * float8 and diffusers/ModelOpt/LTX-2 `weight_scale` → `fp8_e4m3fn`/`fp8_e5m2` by the weight's own
 * dtype (never the converter's e4m3 assumption). A scale of another shape: `[N]`/`[N,1]` → row.
 */
export function importScaledFp8(
  tensors: ProducerTensors,
  layer: string,
  options: { dtype?: DecodedDtype } = {},
): ImportedEncoding {
  const c = 'scaled_fp8';
  const used: string[] = [];
  const w = need(c, tensors, `${layer}.weight`, used);
  const scale = maybe(tensors, `${layer}.scale_weight`, used) ?? maybe(tensors, `${layer}.weight_scale`, used);
  if (!scale)
    throw malformedImport(c, `the weight scale of "${layer}" is missing`, { tensor: `${layer}.weight_scale` });
  maybe(tensors, `${layer}.scale_input`, used);
  maybe(tensors, `${layer}.input_scale`, used);
  const n = scale.shape.reduce((a, b) => a * b, 1);
  const granularity = n === 1 ? 'tensor' : 'row';
  return {
    encoding: {
      scheme: fp8Scheme(c, w.dtype),
      params: { shape: [...w.shape], dtype: dtypeOrRefuse(c, options.dtype), granularity },
      parts: { q: w, scale },
    },
    consumed: used,
  };
}

/** DeepSeek-style block FP8 (`weight_scale_inv` [ceil(N/128), ceil(K/128)], multiplied) → `fp8_e4m3fn` block [128,128]. */
export function importBlockFp8(
  tensors: ProducerTensors,
  layer: string,
  options: { dtype?: DecodedDtype; block?: [number, number] } = {},
): ImportedEncoding {
  const c = 'block_fp8';
  const used: string[] = [];
  const w = need(c, tensors, `${layer}.weight`, used);
  const s = need(c, tensors, `${layer}.weight_scale_inv`, used);
  return {
    encoding: {
      scheme: fp8Scheme(c, w.dtype),
      params: {
        shape: [...w.shape],
        dtype: dtypeOrRefuse(c, options.dtype),
        granularity: 'block',
        block: options.block ?? [128, 128],
      },
      parts: { q: w, scale: s },
    },
    consumed: used,
  };
}

/** ModelOpt NVFP4 (`weight` U8 [N,K/2], `weight_scale` E4M3 [N,K/16], `weight_scale_2`) → `nvfp4`, lo_first, row_major. */
export function importModelOptNvfp4(
  tensors: ProducerTensors,
  layer: string,
  options: { dtype?: DecodedDtype; swizzled?: boolean } = {},
): ImportedEncoding {
  const c = 'modelopt_nvfp4';
  const used: string[] = [];
  const w = need(c, tensors, `${layer}.weight`, used);
  const bs = need(c, tensors, `${layer}.weight_scale`, used);
  const g = need(c, tensors, `${layer}.weight_scale_2`, used);
  maybe(tensors, `${layer}.input_scale`, used);
  if (w.shape.length !== 2) throw malformedImport(c, 'the weight must be 2-D', { tensor: `${layer}.weight` });
  const [n, half] = w.shape as [number, number];
  return {
    encoding: {
      scheme: 'nvfp4',
      params: {
        shape: [n, half * 2],
        dtype: dtypeOrRefuse(c, options.dtype),
        block_size: 16,
        nibble_order: 'lo_first',
        scale_layout: options.swizzled ? 'cublas_128x4' : 'row_major',
      },
      parts: { q: w, block_scale: bs, global_scale: g },
    },
    consumed: used,
  };
}

/**
 * ComfyUI `comfy_quant` layers (`<layer>.comfy_quant` JSON or a `_quantization_metadata` entry):
 * float8 → fp8, `nvfp4` → hi_first, cublas_128x4, padded; `mxfp8` → cublas_128x4, padded;
 * `int8_tensorwise` (+ `convrot`) → int8 (inside `rotation`). Padded formats need the module's
 * logical shape (`options.shape`): the file only has the padded one.
 */
export function importComfyQuant(
  tensors: ProducerTensors,
  layer: string,
  options: { dtype?: DecodedDtype; shape?: number[]; conf?: Record<string, JsonValue> } = {},
): ImportedEncoding {
  const c = 'comfy_quant';
  const used: string[] = [];
  const confTensor = maybe(tensors, `${layer}.comfy_quant`, used);
  const conf = options.conf ?? (confTensor ? jsonBytes(c, confTensor, `${layer}.comfy_quant`) : undefined);
  if (!conf)
    throw malformedImport(c, `no comfy_quant configuration for "${layer}"`, { tensor: `${layer}.comfy_quant` });
  const inner = (
    conf.params && typeof conf.params === 'object' && !Array.isArray(conf.params) ? conf.params : {}
  ) as Record<string, JsonValue>;
  const fact = (k: string) => conf[k] ?? inner[k];
  const format = conf.format;
  if (format === undefined) {
    throw malformedImport(c, `the configuration of "${layer}" has no "format"`, {
      tensor: `${layer}.comfy_quant`,
      key: 'format',
    });
  }
  const dtype = dtypeOrRefuse(c, options.dtype);
  const w = need(c, tensors, `${layer}.weight`, used);
  const s = need(c, tensors, `${layer}.weight_scale`, used);
  maybe(tensors, `${layer}.input_scale`, used);
  const logical = () => {
    if (!options.shape)
      throw unsupported(c, 'logical_shape', `${String(format)} storage is padded; declare the module's shape`);
    return options.shape;
  };
  let encoding: Encoded;
  switch (format) {
    case 'float8_e4m3fn':
    case 'float8_e5m2':
      encoding = {
        scheme: fp8Scheme(c, w.dtype),
        params: {
          shape: [...w.shape],
          dtype,
          granularity: s.shape.reduce((a, b) => a * b, 1) === 1 ? 'tensor' : 'row',
        },
        parts: { q: w, scale: s },
      };
      break;
    case 'nvfp4': {
      const g = need(c, tensors, `${layer}.weight_scale_2`, used);
      const [np, half] = w.shape as [number, number];
      encoding = {
        scheme: 'nvfp4',
        params: {
          shape: logical(),
          dtype,
          block_size: 16,
          nibble_order: 'hi_first',
          scale_layout: 'cublas_128x4',
          padded_shape: [np, half * 2],
        },
        parts: { q: w, block_scale: { ...s, dtype: 'F8_E4M3' }, global_scale: g },
      };
      break;
    }
    case 'mxfp8':
      encoding = {
        scheme: 'mxfp8',
        params: { shape: logical(), dtype, block_size: 32, scale_layout: 'cublas_128x4', padded_shape: [...w.shape] },
        parts: { q: w, scale: { ...s, dtype: 'F8_E8M0' } },
      };
      break;
    case 'int8_tensorwise': {
      const perRow = s.shape.length === 2 && s.shape[1] === 1;
      const base: Encoded = {
        scheme: 'int8',
        params: { shape: [...w.shape], dtype, granularity: perRow ? 'row' : 'tensor', scale_kind: 'scale' },
        parts: { q: w, scale: s },
      };
      if (fact('convrot') === true) {
        const gsz = fact('convrot_groupsize') ?? 256;
        encoding = {
          scheme: 'rotation',
          params: {
            shape: [...w.shape],
            dtype,
            kind: 'regular_hadamard_h4',
            group_size: gsz,
            inner: { scheme: 'int8', params: base.params },
          },
          parts: base.parts,
        };
      } else encoding = base;
      break;
    }
    default:
      throw unsupported(c, 'format', `"format" ${JSON.stringify(format)} is not a comfy_quant format this reads`);
  }
  return { encoding, consumed: used };
}

/**
 * GPTQ (`qweight`, `qzeros`, `scales`, `g_idx`) with its quantize config (`bits`, `group_size`,
 * `desc_act`, `checkpoint_format`) → `gptq`. A config without `checkpoint_format` is v1 ("gptq"), as
 * AutoGPTQ and transformers read it.
 */
export function importGptq(
  tensors: ProducerTensors,
  layer: string,
  config: Record<string, JsonValue>,
  options: { dtype?: DecodedDtype } = {},
): ImportedEncoding {
  const c = 'gptq';
  const used: string[] = [];
  const bits = config.bits;
  if (bits === undefined) throw malformedImport(c, 'the quantize config has no "bits"', { key: 'bits' });
  if (bits !== 2 && bits !== 3 && bits !== 4 && bits !== 8)
    throw unsupported(c, 'bits', `"bits" ${JSON.stringify(bits)} is not 2, 3, 4 or 8`);
  const gs = config.group_size;
  if (!Number.isSafeInteger(gs)) {
    throw malformedImport(
      c,
      gs === undefined ? 'the quantize config has no "group_size"' : '"group_size" is not an integer',
      { key: 'group_size' },
    );
  }
  const fmt = config.checkpoint_format ?? 'gptq';
  if (fmt !== 'gptq' && fmt !== 'gptq_v2')
    throw unsupported(c, 'checkpoint_format', `"checkpoint_format" ${JSON.stringify(fmt)} is not gptq or gptq_v2`);
  const qw = need(c, tensors, `${layer}.qweight`, used);
  const qz = need(c, tensors, `${layer}.qzeros`, used);
  const sc = need(c, tensors, `${layer}.scales`, used);
  const gidx = maybe(tensors, `${layer}.g_idx`, used);
  if (config.desc_act === true && !gidx)
    throw malformedImport(c, 'desc_act is set but g_idx is missing', { tensor: `${layer}.g_idx` });
  const [rows, n] = qw.shape as [number, number];
  const k = (rows * 32) / bits;
  const parts: Record<string, EncodedPart> = { qweight: qw, qzeros: qz, scales: sc };
  if (gidx) parts.g_idx = gidx;
  return {
    encoding: {
      scheme: 'gptq',
      params: {
        shape: [n, k],
        dtype: options.dtype ?? (sc.dtype === 'BF16' ? 'BF16' : sc.dtype === 'F32' ? 'F32' : 'F16'),
        bits,
        group_size: gs as number,
        zero_format: fmt === 'gptq' ? 'v1_minus_one' : 'v2',
        group_index: gidx ? 'g_idx' : 'sequential',
      },
      parts,
    },
    consumed: used,
  };
}

/** AutoAWQ GEMM (`version: "gemm"`) → `awq_gemm`; GEMV and other versions are refused. */
export function importAwq(
  tensors: ProducerTensors,
  layer: string,
  config: Record<string, JsonValue>,
  options: { dtype?: DecodedDtype } = {},
): ImportedEncoding {
  const c = 'awq';
  const used: string[] = [];
  const version = String(config.version ?? '').toLowerCase();
  if (version !== 'gemm') {
    throw unsupported(
      c,
      'version',
      config.version === undefined
        ? 'the quantize config has no "version" (only gemm is read)'
        : `"version" ${JSON.stringify(config.version)} is not gemm`,
    );
  }
  if (config.bits !== 4 && config.w_bit !== 4) throw unsupported(c, 'bits', 'only 4-bit AWQ is defined');
  const gs = config.group_size ?? config.q_group_size;
  if (!Number.isSafeInteger(gs)) {
    throw malformedImport(
      c,
      gs === undefined
        ? 'the quantize config has no "group_size" (or "q_group_size")'
        : '"group_size" is not an integer',
      { key: 'group_size' },
    );
  }
  const qw = need(c, tensors, `${layer}.qweight`, used);
  const qz = need(c, tensors, `${layer}.qzeros`, used);
  const sc = need(c, tensors, `${layer}.scales`, used);
  const [k, words] = qw.shape as [number, number];
  return {
    encoding: {
      scheme: 'awq_gemm',
      params: { shape: [words * 8, k], dtype: options.dtype ?? 'F16', bits: 4, group_size: gs as number },
      parts: { qweight: qw, qzeros: qz, scales: sc },
    },
    consumed: used,
  };
}

/** Kohya LoRA (`<m>.lora_down.weight`, `<m>.lora_up.weight`, optional `<m>.alpha`) → `lora`. */
export function importKohyaLora(
  tensors: ProducerTensors,
  module: string,
  options: { dtype?: DecodedDtype; alpha?: number } = {},
): ImportedEncoding {
  const c = 'kohya_lora';
  const used: string[] = [];
  const down = need(c, tensors, `${module}.lora_down.weight`, used);
  const up = need(c, tensors, `${module}.lora_up.weight`, used);
  const alphaT = maybe(tensors, `${module}.alpha`, used);
  let alpha: number | null = null;
  if (options.alpha !== undefined) alpha = options.alpha;
  else if (alphaT?.bytes) {
    const b = alphaT.bytes;
    const dv = new DataView(b.buffer, b.byteOffset, b.length);
    if (alphaT.dtype === 'F32' && b.length === 4) alpha = dv.getFloat32(0, true);
    else if (alphaT.dtype === 'F64' && b.length === 8) alpha = dv.getFloat64(0, true);
    else if (alphaT.dtype === 'I64' && b.length === 8) alpha = Number(dv.getBigInt64(0, true));
    else if ((alphaT.dtype === 'F16' || alphaT.dtype === 'BF16') && b.length === 2) {
      const h = dv.getUint16(0, true);
      alpha =
        alphaT.dtype === 'BF16' ? (new Float32Array(new Uint32Array([h << 16]).buffer)[0] ?? null) : halfToNumber(h);
    } else throw unsupported(c, 'alpha', `an alpha tensor of ${alphaT.dtype} ${JSON.stringify(alphaT.shape)}`);
  } else if (alphaT) throw malformedImport(c, 'the alpha tensor has no bytes', { tensor: `${module}.alpha` });
  const out = up.shape[0] ?? 0;
  const shape = [out, ...down.shape.slice(1)];
  const dtype = options.dtype ?? (up.dtype === 'F16' || up.dtype === 'BF16' ? (up.dtype as DecodedDtype) : 'F32');
  return { encoding: { scheme: 'lora', params: { shape, dtype, alpha }, parts: { down, up } }, consumed: used };
}

function halfToNumber(h: number): number {
  const e = (h >> 10) & 31;
  const m = h & 1023;
  const s = h & 0x8000 ? -1 : 1;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? Number.NaN : s * Number.POSITIVE_INFINITY;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/**
 * A GGUF tensor of a GGML block type → `ggml` (its ggml type is its encoding). `dims` are GGUF's
 * `ne` (fastest first); the logical shape is their reverse.
 */
export function importGgufTensor(
  typeId: number,
  dims: readonly number[],
  bytes: Uint8Array | undefined,
  options: { dtype?: DecodedDtype } = {},
): Encoded {
  const info = ggmlType(typeId);
  if (!info || info.removed || info.blockSize <= 1) {
    const name = info?.name ?? String(typeId);
    throw new TensorFSError('unsupported', `gguf: ggml type ${name} is not a block type`, {
      details: { rule: 'encodings.import.gguf', convention: 'gguf', fact: 'type', type: name },
    });
  }
  const shape = [...dims].reverse();
  const rows = shape.slice(0, -1).reduce((a, b) => a * b, 1);
  const cols = shape[shape.length - 1] ?? 1;
  const size = (rows * cols * info.typeSize) / info.blockSize;
  const part: EncodedPart = bytes ? { dtype: 'U8', shape: [size], bytes } : { dtype: 'U8', shape: [size] };
  return { scheme: 'ggml', params: { shape, dtype: options.dtype ?? 'F32', type: info.name }, parts: { blocks: part } };
}
