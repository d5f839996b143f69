"""A comparison as the browser reads it: ``_meta`` with a ``comparison`` entry, and side chunks.

Inputs A and B are shown as two traces over the same aligned tokens
(:func:`~attnscope.analysis.aligned.aligned_traces`), so every chunk kind and
every view works on either unchanged; a key names its side with a prefix:
``a/top:self:0``, ``b/qk:self:0:3``, ``diff/thumbs:self`` (``docs/protocol.md``,
"Comparisons"). ``diff/`` chunks hold ``A − B`` as signed bytes
(:mod:`attnscope.encode.signed`) under the array names of the chunk kind they
mirror; there is no ``diff/qk:`` (the neuron view sets A's and B's q·k side
by side instead).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, zip_longest

import numpy as np

from attnscope.analysis.aligned import aligned_traces
from attnscope.analysis.compare import AttentionComparison
from attnscope.encode.arrays import NamedArray
from attnscope.encode.chunks import ChunkCache, all_keys, encode_chunk, parse_key
from attnscope.encode.keys import ANALYSIS_KINDS, ChunkKey, kind_of, side_key, split_side, top_key
from attnscope.encode.meta import build_meta, mend_strings, stream_top_k, thumb_shape
from attnscope.encode.meta_types import ComparisonMeta, Meta
from attnscope.encode.selection import COMPARE_SIDES, VIEWS, CompareSide, ViewName, check_views
from attnscope.encode.signed import signed_rows, signed_thumbnails, signed_top_keys
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionTrace
from attnscope.trace.label_text import isolate

NOTE_TOKENS = 32
"""Most left-out tokens a comparison's note names per input (the rest are counted)."""


