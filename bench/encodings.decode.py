"""numpy baseline for bench/encodings.bench.mjs: vectorized decodes of the same encoded parts.
Reads <dir>/<case>.json + part files, prints one JSON line per case: best-of-runs CPU ms and the sha256 of
the float32 output (so the bench can check both sides computed the same values)."""
import hashlib, json, os, sys, time
import numpy as np

d = sys.argv[1]; runs = int(sys.argv[2])
f32 = np.float32

def lut_e4m3():
    c = np.arange(256); s = np.where(c & 0x80, -1.0, 1.0); e = (c >> 3) & 15; m = c & 7
    v = np.where(e == 0, m * 2.0**-9, (1 + m / 8) * 2.0**(e - 7)) * s
    v[(e == 15) & (m == 7)] = np.nan
    return v.astype(f32)
E4M3 = lut_e4m3()
E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6], f32)

def load(case):
    meta = json.load(open(os.path.join(d, case + ".json")))
    parts = {k: np.fromfile(os.path.join(d, f"{case}.{k}.bin"), dtype=v) for k, v in meta["parts"].items()}
    return meta, parts

def bnb_nf4(meta, p):
    b = p["codes"]; n = meta["n"]; bs = meta["blocksize"]
    out = np.empty(b.size * 2, f32)
    out[0::2] = p["code_table"][b >> 4]; out[1::2] = p["code_table"][b & 15]
    out = out[:n].reshape(-1, bs); out *= p["absmax"][:, None]
    return out

def fp8_row(meta, p):
    q = p["q"].reshape(meta["rows"], meta["cols"])
    return E4M3[q] * p["scale"][:, None]

def from_blocked(S, R, C):
    Rp, Cp = S.shape
    x = S.reshape(-1, 32, 4, 4).transpose(0, 2, 1, 3)
    return x.reshape(Rp // 128, Cp // 4, 128, 4).transpose(0, 2, 1, 3).reshape(Rp, Cp)[:R, :C]

def nvfp4_swizzled(meta, p):
    N, K = meta["rows"], meta["cols"]
    sc = from_blocked(p["block_scale"].reshape(meta["scale_shape"]), N, K // 16)
    scale = E4M3[sc] * p["global_scale"][0]
    b = p["q"].reshape(N, K // 2)
    codes = np.empty((N, K), np.uint8); codes[:, 0::2] = b >> 4; codes[:, 1::2] = b & 15   # hi_first
    return (E2M1[codes].reshape(N, K // 16, 16) * scale[:, :, None]).reshape(N, K)

def gptq4(meta, p):
    N, K, G = meta["rows"], meta["cols"], meta["groups"]
    qw = p["qweight"].reshape(K // 8, N)
    shifts = (np.arange(8, dtype=np.uint32) * 4)[None, :, None]
    q = ((qw[:, None, :] >> shifts) & 15).reshape(K, N)
    qz = p["qzeros"].reshape(G, N // 8)
    z = ((qz[:, :, None] >> (np.arange(8, dtype=np.uint32) * 4)[None, None, :]) & 15).reshape(G, N)
    z = (z + 1) & 15                                                          # v1
    g = p["g_idx"]
    s = p["scales"].astype(f32).reshape(G, N)
    W = s[g] * (q.astype(f32) - z[g].astype(f32))
    return np.ascontiguousarray(W.T)

def ggml(meta, p):
    import gguf, gguf.quants as gq
    t = gguf.GGMLQuantizationType[meta["type"]]
    return gq.dequantize(p["blocks"].reshape(meta["rows"], -1), t)

FN = {"bnb_nf4": bnb_nf4, "fp8_row": fp8_row, "nvfp4_swizzled": nvfp4_swizzled, "gptq4_act_order": gptq4, "Q4_K": ggml, "Q6_K": ggml}
for case in sys.argv[3:]:
    meta, p = load(case)
    fn = FN[case]
    out = fn(meta, p)
    ts = []
    for _ in range(runs):
        t0 = time.process_time(); out = fn(meta, p); ts.append((time.process_time() - t0) * 1000)
    ts.sort()
    best = ts[0]
    digest = hashlib.sha256(np.ascontiguousarray(out, dtype=f32).tobytes()).hexdigest()
    print(json.dumps({"case": case, "ms": best, "sha256": digest}), flush=True)
