"""The wire's golden fixtures (tests/fixtures/wire) are current, and Python reads them alike.

``tests/js/wire_fixtures.test.ts`` runs the same files in vitest, so neither
side can drift from the other without one suite failing.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from attnscope import AttentionStream, AttentionTrace, AttentionWidget, Tokens
from attnscope.encode.keys import KINDS, read_key, split_side
from attnscope.encode.stream_change import CLAMPED, clamp_to_stream, stream_shape
from attnscope.errors import AttnscopeError
from wire_fixtures import FIXTURES, fixtures

TABLE = json.loads((FIXTURES / "stream_change.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("name", "text"), sorted(fixtures().items()))
def test_fixtures_are_what_python_writes_now(name: str, text: str) -> None:
    on_disk = (FIXTURES / name).read_text(encoding="utf-8")
    assert on_disk == text, f"{name} is stale: run `python tests/wire_fixtures.py` and commit it"


def test_python_reads_the_fixture_keys() -> None:
    fixture = json.loads((FIXTURES / "keys.json").read_text(encoding="utf-8"))
    assert fixture["kinds"] == list(KINDS)
    for entry in fixture["keys"]:
        side, bare = split_side(entry["key"]) or (None, entry["key"])
        parsed = read_key(bare)
        assert side == entry["side"]
        tile = None if parsed.tile is None else list(parsed.tile)
        fields = [parsed.kind, parsed.stream, parsed.layer, parsed.head, parsed.first_row, tile]
        names = ["kind", "stream", "layer", "head", "first_row", "tile"]
        assert fields == [entry[n] for n in names]
    for key in fixture["malformed"]:
        with pytest.raises(AttnscopeError):
            read_key(key)


def test_the_stream_change_table_covers_every_field() -> None:
    for case in TABLE["cases"]:
        assert set(case["selection"]) == set(case["expect"]) == set(CLAMPED), case["name"]
    moved = {f for c in TABLE["cases"] for f in CLAMPED if c["selection"][f] != c["expect"][f]}
    assert moved == set(CLAMPED)


@pytest.mark.parametrize("case", TABLE["cases"], ids=[c["name"] for c in TABLE["cases"]])
def test_stream_change_follows_the_table(case: dict[str, Any]) -> None:
    streams = TABLE["streams"]
    got = clamp_to_stream(case["selection"], streams[case["old"]], streams[case["new"]])
    assert dict(got) == case["expect"]


def _enc_dec() -> AttentionTrace:
    rng = np.random.default_rng(3)

    def stream(shape: tuple[int, ...], name: str, rows: str, cols: str) -> AttentionStream:
        x = rng.random(shape).astype(np.float32)
        weights = x / x.sum(-1, keepdims=True)
        return AttentionStream(weights, name=name, query_side=rows, key_side=cols)

    return AttentionTrace.from_streams(
        Tokens(list("abcde"), segments=[0, 0, 0, 1, 1]),
        [
            stream((3, 4, 5, 5), "encoder", "source", "source"),
            stream((1, 2, 3, 5), "cross", "target", "source"),
            stream((2, 2, 3, 3), "decoder", "target", "target"),
        ],
        target=Tokens(list("xyz")),
    )


def test_the_widget_moves_its_selection_by_the_same_rule() -> None:
    trace = _enc_dec()
    w = AttentionWidget(trace, stream="encoder", layer=2, heads=[1, 3], head=3, query=4, key=4)
    w.pair_filter = "AB"
    for name in ("cross", "decoder", "encoder"):
        before = {f: getattr(w, f) for f in CLAMPED}
        expected = clamp_to_stream(before, stream_shape(trace, w.stream), stream_shape(trace, name))
        w.stream = name
        assert {f: getattr(w, f) for f in CLAMPED} == expected
    assert (w.layer, w.heads, w.query, w.pair_filter) == (0, [1], None, "all")
