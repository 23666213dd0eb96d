/**
 * Producer conventions at conversion: the quantized weights of one component's safetensors
 * tensors are recognised (`detectConventions`), translated once (`import*` of
 * `@tensorfs/format/encodings`) and become encoded checkpoint tensors whose parts are the
 * producer's own tensors (same objects, nothing re-written). The producer's metadata tensors
 * (bitsandbytes `quant_state`, `SCB`'s `weight_format`, `comfy_quant` JSON, LoRA `alpha`) become
 * params, not tensors. Activation scales (`input_scale`, `scale_input`) stay plain tensors: they
 * are facts of the layer, not of the weight's decode.
 */
import { type JsonValue, TensorFSError, isTensorFSError } from '@tensorfs/format';
import {
  checkEncoding,
  type DecodedDtype,
  type DetectedWeight,
  detectConventions,
  type Encoded,
  type ImportedEncoding,
  importAwq,
  importBitsandbytes4bit,
  importBlockFp8,
  importComfyQuant,
  importGptq,
  importKohyaLora,
  importLlmInt8,
  importModelOptNvfp4,
  importScaledFp8,
  type ProducerConvention,
  type ProducerTensor,
} from '@tensorfs/format/encodings';
import { retyped, type TensorView } from './view.js';

/** Tensors whose bytes a translation reads (small JSON or scalars); never a weight. */
const METADATA_SUFFIXES = [
  '.quant_state.bitsandbytes__nf4',
  '.quant_state.bitsandbytes__fp4',
  '.comfy_quant',
  '.weight_format',
  '.alpha',
];
/**
 * Small producer tensors whose values the decoder checks (GPTQ `g_idx` in range, the NVFP4 global
 * scale finite): read so that convert refuses what decode would, not only what the shapes say.
 */
const CHECKED_SUFFIXES = ['.g_idx', '.weight_scale_2'];
/** The most bytes read from one metadata (or checked) tensor. */
const METADATA_LIMIT = 1024 * 1024;
/** Consumed by some translations but kept as plain tensors (activation scales). */
const KEPT_SUFFIXES = ['.input_scale', '.scale_input'];

/** One tensor of a converted component: a snapshot view kept as is, or an imported encoding. */
export type ComponentTensor =
  | { readonly kind: 'plain'; readonly view: TensorView }
  | {
      readonly kind: 'encoded';
      readonly name: string;
      /** The convention it was imported from (`peft_lora` for a PEFT adapter's pair). */
      readonly convention: ProducerConvention | 'peft_lora';
      readonly encoding: Encoded;
      /** The producer view of each part (retyped where the convention reinterprets the bytes). */
      readonly parts: Readonly<Record<string, TensorView>>;
    };

/** What {@link importProducerTensors} needs besides the views. */
export interface ProducerImportInput {
  /** safetensors `__metadata__` of the component's files, merged. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** `quantization_config` of config.json, or quantize_config.json / hf_quant_config.json. */
  readonly quantizationConfig?: Readonly<Record<string, JsonValue>>;
  /** A declared producer (`--converter NAME`). */
  readonly declared?: ProducerConvention;
  /** The logical dtype, declared or from config.json `torch_dtype`. */
  readonly dtype?: DecodedDtype;
  /** Reads a (small) view's bytes. */
  readonly read: (view: TensorView) => Promise<Uint8Array>;
  /**
   * Logical shapes by weight name (`<layer>.weight`), from a reference (`--shapes-from`): what a
   * padded layout (ComfyUI NVFP4 / MXFP8) does not store. Each is checked against the padding.
   */
  readonly logicalShapes?: ReadonlyMap<string, readonly number[]>;
}

const TORCH: Readonly<Record<string, DecodedDtype>> = {
  float32: 'F32',
  float16: 'F16',
  bfloat16: 'BF16',
  'torch.float32': 'F32',
  'torch.float16': 'F16',
  'torch.bfloat16': 'BF16',
};

/** The logical dtype a Transformers config states (`torch_dtype`, or `dtype` in newer configs). */
export function configDtype(config: JsonValue): DecodedDtype | undefined {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) return undefined;
  const v = config.torch_dtype ?? config.dtype;
  return typeof v === 'string' ? TORCH[v] : undefined;
}

