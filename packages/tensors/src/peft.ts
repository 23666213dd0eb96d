/**
 * PEFT adapters (`adapter_config.json` + `adapter_model.safetensors`, as `PeftModel.save_pretrained`
 * writes them) at conversion. A LoRA adapter becomes one component whose class is the PEFT model
 * class of its `task_type` and whose config is `adapter_config.json` as written (the base model it
 * names included); each LoRA pair becomes one encoded `lora` tensor that states everything needed
 * to apply it without peft: its rank, its alpha (`alpha_pattern` resolved), its scale rule
 * (`lora_alpha / r`, or `lora_alpha / √r` with `use_rslora`), the base tensor it is added to
 * (`target`) and whether the delta is transposed (embeddings, `fan_in_fan_out`). Other PEFT types
 * (LoHa, LoKr, IA3, AdaLoRA, prompt tuning…) and LoRA variants whose application is not a plain
 * low-rank delta (DoRA, a LoRA bias, aLoRA…) are refused by name. Full tensors an adapter carries
 * (`modules_to_save`, saved embedding layers) stay plain.
 */
import { type JsonValue, TensorFSError } from '@tensorfs/format';
import type { Encoded } from '@tensorfs/format/encodings';
import type { ComponentTensor } from './producers.js';
import { checkDecodable } from './producers.js';
import type { TensorView } from './view.js';

/** The file names of a PEFT adapter folder. */
export const PEFT_CONFIG = 'adapter_config.json';
/** The weights file of a PEFT adapter folder. */
export const PEFT_WEIGHTS = 'adapter_model.safetensors';

/** The prefix `get_peft_model_state_dict` gives every key (the PeftModel's `base_model.model.`). */
const KEY_PREFIX = 'base_model.model.';

/** PEFT's model class per `task_type` (peft `MODEL_TYPE_TO_PEFT_MODEL_MAPPING`). */
const TASK_CLASSES: Readonly<Record<string, string>> = {
  SEQ_CLS: 'PeftModelForSequenceClassification',
  SEQ_2_SEQ_LM: 'PeftModelForSeq2SeqLM',
  CAUSAL_LM: 'PeftModelForCausalLM',
  TOKEN_CLS: 'PeftModelForTokenClassification',
  QUESTION_ANS: 'PeftModelForQuestionAnswering',
  FEATURE_EXTRACTION: 'PeftModelForFeatureExtraction',
};

/**
 * LoRA config keys whose set value makes the adapter something other than `W + scale · B @ A`
 * on the named modules: each is refused by name rather than ignored.
 */
const VARIANTS: readonly string[] = [
  'use_dora',
  'lora_bias',
  'use_qalora',
  'use_bdlora',
  'target_parameters',
  'layer_replication',
  'alora_invocation_tokens',
  'trainable_token_indices',
  'arrow_config',
];

/** What the adapter config says, checked. */
export interface PeftAdapterInfo {
  /** `peft_type` (`LORA`). */
  readonly type: string;
  /** The component class: PEFT's model class for the `task_type` (`PeftModel` without one). */
  readonly cls: string;
  /** `base_model_name_or_path` (null when the adapter does not name its base). */
  readonly baseModel: string | null;
  /** `revision` of the base model (null when unstated). */
  readonly revision: string | null;
}

function peftError(code: 'unsupported' | 'malformed', rule: string, message: string, details = {}): TensorFSError {
  return new TensorFSError(code, message, { details: { rule: `convert.${rule}`, ...details } });
}

