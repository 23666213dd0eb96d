"""Golden vectors for spec/v1/encodings.md, computed independently of the TypeScript decoders:
plain numpy from the decode equations in the spec (and gguf-py's `gguf.quants` for GGML types).

Run from the repository root: python3 vectors/v1/encodings/generate.py
(needs numpy and `pip install gguf`). Writes vectors/v1/encodings/vectors.json.
"""
import json
import numpy as np
import gguf
import gguf.quants as gq

rng = np.random.default_rng(20261130)
f32 = np.float32

def hx(a):
    return np.ascontiguousarray(a).tobytes().hex()

def part(dtype, shape, arr):
    return {"dtype": dtype, "shape": list(shape), "hex": hx(arr)}

def bf16_rne(x):
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF
    r = np.where(nan, ((b >> 16) & 0x8000) | 0x7FC0, r)
    return r.astype(np.uint16)

cases = []

def case(name, scheme, params, parts, out, outputs=("F32",), tol=None):
    out = np.asarray(out, np.float32).reshape(-1)
    exp = {}
    if "F32" in outputs: exp["F32"] = hx(out)
    if "F16" in outputs: exp["F16"] = hx(out.astype(np.float16))
    if "BF16" in outputs: exp["BF16"] = hx(bf16_rne(out))
    c = {"name": name, "encoding": {"scheme": scheme, "params": params, "parts": parts}, "expected": exp}
    if tol is not None: c["tolerance"] = tol
    cases.append(c)

# ---- small float tables, from the bit layouts (spec §2) --------------------------------------
def e4m3(c):
    c = int(c); s = -1.0 if c & 0x80 else 1.0; e = (c >> 3) & 15; m = c & 7
    if e == 15 and m == 7: return float("nan")
    return s * (m * 2.0**-9 if e == 0 else (1 + m / 8) * 2.0**(e - 7))
def e5m2(c):
    c = int(c); s = -1.0 if c & 0x80 else 1.0; e = (c >> 2) & 31; m = c & 3
    if e == 31: return s * float("inf") if m == 0 else float("nan")
    return s * (m * 2.0**-16 if e == 0 else (1 + m / 4) * 2.0**(e - 15))
E4M3 = np.array([e4m3(c) for c in range(256)], f32)
E5M2 = np.array([e5m2(c) for c in range(256)], f32)
E8M0 = np.array([float("nan") if c == 255 else 2.0**(c - 127) for c in range(256)], f32)
E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6], f32)

