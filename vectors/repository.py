#!/usr/bin/env python3
"""Generates the repository v1 golden vectors (vectors/v1/repository/repository.json).

Independent of the TypeScript code under test: revision documents are encoded by the canonical CBOR
encoder of vectors/canonical_cbor.py, written from the specs (a revision document uses unsigned
integers, byte and text strings, arrays, maps, null), ids come from Python's hashlib, the ref
layout and the variant names are computed by this script's own reading of the spec, and every
rejection is built by hand from a valid document with exactly one thing wrong.

    python3 vectors/repository.py     # rewrites vectors/v1/repository/ (deterministic)
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from canonical_cbor import Raw, cbor, head  # noqa: E402,F401  (the one canonical CBOR encoder of the vectors)

OUT = Path(__file__).resolve().parent / "v1" / "repository"
MAGIC = b"TFR1"


# --------------------------------------------------------------------------------------------
# Canonical CBOR: vectors/canonical_cbor.py (a revision document holds no booleans or floats)


def sha(b: bytes) -> str:
    return "sha256:" + hashlib.sha256(b).hexdigest()


def raw(d: str) -> bytes:
    return bytes.fromhex(d[len("sha256:"):])


def digest_of(label: str) -> str:
    """A stand-in object id: the SHA-256 of a label (revision documents only name ids)."""
    return sha(label.encode("utf-8"))


# --------------------------------------------------------------------------------------------
# Revision documents: the JSON form (spec) and the TFR1 bytes


def to_cbor(doc: dict) -> dict:
    """The CBOR map of a document in JSON form (ids as 32 raw bytes, `version` added)."""
    nullable = lambda d: None if d is None else raw(d)  # noqa: E731
    return {
        "author": doc["author"],
        "branch": doc["branch"],
        "history": [
            {
                "author": m["author"],
                "commit": raw(m["commit"]),
                "message": m["message"],
                "previous": nullable(m["previous"]),
                "target": raw(m["target"]),
                "time": m["time"],
            }
            for m in doc["history"]
        ],
        "message": doc["message"],
        "parent": nullable(doc["parent"]),
        "repo": doc["repo"],
        "target": raw(doc["target"]),
        "time": doc["time"],
        "upstream": None if doc["upstream"] is None else dict(doc["upstream"]),
        "version": 1,
    }


def tfr1(m) -> bytes:
    return MAGIC + cbor(m)


def valid_documents() -> list[tuple[str, str, dict]]:
    tree1, tree2, tree3 = digest_of("tree 1"), digest_of("tree 2"), digest_of("tree 3")
    header = digest_of("checkpoint header")
    created = {
        "repo": "acme/model",
        "branch": "draft",
        "target": tree1,
        "parent": None,
        "time": 1767225600000,
        "author": "alice",
        "message": "",
        "upstream": None,
        "history": [],
    }
    created_id = sha(tfr1(to_cbor(created)))
    second = {
        **created,
        "target": tree2,
        "parent": created_id,
        "time": 1767225660000,
        "author": "bob",
        "message": "int8 and bf16 variants",
        "history": [
            {"commit": created_id, "previous": None, "target": tree1, "time": 1767225600000, "author": "alice", "message": ""}
        ],
    }
    second_id = sha(tfr1(to_cbor(second)))
    legacy = digest_of("a tree a ref named before repositories")
    third = {
        "repo": "gpt2",
        "branch": "main",
        "target": tree3,
        "parent": second_id,
        "time": 1767225720123,
        "author": "carol",
        "message": "modèle révisé — 模型 ✓",
        "upstream": {"source": "hf", "revision": "0123456789abcdef0123456789abcdef01234567"},
        "history": [
            {"commit": second_id, "previous": created_id, "target": tree2, "time": 1767225660000, "author": "bob",
             "message": "int8 and bf16 variants"},
            {"commit": created_id, "previous": legacy, "target": tree1, "time": 1767225600000, "author": "alice",
             "message": ""},
        ],
    }
    checkpoint = {
        "repo": "owner/name",
        "branch": "release-candidate_1.0",
        "target": header,
        "parent": None,
        "time": 2**53 - 1,
        "author": "",
        "message": "",
        "upstream": None,
        "history": [],
    }
    limits = {
        "repo": "o" * 80 + "/" + "n" * 79,  # 160 characters, the longest repository id
        "branch": "b" * 32,
        "target": tree1,
        "parent": tree2,
        "time": 0,
        "author": "a" * 128,
        "message": "é" * 512,  # 1024 UTF-8 bytes
        "upstream": {"source": "s" * 512, "revision": "r" * 512},
        "history": [],
    }
    return [
        ("created", "a branch created: no parent, no history", created),
        ("moved", "the second move: the first is its parent and its history", second),
        ("history", "a third move, with an upstream, non-ASCII text, and a first move that started from a bare tree", third),
        ("checkpoint-target", "a branch naming a checkpoint header; the largest time", checkpoint),
        ("limits", "every length at its bound: repository id 160, branch 32, author 128, message 1024, upstream 512 bytes", limits),
    ]


def invalid_documents(base: dict) -> list[tuple[str, bytes, str, str]]:
    good = to_cbor(base)
    body = cbor(good)

    def edit(fn) -> bytes:
        m = copy.deepcopy(good)
        fn(m)
        return tfr1(m)

    def with_(key, value):
        def fn(m):
            m[key] = value
        return fn

    def without(key):
        def fn(m):
            del m[key]
        return fn

    def move(key, value):
        def fn(m):
            m["history"][0] = {**m["history"][0], key: value}
        return fn

    # A map of the same items with two keys swapped (not in canonical order).
    items = sorted((cbor(k), cbor(x)) for k, x in good.items())
    swapped = items[:]
    swapped[0], swapped[1] = swapped[1], swapped[0]
    unsorted = MAGIC + head(5, len(items)) + b"".join(k + x for k, x in swapped)
    duplicate = MAGIC + head(5, len(items) + 1) + b"".join(k + x for k, x in items) + items[-1][0] + items[-1][1]
    indefinite = MAGIC + b"\xbf" + b"".join(k + x for k, x in items) + b"\xff"
    long_time = MAGIC + head(5, len(items)) + b"".join(
        k + (b"\x18\x05" if k == cbor("time") else x) for k, x in items  # 5 in two bytes, not one
    )
    rule = "repo.bad_revision"
    bad = [
        ("bad-magic", b"TFM1" + body, "malformed", rule),
        ("no-bytes", b"", "malformed", rule),
        ("magic-only", MAGIC, "malformed", rule),
        ("trailing-byte", MAGIC + body + b"\x00", "malformed", rule),
        ("not-a-map", MAGIC + cbor([1]), "malformed", rule),
        ("unsorted-keys", unsorted, "malformed", rule),
        ("duplicate-key", duplicate, "malformed", rule),
        ("indefinite-map", indefinite, "malformed", rule),
        ("non-shortest-time", long_time, "malformed", rule),
        ("no-version", edit(without("version")), "malformed", rule),
        ("no-history", edit(without("history")), "malformed", rule),
        ("extra-key", edit(with_("zzz", 1)), "malformed", rule),
        ("version-2", edit(with_("version", 2)), "malformed", rule),
        ("target-31-bytes", edit(with_("target", bytes(31))), "malformed", rule),
        ("target-as-text", edit(with_("target", base["target"])), "malformed", rule),
        ("target-null", edit(with_("target", None)), "malformed", rule),
        ("parent-as-text", edit(with_("parent", base["history"][0]["commit"])), "malformed", rule),
        ("time-negative", edit(with_("time", -1)), "malformed", rule),
        ("time-as-text", edit(with_("time", "1767225660000")), "malformed", rule),
        ("time-past-2^53", edit(with_("time", 2**53)), "malformed", rule),
        ("author-129-bytes", edit(with_("author", "a" * 129)), "malformed", rule),
        ("message-1025-bytes", edit(with_("message", "m" * 1025)), "malformed", rule),
        ("message-bytes", edit(with_("message", b"text")), "malformed", rule),
        ("repo-underscore", edit(with_("repo", "_branches/x")), "malformed", rule),
        ("repo-empty-segment", edit(with_("repo", "acme//model")), "malformed", rule),
        ("branch-with-slash", edit(with_("branch", "a/b")), "malformed", rule),
        ("branch-40-hex", edit(with_("branch", "0123456789abcdef0123456789abcdef01234567")), "malformed", rule),
        ("branch-33-chars", edit(with_("branch", "b" * 33)), "malformed", rule),
        ("upstream-extra-key", edit(with_("upstream", {"revision": "r", "source": "s", "x": "y"})), "malformed", rule),
        ("upstream-no-source", edit(with_("upstream", {"revision": "r"})), "malformed", rule),
        ("upstream-513-bytes", edit(with_("upstream", {"revision": "r", "source": "s" * 513})), "malformed", rule),
        ("history-not-list", edit(with_("history", {})), "malformed", rule),
        ("move-no-commit", edit(lambda m: m["history"].__setitem__(0, {k: v for k, v in m["history"][0].items() if k != "commit"})), "malformed", rule),
        ("move-extra-key", edit(move("upstream", None)), "malformed", rule),
        ("move-commit-null", edit(move("commit", None)), "malformed", rule),
        ("move-author-129-bytes", edit(move("author", "a" * 129)), "malformed", rule),
        ("invalid-utf8", MAGIC + body.replace(cbor(base["message"]), head(3, len(base["message"].encode())) + b"\xff" * len(base["message"].encode()), 1), "malformed", rule),
    ]
    for name, data, _code, _rule in bad:
        assert data != tfr1(good), name
    return bad


# --------------------------------------------------------------------------------------------
# The ref layout, specs and variant names (spec/v1/repository.md), as this script reads them


def branch_ref(repo: str, branch: str) -> str:
    return repo if branch == "main" else f"_branches/{repo}/{branch}"


def tag_ref(repo: str, tag: str) -> str:
    return f"_tags/{repo}/{tag}"


def variant_name(path: str) -> str | None:
    if not path.endswith(".cozytensors"):
        return None
    base = path.rsplit("/", 1)[-1][: -len(".cozytensors")]
    return base.split(".", 1)[1] if "." in base else ""


def layout() -> list[dict]:
    out = []
    for repo, kind, name in [
        ("acme/model", "branch", "main"),
        ("acme/model", "branch", "draft"),
        ("acme/model", "tag", "v1.0"),
        ("gpt2", "branch", "main"),
        ("gpt2", "branch", "exp"),
        ("gpt2", "tag", "v2"),
        ("a/b/c", "branch", "d"),
    ]:
        ref = branch_ref(repo, name) if kind == "branch" else tag_ref(repo, name)
        out.append({"repo": repo, "kind": kind, "name": name, "ref": ref})
    return out


def variants() -> list[dict]:
    paths = [
        "model.cozytensors",
        "model.int8.cozytensors",
        "model.bf16.cozytensors",
        "unet/model.fp16.cozytensors",
        "model.q4.k.cozytensors",
        "README.md",
        "model.safetensors",
        "cozytensors",
    ]
    return [{"path": p, "variant": variant_name(p)} for p in paths]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    docs = valid_documents()
    valid = []
    for name, note, doc in docs:
        data = tfr1(to_cbor(doc))
        valid.append({"name": name, "note": note, "document": doc, "hex": data.hex(), "id": sha(data)})
    # The chain is consistent: each document's parent is the previous one's id.
    assert docs[1][2]["parent"] == valid[0]["id"] and docs[2][2]["parent"] == valid[1]["id"]
    invalid = [
        {"name": n, "hex": b.hex(), "code": c, "rule": r} for n, b, c, r in invalid_documents(docs[1][2])
    ]
    out = {"revisions": {"valid": valid, "invalid": invalid}, "layout": layout(), "variants": variants()}
    (OUT / "repository.json").write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    for v in valid:
        (OUT / f"{v['name']}.tfr1").write_bytes(bytes.fromhex(v["hex"]))


if __name__ == "__main__":
    main()
