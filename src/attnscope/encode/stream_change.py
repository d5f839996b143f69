"""What a stream change keeps of the selection: one rule, mirrored by ``js/wire/stream_change.ts``.

Both the widget (a ``stream`` set from Python) and the browser (the stream
select) apply it, and ``tests/fixtures/wire/stream_change.json`` is the table
of cases both test suites run. The rule keeps as much as still means the same
thing: the nearest layer and head, the selected heads the new stream has (all
of them when none is left), a query or key only while it names a token of the
same side that the new stream still has, the summed queries likewise, the
pseudo-heads the new stream offers, and a sentence filter only where a side of
the new stream has sentences.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from attnscope.encode.analysis_chunks import pseudo_heads
from attnscope.trace import AttentionStream, AttentionTrace


class StreamShape(TypedDict):
    """What the rule reads of a stream: the fields of its ``_meta.streams`` entry, and more.

    ``segmented``: a side of the stream has sentence segments (a pair input).
    """

    layers: list[int]
    num_heads: int
    q_len: int
    k_len: int
    query_side: str
    key_side: str
    pseudo_heads: list[str]
    segmented: bool


class StreamSelection(TypedDict):
    """The part of the selection a stream change may move."""

    layer: int
    heads: list[int]
    head: int
    query: int | None
    key: int | None
    queries: list[int]
    pseudo_heads: list[str]
    pair_filter: str


CLAMPED: tuple[str, ...] = tuple(StreamSelection.__annotations__)
"""The selection's fields the rule may change."""


def stream_shape(trace: AttentionTrace, name: str) -> StreamShape:
    """The :class:`StreamShape` of stream ``name`` of ``trace``.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> trace = AttentionTrace(["a", "b"], np.full((2, 3, 2, 2), 0.5, np.float32))
    >>> shape = stream_shape(trace, "self")
    >>> shape["layers"], shape["num_heads"], shape["segmented"]
    ([0, 1], 3, False)
    """
    stream: AttentionStream = trace.streams[name]
    sides = {stream.query_side, stream.key_side}
    return {
        "layers": [int(x) for x in stream.layers],
        "num_heads": stream.num_heads,
        "q_len": stream.q_len,
        "k_len": stream.k_len,
        "query_side": stream.query_side,
        "key_side": stream.key_side,
        "pseudo_heads": list(pseudo_heads(stream)),
        "segmented": any(trace.tokens_for(s).segments is not None for s in sides),
    }


def clamp_to_stream(
    selection: Mapping[str, Any], old: StreamShape, new: StreamShape
) -> StreamSelection:
    """The selection's :data:`CLAMPED` fields after a change from stream ``old`` to ``new``.

    Examples
    --------
    >>> old = {"layers": [0, 1, 2], "num_heads": 4, "q_len": 9, "k_len": 9,
    ...        "query_side": "source", "key_side": "source", "pseudo_heads": ["mean"],
    ...        "segmented": False}
    >>> new = {**old, "layers": [0], "num_heads": 2, "query_side": "target"}
    >>> sel = {"layer": 2, "heads": [1, 3], "head": 3, "query": 4, "key": 4, "queries": [1],
    ...        "pseudo_heads": ["mean"], "pair_filter": "all"}
    >>> clamp_to_stream(sel, old, new)  # doctest: +NORMALIZE_WHITESPACE
    {'layer': 0, 'heads': [1], 'head': 1, 'query': None, 'key': 4, 'queries': [],
     'pseudo_heads': ['mean'], 'pair_filter': 'all'}
    """
    heads = [int(h) for h in selection["heads"] if 0 <= int(h) < new["num_heads"]]
    same_rows = old["query_side"] == new["query_side"]

    def token(value: int | None, length: int, same_side: bool) -> int | None:
        return value if value is not None and same_side and 0 <= value < length else None

    return {
        "layer": min(max(int(selection["layer"]), 0), len(new["layers"]) - 1),
        "heads": heads or list(range(new["num_heads"])),
        "head": min(max(int(selection["head"]), 0), new["num_heads"] - 1),
        "query": token(selection["query"], new["q_len"], same_rows),
        "key": token(selection["key"], new["k_len"], old["key_side"] == new["key_side"]),
        "queries": [q for q in selection["queries"] if 0 <= q < new["q_len"]] if same_rows else [],
        "pseudo_heads": [p for p in selection["pseudo_heads"] if p in new["pseudo_heads"]],
        "pair_filter": selection["pair_filter"] if new["segmented"] else "all",
    }
