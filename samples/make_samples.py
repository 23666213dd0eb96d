#!/usr/bin/env python3
"""Generate the committed sample model under samples/tiny-model/ with the reference writers, and
samples/expected/: what `tfs inspect --json` must print for it, computed by the Python readers.

Deterministic: a fixed numpy seed, fixed metadata, no timestamps. Re-running it must leave
`git status` clean. Needs: numpy, safetensors (0.8), gguf  (python3 -m pip install safetensors gguf).
"""
import json
import os
import shutil

import gguf
import numpy as np
from safetensors import TensorSpec, serialize_file

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny-model")
rng = np.random.default_rng(20261130)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def bf16(arr):
    """float32 -> bfloat16 bit patterns (round to nearest even), as uint16."""
    bits = arr.astype(np.float32).view(np.uint32)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    return (rounded >> 16).astype(np.uint16)


def save_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, torch-style dtype, shape, numpy array of the raw storage)."""
    keep = []
    specs = {}
    for name, dtype, shape, arr in tensors:
        arr = np.ascontiguousarray(arr)
        keep.append(arr)
        specs[name] = TensorSpec(dtype=dtype, shape=list(shape), data_ptr=arr.ctypes.data, data_len=arr.nbytes)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    serialize_file(specs, path, metadata=metadata)


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


def main():
    shutil.rmtree(ROOT, ignore_errors=True)
    os.makedirs(ROOT)

    # A small decoder-style checkpoint with several dtypes, a scalar and a zero-size tensor.
    save_safetensors(
        os.path.join(ROOT, "model.safetensors"),
        [
            ("embed.weight", "float32", (16, 8), f32(16, 8)),
            ("layers.0.attn.qkv.weight", "float16", (24, 8), f32(24, 8).astype(np.float16)),
            ("layers.0.mlp.up.weight", "bfloat16", (16, 8), bf16(f32(16, 8))),
            ("layers.0.norm.weight", "float32", (8,), np.ones(8, np.float32)),
            ("position_ids", "int64", (1, 16), np.arange(16, dtype=np.int64).reshape(1, 16)),
            ("attention_mask", "bool", (16,), (np.arange(16) % 3 == 0)),
            ("logit_scale", "float32", (), np.array(2.5, np.float32)),
            ("unused.bias", "float16", (0, 8), np.zeros((0, 8), np.float16)),
        ],
        metadata={"format": "pt"},
    )

    # The same kind of model as GGUF (v3, little-endian), with a Q8_0 tensor.
    w = gguf.GGUFWriter(os.path.join(ROOT, "model.gguf"), arch="llama")
    w.add_name("tiny-model")
    w.add_block_count(1)
    w.add_context_length(16)
    w.add_embedding_length(8)
    w.add_tokenizer_model("llama")
    w.add_token_list([b"<unk>", b"<s>", b"</s>", b"hello", b"world"])
    w.add_token_scores([0.0, 0.0, 0.0, -1.5, -2.25])
    w.add_tensor("token_embd.weight", f32(16, 8))
    w.add_tensor("blk.0.ffn_up.weight", f32(16, 8).astype(np.float16))
    q = f32(4, 32)
    w.add_tensor(
        "blk.0.attn_q.weight",
        gguf.quants.quantize(q, gguf.GGMLQuantizationType.Q8_0),
        raw_dtype=gguf.GGMLQuantizationType.Q8_0,
    )
    w.add_tensor("output_norm.weight", np.ones(8, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    # A tiny Diffusers-style folder: configs, a tokenizer file, one plain and one sharded component.
    d = os.path.join(ROOT, "diffusers")
    write_json(os.path.join(d, "model_index.json"), {
        "_class_name": "TinyPipeline", "_diffusers_version": "0.30.0",
        "scheduler": ["diffusers", "DDIMScheduler"], "text_encoder": ["transformers", "CLIPTextModel"],
        "tokenizer": ["transformers", "CLIPTokenizer"], "unet": ["diffusers", "UNet2DConditionModel"],
    })
    write_json(os.path.join(d, "scheduler", "scheduler_config.json"), {"_class_name": "DDIMScheduler", "num_train_timesteps": 1000})
    write_json(os.path.join(d, "unet", "config.json"), {"_class_name": "UNet2DConditionModel", "in_channels": 4, "out_channels": 4})
    save_safetensors(
        os.path.join(d, "unet", "diffusion_pytorch_model.safetensors"),
        [
            ("conv_in.weight", "float16", (8, 4, 3, 3), f32(8, 4, 3, 3).astype(np.float16)),
            ("conv_in.bias", "float16", (8,), f32(8).astype(np.float16)),
            ("conv_out.weight", "float16", (4, 8, 3, 3), f32(4, 8, 3, 3).astype(np.float16)),
        ],
        metadata={"format": "pt"},
    )
    write_json(os.path.join(d, "text_encoder", "config.json"), {"architectures": ["CLIPTextModel"], "hidden_size": 8})
    te = os.path.join(d, "text_encoder")
    shards = {
        "model-00001-of-00002.safetensors": [("text_model.embeddings.token_embedding.weight", "float32", (5, 8), f32(5, 8))],
        "model-00002-of-00002.safetensors": [
            ("text_model.final_layer_norm.weight", "float32", (8,), np.ones(8, np.float32)),
            ("text_model.final_layer_norm.bias", "float32", (8,), np.zeros(8, np.float32)),
        ],
    }
    weight_map = {}
    total = 0
    for shard, tensors in shards.items():
        save_safetensors(os.path.join(te, shard), tensors, metadata={"format": "pt"})
        for name, _, _, arr in tensors:
            weight_map[name] = shard
            total += arr.nbytes
    write_json(os.path.join(te, "model.safetensors.index.json"), {"metadata": {"total_size": total}, "weight_map": weight_map})
    write_json(os.path.join(d, "tokenizer", "vocab.json"), {"<unk>": 0, "<s>": 1, "</s>": 2, "hello": 3, "world": 4})


def describe_safetensors(path):
    """The `tfs inspect --json` form, computed independently with Python's json module."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    meta = header.pop("__metadata__", None)
    tensors = sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"]))
    return {
        "format": "safetensors", "header_size": n, "metadata": meta,
        "tensors": [{"name": k, "dtype": v["dtype"], "shape": v["shape"], "data_offsets": v["data_offsets"]} for k, v in tensors],
    }


def describe_gguf(path):
    """The `tfs inspect --json` form, computed with the gguf package's reader."""
    r = gguf.GGUFReader(path)
    meta = {}
    for field in r.fields.values():
        if field.name.startswith("GGUF."):
            continue
        meta[field.name] = field.contents()
    return {
        "format": "gguf", "version": int(r.fields["GGUF.version"].contents()), "endianness": "little",
        "alignment": r.alignment, "data_start": r.data_offset, "metadata": meta,
        "tensors": [{
            "name": t.name, "type": t.tensor_type.name, "dims": [int(d) for d in t.shape],
            "shape": [int(d) for d in reversed(t.shape)], "offset": int(t.data_offset - r.data_offset),
            "byte_length": int(t.n_bytes),
        } for t in r.tensors],
    }


def write_expected():
    out = os.path.join(os.path.dirname(ROOT), "expected")
    shutil.rmtree(out, ignore_errors=True)
    write_json(os.path.join(out, "model.safetensors.json"), describe_safetensors(os.path.join(ROOT, "model.safetensors")))
    write_json(os.path.join(out, "model.gguf.json"), describe_gguf(os.path.join(ROOT, "model.gguf")))


if __name__ == "__main__":
    main()
    write_expected()
