#!/usr/bin/env python3
"""Generates the TensorFS v1 golden vectors (plans and TFM1 manifests).

Independent of the TypeScript code under test: the files are written by the reference Python
writers (`safetensors`, `gguf`), the cuts are computed here from the spec's rules
(spec/v1/planner.md), every digest is Python's hashlib, and the manifests are encoded by the small
canonical CBOR encoder of vectors/canonical_cbor.py (spec/v1/manifest.md).

    python3 vectors/generate.py        # rewrites vectors/v1/ (deterministic: run twice, no diff)

Large inputs are not committed: a vector with "generated" gives the committed prefix (header)
file plus the tensor data as seeded byte runs (see `seeded_bytes`), which the tests regenerate.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
from pathlib import Path

import numpy as np
import gguf
from safetensors.numpy import save as st_save

sys.path.insert(0, str(Path(__file__).resolve().parent))
from canonical_cbor import cbor, head as cbor_head  # noqa: E402  (shared with cozytensors.py and repository.py)

OUT = Path(__file__).resolve().parent / "v1"
FILES = OUT / "files"
GRID = 64 * 1024 * 1024
MAX_RECORDS = 1_000_000


# --------------------------------------------------------------------------------------------
# Seeded bytes (mirrored by the tests): little-endian u32 words fmix32(seed * 0x9e3779b9 + j)


def seeded_bytes(seed: int, n: int) -> bytes:
    words = (n + 3) // 4
    with np.errstate(over="ignore"):
        h = (np.arange(words, dtype=np.uint64) + ((seed * 0x9E3779B9) & 0xFFFFFFFF)) & 0xFFFFFFFF
        h = h.astype(np.uint32)
        h ^= h >> np.uint32(16)
        h = (h.astype(np.uint64) * 0x85EBCA6B & 0xFFFFFFFF).astype(np.uint32)
        h ^= h >> np.uint32(13)
        h = (h.astype(np.uint64) * 0xC2B2AE35 & 0xFFFFFFFF).astype(np.uint32)
        h ^= h >> np.uint32(16)
    return h.astype("<u4").tobytes()[:n]


# --------------------------------------------------------------------------------------------
# The planner rules, written from the spec


def sha(b: bytes) -> str:
    return "sha256:" + hashlib.sha256(b).hexdigest()


def grid(start: int, end: int) -> list[tuple[int, int]]:
    return [(at, min(GRID, end - at)) for at in range(start, end, GRID)]


def safetensors_layout(data: bytes):
    """(data_start, [(name, offset, length)] in data order) or None if not safetensors."""
    try:
        n = struct.unpack("<Q", data[:8])[0]
        header = json.loads(data[8 : 8 + n].decode("utf-8"))
    except Exception:
        return None
    start = 8 + n
    tensors = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        tensors.append((name, start + b, e - b))
    tensors.sort(key=lambda t: t[1])
    covered = sum(t[2] for t in tensors)
    if start + covered != len(data):
        return None
    return start, tensors


def gguf_layout(path: Path):
    try:
        r = gguf.GGUFReader(path)
    except Exception:
        return None
    tensors = sorted(((t.name, int(t.data_offset), int(t.n_bytes)) for t in r.tensors), key=lambda t: t[1])
    size = path.stat().st_size
    if not tensors and int(r.data_offset) > size:
        # spec/gguf.md, data_truncated: with no tensors a file may end right after the tensor infos
        # (llama.cpp's vocabulary-only files); data_start is then the file size. Any other end short
        # of data_start is truncated. (gguf.GGUFReader reports the padded offset either way.)
        last = list(r.fields.values())[-1]
        infos_end = last.offset + sum(p.nbytes for p in last.parts)
        return (size, []) if size == infos_end else None
    return int(r.data_offset), tensors


def plan(path: Path, seams: dict[str, list[int]] | None = None) -> dict:
    data = path.read_bytes()
    if data[:4] == b"GGUF":
        layout, profile = gguf_layout(path), "gguf-v1"
    else:
        layout, profile = safetensors_layout(data), "safetensors-v1"
    if layout is None:
        cuts = [(0, len(data))] if data else []
        return {"profile": "blob-v1", "size": len(data), "records": records(data, cuts)}
    start, tensors = layout
    cuts = grid(0, start)
    spans = {}
    cursor = start
    for name, off, length in tensors:
        if length == 0:
            continue
        cuts += grid(cursor, off)
        first = len(cuts)
        seg = off
        for s in sorted(set((seams or {}).get(name, []))):
            cuts += grid(seg, off + s)
            seg = off + s
        cuts += grid(seg, off + length)
        spans[name] = [first, len(cuts) - 1]
        cursor = off + length
    cuts += grid(cursor, len(data))
    assert len(cuts) <= MAX_RECORDS
    return {"profile": profile, "size": len(data), "records": records(data, cuts), "tensors": spans}


def records(data: bytes, cuts) -> list[dict]:
    return [{"digest": sha(data[o : o + n]), "length": n} for o, n in cuts]


# --------------------------------------------------------------------------------------------
# Canonical CBOR (RFC 8949 §4.2.1): vectors/canonical_cbor.py, the one encoder of the vectors


def tfm1(manifest: dict) -> bytes:
    def entry(e):
        if e["kind"] == "symlink":
            return {"kind": "symlink", "path": e["path"], "target": e["target"]}
        return {
            "kind": "file",
            "mode": e["mode"],
            "path": e["path"],
            "profile": e["profile"],
            "records": [[bytes.fromhex(r["digest"][7:]), r["length"]] for r in e["records"]],
            "size": e["size"],
        }

    entries = sorted(manifest["entries"], key=lambda e: e["path"].encode("utf-8"))
    assert [e["path"] for e in entries] == [e["path"] for e in manifest["entries"]], "entries must be sorted"
    return b"TFM1" + cbor({"version": 1, "entries": [entry(e) for e in entries]})


# --------------------------------------------------------------------------------------------
# Inputs


def write(name: str, data: bytes) -> Path:
    p = FILES / name
    p.write_bytes(data)
    return p


def st_file(name: str, tensors: dict[str, np.ndarray], metadata=None) -> Path:
    return write(name, st_save(tensors, metadata=metadata))


def gguf_file(name: str, tensors: list[tuple], kvs: dict[str, str], endian=gguf.GGUFEndian.LITTLE) -> Path:
    """tensors: (name, array) or (name, uint8 byte rows, raw ggml type) for quantized data."""
    p = FILES / name
    w = gguf.GGUFWriter(p, "llama", endianess=endian)
    for k, v in kvs.items():
        w.add_string(k, v)
    for tname, arr, *raw in tensors:
        w.add_tensor(tname, arr, raw_dtype=raw[0] if raw else None)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return p


def arr(seed: int, n: int, dtype) -> np.ndarray:
    size = np.dtype(dtype).itemsize
    return np.frombuffer(seeded_bytes(seed, n * size), dtype=dtype).copy()


def main() -> None:
    FILES.mkdir(parents=True, exist_ok=True)
    for old in FILES.iterdir():
        old.unlink()
    vectors = []

    def add(name, path, note, seams=None, generated=None, strict=False):
        v = {"name": name, "note": note, "file": path.name}
        if seams:
            v["seams"] = seams
        if generated:
            v["generated"] = generated
        if strict:
            # Stricter than the reference reader used here (gguf.GGUFReader, or json.loads for
            # safetensors): it reads a tensor layout, the TensorFS rules do not, so the file is a blob.
            data = path.read_bytes()
            lenient = gguf_layout(path) if data[:4] == b"GGUF" else safetensors_layout(data)
            assert lenient is not None, f"{name}: the reference reading should accept it"
            v["plan"] = {"profile": "blob-v1", "size": len(data), "records": records(data, [(0, len(data))])}
        else:
            v["plan"] = plan(path, seams)
        vectors.append(v)

    add("blob-text", write("hello.txt", b"hello, tensorfs\n"), "an unrecognised file is one blob-v1 record")
    add("empty", write("empty.bin", b""), "an empty file is blob-v1 with no records")

    st = st_file(
        "basic.safetensors",
        {
            "embed.weight": arr(1, 96, np.float32).reshape(8, 12),
            "norm.weight": arr(2, 12, np.float16),
            "empty": np.zeros((0, 3), dtype=np.float32),
            "step": np.array([7], dtype=np.int64),
            "qkv.weight": arr(3, 90, np.uint8).reshape(9, 10),
        },
        metadata={"format": "pt"},
    )
    add("safetensors-basic", st, "header record, then one record per non-empty tensor in data order; "
        "the zero-size tensor has no record and no span")
    add("safetensors-seams", st, "seams cut a tensor (here qkv at 30 and 60) without moving bytes",
        seams={"qkv.weight": [60, 30]})
    split = st_file(
        "split.safetensors",
        {"q.weight": np.frombuffer(st_bytes_of(st, "qkv.weight")[0:30], np.uint8).copy(),
         "k.weight": np.frombuffer(st_bytes_of(st, "qkv.weight")[30:60], np.uint8).copy(),
         "v.weight": np.frombuffer(st_bytes_of(st, "qkv.weight")[60:90], np.uint8).copy()},
    )
    add("safetensors-split", split, "the split form of qkv: its three objects are the seamed fused tensor's")

    data = st.read_bytes()
    add("safetensors-truncated", write("truncated.safetensors", data[:-1]),
        "a safetensors file missing its last byte is blob-v1, never an error")
    bad = bytearray(data)
    bad[8] = ord("[")
    add("safetensors-bad-json", write("bad-json.safetensors", bytes(bad)),
        "a header that is not a JSON object makes the file blob-v1")

    gg = gguf_file(
        "basic.gguf",
        [
            ("tok_embd.weight", arr(10, 3 * 8, np.float32).reshape(8, 3)),
            ("blk.0.attn_norm.weight", arr(11, 3, np.float32)),
            ("blk.0.ffn.weight", arr(12, 10, np.float16)),
            ("output_norm.weight", arr(13, 3, np.float32)),
        ],
        {"general.name": "tiny"},
    )
    add("gguf-basic", gg, "header region, tensors, and alignment padding as records of their own; "
        "the two 20-byte paddings are one object")
    add("gguf-truncated", write("truncated.gguf", gg.read_bytes()[:100]),
        "a truncated GGUF file is blob-v1")
    Q = gguf.GGMLQuantizationType
    add("gguf-quantized", gguf_file(
        "quantized.gguf",
        [
            ("blk.0.attn_q.weight", np.frombuffer(seeded_bytes(14, 136), np.uint8).reshape(2, 68), Q.Q8_0),
            ("blk.0.ffn_down.weight", np.frombuffer(seeded_bytes(15, 144), np.uint8).reshape(1, 144), Q.Q4_K),
            ("output_norm.weight", arr(16, 5, np.float32)),
        ],
        {"general.name": "quantized"},
    ), "block-quantized tensors (Q8_0 2x64, Q4_K 1x256) are cut by their byte length like any tensor")
    add("gguf-big-endian", gguf_file(
        "big-endian.gguf",
        [("w", arr(17, 7, np.float32)), ("v", arr(18, 3, np.float32))],
        {"general.name": "be"},
        gguf.GGUFEndian.BIG,
    ), "a big-endian GGUF file is gguf-v1 too; the cut rules do not depend on byte order")

    # The 64 MiB split, generated at test time: committed prefix + seeded tensor data.
    small, big = 1000, GRID + 4096
    big_tensors = {"a": np.frombuffer(seeded_bytes(21, small), np.uint8).copy(),
                   "big": np.frombuffer(seeded_bytes(22, big), np.uint8).copy()}
    full = st_save(big_tensors)
    data_start = len(full) - small - big
    head = write("big-split.prefix.safetensors", full[:data_start])
    tmp = FILES / "big-split.tmp"
    tmp.write_bytes(full)
    generated = {"prefix": head.name, "data": [{"seed": 21, "length": small}, {"seed": 22, "length": big}]}
    order = safetensors_layout(full)[1]
    assert [t[0] for t in order] == ["a", "big"], order
    add("safetensors-64mib-split", tmp, "a tensor over 64 MiB is cut every 64 MiB from its own start",
        generated=generated)
    add("safetensors-64mib-seams", tmp, "each seam segment restarts the 64 MiB grid",
        seams={"big": [1000, GRID + 2000]}, generated=generated)
    for v in vectors:
        if v["file"] == tmp.name:
            v["file"] = None
    tmp.unlink()

    boundary_plans(add, st, gg)

    (OUT / "plans.json").write_text(json.dumps(vectors, indent=2, ensure_ascii=False) + "\n")
    write_manifests(vectors)
    write_hashes()


def st_raw(name: str, header: bytes, data: bytes, pad: bool = True) -> Path:
    """A safetensors file written by hand (the reference writer cannot produce these headers)."""
    if pad:
        header += b" " * ((8 - len(header) % 8) % 8)
    return write(name, struct.pack("<Q", len(header)) + header + data)


def boundary_plans(add, st: Path, gg: Path) -> None:
    """Identity boundaries: where the profile changes, and the cases stricter than the reference."""
    d4 = bytes([1, 2, 3, 4])
    t = b'{"dtype":"U8","shape":[4],"data_offsets":[0,4]}'
    add("safetensors-leading-space", st_raw("leading-space.safetensors", b" {\"a\":" + t + b"}", d4),
        "JSON whitespace before the header object is accepted, as by the reference (serde_json)")
    add("safetensors-duplicate-tensor", st_raw("duplicate-tensor.safetensors", b'{"a":' + t + b',"a":' + t + b"}", d4),
        "stricter: a tensor name twice in the header is blob-v1 (json.loads keeps the last one)", strict=True)
    add("safetensors-duplicate-escaped", st_raw("duplicate-escaped.safetensors",
        b'{"a":' + t + b',"\\u0061":' + t + b"}", d4),
        "stricter: a name and its escaped spelling (\\u0061 = a) are the same name, so blob-v1", strict=True)
    add("safetensors-duplicate-field", st_raw("duplicate-field.safetensors",
        b'{"a":{"dtype":"U8","dtype":"U8","shape":[4],"data_offsets":[0,4]}}', d4),
        "stricter: a descriptor field twice is blob-v1", strict=True)
    add("safetensors-float-offset", st_raw("float-offset.safetensors",
        b'{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4.0]}}', d4),
        "stricter: an offset written 4.0 is not an integer, so blob-v1 (json.loads reads 4.0 == 4)", strict=True)
    add("safetensors-metadata-number", st_raw("metadata-number.safetensors",
        b'{"__metadata__":{"epoch":1},"a":' + t + b"}", d4),
        "a __metadata__ value that is not a string is blob-v1 (the reference's HashMap<String,String>)", strict=True)

    Q = gguf.GGMLQuantizationType
    a3 = arr(30, 3, np.float32)
    add("gguf-name-63-bytes", gguf_file("name-63.gguf", [("n" * 63, a3)], {"general.name": "bound"}),
        "a tensor name of 63 bytes, the longest ggml takes (GGML_MAX_NAME 64 with its NUL), is gguf-v1")
    add("gguf-name-64-bytes", gguf_file("name-64.gguf", [("n" * 64, a3)], {"general.name": "bound"}),
        "one byte past the name bound: blob-v1 (gguf-py reads it, ggml refuses it)", strict=True)
    add("gguf-5-dims", gguf_file("dims-5.gguf", [("w", arr(31, 32, np.float32).reshape(2, 2, 2, 2, 2))],
        {"general.name": "bound"}),
        "one dimension past GGML_MAX_DIMS (4): blob-v1 (gguf-py reads it, ggml refuses it)", strict=True)
    nested = FILES / "nested-array.gguf"
    w = gguf.GGUFWriter(nested, "llama")
    w.add_string("general.name", "nested")
    w.add_array("x.nested", [[1, 2], [3]])
    w.add_tensor("w", a3)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    add("gguf-nested-array", nested, "an array of arrays: blob-v1 (gguf-py reads it, ggml refuses it)", strict=True)
    add("gguf-trailing-byte", write("trailing-byte.gguf", gg.read_bytes() + b"\0"),
        "stricter: one byte after the last tensor's padding is blob-v1 (ggml and gguf-py ignore it)", strict=True)

    vocab = FILES / "vocab-padded.gguf"
    w = gguf.GGUFWriter(vocab, "llama")
    w.add_string("general.name", "vocab")
    w.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "a", "bc", "\u00e9"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    padded = vocab.read_bytes()
    r = gguf.GGUFReader(vocab)
    last = list(r.fields.values())[-1]
    infos_end = last.offset + sum(p.nbytes for p in last.parts)
    assert len(padded) == int(r.data_offset) > infos_end, (len(padded), r.data_offset, infos_end)
    add("gguf-vocab-only-padded", vocab, "no tensors, padded to the alignment: gguf-v1, one header record")
    add("gguf-vocab-only-unpadded", write("vocab-unpadded.gguf", padded[:infos_end]),
        "no tensors and no padding after the tensor infos (llama.cpp's vocabulary-only files): gguf-v1, "
        "data_start is the file size, one header record")
    cut = infos_end + 1
    assert cut < len(padded)
    add("gguf-vocab-only-partial-padding", write("vocab-partial-padding.gguf", padded[:cut]),
        "no tensors, but the padding is cut short: truncated, so blob-v1")


def st_bytes_of(path: Path, name: str) -> bytes:
    data = path.read_bytes()
    start, tensors = safetensors_layout(data)
    for n, off, length in tensors:
        if n == name:
            return data[off : off + length]
    raise KeyError(name)


def write_manifests(plans: list[dict]) -> None:
    by = {v["name"]: v["plan"] for v in plans}

    def file(path, name, mode=0o644):
        p = by[name]
        return {"path": path, "kind": "file", "mode": mode, "size": p["size"], "profile": p["profile"],
                "records": p["records"]}

    every_kind = {
        "version": 1,
        "entries": [
            file(".gitattributes", "blob-text"),
            {"path": "current", "kind": "symlink", "target": "models/model.safetensors"},
            file("empty.bin", "empty"),
            file("models/big.safetensors", "safetensors-64mib-split"),
            {"path": "models/latest.gguf", "kind": "symlink", "target": "../weights/tiny.gguf"},
            file("models/model.safetensors", "safetensors-basic"),
            file("run.sh", "blob-text", 0o755),
            {"path": "weights/huge.bin", "kind": "file", "mode": 0o644, "size": 5 * 2**30 + 3,
             "profile": "blob-v1", "records": [{"digest": sha(b"not the real bytes"), "length": 5 * 2**30 + 3}]},
            file("weights/tiny.gguf", "gguf-basic"),
            file("z\u00e9/\u4e2d\u6587.bin", "blob-text"),
        ],
    }
    # Byte order of UTF-8 paths, where it differs from other orders a port might use: case
    # (uppercase first), a separator against its neighbours ('-' 2D < '.' 2E < '/' 2F < '0' 30, so
    # "d-e" and "d.e" sort before "d/e" though a per-component sort puts the folder first), a name
    # that prefixes another, NFC and NFD spellings kept apart (no normalisation), and U+E000
    # before an astral character (UTF-16 code-unit order is the other way round).
    blob = by["blob-text"]
    order_paths = ["A.bin", "B", "README.md", "a.bin", "b", "readme.md", "d-e", "d.e", "d/e", "d0",
                   "ab", "ab.c", "abc", "e\u0301", "z", "\u00e9", "\u00ff", "\u0100", "\ue000", "\U0001f600",
                   "\uffe0/x", "\u4e2d/\u6587", "\u4e2d\u6587"]
    path_order = {
        "version": 1,
        "entries": [file(p, "blob-text") for p in sorted(order_paths, key=lambda p: p.encode("utf-8"))],
    }
    assert blob["records"]
    manifests = []
    for name, note, m in [
        ("empty", "no entries", {"version": 1, "entries": []}),
        ("every-kind", "every entry kind and profile, both modes, an empty file, a blob over 4 GiB, "
         "symlinks, nested and non-ASCII paths", every_kind),
        ("path-order", "entries in UTF-8 byte order where other orders differ: case, separators, "
         "prefixes, NFC/NFD, U+E000 vs an astral character", path_order),
    ]:
        b = tfm1(m)
        manifests.append({"name": name, "note": note, "manifest": m, "hex": b.hex(), "id": sha(b)})

    good = tfm1({"version": 1, "entries": []})
    invalid = [
        ("bad-magic", b"TFM2" + good[4:], "malformed", "manifest.magic"),
        ("non-shortest-int", good[:-1] + b"\x18\x01", "malformed", "cbor.non_shortest"),
        ("unsorted-keys", b"TFM1" + b"\xa2" + cbor("version") + cbor(1) + cbor("entries") + cbor([]),
         "malformed", "cbor.key_order"),
        ("version-2", b"TFM1" + cbor({"version": 2, "entries": []}), "unsupported", "manifest.version"),
        ("trailing-byte", good + b"\x00", "malformed", "cbor.trailing"),
        ("unknown-key", b"TFM1" + cbor({"version": 1, "entries": [], "created": 0}), "malformed", "manifest.unknown_key"),
        ("indefinite-array", b"TFM1" + b"\xa2" + cbor("entries") + b"\x9f\xff" + cbor("version") + cbor(1),
         "malformed", "cbor.head"),
    ]
    one = by["blob-text"]

    def entry_map(path):
        return {"kind": "file", "mode": 0o644, "path": path, "profile": "blob-v1",
                "records": [[bytes.fromhex(r["digest"][7:]), r["length"]] for r in one["records"]],
                "size": one["size"]}

    def raw(entries):
        """TFM1 bytes of entries exactly in the order given (no sorting, no path checks)."""
        return b"TFM1" + cbor({"version": 1, "entries": entries})

    def files(*paths):
        return raw([entry_map(p) for p in paths])

    def with_raw_path(path_bytes: bytes) -> bytes:
        """One file entry whose path is the given bytes as a CBOR text string (any bytes, even not UTF-8)."""
        marker = "\u0001" * len(path_bytes)
        b = files(marker)
        return b.replace(cbor(marker), cbor_head(3, len(path_bytes)) + path_bytes)

    link = {"kind": "symlink", "path": "l", "target": "../outside"}
    invalid += [
        ("order-case", files("a", "B"), "malformed", "manifest.entries_order"),
        ("order-utf16", files("\U0001f600", "\ue000"), "malformed", "manifest.entries_order"),
        ("order-per-component", files("d/e", "d-e"), "malformed", "manifest.entries_order"),
        ("order-nfc-before-nfd", files("\u00e9", "e\u0301"), "malformed", "manifest.entries_order"),
        ("duplicate-path", files("a", "a"), "malformed", "manifest.entries_order"),
        ("path-below-file", files("a", "a/b"), "malformed", "manifest.path_below_entry"),
        ("path-dot-segment", files("a/../b"), "malformed", "manifest.path_dot_segment"),
        ("path-dot", files("./a"), "malformed", "manifest.path_dot_segment"),
        ("path-absolute", files("/a"), "malformed", "manifest.path_absolute"),
        ("path-empty-segment", files("a//b"), "malformed", "manifest.path_empty_segment"),
        ("path-trailing-slash", files("a/"), "malformed", "manifest.path_empty_segment"),
        ("path-empty", files(""), "malformed", "manifest.path_empty"),
        ("path-backslash", files("a\\b"), "malformed", "manifest.path_chars"),
        ("path-control", files("a\tb"), "malformed", "manifest.path_chars"),
        ("path-segment-256-bytes", files("x" * 256), "malformed", "manifest.path_segment_length"),
        ("path-segment-256-bytes-utf8", files("\u00e9" * 128), "malformed", "manifest.path_segment_length"),
        ("path-4097-bytes", files("/".join(["y" * 255] * 15 + ["y" * 254, "zz"])), "malformed", "manifest.path_length"),
        ("path-not-utf8", with_raw_path(b"a\xff"), "malformed", "cbor.utf8"),
        ("path-surrogate-utf8", with_raw_path(b"\xed\xa0\x80"), "malformed", "cbor.utf8"),
        ("symlink-escape", raw([link]), "malformed", "manifest.symlink_escape"),
    ]
    # The longest path (4096 bytes) and segment (255 bytes) are valid: the bounds are inclusive.
    longest = "/".join(["y" * 255] * 15 + ["y" * 254, "z"])
    assert len(longest.encode()) == 4096 and len(("\u00e9" * 127 + "x").encode()) == 255
    for name, note, paths in [
        ("path-bounds", "the longest segment (255 bytes, also as 2-byte characters) and the longest path "
         "(4096 bytes)", sorted([longest, "\u00e9" * 127 + "x"], key=lambda p: p.encode("utf-8"))),
    ]:
        m = {"version": 1, "entries": [file(p, "blob-text") for p in paths]}
        b = tfm1(m)
        manifests.append({"name": name, "note": note, "manifest": m, "hex": b.hex(), "id": sha(b)})
    rejects = [{"name": n, "hex": b.hex(), "code": c, "rule": r} for n, b, c, r in invalid]
    (OUT / "manifests.json").write_text(
        json.dumps({"valid": manifests, "invalid": rejects}, indent=2, ensure_ascii=False) + "\n")


def write_hashes() -> None:
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}" for p in sorted(FILES.iterdir())]
    (OUT / "files.sha256").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
