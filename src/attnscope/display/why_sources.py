"""The neuron view's "why" panel: one score split into its sources, served as chunks.

For the (layer, head, query, key) the neuron view shows, :func:`attnscope.qk_sources`
splits the pre-softmax score into query-side and key-side sources (embeddings, earlier
heads, MLPs, positions, bias terms). A widget given the model
(:meth:`~attnscope.AttentionWidget.explain`, or ``show_*`` called on a loaded model)
computes a pair when the browser asks for its ``why:`` key; the pairs computed are kept,
at most :data:`KEPT_PAIRS` of them, and an exported page embeds them with the
``whys:`` index that tells the page which pairs it holds (``docs/protocol.md``, "The
why panel").

A ``why:<stream>:<layer>:<head>:<query>:<key>`` chunk (``layer`` the position in the
stream, as in every key) holds ``names`` (u8: the UTF-8 of the source names joined by
newlines, the query side's then the key side's), ``query`` and ``key`` (f32: each
source's total over the other side), ``pair_index`` (u32 ``(P, 2)``) and ``pair`` (f32
``(P,)``): the :data:`TOP_PAIRS` largest pairs by size, and ``score`` (f32 ``(1,)``), the
score the model used. ``whys:<stream>`` holds ``pairs`` (u32 ``(P, 4)``).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np

from attnscope.encode.arrays import NamedArray
from attnscope.encode.keys import read_why_key, why_key, whys_key
from attnscope.encode.messages import part_messages
from attnscope.errors import AttnscopeError, AttnscopeTypeError

if TYPE_CHECKING:
    import pandas as pd

    from attnscope.trace import AttentionTrace

TOP_PAIRS = 12
"""Pairs of sources a chunk names one by one; the rest of the score is their "other"."""
KEPT_PAIRS = 64
"""Pairs a widget keeps (the oldest go first): what a saved page can embed (a few KB each)."""
PAGE_SHARE = 0.05
"""Share of a page's budget the why chunks may take (those that do not fit are left out)."""

_OWNERS: weakref.WeakKeyDictionary[Any, WhySources] = weakref.WeakKeyDictionary()


def why_arrays(table: pd.DataFrame, top: int = TOP_PAIRS) -> list[NamedArray]:
    """A :func:`attnscope.qk_sources` table as a ``why:`` chunk's arrays.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"query_source": ["embed", "embed", "L0H1", "L0H1"],
    ...                   "key_source": ["embed", "L0.mlp", "embed", "L0.mlp"],
    ...                   "contribution": [1.0, -0.5, 2.0, 0.25]})
    >>> t.attrs["score"] = 2.75
    >>> a = dict(why_arrays(t, top=2))
    >>> bytes(a["names"]).decode().split(chr(10)), a["query"].tolist(), a["key"].tolist()
    (['embed', 'L0H1', 'embed', 'L0.mlp'], [0.5, 2.25], [3.0, -0.25])
    >>> a["pair_index"].tolist(), a["pair"].tolist(), a["score"].tolist()
    ([[1, 0], [0, 0]], [2.0, 1.0], [2.75])
    """
    q_names = list(dict.fromkeys(table["query_source"]))
    k_names = list(dict.fromkeys(table["key_source"]))
    grid = (
        table.pivot(index="query_source", columns="key_source", values="contribution")
        .reindex(index=q_names, columns=k_names)
        .to_numpy(np.float64)
    )
    flat = np.argsort(-np.abs(grid), axis=None, kind="stable")[:top]
    rows, cols = np.unravel_index(flat, grid.shape)
    names = "\n".join([*q_names, *k_names]).encode("utf-8")
    return [
        ("names", np.frombuffer(names, np.uint8).copy()),
        ("query", grid.sum(axis=1).astype(np.float32)),
        ("key", grid.sum(axis=0).astype(np.float32)),
        ("pair_index", np.stack([rows, cols], axis=1).astype(np.uint32).reshape(-1, 2)),
        ("pair", grid[rows, cols].astype(np.float32)),
        ("score", np.array([table.attrs.get("score", grid.sum())], np.float32)),
    ]