/** The quantization config of a component: config.json's `quantization_config`, else a side file. */
export function quantizationConfigOf(
  config: JsonValue,
  sideFiles: readonly JsonValue[],
): Record<string, JsonValue> | undefined {
  const isObject = (v: JsonValue | undefined): v is Record<string, JsonValue> =>
    v !== null && v !== undefined && typeof v === 'object' && !Array.isArray(v);
  if (isObject(config) && isObject(config.quantization_config)) return config.quantization_config;
  for (const f of sideFiles) if (isObject(f)) return f;
  return undefined;
}

function endsWithAny(name: string, suffixes: readonly string[]): boolean {
  return suffixes.some((s) => name.endsWith(s));
}

function numberOption(v: JsonValue | undefined): [number, number] | undefined {
  return Array.isArray(v) && v.length === 2 && v.every((d) => Number.isSafeInteger(d) && (d as number) > 0)
    ? [v[0] as number, v[1] as number]
    : undefined;
}

/**
 * The component's tensors in file order with each producer-quantized weight replaced by one
 * encoded tensor (at the place of its first producer tensor). Nothing quantized: every view plain.
 * @throws {TensorFSError} `unsupported` naming the fact a producer did not state (`details.fact`),
 *   `malformed` (a producer tensor missing or not as its convention says), `conflict` (an imported
 *   tensor's name is already a tensor of the component).
 */
