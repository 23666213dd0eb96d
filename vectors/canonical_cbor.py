"""The canonical CBOR encoder of the vector generators (RFC 8949 §4.2.1 core deterministic encoding).

Written from the specs (spec/v1/manifest.md, spec/v1/cozytensors.md, spec/v1/repository.md), not
from the TypeScript code under test; shared by vectors/generate.py, vectors/cozytensors.py and
vectors/repository.py so the three encode one way. Covers what those documents hold: unsigned and
negative integers, byte and text strings, arrays, maps (keys sorted by their encodings), null,
booleans, and JSON numbers by the cozytensors rule (an integral float is an integer, any other
float the shortest of half, single or double precision that keeps its value).
"""

from __future__ import annotations

import math
import struct


class Raw(bytes):
    """Bytes spliced into the output as they are (to build invalid documents)."""


def head(major: int, arg: int) -> bytes:
    if arg < 24:
        return bytes([major << 5 | arg])
    for info, fmt in ((24, ">B"), (25, ">H"), (26, ">I"), (27, ">Q")):
        if arg < 1 << (8 * struct.calcsize(fmt)):
            return bytes([major << 5 | info]) + struct.pack(fmt, arg)
    raise ValueError(arg)


def number(v) -> bytes:
    if isinstance(v, float) and v.is_integer() and -(2**64) <= v < 2**64:
        v = int(v)
    if isinstance(v, int):
        return head(0, v) if v >= 0 else head(1, -1 - v)
    assert math.isfinite(v), "JSON numbers are finite"
    for tag, fmt in ((0xF9, ">e"), (0xFA, ">f")):
        try:
            b = struct.pack(fmt, v)
        except OverflowError:
            continue
        if struct.unpack(fmt, b)[0] == v:
            return bytes([tag]) + b
    return b"\xfb" + struct.pack(">d", v)


def cbor(v) -> bytes:
    if isinstance(v, Raw):
        return bytes(v)
    if v is None:
        return b"\xf6"
    if isinstance(v, bool):
        return b"\xf5" if v else b"\xf4"
    if isinstance(v, (int, float)):
        return number(v)
    if isinstance(v, bytes):
        return head(2, len(v)) + v
    if isinstance(v, str):
        b = v.encode("utf-8")
        return head(3, len(b)) + b
    if isinstance(v, list):
        return head(4, len(v)) + b"".join(cbor(x) for x in v)
    if isinstance(v, dict):
        # Keys sorted by their encodings: shorter first, then bytewise.
        items = sorted((cbor(k), cbor(x)) for k, x in v.items())
        return head(5, len(items)) + b"".join(k + x for k, x in items)
    raise TypeError(type(v))
