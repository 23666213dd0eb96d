"""ComfyUI padded NVFP4 and MXFP8 layers for packages/cli/test/convert-padded.test.ts.

Laid out as comfy-kitchen writes them (reference/quantization.md 3.2, 4.3, 4.4): NVFP4 codes
hi-first in U8 [roundup(N,16), roundup(K,16)/2], E4M3 block scales (one per 16 along K) in the
cuBLAS 128x4 swizzled layout [roundup(N16,128), roundup(K16/16,4)], F32 weight_scale_2; MXFP8
E4M3 [roundup(N,32), roundup(K,32)] with E8M0 scales (one per 32) swizzled the same way; padding
zero; each layer's `comfy_quant` JSON as a U8 tensor. Also the unquantized model's header
(`reference.safetensors`, F32 weights at the logical shapes) and one with a wrong shape.
`OUT/expected.json` holds each layer's reference decode (float32, numpy, hex) of the logical region.
"""
import json
import sys

import numpy as np
import torch
from safetensors.torch import save_file

out = sys.argv[1]
rng = np.random.default_rng(7)


def roundup(x, m):
    return (x + m - 1) // m * m


def to_blocked(s):
    """comfy-kitchen to_blocked(flatten=False): [R, C] -> zero padded, swizzled [R', C']."""
    r, c = s.shape
    rp, cp = roundup(r, 128), roundup(c, 4)
    p = np.zeros((rp, cp), np.uint8)
    p[:r, :c] = s
    blocks = p.reshape(rp // 128, 128, cp // 4, 4).transpose(0, 2, 1, 3)
    swz = blocks.reshape(-1, 4, 32, 4).transpose(0, 2, 1, 3).reshape(-1, 32, 16)
    stored = swz.reshape(rp, cp)
    # the exact byte offset of S[r, c] (reference/quantization.md 4.4), as a self-check
    flat = stored.reshape(-1)
    for i in range(r):
        for j in range(c):
            o = ((i // 128) * (cp // 4) + j // 4) * 512 + (i % 32) * 16 + ((i % 128) // 32) * 4 + j % 4
            assert flat[o] == p[i, j]
    return stored


def e4m3(b):
    b = int(b)
    s = -1.0 if b & 0x80 else 1.0
    e = (b >> 3) & 15
    m = b & 7
    if e == 15 and m == 7:
        return float('nan')
    if e == 0:
        return s * m * 2.0 ** -9
    return s * (1 + m / 8) * 2.0 ** (e - 7)


E4M3 = np.array([e4m3(b) for b in range(256)], np.float32)
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)

tensors = {}
expected = {}

# NVFP4: logical [40, 72] -> stored [48, 40] codes, scales [128, 8]
n, k = 40, 72
n16, k16 = roundup(n, 16), roundup(k, 16)
codes = np.zeros((n16, k16), np.uint8)
codes[:n, :k] = rng.integers(0, 16, (n, k), dtype=np.uint8)
packed = (codes[:, 0::2] << 4) | codes[:, 1::2]  # hi-first
scales = np.zeros((n16, k16 // 16), np.uint8)
scales[:n, : (k + 15) // 16] = rng.integers(0x28, 0x49, (n, (k + 15) // 16), dtype=np.uint8)
global_scale = np.float32(0.0123)
L1 = 'model.diffusion_model.blocks.0.attn.qkv'
tensors[f'{L1}.weight'] = torch.from_numpy(packed)
tensors[f'{L1}.weight_scale'] = torch.from_numpy(to_blocked(scales)).view(torch.float8_e4m3fn)
tensors[f'{L1}.weight_scale_2'] = torch.tensor(global_scale, dtype=torch.float32)
tensors[f'{L1}.comfy_quant'] = torch.frombuffer(bytearray(json.dumps({'format': 'nvfp4'}).encode()), dtype=torch.uint8)
tensors[f'{L1}.bias'] = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
block = (E4M3[scales] * global_scale).astype(np.float32)  # block scale x global, float32
w = (E2M1[codes] * np.repeat(block, 16, axis=1)).astype(np.float32)
expected[f'{L1}.weight'] = {'shape': [n, k], 'f32': w[:n, :k].tobytes().hex()}

# MXFP8: logical [50, 70] -> stored [64, 96] E4M3, scales [128, 4] E8M0
n, k = 50, 70
n32, k32 = roundup(n, 32), roundup(k, 32)
q = np.zeros((n32, k32), np.uint8)
vals = rng.integers(0, 0x7F, (n, k), dtype=np.uint8) | (rng.integers(0, 2, (n, k), dtype=np.uint8) << 7)
q[:n, :k] = vals
es = np.zeros((n32, k32 // 32), np.uint8)
es[:n, : (k + 31) // 32] = rng.integers(118, 133, (n, (k + 31) // 32), dtype=np.uint8)
L2 = 'model.diffusion_model.blocks.0.mlp.fc1'
tensors[f'{L2}.weight'] = torch.from_numpy(q).view(torch.float8_e4m3fn)
tensors[f'{L2}.weight_scale'] = torch.from_numpy(to_blocked(es)).view(torch.float8_e8m0fnu)
tensors[f'{L2}.comfy_quant'] = torch.frombuffer(bytearray(json.dumps({'format': 'mxfp8'}).encode()), dtype=torch.uint8)
scale = np.ldexp(np.float32(1), es.astype(np.int32) - 127).astype(np.float32)
w = (E4M3[q] * np.repeat(scale, 32, axis=1)).astype(np.float32)
expected[f'{L2}.weight'] = {'shape': [n, k], 'f32': w[:n, :k].tobytes().hex()}

save_file(tensors, f'{out}/model/padded.safetensors')
ref = {f'{L1}.weight': torch.zeros(40, 72), f'{L1}.bias': torch.zeros(40), f'{L2}.weight': torch.zeros(50, 70)}
save_file(ref, f'{out}/reference.safetensors')
save_file({**ref, f'{L1}.weight': torch.zeros(30, 72)}, f'{out}/wrong.safetensors')
save_file({f'{L1}.weight': torch.zeros(40, 72)}, f'{out}/partial.safetensors')
with open(f'{out}/expected.json', 'w') as f:
    json.dump(expected, f)
