"""Producer-format fixtures for `tfs convert` (issue 13): one small folder or file per producer
convention, written byte by byte with numpy from the documented conventions in
shared/reference/quantization.md (the producer libraries -- bitsandbytes, ModelOpt, AutoGPTQ,
AutoAWQ, ComfyUI, sd-scripts -- need torch and CUDA and are not installable offline), and each
quantized weight's reference decode computed here, independently of the TypeScript decoders,
from the producer's decode equation.

Run from the repository root: python3 vectors/v1/producers/generate.py (needs numpy only).
Writes vectors/v1/producers/<case>/... and vectors/v1/producers/expected.json.
"""
import json
import os
import shutil
import struct

import numpy as np

ROOT = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261201)
f32 = np.float32


def hx(a):
    return np.ascontiguousarray(a).tobytes().hex()


def bf16_rne(x):
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF
    r = np.where(nan, ((b >> 16) & 0x8000) | 0x7FC0, r)
    return r.astype(np.uint16)


def as_dtype(values, dtype):
    v = np.asarray(values, f32).reshape(-1)
    if dtype == "F32":
        return hx(v)
    if dtype == "F16":
        return hx(v.astype(np.float16))
    return hx(bf16_rne(v))


def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> (dtype, shape, raw bytes). Sorted by name, packed, header space-padded to 8."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    offset = 0
    blobs = []
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=2)
        f.write("\n")


def bf16_bytes(a):
    return bf16_rne(a).tobytes()


# ---- float tables from the bit layouts ---------------------------------------------------------
def e4m3(c):
    s = -1.0 if c & 0x80 else 1.0
    e = (c >> 3) & 15
    m = c & 7
    if e == 15 and m == 7:
        return float("nan")
    return s * (m * 2.0**-9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))


E4M3 = np.array([e4m3(c) for c in range(256)], f32)
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], f32)
FINITE_E4M3 = np.array([c for c in range(256) if np.isfinite(E4M3[c])], np.uint8)


def nearest_e4m3(x):
    """The E4M3FN code nearest to each value (a quantizer; ties by table order)."""
    vals = E4M3[FINITE_E4M3]
    return FINITE_E4M3[np.abs(np.asarray(x, f32)[..., None] - vals).argmin(-1)]


NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
                -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
                0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                0.7229568362236023, 1.0], f32)
FP4 = (np.array([0, 0.0625, 8, 12, 4, 6, 2, 3, -0.0, -0.0625, -8, -12, -4, -6, -2, -3], f32) / f32(12)).astype(f32)


def dynamic_map():
    """bitsandbytes create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8) (reference §1.3)."""
    data = []
    for i in range(7):
        b = np.linspace(0.1, 1, 2**i + 1, dtype=f32)
        means = (b[:-1] + b[1:]) / 2.0
        data += (10 ** (-6 + i) * means).tolist()
        data += (-(10 ** (-6 + i)) * means).tolist()
    data += [0.0, 1.0]
    return np.sort(np.array(data, f32))


cases = []
shutil.rmtree(os.path.join(ROOT, "cases"), ignore_errors=True)


def case_dir(name):
    d = os.path.join(ROOT, "cases", name)
    os.makedirs(d, exist_ok=True)
    return d


def weight(name, scheme, dtype, shape, values, consumed, tol=1e-6):
    """An expected encoded tensor: its reference decode as F32 and as its logical dtype."""
    v = np.asarray(values, f32).reshape(-1)
    return {"name": name, "scheme": scheme, "dtype": dtype, "shape": list(shape), "consumed": consumed,
            "f32": hx(v), "logical": as_dtype(v, dtype), "rel_tol": tol}


