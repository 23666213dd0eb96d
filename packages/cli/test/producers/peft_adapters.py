"""PEFT adapters for packages/cli/test/convert-peft.test.ts, written by peft itself.

`make OUT`: tiny base models (Llama, GPT-2) saved with transformers, and adapters saved with
`PeftModel.save_pretrained`: `rs` (LoRA, use_rslora, a rank_pattern, an alpha_pattern, an embedding
target), `plain` (LoRA, lora_alpha / r, a rank_pattern), `gpt2` (LoRA on Conv1D, fan_in_fan_out),
`loha` and `ia3` (other PEFT types). For each LoRA adapter OUT/<name>.json holds every layer's r,
alpha, scaling and delta weight (peft's get_delta_weight, float32 hex) and the logits on a fixed
input (float32 hex).
`load SPEC`: for each {base, adapter, logits} of the JSON file SPEC, loads the base with
from_pretrained and the adapter with PeftModel.from_pretrained and prints whether the logits are
torch.equal to the recorded ones.
"""
import json
import sys

import torch
from peft import IA3Config, LoHaConfig, LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

INPUT = torch.tensor([[1, 5, 9, 3, 7, 2]])


def logits(model):
    model.eval()
    with torch.no_grad():
        return model(INPUT).logits


def make(out):
    torch.manual_seed(0)
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32))
    llama.save_pretrained(f'{out}/llama')
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=16, n_layer=2, n_head=2))
    gpt2.save_pretrained(f'{out}/gpt2-base')
    configs = {
        'rs': ('llama', LoraConfig(r=4, lora_alpha=8, target_modules=['q_proj', 'v_proj', 'embed_tokens'],
                                   use_rslora=True, rank_pattern={'layers.1.self_attn.v_proj': 2},
                                   alpha_pattern={'v_proj': 3}, init_lora_weights=False, task_type='CAUSAL_LM')),
        'plain': ('llama', LoraConfig(r=2, lora_alpha=5, target_modules=['q_proj', 'o_proj'],
                                      rank_pattern={'o_proj': 3}, init_lora_weights=False, task_type='CAUSAL_LM')),
        'gpt2': ('gpt2-base', LoraConfig(r=2, lora_alpha=4, target_modules=['c_attn'], fan_in_fan_out=True,
                                         init_lora_weights=False, task_type='CAUSAL_LM')),
        'loha': ('llama', LoHaConfig(r=2, target_modules=['q_proj'], init_weights=False)),
        'ia3': ('llama', IA3Config(target_modules=['q_proj', 'down_proj'], feedforward_modules=['down_proj'],
                                   init_ia3_weights=False)),
    }
    for name, (base_dir, config) in configs.items():
        torch.manual_seed(1)
        base = AutoModelForCausalLM.from_pretrained(f'{out}/{base_dir}')
        model = get_peft_model(base, config)
        model.save_pretrained(f'{out}/{name}')
        if not isinstance(config, LoraConfig):
            continue
        layers = {}
        for module_name, module in model.named_modules():
            if hasattr(module, 'lora_A') and 'default' in getattr(module, 'r', {}):
                key = module_name[len('base_model.model.'):]
                delta = module.get_delta_weight('default').detach().to(torch.float32).contiguous()
                layers[key] = {
                    'r': module.r['default'],
                    'alpha': module.lora_alpha['default'],
                    'scaling': module.scaling['default'],
                    'shape': list(delta.shape),
                    'delta': delta.numpy().tobytes().hex(),
                }
        record = {'base': f'{out}/{base_dir}', 'layers': layers,
                  'logits': logits(model).to(torch.float32).numpy().tobytes().hex()}
        with open(f'{out}/{name}.json', 'w') as f:
            json.dump(record, f)


def load(spec):
    results = []
    for item in json.load(open(spec)):
        base = AutoModelForCausalLM.from_pretrained(item['base'])
        model = PeftModel.from_pretrained(base, item['adapter'])
        got = logits(model).to(torch.float32)
        want = torch.frombuffer(bytearray(bytes.fromhex(item['logits'])), dtype=torch.float32).reshape(got.shape)
        results.append({'adapter': item['adapter'], 'equal': bool(torch.equal(got, want)),
                        'class': type(model).__name__})
    print(json.dumps(results))


if __name__ == '__main__':
    {'make': make, 'load': load}[sys.argv[1]](sys.argv[2])
