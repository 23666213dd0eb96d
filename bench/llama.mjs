// A Llama-shaped F16 safetensors model for the load and slice benches: embed and lm_head
// [vocab, hidden], per layer q/k/v/o [hidden, hidden], gate/up [inter, hidden], down
// [hidden, inter] and two norms [hidden]; random bytes, every tensor distinct. The defaults
// (hidden 2048, inter 5632, vocab 32000, 8 layers) make 1.01 GiB in 75 tensors. F16, not BF16: numpy (the safetensors baseline's framework) has no bfloat16.
import { randomFillSync } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { writeSafetensorsHeader } from '@tensorfs/format';

/** The tensors of a Llama-shaped model: name, shape, and how tensor parallelism shards it. */
export function llamaTensors({ hidden = 2048, inter = 5632, vocab = 32000, layers = 8 } = {}) {
  const t = [{ name: 'model.embed_tokens.weight', shape: [vocab, hidden], tp: 'column' }];
  for (let i = 0; i < layers; i++) {
    const p = `model.layers.${i}`;
    t.push(
      { name: `${p}.input_layernorm.weight`, shape: [hidden], tp: 'replicated' },
      { name: `${p}.self_attn.q_proj.weight`, shape: [hidden, hidden], tp: 'column' },
      { name: `${p}.self_attn.k_proj.weight`, shape: [hidden, hidden], tp: 'column' },
      { name: `${p}.self_attn.v_proj.weight`, shape: [hidden, hidden], tp: 'column' },
      { name: `${p}.self_attn.o_proj.weight`, shape: [hidden, hidden], tp: 'row' },
      { name: `${p}.post_attention_layernorm.weight`, shape: [hidden], tp: 'replicated' },
      { name: `${p}.mlp.gate_proj.weight`, shape: [inter, hidden], tp: 'column' },
      { name: `${p}.mlp.up_proj.weight`, shape: [inter, hidden], tp: 'column' },
      { name: `${p}.mlp.down_proj.weight`, shape: [hidden, inter], tp: 'row' },
    );
  }
  t.push({ name: 'model.norm.weight', shape: [hidden], tp: 'replicated' });
  t.push({ name: 'lm_head.weight', shape: [vocab, hidden], tp: 'column' });
  return t;
}

/**
 * Writes the model to `file` (F16); returns the header's tensor infos (name, byteOffset,
 * byteLength, shape) with each tensor's `tp` kind.
 */
export async function writeLlama(file, options) {
  const tensors = llamaTensors(options);
  const { bytes: header, tensors: infos } = writeSafetensorsHeader(
    tensors.map((t) => ({ name: t.name, dtype: 'F16', shape: t.shape.map(BigInt) })),
    { metadata: new Map([['format', 'pt']]), order: 'given' },
  );
  const largest = Math.max(...infos.map((i) => i.byteLength));
  const noise = randomFillSync(new Uint8Array(largest));
  const fh = await fsp.open(file, 'w');
  try {
    await fh.write(header);
    for (let i = 0; i < infos.length; i++) {
      new DataView(noise.buffer).setUint32(0, i);
      await fh.write(noise.subarray(0, infos[i].byteLength));
    }
  } finally {
    await fh.close();
  }
  return infos.map((info, i) => ({ ...info, shape: tensors[i].shape, tp: tensors[i].tp }));
}
