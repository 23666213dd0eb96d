#!/usr/bin/env python3
"""Bank reference headers for spec/v2/headers/: names, dtypes and shapes only, no weight byte.

Each model class is instantiated on PyTorch's meta device from the model's published config
(the values below are copied from each model's config.json on the Hugging Face hub; nothing is
fetched at run time), then its state_dict goes through the same two functions
`PreTrainedModel.save_pretrained` applies before writing safetensors:
`remove_tied_weights_from_state_dict` (tied weights such as gpt2's lm_head are not written) and
`revert_weight_conversion` (names as they are on disk). The result is what `save_pretrained`
would write, shard-flattened: one JSON file per model, `{"__source__": {...}, "tensors":
[{"name", "dtype", "shape"}]}` sorted by name, dtypes in safetensors spelling.

Usage: python3 scripts/lanes/bank-headers.py [outdir]   (needs torch (CPU) and transformers)
"""
import json
import os
import re
import sys

import torch
import transformers
from transformers import (
    CLIPTextConfig,
    CLIPTextModel,
    Gemma2Config,
    Gemma2ForCausalLM,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Phi3Config,
    Phi3ForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    T5Config,
    T5EncoderModel,
)
from transformers.modeling_utils import remove_tied_weights_from_state_dict

try:
    from transformers.core_model_loading import revert_weight_conversion
except ImportError:  # older transformers: no conversion layer, names are already on-disk names
    revert_weight_conversion = None

# Published config values (config.json of each hub repo named in "repo").
MODELS = {
    "llama-3-8b": dict(
        repo="meta-llama/Meta-Llama-3-8B",
        cls=LlamaForCausalLM,
        cfg=LlamaConfig,
        dtype=torch.bfloat16,
        config=dict(
            vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
            num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
            rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=False,
            bos_token_id=128000, eos_token_id=128001, hidden_act="silu",
        ),
    ),
    "mistral-7b": dict(
        repo="mistralai/Mistral-7B-v0.1",
        cls=MistralForCausalLM,
        cfg=MistralConfig,
        dtype=torch.bfloat16,
        config=dict(
            vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
            num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=32768,
            rms_norm_eps=1e-5, rope_theta=10000.0, sliding_window=4096, tie_word_embeddings=False,
            hidden_act="silu",
        ),
    ),
    "qwen2-7b": dict(
        repo="Qwen/Qwen2-7B",
        cls=Qwen2ForCausalLM,
        cfg=Qwen2Config,
        dtype=torch.bfloat16,
        config=dict(
            vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
            num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=131072,
            rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=False, hidden_act="silu",
        ),
    ),
    "gemma-2-9b": dict(
        repo="google/gemma-2-9b",
        cls=Gemma2ForCausalLM,
        cfg=Gemma2Config,
        dtype=torch.float32,
        config=dict(
            vocab_size=256000, hidden_size=3584, intermediate_size=14336, num_hidden_layers=42,
            num_attention_heads=16, num_key_value_heads=8, head_dim=256,
            max_position_embeddings=8192, rms_norm_eps=1e-6, rope_theta=10000.0,
            query_pre_attn_scalar=256, sliding_window=4096, final_logit_softcapping=30.0,
            attn_logit_softcapping=50.0, hidden_activation="gelu_pytorch_tanh",
            tie_word_embeddings=True,
        ),
    ),
    "phi-3-mini": dict(
        repo="microsoft/Phi-3-mini-4k-instruct",
        cls=Phi3ForCausalLM,
        cfg=Phi3Config,
        dtype=torch.bfloat16,
        config=dict(
            vocab_size=32064, hidden_size=3072, intermediate_size=8192, num_hidden_layers=32,
            num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096,
            original_max_position_embeddings=4096, rms_norm_eps=1e-5, rope_theta=10000.0,
            tie_word_embeddings=False, hidden_act="silu", pad_token_id=32000,
        ),
    ),
    # Phi-3-mini's dimensions in Llama's class: what a split ("llamafied") Phi-3 checkpoint holds.
    "phi-3-mini-split": dict(
        repo="microsoft/Phi-3-mini-4k-instruct (dimensions) in LlamaForCausalLM",
        cls=LlamaForCausalLM,
        cfg=LlamaConfig,
        dtype=torch.bfloat16,
        config=dict(
            vocab_size=32064, hidden_size=3072, intermediate_size=8192, num_hidden_layers=32,
            num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096,
            rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False, hidden_act="silu",
        ),
    ),
    "gpt2": dict(
        repo="openai-community/gpt2",
        cls=GPT2LMHeadModel,
        cfg=GPT2Config,
        dtype=torch.float32,
        config=dict(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12),
    ),
    "t5-base-encoder": dict(
        repo="google-t5/t5-base",
        cls=T5EncoderModel,
        cfg=T5Config,
        dtype=torch.float32,
        config=dict(
            vocab_size=32128, d_model=768, d_kv=64, d_ff=3072, num_layers=12, num_decoder_layers=12,
            num_heads=12, relative_attention_num_buckets=32, feed_forward_proj="relu",
        ),
    ),
    "clip-vit-large-patch14-text": dict(
        repo="openai/clip-vit-large-patch14",
        cls=CLIPTextModel,
        cfg=CLIPTextConfig,
        dtype=torch.float32,
        config=dict(
            vocab_size=49408, hidden_size=768, intermediate_size=3072, projection_dim=768,
            num_hidden_layers=12, num_attention_heads=12, max_position_embeddings=77,
            hidden_act="quick_gelu",
        ),
    ),
}