# ---- 1. bitsandbytes NF4, double-quantized (Transformers folder) ------------------------------
def bnb4(W, table, blocksize, nested):
    flat = W.reshape(-1).astype(f32)
    n = flat.size
    nb = -(-n // blocksize)
    pad = np.zeros(nb * blocksize, f32)
    pad[:n] = flat
    absmax = np.abs(pad.reshape(nb, blocksize)).max(1).astype(f32)
    absmax[absmax == 0] = 1
    codes = np.abs((pad.reshape(nb, blocksize) / absmax[:, None])[..., None] - table).argmin(-1).reshape(-1)[:n]
    c = codes.astype(np.uint8)
    if n % 2:
        c = np.concatenate([c, np.zeros(1, np.uint8)])
    packed = ((c[0::2] << 4) | c[1::2]).astype(np.uint8)  # hi-first: (q[::2] << 4) | q[1::2]
    out = {"codes": codes, "packed": packed, "absmax": absmax}
    if nested:
        offset = float(absmax.mean())
        dyn = dynamic_map()
        a = absmax - f32(offset)
        nnb = -(-nb // 256)
        nabs = np.array([np.abs(a[i * 256:(i + 1) * 256]).max() for i in range(nnb)], f32)
        a8 = np.abs((a / nabs[np.arange(nb) // 256])[:, None] - dyn).argmin(-1).astype(np.uint8)
        out.update(offset=offset, dyn=dyn, nabs=nabs, a8=a8)
        # reference decode of the statistics (§1.2): nested_quant_map[a8] * nested_absmax + offset
        out["absmax_dec"] = (dyn[a8] * nabs[np.arange(nb) // 256]).astype(f32) + f32(offset)
    else:
        out["absmax_dec"] = absmax
    out["decoded"] = (table[codes] * out["absmax_dec"][np.arange(n) // blocksize]).astype(f32)
    return out


d = case_dir("bnb_nf4")
N, K, bs = 8, 96, 64
P = "model.layers.0.mlp.down_proj.weight"
q = bnb4(rng.normal(0, 0.05, (N, K)).astype(f32), NF4, bs, True)
state = {"quant_type": "nf4", "blocksize": bs, "dtype": "bfloat16", "shape": [N, K],
         "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": q["offset"]}
sj = json.dumps(state).encode()
norm = rng.normal(1, 0.1, K).astype(f32)
write_safetensors(os.path.join(d, "model.safetensors"), {
    P: ("U8", [len(q["packed"]), 1], q["packed"].tobytes()),
    f"{P}.absmax": ("U8", [len(q["a8"])], q["a8"].tobytes()),
    f"{P}.quant_map": ("F32", [16], NF4.tobytes()),
    f"{P}.nested_absmax": ("F32", [len(q["nabs"])], q["nabs"].tobytes()),
    f"{P}.nested_quant_map": ("F32", [256], q["dyn"].tobytes()),
    f"{P}.quant_state.bitsandbytes__nf4": ("U8", [len(sj)], sj),
    "model.norm.weight": ("BF16", [K], bf16_bytes(norm)),
}, {"format": "pt"})
write_json(os.path.join(d, "config.json"), {
    "architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                            "bnb_4bit_use_double_quant": True, "bnb_4bit_compute_dtype": "bfloat16"}})
cases.append({"name": "bitsandbytes NF4, double-quantized", "source": "cases/bnb_nf4", "conventions": ["bitsandbytes_4bit"],
              "weights": [weight(P, "bnb_nf4", "BF16", [N, K], q["decoded"],
                                 [P, f"{P}.absmax", f"{P}.quant_map", f"{P}.nested_absmax", f"{P}.nested_quant_map",
                                  f"{P}.quant_state.bitsandbytes__nf4"])],
              "plain": ["model.norm.weight"]})

# ---- 2. bitsandbytes FP4, odd element count (single file) -------------------------------------
d = case_dir("bnb_fp4")
N, K, bs = 5, 7, 64
P = "h.0.attn.c_attn.weight"
q = bnb4(rng.normal(0, 1, (N, K)).astype(f32), FP4, bs, False)
state = {"quant_type": "fp4", "blocksize": bs, "dtype": "float16", "shape": [N, K]}
sj = json.dumps(state).encode()
write_safetensors(os.path.join(d, "model.safetensors"), {
    P: ("U8", [len(q["packed"]), 1], q["packed"].tobytes()),
    f"{P}.absmax": ("F32", [len(q["absmax"])], q["absmax"].tobytes()),
    f"{P}.quant_map": ("F32", [16], FP4.tobytes()),
    f"{P}.quant_state.bitsandbytes__fp4": ("U8", [len(sj)], sj),
}, {"format": "pt"})
cases.append({"name": "bitsandbytes FP4, 35 elements", "source": "cases/bnb_fp4/model.safetensors",
              "conventions": ["bitsandbytes_4bit"],
              "weights": [weight(P, "bnb_fp4", "F16", [N, K], q["decoded"],
                                 [P, f"{P}.absmax", f"{P}.quant_map", f"{P}.quant_state.bitsandbytes__fp4"])],
              "plain": []})

# ---- 3. LLM.int8 (Transformers folder; dtype from torch_dtype) ---------------------------------
d = case_dir("llm_int8")
N, K = 8, 16
L = "model.layers.0.self_attn.q_proj"
W = rng.normal(0, 0.1, (N, K)).astype(f32)
scb = np.abs(W).max(1).astype(f32)
cb = np.round(W * 127 / scb[:, None]).astype(np.int8)
bias = rng.normal(0, 0.1, N).astype(np.float16)
write_safetensors(os.path.join(d, "model.safetensors"), {
    f"{L}.weight": ("I8", [N, K], cb.tobytes()),
    f"{L}.SCB": ("F32", [N], scb.tobytes()),
    f"{L}.weight_format": ("U8", [], bytes([0])),
    f"{L}.bias": ("F16", [N], bias.tobytes()),
}, {"format": "pt"})
write_json(os.path.join(d, "config.json"), {
    "architectures": ["OPTForCausalLM"], "torch_dtype": "float16",
    "quantization_config": {"quant_method": "bitsandbytes", "load_in_8bit": True, "llm_int8_threshold": 6.0}})
dec = (cb.astype(f32) * scb[:, None] * f32(7.874015718698502e-3)).astype(f32)  # _ops.py int8_vectorwise_dequant
cases.append({"name": "LLM.int8 SCB", "source": "cases/llm_int8", "conventions": ["llm_int8"],
              "weights": [weight(f"{L}.weight", "int8", "F16", [N, K], dec,
                                 [f"{L}.weight", f"{L}.SCB", f"{L}.weight_format"])],
              "plain": [f"{L}.bias"]})

# ---- 4. ComfyUI legacy scaled_fp8 (single file; the logical dtype must be declared) -----------
d = case_dir("comfy_scaled_fp8")
N, K = 8, 32
L = "model.diffusion_model.blocks.0.attn.qkv"
W = rng.normal(0, 0.2, (N, K)).astype(f32)
sw = np.array(np.abs(W).max() / 448, f32)
qc = nearest_e4m3(W / sw)
si = np.array(0.02, f32)
bias = rng.normal(0, 0.1, N).astype(f32)
write_safetensors(os.path.join(d, "flux_fp8_scaled.safetensors"), {
    "model.diffusion_model.scaled_fp8": ("F8_E4M3", [0], b""),
    f"{L}.weight": ("F8_E4M3", [N, K], qc.tobytes()),
    f"{L}.scale_weight": ("F32", [], sw.tobytes()),
    f"{L}.scale_input": ("F32", [], si.tobytes()),
    f"{L}.bias": ("BF16", [N], bf16_bytes(bias)),
})
cases.append({"name": "ComfyUI scaled_fp8", "source": "cases/comfy_scaled_fp8/flux_fp8_scaled.safetensors",
              "dtype": "BF16", "refused": {"code": "unsupported", "fact": "dtype"}, "conventions": ["scaled_fp8"],
              "weights": [weight(f"{L}.weight", "fp8_e4m3fn", "BF16", [N, K], E4M3[qc] * sw,
                                 [f"{L}.weight", f"{L}.scale_weight"])],
              "plain": ["model.diffusion_model.scaled_fp8", f"{L}.scale_input", f"{L}.bias"]})

# ---- 5. ComfyUI comfy_quant: float8 and int8_tensorwise layers ----------------------------------
d = case_dir("comfy_quant")
N, K = 4, 16
A = "diffusion_model.double_blocks.0.img_mlp.0"
B = "diffusion_model.double_blocks.0.img_mlp.2"
W = rng.normal(0, 0.3, (N, K)).astype(f32)
ws = np.array(np.abs(W).max() / 448, f32)
qa = nearest_e4m3(W / ws)
W2 = rng.normal(0, 0.3, (N, K)).astype(f32)
s2 = (np.abs(W2).max(1) / 127).astype(f32).reshape(N, 1)
qb = np.clip(np.round(W2 / s2), -127, 127).astype(np.int8)
ca = json.dumps({"format": "float8_e4m3fn"}).encode()
cbj = json.dumps({"format": "int8_tensorwise"}).encode()
write_safetensors(os.path.join(d, "model.safetensors"), {
    f"{A}.weight": ("F8_E4M3", [N, K], qa.tobytes()),
    f"{A}.weight_scale": ("F32", [], ws.tobytes()),
    f"{A}.comfy_quant": ("U8", [len(ca)], ca),
    f"{B}.weight": ("I8", [N, K], qb.tobytes()),
    f"{B}.weight_scale": ("F32", [N, 1], s2.tobytes()),
    f"{B}.comfy_quant": ("U8", [len(cbj)], cbj),
})
cases.append({"name": "ComfyUI comfy_quant float8 + int8_tensorwise", "source": "cases/comfy_quant/model.safetensors",
              "dtype": "BF16", "refused": {"code": "unsupported", "fact": "dtype"}, "conventions": ["comfy_quant"],
              "weights": [weight(f"{A}.weight", "fp8_e4m3fn", "BF16", [N, K], E4M3[qa] * ws,
                                 [f"{A}.weight", f"{A}.weight_scale", f"{A}.comfy_quant"]),
                          weight(f"{B}.weight", "int8", "BF16", [N, K], qb.astype(f32) * s2,
                                 [f"{B}.weight", f"{B}.weight_scale", f"{B}.comfy_quant"])],
              "plain": []})

# ---- 6. DeepSeek block FP8 (weight_scale_inv, block from quantization_config) -----------------
d = case_dir("block_fp8")
N, K, bn, bk = 40, 48, 16, 16
L = "model.layers.0.mlp.gate_proj"
W = rng.normal(0, 0.2, (N, K)).astype(f32)
gn, gk = -(-N // bn), -(-K // bk)
sinv = np.array([[np.abs(W[i * bn:(i + 1) * bn, j * bk:(j + 1) * bk]).max() / 448 for j in range(gk)]
                 for i in range(gn)], f32)
full_s = sinv[np.arange(N)[:, None] // bn, np.arange(K)[None, :] // bk]
qf = nearest_e4m3(W / full_s)
write_safetensors(os.path.join(d, "model.safetensors"), {
    f"{L}.weight": ("F8_E4M3", [N, K], qf.tobytes()),
    f"{L}.weight_scale_inv": ("F32", [gn, gk], sinv.tobytes()),
}, {"format": "pt"})
write_json(os.path.join(d, "config.json"), {
    "architectures": ["DeepseekV3ForCausalLM"], "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                            "weight_block_size": [bn, bk]}})
cases.append({"name": "DeepSeek block FP8 [16,16]", "source": "cases/block_fp8", "conventions": ["block_fp8"],
              "weights": [weight(f"{L}.weight", "fp8_e4m3fn", "BF16", [N, K], E4M3[qf] * full_s,
                                 [f"{L}.weight", f"{L}.weight_scale_inv"])],
              "plain": []})

# ---- 7. ModelOpt NVFP4 (Transformers folder + hf_quant_config.json) ----------------------------
d = case_dir("modelopt_nvfp4")
N, K = 8, 64
L = "model.layers.0.mlp.up_proj"
W = rng.normal(0, 0.2, (N, K)).astype(f32)
g2 = np.array(np.abs(W).max() / (6 * 448), f32)
blk = np.abs(W.reshape(N, K // 16, 16)).max(-1) / (6 * g2)
bsc = nearest_e4m3(np.clip(blk, 2.0**-9, 448))
scale = E4M3[bsc] * g2
codes = np.abs((W.reshape(N, K // 16, 16) / scale[..., None])[..., None] - E2M1).argmin(-1).reshape(N, K).astype(np.uint8)
packed = ((codes[:, 1::2] << 4) | codes[:, 0::2]).astype(np.uint8)  # lo-first
ins = np.array(0.01, f32)
write_safetensors(os.path.join(d, "model.safetensors"), {
    f"{L}.weight": ("U8", [N, K // 2], packed.tobytes()),
    f"{L}.weight_scale": ("F8_E4M3", [N, K // 16], bsc.tobytes()),
    f"{L}.weight_scale_2": ("F32", [], g2.tobytes()),
    f"{L}.input_scale": ("F32", [], ins.tobytes()),
}, {"format": "pt"})
write_json(os.path.join(d, "config.json"), {"architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16"})
write_json(os.path.join(d, "hf_quant_config.json"), {
    "producer": {"name": "modelopt", "version": "0.29.0"},
    "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": 16, "exclude_modules": ["lm_head"]}})
dec = E2M1[codes] * E4M3[bsc][:, np.arange(K) // 16] * g2
cases.append({"name": "ModelOpt NVFP4", "source": "cases/modelopt_nvfp4", "conventions": ["modelopt_nvfp4"],
              "weights": [weight(f"{L}.weight", "nvfp4", "BF16", [N, K], dec,
                                 [f"{L}.weight", f"{L}.weight_scale", f"{L}.weight_scale_2"])],
              "plain": [f"{L}.input_scale"]})


# ---- 8. GPTQ 4-bit act-order, v1 zeros, quantize_config.json without quant_method ---------------
def pack_stream(vals, b):
    acc = 0
    for i, v in enumerate(vals):
        acc |= int(v) << (b * i)
    nw = -(-len(vals) * b // 32)
    return [(acc >> (32 * w)) & 0xFFFFFFFF for w in range(nw)]


d = case_dir("gptq")
K, N, gs, bits = 64, 16, 16, 4
L = "model.layers.0.mlp.gate_proj"
G = K // gs
qv = rng.integers(0, 16, (K, N))
z = rng.integers(1, 16, (G, N))
stored = (z - 1) & 15  # v1: zeros -= 1 before packing
sc = rng.uniform(0.01, 0.1, (G, N)).astype(np.float16)
gidx = rng.permutation(np.arange(K) // gs).astype(np.int32)
qw = np.array([pack_stream(qv[:, n], bits) for n in range(N)], np.uint32).T.copy()
qz = np.array([pack_stream(stored[g], bits) for g in range(G)], np.uint32)
bias = rng.normal(0, 0.1, N).astype(np.float16)
write_safetensors(os.path.join(d, "model.safetensors"), {
    f"{L}.qweight": ("I32", list(qw.shape), qw.tobytes()),
    f"{L}.qzeros": ("I32", list(qz.shape), qz.tobytes()),
    f"{L}.scales": ("F16", list(sc.shape), sc.tobytes()),
    f"{L}.g_idx": ("I32", [K], gidx.tobytes()),
    f"{L}.bias": ("F16", [N], bias.tobytes()),
}, {"format": "pt"})
write_json(os.path.join(d, "config.json"), {"architectures": ["LlamaForCausalLM"], "torch_dtype": "float16"})
write_json(os.path.join(d, "quantize_config.json"), {"bits": 4, "group_size": gs, "damp_percent": 0.01, "desc_act": True,
                                                     "static_groups": False, "sym": False, "true_sequential": True})
zz = ((stored + 1) & 15)[gidx, :]
dec = (sc.astype(f32)[gidx, :] * (qv - zz).astype(f32)).T
cases.append({"name": "GPTQ 4-bit act-order v1 (quantize_config.json)", "source": "cases/gptq", "producer": "gptq",
              "refused": {"code": "unsupported", "fact": "quant_method"}, "conventions": ["gptq"],
              "weights": [weight(f"{L}.weight", "gptq", "F16", [N, K], dec,
                                 [f"{L}.qweight", f"{L}.qzeros", f"{L}.scales", f"{L}.g_idx"])],
              "plain": [f"{L}.bias"]})

# ---- 9. AWQ GEMM (config.json quantization_config) --------------------------------------------
ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def awq_pack(M):
    rows, n = M.shape
    out = np.zeros((rows, n // 8), np.uint32)
    for r in range(rows):
        for c in range(n // 8):
            w = 0
            for i in range(8):
                w |= int(M[r, 8 * c + ORDER[i]]) << (4 * i)
            out[r, c] = w
    return out


d = case_dir("awq")
K, N, gs = 32, 16, 16
L = "model.layers.0.self_attn.o_proj"
G = K // gs
qv = rng.integers(0, 16, (K, N))
z = rng.integers(0, 16, (G, N))
sc = rng.uniform(0.01, 0.1, (G, N)).astype(np.float16)
write_safetensors(os.path.join(d, "model.safetensors"), {
    f"{L}.qweight": ("I32", [K, N // 8], awq_pack(qv).tobytes()),
    f"{L}.qzeros": ("I32", [G, N // 8], awq_pack(z).tobytes()),
    f"{L}.scales": ("F16", [G, N], sc.tobytes()),
}, {"format": "pt"})
write_json(os.path.join(d, "config.json"), {
    "architectures": ["MistralForCausalLM"], "torch_dtype": "float16",
    "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": gs, "version": "gemm", "zero_point": True}})
dec = ((qv - z[np.arange(K) // gs]).astype(f32) * sc.astype(f32)[np.arange(K) // gs]).T
cases.append({"name": "AWQ GEMM 4-bit", "source": "cases/awq", "conventions": ["awq"],
              "weights": [weight(f"{L}.weight", "awq_gemm", "F16", [N, K], dec,
                                 [f"{L}.qweight", f"{L}.qzeros", f"{L}.scales"])],
              "plain": []})

# ---- 10. Kohya LoRA (alpha F16 scalar) --------------------------------------------------------
d = case_dir("kohya_lora")
M = "lora_unet_down_blocks_0_attentions_0_proj_in"
r, fin, fout = 4, 16, 8
down = rng.normal(0, 0.5, (r, fin)).astype(np.float16)
up = rng.normal(0, 0.5, (fout, r)).astype(np.float16)
alpha = np.array(2.0, np.float16)
write_safetensors(os.path.join(d, "my_lora.safetensors"), {
    f"{M}.lora_down.weight": ("F16", [r, fin], down.tobytes()),
    f"{M}.lora_up.weight": ("F16", [fout, r], up.tobytes()),
    f"{M}.alpha": ("F16", [], alpha.tobytes()),
}, {"ss_network_dim": "4", "ss_network_alpha": "2.0", "ss_network_module": "networks.lora"})
dec = (up.astype(np.float64) @ down.astype(np.float64)) * (float(alpha) / r)
cases.append({"name": "Kohya LoRA", "source": "cases/kohya_lora/my_lora.safetensors", "conventions": ["kohya_lora"],
              "weights": [weight(f"{M}.weight", "lora", "F16", [fout, fin], dec,
                                 [f"{M}.lora_down.weight", f"{M}.lora_up.weight", f"{M}.alpha"], 1e-5)],
              "plain": []})

write_json(os.path.join(ROOT, "expected.json"), {"cases": cases})
print(f"{len(cases)} cases")
