/**
 * Which producer convention each quantized weight of a file follows, from tensor names, dtypes and
 * the producer's metadata only (no tensor bytes). Ambiguity is refused, never resolved by guessing:
 * a layer that two conventions claim, or a `qweight` without a quantization config, is `unsupported`
 * naming the fact. The result tells `tfs convert` which `import*` translation to call per weight.
 */
import { TensorFSError } from '../errors.js';
import type { JsonValue } from './types.js';

/** The conventions the `import*` translations implement. */
export type ProducerConvention =
  | 'bitsandbytes_4bit'
  | 'llm_int8'
  | 'scaled_fp8'
  | 'block_fp8'
  | 'modelopt_nvfp4'
  | 'comfy_quant'
  | 'gptq'
  | 'awq'
  | 'kohya_lora';

/** Every {@link ProducerConvention}, for `--converter` choices. */
export const PRODUCER_CONVENTIONS: readonly ProducerConvention[] = Object.freeze([
  'bitsandbytes_4bit',
  'llm_int8',
  'scaled_fp8',
  'block_fp8',
  'modelopt_nvfp4',
  'comfy_quant',
  'gptq',
  'awq',
  'kohya_lora',
]);

/** One detected weight: the convention, the name to pass to its importer, and the tensors it covers. */
export interface DetectedWeight {
  readonly convention: ProducerConvention;
  /** The weight (bitsandbytes) or layer / module prefix the importer takes. */
  readonly name: string;
}

/** What detection reads: tensor dtypes by name, and the producer's metadata. */
export interface DetectionInput {
  readonly tensors: Readonly<Record<string, { readonly dtype: string }>>;
  /** safetensors `__metadata__` (string values). */
  readonly metadata?: Readonly<Record<string, string>>;
  /** `quantization_config` of config.json, or quantize_config.json / hf_quant_config.json. */
  readonly quantizationConfig?: Readonly<Record<string, JsonValue>>;
  /**
   * The producer the caller declares (`tfs convert --converter NAME`): it settles what the file
   * does not state (packed weights with no config, NVFP4 without a ModelOpt config, a layer two
   * conventions claim when the declared one is among them). Never overrides a stated fact.
   */
  readonly declared?: ProducerConvention;
}

function refuse(fact: string, message: string, details: Record<string, unknown> = {}): TensorFSError {
  return new TensorFSError('unsupported', message, { details: { rule: 'encodings.detect', fact, ...details } });
}

function strip(name: string, suffix: string): string | undefined {
  return name.endsWith(suffix) ? name.slice(0, -suffix.length) : undefined;
}

/** The quantized weights of a file and the convention of each, sorted by name. */
export function detectConventions(input: DetectionInput): DetectedWeight[] {
  const names = Object.keys(input.tensors);
  const has = (n: string) => Object.hasOwn(input.tensors, n);
  const declared = input.declared;
  const found = new Map<string, ProducerConvention>();
  const claim = (layer: string, convention: ProducerConvention) => {
    const prior = found.get(layer);
    if (prior !== undefined && prior !== convention && declared !== undefined) {
      if (prior === declared) return;
      if (convention === declared) {
        found.set(layer, convention);
        return;
      }
    }
    if (prior !== undefined && prior !== convention) {
      throw refuse('convention', `"${layer}" follows both ${prior} and ${convention}`, {
        tensor: layer,
        conventions: [prior, convention],
      });
    }
    found.set(layer, convention);
  };

  let comfyLayers = new Set<string>();
  const qm = input.metadata?._quantization_metadata;
  if (qm !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(qm);
    } catch {
      throw new TensorFSError('malformed', '_quantization_metadata is not JSON', {
        details: { rule: 'encodings.detect' },
      });
    }
    const layers = (parsed as { layers?: unknown })?.layers;
    if (layers && typeof layers === 'object') comfyLayers = new Set(Object.keys(layers));
  }
  const method = input.quantizationConfig?.quant_method ?? input.quantizationConfig?.quant_algo;

  for (const n of names) {
    let p: string | undefined;
    if ((p = strip(n, '.quant_state.bitsandbytes__nf4') ?? strip(n, '.quant_state.bitsandbytes__fp4')) !== undefined) {
      claim(p, 'bitsandbytes_4bit');
    } else if ((p = strip(n, '.SCB')) !== undefined) claim(p, 'llm_int8');
    else if ((p = strip(n, '.comfy_quant')) !== undefined) claim(p, 'comfy_quant');
    else if ((p = strip(n, '.scale_weight')) !== undefined) claim(p, 'scaled_fp8');
    else if ((p = strip(n, '.weight_scale_inv')) !== undefined) claim(p, 'block_fp8');
    else if ((p = strip(n, '.lora_down.weight')) !== undefined) claim(p, 'kohya_lora');
    else if ((p = strip(n, '.qweight')) !== undefined) {
      const m = String(method ?? '').toLowerCase();
      if (m === 'gptq') claim(p, 'gptq');
      else if (m === 'awq') claim(p, 'awq');
      else if (m === '' && (declared === 'gptq' || declared === 'awq')) claim(p, declared);
      else throw refuse('quant_method', `"${n}" is packed, but no quantization config says gptq or awq`, { tensor: n });
    }
  }
  // weight_scale: comfy_quant (declared), ModelOpt NVFP4 (weight_scale_2, U8 weight) or scaled FP8
  for (const n of names) {
    const p = strip(n, '.weight_scale');
    if (p === undefined || found.has(p)) continue;
    if (comfyLayers.has(p)) {
      claim(p, 'comfy_quant');
      continue;
    }
    const w = input.tensors[`${p}.weight`];
    if (has(`${p}.weight_scale_2`) && w?.dtype === 'U8') {
      const qc = input.quantizationConfig;
      const nested = qc?.quantization as Record<string, JsonValue> | undefined;
      const algo = [qc?.quant_algo, qc?.quant_method, nested?.quant_algo].map((v) => String(v ?? '')).join(' ');
      if (!/nvfp4|modelopt/i.test(algo) && declared !== 'modelopt_nvfp4') {
        throw refuse(
          'producer',
          `"${p}" looks like NVFP4 but no ModelOpt config or comfy_quant declares who wrote it (the nibble order depends on it)`,
          {
            tensor: p,
          },
        );
      }
      claim(p, 'modelopt_nvfp4');
    } else if (w && (w.dtype === 'F8_E4M3' || w.dtype === 'F8_E5M2')) claim(p, 'scaled_fp8');
    else throw refuse('convention', `"${n}" belongs to no known convention`, { tensor: n });
  }
  for (const layer of comfyLayers) if (!found.has(layer)) claim(layer, 'comfy_quant');
  return [...found]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, convention]) => ({ convention, name }));
}