ST_DTYPE = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.uint8: "U8",
    torch.int8: "I8",
    torch.bool: "BOOL",
}


def bank(name, spec):
    config = spec["cfg"](**spec["config"])
    torch.set_default_dtype(spec["dtype"])
    try:
        with torch.device("meta"):
            model = spec["cls"](config)
    finally:
        torch.set_default_dtype(torch.float32)
    state = model.state_dict()
    state = remove_tied_weights_from_state_dict(state, model)
    if revert_weight_conversion is not None:
        state = revert_weight_conversion(model, state)
    tensors = [
        {"name": k, "dtype": ST_DTYPE[v.dtype], "shape": list(v.shape)} for k, v in sorted(state.items())
    ]
    return {
        "__source__": {
            "repo": spec["repo"],
            "class": spec["cls"].__name__,
            "transformers": transformers.__version__,
            "torch": torch.__version__.split("+")[0],
            "how": "meta-device instantiation from the published config; state_dict after "
            "remove_tied_weights_from_state_dict and revert_weight_conversion, as save_pretrained writes",
        },
        "tensors": tensors,
    }


# GGUF headers: the Hugging Face header renamed by gguf-py's TensorNameMap (the table
# convert_hf_to_gguf.py uses), shapes unchanged (GGUF stores ne reversed; our headers are
# row-major like safetensors), dtypes as convert_hf_to_gguf writes with --outtype bf16:
# 1-D tensors F32, the rest BF16.
GGUF_FROM = {"llama-3-8b-gguf": "llama-3-8b", "mistral-7b-gguf": "mistral-7b"}


def bank_gguf(name, hf_doc):
    import gguf

    n_blocks = max(int(m.group(1)) for t in hf_doc["tensors"] if (m := re.match(r"model\.layers\.(\d+)\.", t["name"]))) + 1
    tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, n_blocks)
    tensors = []
    for t in hf_doc["tensors"]:
        new = tmap.get_name(t["name"], try_suffixes=(".weight", ".bias"))
        if new is None:
            raise SystemExit(f"{name}: gguf-py has no name for {t['name']}")
        tensors.append({"name": new, "dtype": "F32" if len(t["shape"]) == 1 else "BF16", "shape": t["shape"]})
    tensors.sort(key=lambda t: t["name"])
    return {
        "__source__": {
            "repo": hf_doc["__source__"]["repo"],
            "class": "gguf-py TensorNameMap(MODEL_ARCH.LLAMA)",
            "gguf": gguf.__version__ if hasattr(gguf, "__version__") else "0.19.0",
            "how": "names from gguf-py's tensor name map over the banked Hugging Face header; shapes row-major; "
            "dtypes as convert_hf_to_gguf --outtype bf16 writes (1-D F32)",
        },
        "tensors": tensors,
    }


def write(out, name, doc):
    """One tensor per line: small diffs when a reference implementation changes."""
    lines = ",\n  ".join(json.dumps(t, separators=(", ", ": ")) for t in doc["tensors"])
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        f.write('{"__source__": ' + json.dumps(doc["__source__"]) + ',\n "tensors": [\n  ' + lines + "\n ]\n}\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../spec/v2/headers")
    os.makedirs(out, exist_ok=True)
    docs = {}
    for name, spec in MODELS.items():
        doc = bank(name, spec)
        write(out, name, doc)
        print(name, len(doc["tensors"]))
        docs[name] = doc
    for name, src in GGUF_FROM.items():
        doc = bank_gguf(name, docs[src])
        write(out, name, doc)
        print(name, len(doc["tensors"]))


if __name__ == "__main__":
    main()
