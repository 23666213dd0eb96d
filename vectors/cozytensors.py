#!/usr/bin/env python3
"""Generates the cozytensors v1 golden vectors (vectors/v1/cozytensors/headers.json).

Independent of the TypeScript code under test: the headers are encoded by the canonical CBOR
encoder of vectors/canonical_cbor.py (written from the specs, floats included), record digests come from
Python's hashlib over seeded bytes cut on the 64 MiB grid, and every rejection is built by hand
from a valid header with exactly one thing wrong.

    python3 vectors/cozytensors.py     # rewrites vectors/v1/cozytensors/ (deterministic)
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import seeded_bytes  # noqa: E402  (the seeded byte runs every vector set shares)
from canonical_cbor import Raw, cbor, head  # noqa: E402,F401  (the one canonical CBOR encoder of the vectors)

OUT = Path(__file__).resolve().parent / "v1" / "cozytensors"
GRID = 64 * 1024 * 1024
BITS = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8,
    "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}


# --------------------------------------------------------------------------------------------
# Headers: the JSON form (spec) and its TFC1 bytes


def sha(b: bytes) -> str:
    return "sha256:" + hashlib.sha256(b).hexdigest()


def raw_digest(d: str) -> bytes:
    return bytes.fromhex(d[len("sha256:"):])


def records_of(data: bytes) -> list[dict]:
    """The safetensors-v1 tensor cut: one record up to 64 MiB, else every 64 MiB from the start."""
    return [{"digest": sha(data[o : o + GRID]), "length": len(data[o : o + GRID])} for o in range(0, len(data), GRID)]


def nbytes(dtype: str, shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    assert n * BITS[dtype] % 8 == 0
    return n * BITS[dtype] // 8


def tensor(name: str, dtype: str, shape: list[int], seed: int, inputs: dict | None = None, where: str = "") -> dict:
    n = nbytes(dtype, shape)
    if inputs is not None:
        inputs[f"{where}/{name}"] = {"seed": seed, "length": n}
    return {"name": name, "dtype": dtype, "shape": shape, "records": records_of(seeded_bytes(seed, n))}


def part(dtype: str, shape: list[int], seed: int) -> dict:
    return {"dtype": dtype, "shape": shape, "records": records_of(seeded_bytes(seed, nbytes(dtype, shape)))}


def asset(name: str, data: bytes) -> dict:
    return {"name": name, "records": records_of_blob(data)}


def records_of_blob(data: bytes) -> list[dict]:
    return [{"digest": sha(data), "length": len(data)}] if data else []


def rec_cbor(rs: list[dict]) -> list:
    return [[raw_digest(r["digest"]), r["length"]] for r in rs]


def to_cbor(h: dict) -> dict:
    """The CBOR root of a header in JSON form."""

    def t(x):
        out = {"name": x["name"], "dtype": x["dtype"], "shape": x["shape"]}
        if "records" in x:
            out["records"] = rec_cbor(x["records"])
        else:
            e = x["encoding"]
            out["encoding"] = {
                "scheme": e["scheme"],
                "params": e["params"],
                "parts": {r: {"dtype": p["dtype"], "shape": p["shape"], "records": rec_cbor(p["records"])}
                          for r, p in e["parts"].items()},
            }
        return out

    return {
        "version": h["version"],
        "pipeline": h["pipeline"],
        "source": None if h["source"] is None else raw_digest(h["source"]),
        "components": [
            {
                "name": c["name"],
                "cls": c["cls"],
                "config": c["config"],
                "tensors": [t(x) for x in c["tensors"]],
                "assets": [{"name": a["name"], "records": rec_cbor(a["records"])} for a in c["assets"]],
            }
            for c in h["components"]
        ],
    }


def tfc1(root) -> bytes:
    return b"TFC1" + cbor(root)


# --------------------------------------------------------------------------------------------
# The vectors


def valid_headers() -> list[tuple[str, str, dict, dict]]:
    out = []
    empty = {"version": 1, "pipeline": None, "source": None, "components": []}
    out.append(("empty", "no pipeline, no components, no source (the worked example)", empty, {}))

    inputs: dict = {}
    scheduler_json = json.dumps({"_class_name": "EulerDiscreteScheduler", "beta_start": 0.00085,
                                 "num_train_timesteps": 1000}, indent=2, sort_keys=True).encode() + b"\n"
    pipeline = {
        "version": 1,
        "pipeline": {
            "cls": "StableDiffusionPipeline",
            "config": {"_class_name": "StableDiffusionPipeline", "_diffusers_version": "0.31.0",
                       "scheduler": ["diffusers", "EulerDiscreteScheduler"],
                       "text_encoder": ["transformers", "CLIPTextModel"],
                       "tokenizer": ["transformers", "CLIPTokenizer"], "unet": ["diffusers", "UNet2DConditionModel"],
                       "requires_safety_checker": False, "safety_checker": [None, None]},
        },
        "source": sha(b"a TFM1 manifest stands here"),
        "components": [
            {"name": "scheduler", "cls": "EulerDiscreteScheduler",
             "config": {"_class_name": "EulerDiscreteScheduler", "beta_start": 0.00085, "num_train_timesteps": 1000,
                        "prediction_type": "epsilon", "trained_betas": None, "steps_offset": 1},
             "tensors": [], "assets": [asset("scheduler_config.json", scheduler_json)]},
            {"name": "text_encoder", "cls": "CLIPTextModel",
             "config": {"hidden_size": 32, "layer_norm_eps": 1e-05, "architectures": ["CLIPTextModel"],
                        "torch_dtype": "float32", "initializer_factor": 1.0},
             "tensors": [tensor("embeddings.token_embedding.weight", "F32", [16, 32], 11, inputs, "text_encoder"),
                         tensor("final_layer_norm.bias", "F32", [32], 12, inputs, "text_encoder"),
                         tensor("final_layer_norm.weight", "F32", [32], 13, inputs, "text_encoder")],
             "assets": [asset("config.json", b'{"hidden_size": 32}\n')]},
            {"name": "tokenizer", "cls": "CLIPTokenizer", "config": {"model_max_length": 77},
             "tensors": [],
             # Sorted by UTF-8 bytes: "merges.txt" < "special_tokens_map.json" < "vocab.json" < "z/é.txt".
             "assets": [asset("merges.txt", b"#version: 0.2\n"), asset("special_tokens_map.json", b"{}"),
                        asset("vocab.json", b'{"a": 0}'), asset("z/\u00e9.txt", b""),]},
            # Construction order, not name order: "unet" before "aaa".
            {"name": "unet", "cls": "UNet2DConditionModel",
             "config": {"sample_size": 8, "block_out_channels": [32, 64], "scaling": 0.18215, "act_fn": "silu"},
             "tensors": [tensor("conv_in.weight", "F16", [32, 4, 3, 3], 21, inputs, "unet"),
                         tensor("conv_in.bias", "BF16", [32], 22, inputs, "unet"),
                         tensor("time_embedding.scalar", "F32", [], 23, inputs, "unet"),
                         tensor("empty", "F32", [0, 4], 24, inputs, "unet"),
                         tensor("mask", "BOOL", [5], 25, inputs, "unet"),
                         tensor("packed", "F4", [6], 26, inputs, "unet")],
             "assets": []},
            {"name": "aaa", "cls": "", "config": None, "tensors": [], "assets": []},
        ],
    }
    out.append(("pipeline", "a Diffusers-shaped pipeline: a weightless scheduler, tokenizer assets sorted by "
                "bytes, tensors in construction order (scalar, empty, BOOL, F4), components not sorted, a source",
                pipeline, inputs))

    encoded = {
        "version": 1, "pipeline": None, "source": None,
        "components": [{
            "name": "model", "cls": "LlamaForCausalLM", "config": {"n": 1},
            "tensors": [
                {"name": "q.weight", "dtype": "BF16", "shape": [64, 64],
                 "encoding": {"scheme": "acme.int3-unknown", "params": {"group_size": 32, "zero": None, "order": "lo_first",
                                                                      "table": [0.5, -1.5, 3.25]},
                              "parts": {"qweight": part("U8", [64, 24], 31), "scales": part("F16", [64, 2], 32),
                                        "g_idx": part("I32", [64], 33)}}},
                {"name": "k.weight", "dtype": "F32", "shape": [8, 8],
                 "encoding": {"scheme": "s", "params": None, "parts": {"data": part("F8_E4M3", [8, 8], 34)}}},
                tensor("norm.weight", "F32", [64], 35),
            ],
            "assets": [],
        }],
    }
    out.append(("encoded", "encoded tensors: an unknown scheme with params and three parts, a scheme with null "
                "params, next to a plain tensor", encoded, {}))

    numbers = {
        "version": 1, "pipeline": {"cls": "", "config": {
            "f16": 0.5, "f16_neg": -2.75, "f32": 0.15625 + 2**-20, "f64": 0.1, "tiny": 5e-324,
            "f32_max": 3.4028234663852886e38, "big_float": 1e30, "int_2_60": 2**60, "u64_max_float": 1.8446744073709552e19,
            "int_neg": -(2**63), "one_float": 1.0, "zero": 0, "neg_zero": -0.0, "b": True, "n": None,
            "s": "caf\u00e9 \u4e2d\u6587 \U0001f600", "nested": [[[]], {}, {"": ""}],
            "aa": 1, "b2": 2, "\u00e9": 3}},
        "source": None, "components": [],
    }
    out.append(("json-numbers", "config numbers in every CBOR form: float16/32/64, integral floats as integers "
                "(1.0, 1e19-ish, -0.0), 2^60, -2^63, non-ASCII keys and text", numbers, {}))

    big_inputs: dict = {}
    split = {"version": 1, "pipeline": None, "source": None, "components": [{
        "name": "model", "cls": "", "config": {}, "tensors": [
            tensor("big", "F32", [16 * 1024 * 1024 + 1], 41, big_inputs, "model"),
            tensor("small", "U8", [3], 42, big_inputs, "model")],
        "assets": []}]}
    out.append(("split-64mib", "a tensor of 64 MiB + 4 bytes: two records cut from its first byte", split, big_inputs))
    return out


def json_form(h: dict) -> dict:
    """Normalises numbers the way a JSON reader of doubles sees them (1.0 → 1, -0.0 → 0)."""

    def norm(v):
        if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
            return int(v)
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        return v

    return norm(h)


def invalid_headers(pipeline: dict) -> list[tuple[str, bytes, str, str]]:
    base = to_cbor(pipeline)
    good = tfc1(base)

    def variant(edit) -> bytes:
        root = json.loads(json.dumps(pipeline))  # a deep copy of the JSON form
        root["source"] = pipeline["source"]
        r = to_cbor(root)
        edit(r)
        return tfc1(r)

    comp = lambda name: lambda r: next(c for c in r["components"] if c["name"] == name)  # noqa: E731
    te, tok, unet = comp("text_encoder"), comp("tokenizer"), comp("unet")

    def set_(getter, key, value):
        def edit(r):
            getter(r)[key] = value
        return edit

    empty = tfc1({"version": 1, "pipeline": None, "source": None, "components": []})
    bad = [
        ("bad-magic", b"TFM1" + good[4:], "malformed", "cozytensors.magic"),
        ("no-bytes", b"", "malformed", "cozytensors.magic"),
        ("truncated", good[:-1], "malformed", "cozytensors.truncated"),
        ("truncated-after-magic", b"TFC1", "malformed", "cozytensors.truncated"),
        ("trailing-byte", good + b"\x00", "malformed", "cozytensors.cbor"),
        ("non-shortest-int", b"TFC1\xa4" + cbor("source") + b"\xf6" + cbor("version") + b"\x18\x01"
         + cbor("pipeline") + b"\xf6" + cbor("components") + b"\x80", "malformed", "cozytensors.cbor"),
        ("unsorted-keys", b"TFC1\xa4" + cbor("version") + cbor(1) + cbor("source") + b"\xf6"
         + cbor("pipeline") + b"\xf6" + cbor("components") + b"\x80", "malformed", "cozytensors.cbor"),
        ("duplicate-key", b"TFC1\xa5" + cbor("source") + b"\xf6" + cbor("source") + b"\xf6" + cbor("version")
         + cbor(1) + cbor("pipeline") + b"\xf6" + cbor("components") + b"\x80", "malformed", "cozytensors.cbor"),
        ("indefinite-array", empty[:-1] + b"\x9f\xff", "malformed", "cozytensors.cbor"),
        ("tag", empty[:-1] + b"\xc0\x80", "malformed", "cozytensors.cbor"),
        ("undefined", tfc1({"version": 1, "pipeline": Raw(b"\xf7"), "source": None, "components": []}),
         "malformed", "cozytensors.cbor"),
        ("version-2", tfc1({"version": 2, "pipeline": None, "source": None, "components": []}),
         "unsupported", "cozytensors.version"),
        ("unknown-top-field", tfc1({"version": 1, "pipeline": None, "source": None, "components": [],
                                    "created": 0}), "malformed", "cozytensors.unknown_field"),
        ("missing-source", tfc1({"version": 1, "pipeline": None, "components": []}),
         "malformed", "cozytensors.missing_field"),
        ("source-31-bytes", tfc1({"version": 1, "pipeline": None, "source": b"\x00" * 31, "components": []}),
         "malformed", "cozytensors.source"),
        ("pipeline-unknown-field", tfc1({"version": 1, "pipeline": {"cls": "", "config": None, "x": 1},
                                         "source": None, "components": []}), "malformed", "cozytensors.unknown_field"),
        ("components-not-array", tfc1({"version": 1, "pipeline": None, "source": None, "components": {}}),
         "malformed", "cozytensors.shape"),
        ("component-unknown-field", variant(set_(unet, "lora", 1)), "malformed", "cozytensors.unknown_field"),
        ("duplicate-component", variant(lambda r: r["components"].append(dict(r["components"][0]))),
         "malformed", "cozytensors.duplicate_component"),
        ("component-name-slash", variant(set_(unet, "name", "a/b")), "malformed", "cozytensors.component_name"),
        ("component-name-dotdot", variant(set_(unet, "name", "..")), "malformed", "cozytensors.component_name"),
        ("component-name-empty", variant(set_(unet, "name", "")), "malformed", "cozytensors.component_name"),
        ("duplicate-tensor", variant(lambda r: te(r)["tensors"].append(dict(te(r)["tensors"][0]))),
         "malformed", "cozytensors.duplicate_tensor"),
        ("tensor-name-empty", variant(lambda r: te(r)["tensors"][0].__setitem__("name", "")),
         "malformed", "cozytensors.tensor_name"),
        ("tensor-name-nul", variant(lambda r: te(r)["tensors"][0].__setitem__("name", "a\x00b")),
         "malformed", "cozytensors.tensor_name"),
        ("tensor-unknown-field", variant(lambda r: te(r)["tensors"][0].__setitem__("offset", 0)),
         "malformed", "cozytensors.unknown_field"),
        ("tensor-records-and-encoding", variant(lambda r: te(r)["tensors"][0].__setitem__(
            "encoding", {"scheme": "s", "params": None, "parts": {}})), "malformed", "cozytensors.tensor_kind"),
        ("unknown-dtype", variant(lambda r: te(r)["tensors"][1].__setitem__("dtype", "F128")),
         "malformed", "cozytensors.dtype"),
        ("negative-dimension", variant(lambda r: te(r)["tensors"][1].__setitem__("shape", [-32])),
         "malformed", "cozytensors.shape"),
        ("records-short", variant(lambda r: te(r)["tensors"][1]["records"][0].__setitem__(1, 127)),
         "malformed", "cozytensors.data_size"),
        ("records-extra", variant(lambda r: te(r)["tensors"][1]["records"].append([b"\x11" * 32, 1])),
         "malformed", "cozytensors.data_size"),
        ("f4-odd-elements", variant(lambda r: unet(r)["tensors"][5].__setitem__("shape", [5])),
         "malformed", "cozytensors.byte_length"),
        ("record-digest-31", variant(lambda r: te(r)["tensors"][1]["records"][0].__setitem__(0, b"\x00" * 31)),
         "malformed", "cozytensors.record_digest"),
        ("record-length-0", variant(lambda r: te(r)["tensors"][1].__setitem__(
            "records", [[b"\x00" * 32, 0], [b"\x01" * 32, 128]])), "malformed", "cozytensors.record_length"),
        ("record-over-64mib", tfc1({"version": 1, "pipeline": None, "source": None, "components": [{
            "name": "m", "cls": "", "config": None, "assets": [], "tensors": [
                {"name": "t", "dtype": "U8", "shape": [GRID + 1], "records": [[b"\x00" * 32, GRID + 1]]}]}]}),
         "malformed", "cozytensors.record_length"),
        ("parts-empty", variant(lambda r: te(r)["tensors"].__setitem__(0, {
            "name": "e", "dtype": "F32", "shape": [1], "encoding": {"scheme": "s", "params": None, "parts": {}}})),
         "malformed", "cozytensors.parts_empty"),
        ("part-records-short", variant(lambda r: te(r)["tensors"].__setitem__(0, {
            "name": "e", "dtype": "F32", "shape": [1], "encoding": {"scheme": "s", "params": None, "parts": {
                "data": {"dtype": "U8", "shape": [4], "records": [[b"\x00" * 32, 3]]}}}})),
         "malformed", "cozytensors.data_size"),
        ("scheme-empty", variant(lambda r: te(r)["tensors"].__setitem__(0, {
            "name": "e", "dtype": "F32", "shape": [1], "encoding": {"scheme": "", "params": None, "parts": {
                "data": {"dtype": "U8", "shape": [4], "records": [[b"\x00" * 32, 4]]}}}})),
         "malformed", "cozytensors.scheme"),
        ("asset-dotdot", variant(lambda r: tok(r)["assets"][0].__setitem__("name", "../merges.txt")),
         "malformed", "cozytensors.asset_name"),
        ("asset-inner-dotdot", variant(lambda r: tok(r)["assets"][0].__setitem__("name", "a/../merges.txt")),
         "malformed", "cozytensors.asset_name"),
        ("asset-absolute", variant(lambda r: tok(r)["assets"][0].__setitem__("name", "/etc/passwd")),
         "malformed", "cozytensors.asset_name"),
        ("asset-nul", variant(lambda r: tok(r)["assets"][0].__setitem__("name", "merges\x00.txt")),
         "malformed", "cozytensors.asset_name"),
        ("asset-backslash", variant(lambda r: tok(r)["assets"][0].__setitem__("name", "a\\merges.txt")),
         "malformed", "cozytensors.asset_name"),
        ("asset-order", variant(lambda r: tok(r)["assets"].reverse()), "malformed", "cozytensors.asset_order"),
        ("duplicate-asset", variant(lambda r: tok(r)["assets"].insert(1, dict(tok(r)["assets"][0]))),
         "malformed", "cozytensors.duplicate_asset"),
        ("config-bytes", variant(set_(unet, "config", {"blob": b"\x00"})), "malformed", "cozytensors.config"),
        ("config-int-key", variant(set_(unet, "config", {1: "x"})), "malformed", "cozytensors.config"),
        ("config-2^53+1", variant(set_(unet, "config", {"n": 2**53 + 1})), "malformed", "cozytensors.config_number"),
        ("config-nan", variant(set_(unet, "config", {"n": Raw(b"\xf9\x7e\x00")})),
         "malformed", "cozytensors.config_number"),
        ("config-infinity", variant(set_(unet, "config", {"n": Raw(b"\xf9\x7c\x00")})),
         "malformed", "cozytensors.config_number"),
        ("config-float-not-shortest", variant(set_(unet, "config", {"n": Raw(b"\xfb" + struct.pack(">d", 0.5))})),
         "malformed", "cozytensors.cbor"),
        ("config-integral-float", variant(set_(unet, "config", {"n": Raw(b"\xf9\x3c\x00")})),
         "malformed", "cozytensors.cbor"),
    ]
    return bad


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    valid = []
    headers = valid_headers()
    for name, note, h, inputs in headers:
        b = tfc1(to_cbor(h))
        v = {"name": name, "note": note, "header": json_form(h), "hex": b.hex(), "id": sha(b)}
        if inputs:
            v["inputs"] = inputs
        valid.append(v)
        (OUT / f"{name}.cozytensors").write_bytes(b)
    pipeline = next(h for n, _, h, _ in headers if n == "pipeline")
    invalid = [{"name": n, "hex": b.hex(), "code": c, "rule": r} for n, b, c, r in invalid_headers(pipeline)]
    (OUT / "headers.json").write_text(json.dumps({"valid": valid, "invalid": invalid}, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())