export async function importProducerTensors(
  views: readonly TensorView[],
  input: ProducerImportInput,
): Promise<{ tensors: ComponentTensor[]; conventions: ProducerConvention[] }> {
  const st = views.filter((v) => v.format === 'safetensors');
  const plain = (): { tensors: ComponentTensor[]; conventions: ProducerConvention[] } => ({
    tensors: views.map((view) => ({ kind: 'plain', view })),
    conventions: [],
  });
  if (st.length === 0) return plain();
  const detected: DetectedWeight[] = detectConventions({
    tensors: Object.fromEntries(st.map((v) => [v.name, { dtype: v.dtype }])),
    ...(input.metadata ? { metadata: input.metadata } : {}),
    ...(input.quantizationConfig ? { quantizationConfig: input.quantizationConfig } : {}),
    ...(input.declared ? { declared: input.declared } : {}),
  });
  if (detected.length === 0) return plain();

  const byShape = new WeakMap<readonly number[], TensorView>();
  const producer: Record<string, ProducerTensor | undefined> = Object.create(null);
  for (const v of st) {
    const shape = v.shape.map(Number);
    const t: { dtype: string; shape: number[]; bytes?: Uint8Array } = { dtype: v.dtype, shape };
    if (endsWithAny(v.name, METADATA_SUFFIXES) && v.byteLength <= METADATA_LIMIT) t.bytes = await input.read(v);
    else if (endsWithAny(v.name, CHECKED_SUFFIXES) && v.byteLength <= METADATA_LIMIT) t.bytes = await input.read(v);
    byShape.set(shape, v);
    producer[v.name] = t;
  }
  let comfyLayers: Record<string, JsonValue> = {};
  const qm = input.metadata?._quantization_metadata;
  if (qm !== undefined) {
    const layers = (JSON.parse(qm) as { layers?: unknown } | null)?.layers;
    if (layers && typeof layers === 'object' && !Array.isArray(layers))
      comfyLayers = layers as Record<string, JsonValue>;
  }
  const qc = input.quantizationConfig ?? {};
  const dt = input.dtype !== undefined ? { dtype: input.dtype } : {};

  const firstOf = new Map<string, ComponentTensor>();
  const consumed = new Map<string, ProducerConvention>();
  const conventions = new Set<ProducerConvention>();
  const decodable: [string, ProducerConvention, Encoded][] = [];
  for (const d of detected) {
    let imported: ImportedEncoding;
    try {
      imported = translate(d, producer, qc, dt, comfyLayers, input.logicalShapes);
    } catch (error) {
      if (isTensorFSError(error) && !('layer' in error.details)) {
        throw new TensorFSError(error.code, `${d.name}: ${error.message}`, {
          details: { ...error.details, layer: d.name },
          cause: error,
        });
      }
      throw error;
    }
    const params = imported.encoding.params as { shape?: unknown; dtype?: unknown } | null;
    const shape = params?.shape;
    if (
      !Array.isArray(shape) ||
      !shape.every((n) => Number.isSafeInteger(n) && (n as number) >= 0) ||
      (params?.dtype !== 'F32' && params?.dtype !== 'F16' && params?.dtype !== 'BF16')
    ) {
      // The producer tensors' shapes do not give a logical shape (e.g. a 1-D GPTQ qweight).
      throw new TensorFSError('malformed', `${d.name}: the producer tensors' shapes do not fit ${d.convention}`, {
        details: { rule: 'convert.producer_shape', convention: d.convention, layer: d.name },
      });
    }
    const name = d.convention === 'bitsandbytes_4bit' ? d.name : `${d.name}.weight`;
    decodable.push([name, d.convention, imported.encoding]);
    const parts: Record<string, TensorView> = {};
    for (const [role, p] of Object.entries(imported.encoding.parts)) {
      const view = byShape.get(p.shape);
      if (view === undefined) {
        throw new TensorFSError('internal', 'an imported part is not one of the producer tensors', {
          details: { rule: 'convert.producer_part', layer: d.name, role },
        });
      }
      parts[role] = retyped(view, p.dtype, p.shape);
    }
    const used = imported.consumed.filter((n) => !endsWithAny(n, KEPT_SUFFIXES));
    const first = st.find((v) => used.includes(v.name));
    for (const n of used) {
      // Two conventions reading one tensor (a bitsandbytes weight that also has a block-FP8
      // scale): which producer wrote it is ambiguous, so nothing is guessed.
      const other = consumed.get(n);
      if (other !== undefined) {
        throw new TensorFSError('malformed', `"${n}" belongs to both ${other} and ${d.convention}`, {
          details: { rule: 'convert.producer_overlap', tensor: n, conventions: [other, d.convention] },
        });
      }
      consumed.set(n, d.convention);
    }
    conventions.add(d.convention);
    if (first)
      firstOf.set(first.name, { kind: 'encoded', name, convention: d.convention, encoding: imported.encoding, parts });
  }
  // After the overlap check: a tensor two conventions claim is refused as that, whatever the facts.
  for (const [name, convention, encoding] of decodable) checkDecodable(name, convention, encoding);
  const tensors: ComponentTensor[] = [];
  const names = new Set<string>();
  for (const view of views) {
    const entry = view.format === 'safetensors' ? firstOf.get(view.name) : undefined;
    if (entry === undefined && consumed.has(view.name) && view.format === 'safetensors') continue;
    const item: ComponentTensor = entry ?? { kind: 'plain', view };
    const name = item.kind === 'plain' ? item.view.name : item.name;
    if (names.has(name)) {
      throw new TensorFSError('conflict', `the imported tensor "${name}" is already a tensor of the component`, {
        details: { rule: 'convert.producer_name', tensor: name },
      });
    }
    names.add(name);
    tensors.push(item);
  }
  return { tensors, conventions: [...conventions] };
}

/**
 * Refuses an imported encoding the decoder would refuse: the decoder's own check
 * ({@link checkEncoding}: every param, each part's dtype and shape, and the values of the small
 * parts that were read), so nothing is committed that `cat --decode` then calls malformed. The
 * refusal is `malformed` with rule `convert.<the decoder's rule>` (`convert.group_size`,
 * `convert.part_shape`…), naming the tensor and the fact (`details.fact`: the param or part).
 * `unsupported` (a GGML type with no decoder) is not a refusal: such a tensor is stored as it is.
 */
export function checkDecodable(
  tensor: string,
  convention: ProducerConvention | 'gguf' | 'peft_lora',
  encoding: Encoded,
): void {
  try {
    checkEncoding(encoding);
  } catch (error) {
    if (!isTensorFSError(error) || error.code === 'unsupported') {
      if (isTensorFSError(error)) return;
      throw error;
    }
    const rule = typeof error.details.rule === 'string' ? error.details.rule : 'encodings.invalid';
    const tail = rule.slice(rule.lastIndexOf('.') + 1);
    const fact = error.details.param ?? error.details.part ?? tail;
    throw new TensorFSError('malformed', `${tensor}: ${error.message} (${convention} facts the decoder cannot use)`, {
      details: {
        ...error.details,
        rule: `convert.${tail}`,
        decoderRule: rule,
        tensor,
        convention,
        fact,
      },
      cause: error,
    });
  }
}