function isObject(v: JsonValue | undefined): v is Record<string, JsonValue> {
  return v !== null && v !== undefined && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Checks an `adapter_config.json`: a LoRA adapter this reads, or `unsupported` naming the PEFT type
 * (`convert.peft_type`) or the LoRA variant (`convert.peft_variant`, `details.fact` the key).
 * @throws {TensorFSError} `malformed` (`convert.peft_config`) for a config that is not an object
 *   with a `peft_type`, `r` and `lora_alpha` of the right types.
 */
export function peftAdapterInfo(config: JsonValue): PeftAdapterInfo {
  if (!isObject(config) || typeof config.peft_type !== 'string') {
    throw peftError('malformed', 'peft_config', `${PEFT_CONFIG} is not an object with a "peft_type"`, {
      path: PEFT_CONFIG,
    });
  }
  const type = config.peft_type;
  if (type !== 'LORA') {
    throw peftError('unsupported', 'peft_type', `PEFT ${type} adapters are not supported (only LORA)`, {
      type,
      path: PEFT_CONFIG,
    });
  }
  for (const key of VARIANTS) {
    const v = config[key];
    const set = Array.isArray(v) ? v.length > 0 : isObject(v) ? Object.keys(v).length > 0 : v !== null && v !== false;
    if (v !== undefined && set) {
      throw peftError('unsupported', 'peft_variant', `a LoRA adapter with "${key}" set is not supported`, {
        fact: key,
        path: PEFT_CONFIG,
      });
    }
  }
  if (!Number.isSafeInteger(config.r) || (config.r as number) < 1) {
    throw peftError('malformed', 'peft_config', `${PEFT_CONFIG}: "r" must be a positive integer`, { key: 'r' });
  }
  if (typeof config.lora_alpha !== 'number' || !Number.isFinite(config.lora_alpha)) {
    throw peftError('malformed', 'peft_config', `${PEFT_CONFIG}: "lora_alpha" must be a number`, { key: 'lora_alpha' });
  }
  for (const key of ['rank_pattern', 'alpha_pattern']) {
    if (config[key] !== undefined && config[key] !== null && !isObject(config[key])) {
      throw peftError('malformed', 'peft_config', `${PEFT_CONFIG}: "${key}" must be an object`, { key });
    }
  }
  const task = config.task_type;
  const cls = typeof task === 'string' && TASK_CLASSES[task] !== undefined ? TASK_CLASSES[task] : 'PeftModel';
  return {
    type,
    cls,
    baseModel: typeof config.base_model_name_or_path === 'string' ? config.base_model_name_or_path : null,
    revision: typeof config.revision === 'string' ? config.revision : null,
  };
}

/**
 * The value of `pattern` (a `rank_pattern` / `alpha_pattern` object) for a module, as peft's
 * `get_pattern_key` picks it: the first key (in the file's order) for which `(.*\.)?(key)$`
 * matches the whole module name; `undefined` when none does.
 */
export function patternValue(
  pattern: Readonly<Record<string, JsonValue>> | undefined,
  module: string,
  which: string,
): JsonValue | undefined {
  if (pattern === undefined) return undefined;
  for (const [key, value] of Object.entries(pattern)) {
    let re: RegExp;
    try {
      re = new RegExp(`^(?:.*\\.)?(?:${key})$`, 'u');
    } catch {
      throw peftError(
        'unsupported',
        'peft_pattern',
        `${which} key ${JSON.stringify(key)} is not a pattern this reads`,
        {
          fact: which,
          key,
        },
      );
    }
    if (re.test(module)) return value;
  }
  return undefined;
}

/**
 * The tensors of a PEFT LoRA adapter (file order) with each pair (`lora_A`/`lora_B`, or
 * `lora_embedding_A`/`lora_embedding_B`) replaced by one encoded `lora` tensor `<module>.weight`
 * at the place of its `A`. Returns them and the number of pairs.
 * @throws {TensorFSError} `malformed` (`convert.peft_pair`: half a pair; `convert.peft_rank`: a
 *   rank other than the config's), `unsupported` (`convert.peft_tensor`: an adapter tensor of a
 *   kind this does not read).
 */
export function importPeftTensors(
  views: readonly TensorView[],
  config: Readonly<Record<string, JsonValue>>,
): { tensors: ComponentTensor[]; pairs: number } {
  const byName = new Map(views.map((v) => [v.name, v]));
  const rankPattern = isObject(config.rank_pattern) ? config.rank_pattern : undefined;
  const alphaPattern = isObject(config.alpha_pattern) ? config.alpha_pattern : undefined;
  const rslora = config.use_rslora === true;
  const fanInFanOut = config.fan_in_fan_out === true;
  const consumed = new Set<string>();
  const pairs = new Map<string, ComponentTensor>();
  for (const v of views) {
    let module: string | undefined;
    let partner: string | undefined;
    let embedding = false;
    if (v.name.endsWith('.lora_A.weight')) {
      module = v.name.slice(0, -'.lora_A.weight'.length);
      partner = `${module}.lora_B.weight`;
    } else if (v.name.endsWith('.lora_embedding_A')) {
      module = v.name.slice(0, -'.lora_embedding_A'.length);
      partner = `${module}.lora_embedding_B`;
      embedding = true;
    } else if (v.name.endsWith('.lora_B.weight') || v.name.endsWith('.lora_embedding_B')) {
      const a = v.name.endsWith('.lora_B.weight')
        ? v.name.replace(/\.lora_B\.weight$/, '.lora_A.weight')
        : v.name.replace(/\.lora_embedding_B$/, '.lora_embedding_A');
      if (!byName.has(a))
        throw peftError('malformed', 'peft_pair', `"${v.name}" has no "${a}"`, { tensor: v.name, missing: a });
      continue;
    } else if (/\.(lora_[A-Za-z_]+|token_adapter)(\.|$)/.test(v.name)) {
      throw peftError('unsupported', 'peft_tensor', `"${v.name}" is a PEFT tensor this does not read`, {
        tensor: v.name,
      });
    } else continue;
    const b = byName.get(partner);
    if (b === undefined) {
      throw peftError('malformed', 'peft_pair', `"${v.name}" has no "${partner}"`, {
        tensor: v.name,
        missing: partner,
      });
    }
    const relative = module.startsWith(KEY_PREFIX) ? module.slice(KEY_PREFIX.length) : module;
    const rank = Number(v.shape[0] ?? 0n);
    const statedRank = patternValue(rankPattern, relative, 'rank_pattern') ?? config.r;
    if (statedRank !== rank) {
      throw peftError('malformed', 'peft_rank', `"${v.name}" has rank ${rank}, the config says ${String(statedRank)}`, {
        tensor: v.name,
        rank,
        stated: statedRank ?? null,
      });
    }
    const alpha = patternValue(alphaPattern, relative, 'alpha_pattern') ?? config.lora_alpha;
    if (typeof alpha !== 'number' || !Number.isFinite(alpha)) {
      throw peftError('malformed', 'peft_config', `the alpha of "${relative}" is not a number`, { tensor: v.name });
    }
    const down = v.shape.map(Number);
    const up = b.shape.map(Number);
    const transpose = embedding || (fanInFanOut && down.length === 2);
    const shape = transpose ? [down[1] ?? 0, up[0] ?? 0] : [up[0] ?? 0, ...down.slice(1)];
    const dtype = b.dtype === 'F16' || b.dtype === 'BF16' ? b.dtype : 'F32';
    const name = `${module}.weight`;
    const encoding: Encoded = {
      scheme: 'lora',
      params: {
        shape,
        dtype,
        alpha,
        rank,
        scale_rule: rslora ? 'alpha_over_sqrt_rank' : 'alpha_over_rank',
        target: `${relative}.weight`,
        ...(transpose ? { transpose: true } : {}),
      },
      parts: {
        down: { dtype: v.dtype, shape: down },
        up: { dtype: b.dtype, shape: up },
      },
    };
    checkDecodable(name, 'peft_lora', encoding);
    pairs.set(v.name, { kind: 'encoded', name, convention: 'kohya_lora', encoding, parts: { down: v, up: b } });
    consumed.add(v.name);
    consumed.add(partner);
  }
  const tensors: ComponentTensor[] = [];
  for (const v of views) {
    const pair = pairs.get(v.name);
    if (pair !== undefined) tensors.push(pair);
    else if (!consumed.has(v.name)) tensors.push({ kind: 'plain', view: v });
  }
  return { tensors, pairs: pairs.size };
}