class ComparisonChunks:
    """Everything the browser asks of a comparison: its ``_meta`` and its side chunks.

    Parameters
    ----------
    comparison
        What :func:`attnscope.compare` returned.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, compare
    >>> a = AttentionTrace(["x", "y"], np.array([[[[1, 0], [0.5, 0.5]]]], np.float32))
    >>> b = AttentionTrace(["x", "z"], np.array([[[[1, 0], [0.9, 0.1]]]], np.float32))
    >>> chunks = ComparisonChunks(compare(a, b))
    >>> [(n, x.dtype.name) for n, x in chunks.encode("diff/attn:self:0:0")]
    [('weight', 'int8'), ('rowmax', 'float32')]
    >>> chunks.encode("diff/attn:self:0:0")[0][1].tolist()  # A - B, row 1: -0.4, +0.4
    [[0, 0], [-127, 127]]
    >>> chunks.meta()["comparison"]["alignment"]
    [[0, 0], [1, 1]]
    """

    def __init__(self, comparison: AttentionComparison) -> None:
        self.comparison = comparison
        self.a, self.b = aligned_traces(comparison)
        self._cache = ChunkCache()

    def trace(self, side: str) -> AttentionTrace:
        """The aligned trace of input ``"a"`` or ``"b"`` (``"diff"`` has A's shape)."""
        return self.b if side == "b" else self.a

    def parse(self, key: object) -> tuple[CompareSide, ChunkKey]:
        """Split ``side/key`` and check both parts; raise AttnscopeError saying what is wrong.

        Examples
        --------
        >>> import numpy as np
        >>> from attnscope import AttentionTrace, compare
        >>> t = AttentionTrace(["x"], np.ones((1, 1, 1, 1), np.float32))
        >>> ComparisonChunks(compare(t, t)).parse("b/top:self:0")
        ('b', ChunkKey(kind='top', stream='self', layer=0, head=None))
        """
        split = split_side(key) if isinstance(key, str) else None
        if split is None:
            raise AttnscopeError(
                f"a comparison's chunk key is '<side>/<key>' with side one of "
                f"{list(COMPARE_SIDES)}, e.g. 'diff/top:self:0'; got {key!r}."
            )
        side, rest = split
        if side not in COMPARE_SIDES:
            raise AttnscopeError(
                f"unknown side {side!r} in {key!r}; use one of {list(COMPARE_SIDES)}."
            )
        parsed = parse_key(rest, self.trace(side))
        if parsed.kind in ANALYSIS_KINDS:
            raise AttnscopeError(
                f"{key!r}: a comparison has no head statistics or pseudo-heads; compute them "
                "on each trace (attnscope.head_stats)."
            )
        if parsed.kind == "top" and parsed.first_row is not None:
            raise AttnscopeError(
                f"{key!r}: a comparison's top keys come a whole layer at a time; ask for "
                f"{side_key(side, top_key(parsed.stream, parsed.layer or 0))}."
            )
        if parsed.kind == "tile":
            raise AttnscopeError(
                f"{key!r}: a comparison has no overview tiles; show each trace on its own "
                "(attnscope.AttentionWidget(trace)) for its overview."
            )
        if side == "diff" and parsed.kind == "qk":
            raise AttnscopeError(
                f"{key!r}: A − B has no query/key vectors; ask for a/{rest} and b/{rest}."
            )
        return side, parsed

    def encode(self, key: object) -> list[NamedArray]:
        """The arrays of chunk ``key`` (cached); raise AttnscopeError for a key it cannot serve."""
        side, parsed = self.parse(key)
        if side == "diff":
            return self._cache.get(str(key), lambda: self._difference(parsed))
        trace = self.trace(side)
        return self._cache.get(str(key), lambda: encode_chunk(trace, parsed))

    def _difference(self, key: ChunkKey) -> list[NamedArray]:
        s_a, s_b = self.a.streams[key.stream], self.b.streams[key.stream]
        if key.kind == "thumbs":
            thumbs, absmax = signed_thumbnails(s_a.attention - s_b.attention, *thumb_shape(s_a))
            return [("thumbs", thumbs), ("absmax", absmax)]
        assert key.layer is not None
        layer = s_a.attention[key.layer] - s_b.attention[key.layer]
        if key.kind == "attn":
            assert key.head is not None
            weight, rowmax = signed_rows(layer[key.head])
            return [("weight", weight), ("rowmax", rowmax)]
        top_k = stream_top_k(s_a)
        if top_k >= s_a.k_len:
            weight, rowmax = signed_rows(layer)
            return [("weight", weight), ("rowmax", rowmax)]
        index, weight, rowmax = signed_top_keys(layer, top_k)
        return [("index", index), ("weight", weight), ("rowmax", rowmax)]

    def all_keys(
        self, *, stream: str | None = None, layer: int = 0, views: Sequence[ViewName] = VIEWS
    ) -> list[str]:
        """The keys ``views`` need, most needed first, the three sides interleaved.

        Each side's order is :func:`~attnscope.encode.chunks.all_keys`'s; ``A − B``
        needs no q/k, so its list is that of the head and model views.

        Examples
        --------
        >>> import numpy as np
        >>> from attnscope import AttentionTrace, compare
        >>> t = AttentionTrace(["x"], np.ones((1, 1, 1, 1), np.float32))
        >>> ComparisonChunks(compare(t, t)).all_keys(views=("head",))
        ['diff/top:self:0', 'a/top:self:0', 'b/top:self:0']
        """
        views = check_views(views)
        diff_views = tuple(v for v in views if v != "neuron") or ("head",)
        lists = [
            [
                side_key(side, k)
                for k in all_keys(
                    self.trace(side),
                    stream=stream,
                    layer=layer,
                    views=diff_views if side == "diff" else views,
                )
            ]
            for side in ("diff", "a", "b")
        ]
        interleaved = (k for k in chain.from_iterable(zip_longest(*lists)) if k is not None)
        return [k for k in interleaved if kind_of(k) not in ANALYSIS_KINDS]

    def meta(self, *, embedded: bool = False, notes: tuple[str, ...] = ()) -> Meta:
        """``_meta`` of the aligned tokens, with the ``comparison`` entry (``docs/protocol.md``)."""
        c = self.comparison
        meta = build_meta(self.a, embedded=embedded, notes=(*self._alignment_notes(), *notes))
        meta["title"] = f"A vs B · {meta['title']}"
        for described in meta["streams"].values():
            described["top_block"] = None  # A − B is formed a whole layer at a time
        compared: ComparisonMeta = {  # A's and B's tokens, valid Unicode like the rest of _meta
            "a": mend_strings(c.a.source.to_json()),
            "b": mend_strings(c.b.source.to_json()),
            "alignment": [list(pair) for pair in c.alignment],
            "divergence": {},
            "ranking": {},
        }
        for name, stream in self.a.streams.items():
            divergence = c.divergence(name)
            compared["divergence"][name] = [
                [None if np.isnan(v) else float(v) for v in row] for row in divergence
            ]
            compared["ranking"][name] = [
                [stream.layer_position(h.layer), h.head] for h in c.ranking(name)
            ]
        meta["comparison"] = compared
        return meta

    def _alignment_notes(self) -> list[str]:
        c = self.comparison
        paired_a = {i for i, _ in c.alignment}
        paired_b = {j for _, j in c.alignment}
        alone = [
            # Each token isolated: a bidi control in it cannot reorder the note after it. At
            # most NOTE_TOKENS named (and each cut), so the note stays within the front end's cap.
            f"{name}: "
            + ", ".join(f"“{isolate(tokens.labels[i][:40])}” (#{i})" for i in missing[:NOTE_TOKENS])
            + (f" and {len(missing) - NOTE_TOKENS} more" if len(missing) > NOTE_TOKENS else "")
            for name, tokens, paired in (("A", c.a.source, paired_a), ("B", c.b.source, paired_b))
            if (missing := [i for i in range(len(tokens)) if i not in paired])
        ]
        if not alone:
            return []
        return [
            f"A and B are compared over their {len(c.alignment)} aligned tokens; without a "
            f"partner, left out: {'; '.join(alone)}. Each row is renormalised over the "
            "aligned keys. Pass alignment= to pair the tokens yourself."
        ]