function translate(
  d: DetectedWeight,
  tensors: Record<string, ProducerTensor | undefined>,
  qc: Record<string, JsonValue>,
  dt: { dtype?: DecodedDtype },
  comfyLayers: Record<string, JsonValue>,
  shapes: ReadonlyMap<string, readonly number[]> | undefined,
): ImportedEncoding {
  switch (d.convention) {
    case 'bitsandbytes_4bit':
      return importBitsandbytes4bit(tensors, d.name);
    case 'llm_int8':
      return importLlmInt8(tensors, d.name, dt);
    case 'scaled_fp8':
      return importScaledFp8(tensors, d.name, dt);
    case 'block_fp8': {
      const block = numberOption(qc.weight_block_size);
      return importBlockFp8(tensors, d.name, { ...dt, ...(block ? { block } : {}) });
    }
    case 'modelopt_nvfp4':
      return importModelOptNvfp4(tensors, d.name, dt);
    case 'comfy_quant': {
      const conf = comfyLayers[d.name];
      const isConf = conf !== null && typeof conf === 'object' && !Array.isArray(conf);
      const weight = `${d.name}.weight`;
      const shape = shapes?.get(weight);
      let imported: ImportedEncoding;
      try {
        imported = importComfyQuant(tensors, d.name, {
          ...dt,
          ...(isConf ? { conf } : {}),
          ...(shape ? { shape: [...shape] } : {}),
        });
      } catch (error) {
        if (isTensorFSError(error) && error.details.fact === 'logical_shape') {
          if (shapes !== undefined) {
            throw new TensorFSError(
              'invalid_argument',
              `${weight} is stored padded and the reference given with --shapes-from has no tensor of that name`,
              { details: { rule: 'convert.shapes_from', tensor: weight, fact: 'logical_shape' }, cause: error },
            );
          }
          throw new TensorFSError(
            'unsupported',
            `${error.message} with --shapes-from <ref|file|lane> (the unquantized model's header, or a lane topology)`,
            { details: { ...error.details, tensor: weight, flag: '--shapes-from' }, cause: error },
          );
        }
        throw error;
      }
      checkPadding(weight, imported.encoding);
      return imported;
    }
    case 'gptq':
      return importGptq(tensors, d.name, qc, dt);
    case 'awq':
      return importAwq(tensors, d.name, qc, dt);
    case 'kohya_lora':
      return importKohyaLora(tensors, d.name, dt);
  }
}

/** How far each padded layout rounds the logical matrix up (ComfyUI: NVFP4 16, MXFP8 32, both dims). */
const PADDING: Readonly<Record<string, number>> = { nvfp4: 16, mxfp8: 32 };

/**
 * A padded encoding's stored shape must be its logical shape rounded up per the format's rule;
 * anything else means the logical shape given is not this layer's.
 * @throws {TensorFSError} `invalid_argument` (`convert.logical_shape`) naming the tensor and both shapes.
 */
function checkPadding(tensor: string, encoding: Encoded): void {
  const multiple = PADDING[encoding.scheme];
  const params = encoding.params as { shape?: unknown; padded_shape?: unknown } | null;
  if (multiple === undefined || !Array.isArray(params?.padded_shape)) return;
  const logical = params.shape as number[];
  const padded = params.padded_shape as number[];
  const expected = logical.map((d) => Math.ceil(d / multiple) * multiple);
  if (logical.length !== 2 || padded.length !== 2 || expected.some((d, i) => d !== padded[i])) {
    throw new TensorFSError(
      'invalid_argument',
      `${tensor}: the logical shape ${JSON.stringify(logical)} does not pad to the stored ${JSON.stringify(padded)} (${encoding.scheme} rounds each dimension up to a multiple of ${multiple})`,
      { details: { rule: 'convert.logical_shape', tensor, logical, padded, multiple } },
    );
  }
}
