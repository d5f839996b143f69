"""Golden fixtures of the wire, written by Python and read by both test suites.

``python tests/wire_fixtures.py`` writes ``tests/fixtures/wire/{keys,meta,chunks}.json``;
``tests/test_wire_fixtures.py`` checks they are what this module makes now, and
``tests/js/wire_fixtures.test.ts`` checks the TypeScript side reads them alike
(``stream_change.json`` is written by hand: a table of cases, not an output).
Every number here is exact in float32 (halves and quarters), so the files do not
depend on the machine that wrote them.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np

from attnscope import AttentionTrace
from attnscope.encode.chunks import all_keys
from attnscope.encode.keys import (
    KINDS,
    ChunkKey,
    ChunkKind,
    attn_key,
    pseudo_key,
    qk_key,
    read_key,
    side_key,
    split_side,
    stats_key,
    thumbs_key,
    tile_key,
    top_key,
)
from attnscope.encode.messages import reply_messages
from attnscope.encode.meta import build_meta

FIXTURES = Path(__file__).parent / "fixtures" / "wire"

MALFORMED = [
    "top:self",
    "attn:self:-1:0",
    "pixies:self",
    "tile:self:0:avg:0:0:0",
    "stats:self:0",
    "qk:self:0:0:0",
]
"""Keys Python refuses by their shape alone; the TypeScript reader gives null for each."""


def tiny_trace() -> AttentionTrace:
    """Three tokens, two layers, two heads of causal attention in halves and quarters."""
    head_a = [[1, 0, 0], [0.5, 0.5, 0], [0.5, 0.25, 0.25]]
    head_b = [[1, 0, 0], [0.25, 0.75, 0], [0, 0.5, 0.5]]
    attention = np.array([[head_a, head_b], [head_b, head_a]], np.float32)
    return AttentionTrace(
        ["The", "cat", "sat"], attention, metadata={"display_name": "wire-fixture"}
    )


def key_fields(key: ChunkKey) -> dict[str, Any]:
    """A parsed key as the fixture spells it (the TypeScript ``ParsedKey``, snake_case)."""
    return {
        "kind": key.kind,
        "stream": key.stream,
        "layer": key.layer,
        "head": key.head,
        "first_row": key.first_row,
        "tile": None if key.tile is None else list(key.tile),
    }


def example_key(kind: ChunkKind) -> str:
    """A key of ``kind`` with the fewest parts its shape takes (a kind added later is covered)."""
    for parts in ((), (1,), (1, 2)):
        key = ChunkKey(kind, "self", *parts).key
        try:
            if read_key(key).key == key:
                return key
        except ValueError:
            continue
    raise AssertionError(f"no example key of kind {kind!r}: add one to keys_fixture")


def keys_fixture() -> dict[str, Any]:
    """Keys of every kind written by :mod:`attnscope.encode.keys`, and their parts."""
    written = [
        thumbs_key("self"),
        thumbs_key("self", 9),
        top_key("encoder", 2),
        top_key("self", 1, 64),
        attn_key("cross", 0, 11),
        qk_key("decoder", 5, 2),
        stats_key("self"),
        pseudo_key("self", 1),
        pseudo_key("self", 1, 1090),
        tile_key("self", 3, None, (0, 0, 0)),
        tile_key("self", 0, 2, (4, 7, 15)),
    ]
    covered = {read_key(k).kind for k in written}
    written += [example_key(kind) for kind in KINDS if kind not in covered]
    sided = [side_key("diff", top_key("self", 0)), side_key("b", qk_key("self", 0, 3))]
    return {
        "kinds": list(KINDS),
        "keys": [{"key": k, "side": None, **key_fields(read_key(k))} for k in written]
        + [
            {"key": k, "side": side, **key_fields(read_key(bare))}
            for k in sided
            for side, bare in [split_side(k) or ("", k)]
        ],
        "malformed": MALFORMED,
    }


def meta_fixture() -> dict[str, Any]:
    """``_meta`` of :func:`tiny_trace` as the widget sends it."""
    return {"_meta": build_meta(tiny_trace())}


def chunks_fixture() -> dict[str, Any]:
    """One reply message of a few chunks of :func:`tiny_trace`, its buffers and their values."""
    trace = tiny_trace()
    keys = [thumbs_key("self"), top_key("self", 1), attn_key("self", 0, 1), pseudo_key("self", 0)]
    [(message, buffers)] = list(reply_messages(trace, keys))
    values: dict[str, dict[str, Any]] = {}
    for chunk in message["chunks"]:
        values[chunk["key"]] = {
            spec["name"]: np.frombuffer(
                buffers[spec["buffer"]], {"u8": "<u1", "f32": "<f4", "u16": "<u2"}[spec["dtype"]]
            ).tolist()
            for spec in chunk["arrays"]
        }
    return {
        "all_keys": all_keys(trace),
        "message": message,
        "buffers": [base64.b64encode(b).decode("ascii") for b in buffers],
        "values": values,
    }


def fixtures() -> dict[str, str]:
    """Every generated fixture file's name and text."""
    made = {
        "keys.json": keys_fixture(),
        "meta.json": meta_fixture(),
        "chunks.json": chunks_fixture(),
    }
    return {
        name: json.dumps(value, indent=1, ensure_ascii=False) + "\n" for name, value in made.items()
    }


def main() -> None:
    """Write the fixtures."""
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, text in fixtures().items():
        (FIXTURES / name).write_text(text, encoding="utf-8")
        print(f"wrote {FIXTURES / name}")


if __name__ == "__main__":
    main()