class WhySources:
    """A widget's "why" pairs: the model that computes them (if given) and those computed.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> why = WhySources(AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32)))
    >>> why.arrays("whys:self")[0][1].shape
    (0, 4)
    >>> why.arrays("why:self:0:0:1:0")
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: this widget has no model to split the score with: ...
    """

    def __init__(self, trace: AttentionTrace) -> None:
        self._trace = trace
        self._model: Any = None
        self._tokenizer: Any = None
        self._kept: OrderedDict[str, list[NamedArray]] = OrderedDict()

    def attach(self, model: Any, tokenizer: Any = None) -> None:
        """Compute pairs with ``model`` (the one the trace was captured from) from now on."""
        import torch

        if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
            raise AttnscopeTypeError(
                "explain() needs the loaded transformers model the trace was captured from, "
                f"not a {type(model).__name__}."
            )
        self._model, self._tokenizer = model, tokenizer

    @property
    def live(self) -> bool:
        """A model is attached: any pair is computed when asked."""
        return self._model is not None

    def table(self, layer: int, head: int, query: int, key: int) -> pd.DataFrame:
        """Compute one pair now (``layer`` the model's layer index) and keep it for the page."""
        from attnscope.analysis.qk_sources import qk_sources

        if self._model is None:
            raise AttnscopeError(self._no_model())
        table = qk_sources(
            self._model,
            self._trace,
            layer=layer,
            head=head,
            query=query,
            key=key,
            tokenizer=self._tokenizer,
        )
        position = self._trace.stream.layer_position(layer)
        self._keep(why_key(self._stream_name(), position, head, query, key), why_arrays(table))
        return table

    def arrays(self, key: str) -> list[NamedArray]:
        """The arrays of a ``why:`` or ``whys:`` key; AttnscopeError says why there are none."""
        parsed = read_why_key(key)
        if parsed is None:
            raise AttnscopeError(f"{key!r} is not a why: or whys: key.")
        stream, place = parsed
        if stream != self._stream_name():
            raise AttnscopeError(
                f"the why panel splits the stream {self._stream_name()!r}, not {stream!r}."
            )
        if not place:
            return [("pairs", self._pairs())]
        if key in self._kept:
            self._kept.move_to_end(key)
            return self._kept[key]
        position, head, query, at = place
        layers = self._trace.stream.layers
        if position >= len(layers):
            raise AttnscopeError(f"layer position {position} is past the stream's {len(layers)}.")
        self.table(int(layers[position]), head, query, at)
        return self._kept[key]

    def replies(self, keys: list[str], max_bytes: int) -> list[tuple[dict[str, Any], list[bytes]]]:
        """``chunks`` messages answering ``keys`` (each a why: or whys: key)."""
        out: list[tuple[dict[str, Any], list[bytes]]] = []
        for key in keys:
            try:
                out += part_messages(key, self.arrays(key), max_bytes)
            except AttnscopeError as err:
                out.append(({"type": "chunks", "chunks": [{"key": key, "error": str(err)}]}, []))
        return out

    def page_chunks(self, max_bytes: int) -> dict[str, Any]:
        """The kept pairs packed for a page, and the ``whys:`` index of those that fit.

        Newest first, within :data:`PAGE_SHARE` of ``max_bytes``.
        """
        from attnscope.encode.pack import pack_chunk

        packed: dict[str, Any] = {}
        used = 0
        for key in reversed(self._kept):
            chunk = pack_chunk(self._kept[key], half=())
            if used + len(chunk["data"]) + 200 > PAGE_SHARE * max_bytes:
                break
            packed[key] = chunk
            used += len(chunk["data"]) + 200
        if not packed:
            return {}
        index = whys_key(self._stream_name())
        return {**packed, index: pack_chunk([("pairs", self._pairs(packed))], half=())}

    def _keep(self, key: str, arrays: list[NamedArray]) -> None:
        self._kept[key] = arrays
        self._kept.move_to_end(key)
        while len(self._kept) > KEPT_PAIRS:
            self._kept.popitem(last=False)

    def _pairs(self, keys: Any = None) -> np.ndarray[Any, Any]:
        places = [read_why_key(k) for k in (self._kept if keys is None else keys)]
        rows = [p[1] for p in places if p is not None and p[1]]
        return np.array(rows, np.uint32).reshape(-1, 4)

    def _stream_name(self) -> str:
        return next(iter(self._trace.streams))

    def _no_model(self) -> str:
        done = ", ".join(
            f"layer {p[1][0]} head {p[1][1]} query {p[1][2]} key {p[1][3]}"
            for p in map(read_why_key, self._kept)
            if p is not None
        )
        return (
            "this widget has no model to split the score with: call "
            "widget.explain(model) with the model the trace was captured from"
            + (f" (pairs already split: {done})" if done else "")
            + "."
        )


def why_sources(widget: Any) -> WhySources:
    """The :class:`WhySources` of ``widget`` (made on first use; freed with the widget).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, AttentionWidget
    >>> w = AttentionWidget(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)))
    >>> why_sources(w) is why_sources(w), why_sources(w).live
    (True, False)
    """
    found = _OWNERS.get(widget)
    if found is None:
        found = _OWNERS[widget] = WhySources(widget.trace)
    return found


def answer_why(widget: Any, content: Any, max_bytes: int) -> tuple[Any, list[Any]]:
    """Split a browser request: the why: and whys: keys answered here, the rest left in it.

    Returns the request without those keys (None when none are left) and the replies.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, AttentionWidget
    >>> w = AttentionWidget(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)))
    >>> asked = {"type": "request", "keys": ["whys:self", "attn:self:0:0"]}
    >>> rest, replies = answer_why(w, asked, 2**20)
    >>> rest["keys"], [c["chunks"][0]["key"] for c, _ in replies]
    (['attn:self:0:0'], ['whys:self'])
    """
    if not isinstance(content, dict) or content.get("type") != "request":
        return content, []
    keys = content.get("keys")
    if not isinstance(keys, list):
        return content, []
    mine = [k for k in keys if read_why_key(k) is not None]
    if not mine:
        return content, []
    rest = [k for k in keys if read_why_key(k) is None]
    replies = why_sources(widget).replies(mine, max_bytes)
    return ({**content, "keys": rest} if rest else None), replies


def page_why(widget: Any, max_bytes: int) -> tuple[dict[str, Any], list[str]]:
    """A page's why chunks of ``widget`` and its note saying which pairs they are.

    Nothing for a widget that split no pair (or for anything that is not a widget).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, AttentionWidget
    >>> page_why(AttentionWidget(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32))), 2**20)
    ({}, [])
    """
    try:
        found = _OWNERS.get(widget)
    except TypeError:  # not a widget (a trace, a comparison): nothing split
        found = None
    chunks = found.page_chunks(max_bytes) if found is not None else {}
    if found is None or not chunks:
        return {}, []
    layers = found._trace.stream.layers
    places = [p[1] for p in map(read_why_key, chunks) if p is not None and p[1]]
    said = [f"layer {layers[p[0]]} head {p[1]}: {p[2]} → {p[3]}" for p in places]
    return chunks, [
        f"The neuron view's why panel holds the {len(said)} pair(s) split in the notebook "
        f"(query → key): {'; '.join(said)}."
    ]
