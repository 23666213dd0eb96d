"""Producers and clients for packages/cli/test/e2e-producers.test.ts.

`make OUT`: a tiny Llama made by transformers and saved sharded (save_pretrained with
max_shard_size) to OUT/llama, its logits on a fixed input to OUT/llama.logits (float32); a tiny
GGUF written by gguf-py (F32, F16 and Q8_0 tensors, metadata) to OUT/gguf/tiny.gguf.
`check LLAMA GGUF_A GGUF_B`: loads LLAMA with from_pretrained and compares its logits with
torch.equal to the recorded ones; reads both GGUF files with GGUFReader and compares every
tensor's name, type, shape and bytes, and every metadata field. Prints one JSON line.
"""
import json
import sys

import numpy as np
import torch

INPUT = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])


def logits(model):
    model.eval()
    with torch.no_grad():
        return model(INPUT).logits.to(torch.float32)


def make(out):
    import gguf
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64))
    model.save_pretrained(f'{out}/llama', max_shard_size='40KB')
    with open(f'{out}/llama.logits', 'wb') as f:
        f.write(logits(model).numpy().tobytes())

    rng = np.random.default_rng(3)
    w = gguf.GGUFWriter(f'{out}/gguf/tiny.gguf', 'llama')
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_embedding_length(32)
    w.add_string('general.name', 'tiny')
    w.add_tensor('token_embd.weight', rng.standard_normal((64, 32)).astype(np.float32))
    w.add_tensor('blk.0.attn_norm.weight', rng.standard_normal(32).astype(np.float16))
    q = gguf.quants.quantize(rng.standard_normal((32, 64)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor('blk.0.ffn_up.weight', q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def fields(reader):
    out = {}
    for name, field in reader.fields.items():
        if name.startswith('GGUF.'):
            continue
        out[name] = [bytes(field.parts[i]).hex() for i in field.data]
    return out


def check(llama, gguf_a, gguf_b):
    from gguf import GGUFReader
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(llama)
    got = logits(model)
    want = torch.frombuffer(bytearray(open(f'{llama}.logits', 'rb').read()), dtype=torch.float32).reshape(got.shape)
    a, b = GGUFReader(gguf_a), GGUFReader(gguf_b)
    ta = [(t.name, int(t.tensor_type), [int(d) for d in t.shape], bytes(t.data.tobytes())) for t in a.tensors]
    tb = [(t.name, int(t.tensor_type), [int(d) for d in t.shape], bytes(t.data.tobytes())) for t in b.tensors]
    print(json.dumps({
        'logits_equal': bool(torch.equal(got, want)),
        'gguf_tensors': len(ta),
        'gguf_equal': ta == tb,
        'gguf_fields_equal': fields(a) == fields(b),
    }))


if __name__ == '__main__':
    if sys.argv[1] == 'make':
        make(sys.argv[2])
    else:
        check(*sys.argv[2:5])