def to_blocked(S):
    """cuBLAS 128x4 tiling (spec §5.3), by reshapes as in the producers' `to_blocked`."""
    R, C = S.shape
    Rp, Cp = -(-R // 128) * 128, -(-C // 4) * 4
    P = np.zeros((Rp, Cp), S.dtype); P[:R, :C] = S
    b = P.reshape(Rp // 128, 128, Cp // 4, 4).transpose(0, 2, 1, 3)
    return b.reshape(-1, 4, 32, 4).transpose(0, 2, 1, 3).reshape(Rp, Cp)

def pack4(codes, order):
    c = codes.reshape(-1, 2).astype(np.uint8)
    if order == "lo_first": return (c[:, 0] | (c[:, 1] << 4)).astype(np.uint8)
    return ((c[:, 0] << 4) | c[:, 1]).astype(np.uint8)

# ---- int8 -------------------------------------------------------------------------------------
q = np.array([[10, 20], [30, 40]], np.int8); s = np.array([0.1, 0.2], f32)
case("int8 seed example, row scales", "int8", {"shape": [2, 2], "dtype": "F32", "granularity": "row", "scale_kind": "scale"},
     {"q": part("I8", [2, 2], q), "scale": part("F32", [2], s)}, q.astype(f32) * s[:, None])
case("int8 seed example, column scales", "int8", {"shape": [2, 2], "dtype": "F32", "granularity": "column", "scale_kind": "scale"},
     {"q": part("I8", [2, 2], q), "scale": part("F32", [2], s)}, q.astype(f32) * s[None, :])
q = rng.integers(-128, 128, (4, 8)).astype(np.int8)
s = rng.uniform(0.01, 2, 4).astype(f32)
case("int8 row scales [N,1] (comfy int8_tensorwise per-row)", "int8", {"shape": [4, 8], "dtype": "F32", "granularity": "row", "scale_kind": "scale"},
     {"q": part("I8", [4, 8], q), "scale": part("F32", [4, 1], s)}, q.astype(f32) * s[:, None])
case("int8 tensor scale", "int8", {"shape": [4, 8], "dtype": "F32", "granularity": "tensor", "scale_kind": "scale"},
     {"q": part("I8", [4, 8], q), "scale": part("F32", [], s[:1])}, q.astype(f32) * s[0])
scb = rng.uniform(0.5, 20, 4).astype(f32)
case("int8 LLM.int8 SCB (absmax/127)", "int8", {"shape": [4, 8], "dtype": "F32", "granularity": "row", "scale_kind": "absmax_over_127"},
     {"q": part("I8", [4, 8], q), "scale": part("F32", [4], scb)}, (q.astype(f32) * scb[:, None]) * f32(7.874015718698502e-3))
s16 = rng.uniform(0.01, 2, 8).astype(np.float16)
case("int8 column scales in F16", "int8", {"shape": [4, 8], "dtype": "F16", "granularity": "column", "scale_kind": "scale"},
     {"q": part("I8", [4, 8], q), "scale": part("F16", [8], s16)}, q.astype(f32) * s16.astype(f32)[None, :], ("F32", "F16", "BF16"))

# ---- fp8 --------------------------------------------------------------------------------------
codes = np.arange(256, dtype=np.uint8).reshape(16, 16)
case("fp8_e4m3fn every code, unscaled", "fp8_e4m3fn", {"shape": [16, 16], "dtype": "F32", "granularity": "none"},
     {"q": part("F8_E4M3", [16, 16], codes)}, E4M3[codes], ("F32", "F16", "BF16"))
case("fp8_e5m2 every code, unscaled", "fp8_e5m2", {"shape": [16, 16], "dtype": "F32", "granularity": "none"},
     {"q": part("F8_E5M2", [16, 16], codes)}, E5M2[codes], ("F32", "F16", "BF16"))
q = rng.integers(0, 256, (5, 10)).astype(np.uint8); q[q == 0x7F] = 0x7E; q[q == 0xFF] = 0xFE
ts = np.array([0.0013], f32)
case("fp8_e4m3fn tensor scale (ComfyUI scale_weight / weight_scale)", "fp8_e4m3fn", {"shape": [5, 10], "dtype": "BF16", "granularity": "tensor"},
     {"q": part("F8_E4M3", [5, 10], q), "scale": part("F32", [], ts)}, E4M3[q] * ts[0], ("F32", "F16", "BF16"))
rs = rng.uniform(0.001, 0.1, 5).astype(f32)
case("fp8_e4m3fn row scales", "fp8_e4m3fn", {"shape": [5, 10], "dtype": "F32", "granularity": "row"},
     {"q": part("F8_E4M3", [5, 10], q), "scale": part("F32", [5], rs)}, E4M3[q] * rs[:, None], ("F32", "F16", "BF16"))
bsc = rng.uniform(0.001, 0.1, (3, 3)).astype(f32)
exp = E4M3[q] * bsc[np.arange(5)[:, None] // 2, np.arange(10)[None, :] // 4]
case("fp8_e4m3fn block scales [2,4] on a non-dividing [5,10] (DeepSeek weight_scale_inv)", "fp8_e4m3fn",
     {"shape": [5, 10], "dtype": "F32", "granularity": "block", "block": [2, 4]},
     {"q": part("F8_E4M3", [5, 10], q), "scale": part("F32", [3, 3], bsc)}, exp)
q5 = rng.integers(0, 256, (3, 8)).astype(np.uint8); rs5 = rng.uniform(0.5, 2, 3).astype(f32)
case("fp8_e5m2 row scales, with inf and NaN codes", "fp8_e5m2", {"shape": [3, 8], "dtype": "F32", "granularity": "row"},
     {"q": part("U8", [3, 8], q5), "scale": part("F32", [3, 1], rs5)}, E5M2[q5] * rs5[:, None])

# ---- mxfp8 ------------------------------------------------------------------------------------
N, K = 20, 40; Np, Kp = 32, 64
q = rng.integers(0, 256, (Np, Kp)).astype(np.uint8); q[q & 0x7F == 0x7F] = 0x38
sc = rng.integers(118, 136, (Np, Kp // 32)).astype(np.uint8)
full = E4M3[q] * E8M0[np.repeat(sc, 32, axis=1)]
for layout in ("row_major", "cublas_128x4"):
    spart = sc if layout == "row_major" else to_blocked(sc)
    case(f"mxfp8 padded [20,40] in [32,64], {layout} scales", "mxfp8",
         {"shape": [N, K], "dtype": "F32", "block_size": 32, "scale_layout": layout, "padded_shape": [Np, Kp]},
         {"q": part("F8_E4M3", [Np, Kp], q), "scale": part("F8_E8M0", list(spart.shape), spart)}, full[:N, :K])

# ---- mxfp4 ------------------------------------------------------------------------------------
g = np.tile(np.array([3, 8, 13, 2, 7, 12, 1, 6, 11, 0, 5, 10, 15, 4, 9, 14], np.uint8), 2)
case("mxfp4 reference golden (lo_first, scale 126)", "mxfp4",
     {"shape": [1, 32], "dtype": "F32", "block_size": 32, "scale_layout": "row_major", "nibble_order": "lo_first"},
     {"q": part("U8", [1, 1, 16], pack4(g, "lo_first")), "scale": part("U8", [1, 1], np.array([126], np.uint8))},
     E2M1[g] * f32(0.5))
codes = rng.integers(0, 16, (3, 64)).astype(np.uint8); sc = rng.integers(120, 134, (3, 2)).astype(np.uint8)
for order in ("lo_first", "hi_first"):
    case(f"mxfp4 [3,64] {order}", "mxfp4",
         {"shape": [3, 64], "dtype": "F32", "block_size": 32, "scale_layout": "row_major", "nibble_order": order},
         {"q": part("U8", [3, 2, 16], pack4(codes, order)), "scale": part("F8_E8M0", [3, 2], sc)},
         E2M1[codes] * E8M0[np.repeat(sc, 32, axis=1)])

# ---- nvfp4 ------------------------------------------------------------------------------------
r0 = [3, 8, 13, 2, 7, 12, 1, 6, 11, 0, 5, 10, 15, 4, 9, 14] * 2
r1 = [1, 8, 15, 6, 13, 4, 11, 2, 9, 0, 7, 14, 5, 12, 3, 10] * 2
codes = np.array([r0, r1], np.uint8); bs = np.array([[0x38, 0x40], [0x30, 0x44]], np.uint8); gs = np.array([0.25], f32)
def nvexp(codes, bsc, g):
    return E2M1[codes] * (E4M3[np.repeat(bsc, 16, axis=1)] * g)
for order in ("lo_first", "hi_first"):
    case(f"nvfp4 reference golden, {order}, row_major", "nvfp4",
         {"shape": [2, 32], "dtype": "F32", "block_size": 16, "scale_layout": "row_major", "nibble_order": order},
         {"q": part("U8", [2, 16], pack4(codes, order)), "block_scale": part("F8_E4M3", [2, 2], bs), "global_scale": part("F32", [], gs)},
         nvexp(codes, bs, gs[0]), ("F32", "F16", "BF16"))
sw = to_blocked(bs)
case("nvfp4 reference golden, hi_first, cublas_128x4 (ComfyUI)", "nvfp4",
     {"shape": [2, 32], "dtype": "F32", "block_size": 16, "scale_layout": "cublas_128x4", "nibble_order": "hi_first"},
     {"q": part("U8", [2, 16], pack4(codes, "hi_first")), "block_scale": part("F8_E4M3", [128, 4], sw), "global_scale": part("F32", [], gs)},
     nvexp(codes, bs, gs[0]))
N, K, Np, Kp = 6, 40, 16, 48
codes = rng.integers(0, 16, (Np, Kp)).astype(np.uint8)
bs = rng.integers(0x20, 0x50, (Np, Kp // 16)).astype(np.uint8); gs = np.array([0.0123], f32)
full = nvexp(codes, bs, gs[0])
for layout in ("row_major", "cublas_128x4"):
    for order in ("lo_first", "hi_first"):
        sp = bs if layout == "row_major" else to_blocked(bs)
        case(f"nvfp4 padded [6,40] in [16,48], {order}, {layout}", "nvfp4",
             {"shape": [N, K], "dtype": "F32", "block_size": 16, "scale_layout": layout, "nibble_order": order, "padded_shape": [Np, Kp]},
             {"q": part("U8", [Np, Kp // 2], pack4(codes, order)), "block_scale": part("F8_E4M3", list(sp.shape), sp),
              "global_scale": part("F32", [], gs)}, full[:N, :K])

# ---- bitsandbytes -----------------------------------------------------------------------------
NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
                -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
                0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                0.7229568362236023, 1.0], f32)
FP4 = (np.array([0, 0.0625, 8, 12, 4, 6, 2, 3, -0.0, -0.0625, -8, -12, -4, -6, -2, -3], f32) / f32(12)).astype(f32)
case("bnb_nf4 reference golden (blocksize 4)", "bnb_nf4",
     {"shape": [8], "dtype": "F32", "blocksize": 4, "nibble_order": "hi_first", "nested": False},
     {"codes": part("U8", [4, 1], np.array([0x0F, 0x7A, 0x18, 0xF0], np.uint8)), "absmax": part("F32", [2], np.array([2.0, 0.5], f32)),
      "code_table": part("F32", [16], NF4)},
     np.array([-2.0, 2.0, 0.0, 0.4922246038913727, -0.34809640049934387, 0.03979014977812767, 0.5, -0.5], f32))
def bnb_bytes(codes, order):
    c = codes.astype(np.uint8)
    if len(c) % 2: c = np.concatenate([c, np.zeros(1, np.uint8)])
    return pack4(c, order)
n, bsz = 35, 8
codes = rng.integers(0, 16, n).astype(np.uint8); nb = -(-n // bsz)
absmax = rng.uniform(0.1, 3, nb).astype(f32)
for name, table in (("bnb_nf4", NF4), ("bnb_fp4", FP4)):
    for order in ("hi_first", "lo_first"):
        b = bnb_bytes(codes, order)
        case(f"{name} [5,7] odd count, partial block, {order}", name,
             {"shape": [5, 7], "dtype": "BF16", "blocksize": bsz, "nibble_order": order, "nested": False},
             {"codes": part("U8", [len(b), 1], b), "absmax": part("F32", [nb], absmax), "code_table": part("F32", [16], table)},
             table[codes] * absmax[np.arange(n) // bsz], ("F32", "F16", "BF16"))
n, bsz, nbs = 64, 4, 4
codes = rng.integers(0, 16, n).astype(np.uint8); nb = n // bsz
a8 = rng.integers(0, 256, nb).astype(np.uint8)
ntable = np.sort(rng.uniform(-1, 1, 256)).astype(f32)
nabs = rng.uniform(0.5, 2, nb // nbs).astype(f32); offset = 0.7312345678
absm = (ntable[a8] * nabs[np.arange(nb) // nbs]).astype(f32) + f32(offset)
b = bnb_bytes(codes, "hi_first")
case("bnb_nf4 nested absmax", "bnb_nf4",
     {"shape": [4, 16], "dtype": "F32", "blocksize": bsz, "nibble_order": "hi_first", "nested": True, "nested_blocksize": nbs, "nested_offset": offset},
     {"codes": part("U8", [32, 1], b), "absmax": part("U8", [nb], a8), "code_table": part("F32", [16], NF4),
      "nested_absmax": part("F32", [nb // nbs], nabs), "nested_table": part("F32", [256], ntable)},
     NF4[codes] * absm[np.arange(n) // bsz])

# ---- GPTQ -------------------------------------------------------------------------------------
def pack_stream(vals, b):
    """vals: 1-D unsigned ints; LSB-first bit stream into uint32 words."""
    acc = 0
    for i, v in enumerate(vals): acc |= int(v) << (b * i)
    nw = -(-len(vals) * b // 32)
    return [(acc >> (32 * w)) & 0xFFFFFFFF for w in range(nw)]
def gptq_case(name, bits, K, N, gsz, fmt, act):
    G = -(-K // gsz); mask = (1 << bits) - 1
    qv = rng.integers(0, 1 << bits, (K, N))
    z = rng.integers(0, 1 << bits, (G, N)); z[0, 0] = 0
    stored = (z - 1) & mask if fmt == "v1_minus_one" else z
    if fmt == "v1_minus_one": z = (stored + 1) & mask
    sc = rng.uniform(0.01, 0.2, (G, N)).astype(np.float16)
    gidx = rng.permutation(np.arange(K) // gsz).astype(np.int32) if act else (np.arange(K) // gsz).astype(np.int32)
    qw = np.array([pack_stream(qv[:, n], bits) for n in range(N)], np.uint32).T.copy()
    qz = np.array([pack_stream(stored[g], bits) for g in range(G)], np.uint32)
    W = (sc.astype(f32)[gidx, :] * (qv - z[gidx, :]).astype(f32)).T
    parts = {"qweight": part("I32", qw.shape, qw), "qzeros": part("I32", qz.shape, qz), "scales": part("F16", sc.shape, sc)}
    if act: parts["g_idx"] = part("I32", [K], gidx)
    case(name, "gptq", {"shape": [N, K], "dtype": "F16", "bits": bits, "group_size": gsz, "zero_format": fmt,
                        "group_index": "g_idx" if act else "sequential"}, parts, W, ("F32", "F16"))
# the reference golden (b=4, K=16, N=2, g=8)
qv = np.array([[0, 3, 6, 9, 12, 15, 2, 5, 8, 11, 14, 1, 4, 7, 10, 13], [5, 8, 11, 14, 1, 4, 7, 10, 13, 0, 3, 6, 9, 12, 15, 2]]).T
qw = np.array([pack_stream(qv[:, n], 4) for n in range(2)], np.uint32).T.copy()
assert [hex(x) for x in qw.reshape(-1)] == ["0x52fc9630", "0xa741eb85", "0xda741eb8", "0x2fc9630d"]
sc = np.array([[0.5, 0.25], [1.0, 0.125]], np.float16)
for fmt, words in (("v1_minus_one", [0x67, 0x78]), ("v2", [0x78, 0x89])):
    z = np.array([[8, 7], [9, 8]]); gi = np.arange(16) // 8
    case(f"gptq reference golden, {fmt}", "gptq", {"shape": [2, 16], "dtype": "F32", "bits": 4, "group_size": 8, "zero_format": fmt, "group_index": "sequential"},
         {"qweight": part("I32", [2, 2], qw), "qzeros": part("I32", [2, 1], np.array(words, np.uint32)), "scales": part("F16", [2, 2], sc)},
         (sc.astype(f32)[gi, :] * (qv - z[gi, :]).astype(f32)).T)
gptq_case("gptq 4-bit act-order g_idx, v1", 4, 64, 8, 16, "v1_minus_one", True)
gptq_case("gptq 4-bit sequential, v2", 4, 32, 8, 16, "v2", False)
gptq_case("gptq 8-bit act-order, v1", 8, 32, 8, 8, "v1_minus_one", True)
gptq_case("gptq 2-bit, v2", 2, 32, 16, 16, "v2", False)
gptq_case("gptq 3-bit act-order, v1", 3, 32, 8, 16, "v1_minus_one", True)
gptq_case("gptq 4-bit group_size -1", 4, 16, 4, 16, "v2", False)
cases[-1]["encoding"]["params"]["group_size"] = -1

# ---- AWQ GEMM ---------------------------------------------------------------------------------
ORDER = [0, 2, 4, 6, 1, 3, 5, 7]
def awq_pack(M):
    rows, n = M.shape; out = np.zeros((rows, n // 8), np.uint32)
    for r in range(rows):
        for c in range(n // 8):
            w = 0
            for i in range(8): w |= int(M[r, 8 * c + ORDER[i]]) << (4 * i)
            out[r, c] = w
    return out
assert awq_pack(np.arange(8).reshape(1, 8))[0, 0] == 0x75316420
K, N, gsz = 16, 8, 8; G = K // gsz
qv = rng.integers(0, 16, (K, N)); z = rng.integers(0, 16, (G, N)); sc = rng.uniform(0.01, 0.2, (G, N)).astype(np.float16)
W = ((qv - z[np.arange(K) // gsz]).astype(f32) * sc.astype(f32)[np.arange(K) // gsz]).T
case("awq_gemm 4-bit interleaved", "awq_gemm", {"shape": [N, K], "dtype": "F16", "bits": 4, "group_size": gsz},
     {"qweight": part("I32", [K, N // 8], awq_pack(qv)), "qzeros": part("I32", [G, N // 8], awq_pack(z)), "scales": part("F16", [G, N], sc)}, W)

# ---- rotation (ConvRot) -----------------------------------------------------------------------
H4 = np.array([[1, 1, 1, -1], [1, 1, -1, 1], [1, -1, 1, 1], [-1, 1, 1, 1]], np.float64)
def hg(G):
    H = np.array([[1.0]])
    while H.shape[0] < G: H = np.kron(H, H4)
    return H / np.sqrt(G)
q = rng.integers(-128, 128, (2, 32)).astype(np.int8); s = rng.uniform(0.01, 0.1, 2).astype(f32)
inner = (q.astype(f32) * s[:, None]).astype(np.float64)
for G in (4, 16):
    W = np.concatenate([inner[:, i:i + G] @ hg(G).T for i in range(0, 32, G)], axis=1)
    case(f"rotation H{G} over int8 row", "rotation",
         {"shape": [2, 32], "dtype": "F32", "kind": "regular_hadamard_h4", "group_size": G,
          "inner": {"scheme": "int8", "params": {"shape": [2, 32], "dtype": "F32", "granularity": "row", "scale_kind": "scale"}}},
         {"q": part("I8", [2, 32], q), "scale": part("F32", [2, 1], s)}, W, tol={"abs": 1e-6})

# ---- LoRA -------------------------------------------------------------------------------------
down = rng.normal(0, 1, (4, 6)).astype(f32); up = rng.normal(0, 1, (5, 4)).astype(f32)
case("lora linear, alpha 2 rank 4", "lora", {"shape": [5, 6], "dtype": "F32", "alpha": 2},
     {"down": part("F32", [4, 6], down), "up": part("F32", [5, 4], up)}, (up.astype(np.float64) @ down) * 0.5, tol={"abs": 1e-5})
down = rng.normal(0, 1, (2, 3, 3, 3)).astype(np.float16); up = rng.normal(0, 1, (4, 2, 1, 1)).astype(np.float16)
case("lora conv 3x3, alpha null (scale 1)", "lora", {"shape": [4, 3, 3, 3], "dtype": "F32", "alpha": None},
     {"down": part("F16", [2, 3, 3, 3], down), "up": part("F16", [4, 2, 1, 1], up)},
     up.astype(np.float64).reshape(4, 2) @ down.astype(np.float64).reshape(2, -1), tol={"abs": 1e-5})

# ---- GGML: gguf.quants.dequantize on random blocks, quantize agreement ------------------------
ggml = []
for qt, cls in gq._type_traits.items():
    if qt.name == "BF16": continue
    bsz, tsz = gguf.GGML_QUANT_SIZES[qt]
    nblk = 2 if bsz <= 64 else 1
    raw = rng.integers(0, 256, nblk * tsz).astype(np.uint8)
    y = gq.dequantize(raw.reshape(1, -1), qt).astype(f32).reshape(-1)
    ggml.append({"type": qt.name, "shape": [1, nblk * bsz], "blocks": hx(raw), "expected_f32": hx(y)})
# types gguf-py does not dequantize, from ggml's block layouts (ggml-common.h) in numpy:
# Q8_1 {f16 d; f16 s; i8 qs[32]}: y = qs·d.  Q8_K {f32 d; i8 qs[256]; i16 bsums[16]}: y = d·qs.
# Q1_0 {f16 d; u8 qs[16]}: bit j (LSB first) set → +d, else −d.
def extra(name, bsz, tsz, fn):
    raw = rng.integers(0, 256, 2 * tsz).astype(np.uint8).reshape(2, tsz)
    fn(raw)
    ggml.append({"type": name, "shape": [1, 2 * bsz], "blocks": hx(raw), "expected_f32": hx(dq[name](raw).reshape(-1))})
def fix_f16(raw, at):
    raw[:, at:at + 2] = np.frombuffer(rng.uniform(-2, 2, raw.shape[0]).astype(np.float16).tobytes(), np.uint8).reshape(-1, 2)
dq = {
    "Q8_1": lambda r: r[:, 4:].view(np.int8).astype(f32) * r[:, 0:2].copy().view(np.float16).astype(f32),
    "Q8_K": lambda r: r[:, 0:4].copy().view(np.float32) * r[:, 4:260].view(np.int8).astype(f32),
    "Q1_0": lambda r: np.where(np.unpackbits(r[:, 2:], axis=1, bitorder="little") == 1, 1, -1).astype(f32) * r[:, 0:2].copy().view(np.float16).astype(f32),
}
extra("Q8_1", 32, 36, lambda r: (fix_f16(r, 0), fix_f16(r, 2)))
extra("Q8_K", 256, 292, lambda r: r.__setitem__((slice(None), slice(0, 4)), np.frombuffer(rng.uniform(-1, 1, 2).astype(f32).tobytes(), np.uint8).reshape(2, 4)))
extra("Q1_0", 128, 18, lambda r: fix_f16(r, 0))
quant = []
x = (rng.normal(0, 3, (4, 64))).astype(f32)
x[1, :32] = 0                                   # an all-zero block
x[2, :32] = np.linspace(-4, 4, 32).astype(f32)  # ties and an extreme at the end
x[3, 5] = -7.5; x[3, 6] = 7.5                   # equal magnitudes: the first wins (Q4_0)
for name in ("Q8_0", "Q4_0"):
    qt = gguf.GGMLQuantizationType[name]
    quant.append({"type": name, "shape": [4, 64], "values_f32": hx(x), "expected": hx(gq.quantize(x, qt))})

json.dump({"version": 1, "generator": "vectors/v1/encodings/generate.py", "gguf": gguf.__version__ if hasattr(gguf, "__version__") else "0.19.0",
           "cases": cases, "ggml_dequantize": ggml, "ggml_quantize": quant},
          open("vectors/v1/encodings/vectors.json", "w"), indent=1)
print(len(cases), "cases,", len(ggml), "ggml types,", len(quant), "quantize cases")
