"""Replies stay a few MB per message (VS Code relays buffers as JS number arrays).

A large trace is asked for in one request and must arrive over many
messages, none over the cap, in the order asked, and decode to the same
arrays as the chunks themselves — big chunks split into parts included.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnscope import AttentionTrace, AttentionWidget
from attnscope.encode.byte_layout import ALIGN
from attnscope.encode.chunks import encode_chunk, parse_key
from attnscope.encode.messages import MESSAGE_BYTES

DTYPES = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "f32": np.float32}


def softmax_rows(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    x = rng.standard_normal(shape).astype(np.float32)
    e = np.exp(x - x.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def decode(messages: list[tuple[dict[str, Any], list[bytes]]]) -> list[tuple[str, dict[str, Any]]]:
    """What the browser does: whole chunks at once, parts joined once the last has come."""
    out: list[tuple[str, dict[str, Any]]] = []
    pending: dict[str, list[bytes]] = {}
    for content, buffers in messages:
        for chunk in content["chunks"]:
            if "error" in chunk:
                out.append((chunk["key"], {"error": chunk["error"]}))
                continue
            if "part" in chunk:
                pieces = pending.setdefault(chunk["key"], [])
                assert chunk["part"] == len(pieces), "parts out of order"
                pieces.append(buffers[0])
                if chunk["part"] == chunk["parts"] - 1:
                    out.append(
                        (chunk["key"], split(chunk["arrays"], b"".join(pending.pop(chunk["key"]))))
                    )
                continue
            arrays = {
                a["name"]: np.frombuffer(buffers[a["buffer"]], DTYPES[a["dtype"]]).reshape(
                    a["shape"]
                )
                for a in chunk["arrays"]
            }
            out.append((chunk["key"], arrays))
    assert not pending, f"parts never completed: {list(pending)}"
    return out


def split(specs: list[dict[str, Any]], data: bytes) -> dict[str, Any]:
    arrays, offset = {}, 0
    for spec in specs:
        offset += -offset % ALIGN
        dtype = np.dtype(DTYPES[spec["dtype"]])
        count = int(np.prod(spec["shape"]))
        arrays[spec["name"]] = np.frombuffer(data, dtype, count, offset).reshape(spec["shape"])
        offset += count * dtype.itemsize
    return arrays


def test_a_large_trace_arrives_over_many_capped_messages_in_order() -> None:
    n = 2100  # one full-resolution head: 4.4 MB, over the 4 MiB cap on its own
    trace = AttentionTrace(
        [str(i) for i in range(n)], softmax_rows(np.random.default_rng(0), (2, 1, n, n))
    )
    widget = AttentionWidget(trace)
    keys = ["thumbs:self", "top:self:0", "attn:self:0:0", "top:self:1", "attn:self:1:0"]
    messages = widget.answer({"type": "request", "keys": keys})
    assert len(messages) >= 5
    for _, buffers in messages:
        assert sum(len(b) for b in buffers) <= MESSAGE_BYTES
    got = decode(messages)
    assert [key for key, _ in got] == keys
    for key, arrays in got:
        expected = dict(encode_chunk(trace, parse_key(key, trace)))
        assert arrays.keys() == expected.keys()
        for name, array in expected.items():
            np.testing.assert_array_equal(arrays[name], array)


def test_a_small_cap_splits_every_chunk_and_keeps_errors_in_place() -> None:
    trace = AttentionTrace(
        [str(i) for i in range(50)], softmax_rows(np.random.default_rng(1), (2, 3, 50, 50))
    )
    keys = ["attn:self:0:1", "nope:self", "top:self:1"]
    messages = AttentionWidget(trace).answer({"type": "request", "keys": keys}, max_bytes=1000)
    assert all(sum(len(b) for b in buffers) <= 1000 for _, buffers in messages)
    assert len(messages) > 5
    errors = [c["key"] for content, _ in messages for c in content["chunks"] if "error" in c]
    assert errors == ["nope:self"]
    assert [
        key for key, _ in decode([m for m in messages if "error" not in m[0]["chunks"][0]])
    ] == [
        "attn:self:0:1",
        "top:self:1",
    ]
