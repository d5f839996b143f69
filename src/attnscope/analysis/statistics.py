"""Per-head statistics of attention, each defined exactly and credited to its paper.

Notation: ``A`` is one head's weights, ``(q_len, k_len)``, row ``i`` the
query, column ``j`` the key; ``n`` is ``k_len``. "Mean over queries" is over
the *counted* queries: not padding, and with some weight in their row (a fully
masked query has none). Statistics that compare query and key positions
(``prev``, ``self``, ``next``, ``induction``, ``duplicate``) need self-attention
and are NaN for cross-attention.

Each is computed in one pass over a layer's weights, a block of query rows at
a time (:class:`LayerStatistics`): every statistic reduces a query's row
(a sum, a maximum, one entry), so each block gives one float32 value per
(head, query), and the means over queries are taken at the end in float64.
:func:`attnscope.head_stats` stacks the layers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from attnscope.analysis.access import (
    Buffers,
    Float64Array,
    hidden_rows,
    layer_rows,
    pick_stream,
)
from attnscope.analysis.repeats import (
    Codes,
    PatternKind,
    pattern_rows,
    repeats_any,
    token_codes,
)
from attnscope.analysis.token_sets import (
    BoolVector,
    leading_specials,
    of_kind,
    other_specials,
    punctuation,
)
from attnscope.trace import AttentionStream, AttentionTrace

if TYPE_CHECKING:
    from torch import Tensor

    from attnscope.trace.tokens import Tokens

SMOOTHING = 0.0001
"""Clark et al.'s smoothing: ``a' = (1 - SMOOTHING) * a + SMOOTHING / n`` keeps ``ln`` finite."""

GATHER_SHARE = 16
"""A key set or repeat pattern marking at most 1/16 of a block's entries is summed over
those entries alone (gathered); a denser one by a matrix-vector product over the block."""

FLOAT32_TINY = float(np.finfo(np.float32).tiny)
"""Smallest normal float32: weights are raised to it before ``ln`` so that ``0 ln 0`` is 0."""


def _unread_entropy(k_len: int) -> float:
    """``-a' ln a'`` of a weight of 0 after smoothing (``a' = SMOOTHING / k_len``), in float32."""
    smoothed = np.float32(SMOOTHING / k_len)
    return float(-smoothed * np.log(smoothed))


@dataclass(frozen=True)
class Statistic:
    """One head statistic: its name, what it measures, its formula and where it comes from.

    Examples
    --------
    >>> STATISTICS["sink"].source
    'Gu et al. 2024, When Attention Sink Emerges in Language Models'
    """

    name: str
    label: str
    formula: str
    source: str


STATISTICS: dict[str, Statistic] = {
    s.name: s
    for s in (
        Statistic(
            "cls",
            "attention on [CLS]",
            "mean over queries of the sum of A[i, j] over the special keys before the first "
            "ordinary token ([CLS], <s>)",
            "Clark et al. 2019, What Does BERT Look At?",
        ),
        Statistic(
            "sep",
            "attention on [SEP]",
            "mean over queries of the sum of A[i, j] over the other special keys ([SEP], </s>)",
            "Clark et al. 2019, What Does BERT Look At?",
        ),
        Statistic(
            "punct",
            "attention on . and ,",
            "mean over queries of the sum of A[i, j] over keys labelled '.' or ','",
            "Clark et al. 2019, What Does BERT Look At?",
        ),
        Statistic(
            "prev",
            "previous token",
            "mean over queries i >= 1 of A[i, i-1] (the key just before the query)",
            "Clark et al. 2019, What Does BERT Look At?",
        ),
        Statistic(
            "self",
            "same token",
            "mean over queries of A[i, i]",
            "Clark et al. 2019, What Does BERT Look At?",
        ),
        Statistic(
            "next",
            "next token",
            "mean over queries i <= n-2 of A[i, i+1] (the key just after the query)",
            "Clark et al. 2019, What Does BERT Look At?",
        ),
        Statistic(
            "entropy",
            "entropy (nats)",
            "mean over queries of -sum_j a' ln a', a' = 0.9999 a + 0.0001 / n",
            "Clark et al. 2019, What Does BERT Look At?",
        ),
        Statistic(
            "entropy_norm",
            "entropy / ln(keys seen)",
            "mean over queries that see v >= 2 keys of (-sum_j a ln a) / ln v, 0 ln 0 = 0; "
            "v counts the keys the mask leaves visible (without a mask: a > 0), not padding",
            "after Clark et al. 2019: the raw entropy over the visible keys, so a row "
            "uniform over them scores 1",
        ),
        Statistic(
            "confidence",
            "confidence (row max)",
            "mean over non-special queries of max_j A[i, j]",
            "Voita et al. 2019, Analyzing Multi-Head Self-Attention",
        ),
        Statistic(
            "sink",
            "sink (first key)",
            "alpha_1 = mean over queries of A[i, 0]",
            "Gu et al. 2024, When Attention Sink Emerges in Language Models",
        ),
        Statistic(
            "induction",
            "induction (detect_head 'mul' on this input)",
            "(A * P).sum() / A.sum(), P[i, j] = 1 where the token before key j repeats "
            "query token i (j <= i); NaN when the input repeats no token",
            "TransformerLens detect_head('induction_head', error_measure='mul') over this "
            "input's own repeats (attnscope.head_detector); not the TransformerLens/ARENA "
            "repeated-random-tokens stripe score (attnscope.induction_sweep), which reads "
            "about twice as high on the same head",
        ),
        Statistic(
            "duplicate",
            "duplicate token (detect_head 'mul' on this input)",
            "(A * P).sum() / A.sum(), P[i, j] = 1 where key j < i repeats query token i; "
            "NaN when the input repeats no token",
            "TransformerLens detect_head('duplicate_token_head', error_measure='mul') over "
            "this input (attnscope.head_detector)",
        ),
    )
}
"""Every statistic :func:`attnscope.head_stats` computes, in column order."""


@dataclass(frozen=True)
class TokenSets:
    """The token sets the statistics of one stream count (see :mod:`.token_sets`)."""

    counted_queries: BoolVector
    ordinary_queries: BoolVector
    visible_keys: BoolVector
    cls_keys: BoolVector
    sep_keys: BoolVector
    punct_keys: BoolVector
    codes: Codes | None
    """Token codes the repeat patterns compare (:func:`.repeats.token_codes`); None for
    cross-attention, where query and key positions are not comparable."""

    @classmethod
    def of(cls, trace: AttentionTrace, stream: AttentionStream) -> TokenSets:
        """Sets for ``stream`` of ``trace``: queries from its query side, keys from its key side.

        Examples
        --------
        >>> import numpy as np
        >>> t = AttentionTrace(["[CLS]", "a", "."], np.full((1, 1, 3, 3), 1 / 3, np.float32),
        ...                    token_kinds=["special", "token", "token"])
        >>> TokenSets.of(t, t.stream).punct_keys.tolist()
        [False, False, True]
        """
        queries = trace.tokens_for(stream.query_side)
        keys = trace.tokens_for(stream.key_side)
        return cls.of_tokens(queries, keys, square=stream.query_side == stream.key_side)

    @classmethod
    def of_tokens(cls, queries: Tokens, keys: Tokens, *, square: bool = True) -> TokenSets:
        """Sets for query and key tokens, with no trace (a remote scan has only tokens).

        Examples
        --------
        >>> from attnscope.trace.tokens import Tokens
        >>> words = Tokens(["[CLS]", "a", "."], kinds=["special", "token", "token"])
        >>> TokenSets.of_tokens(words, words).cls_keys.tolist()
        [True, False, False]
        """
        return cls(
            counted_queries=~of_kind(queries, "padding"),
            ordinary_queries=of_kind(queries, "token"),
            visible_keys=~of_kind(keys, "padding"),
            cls_keys=leading_specials(keys.kinds),
            sep_keys=other_specials(keys.kinds),
            punct_keys=punctuation(keys.labels),
            codes=token_codes(queries) if square else None,
        )


def _mean_over(values: Float64Array, counted: npt.NDArray[np.bool_]) -> Float64Array:
    """Mean of ``values`` ``(heads, q)`` over the counted queries of each head; NaN if none."""
    total = np.where(counted, values, 0.0).sum(axis=-1)
    count = counted.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


ROW_VALUES = (
    "mass",
    "cls",
    "sep",
    "punct",
    "prev",
    "self",
    "next",
    "entropy",
    "raw_entropy",
    "visible",
    "confidence",
    "sink",
)
"""What :class:`LayerStatistics` keeps per (head, query), each a reduction of the query's row."""

DIAGONALS = {"prev": -1, "self": 0, "next": 1}
"""Key offset from the query of each position statistic."""

PATTERNS: tuple[PatternKind, ...] = ("induction", "duplicate")
"""The repeat patterns scored as TransformerLens's "mul" score."""


class LayerStatistics:
    """Every statistic of one layer's heads, fed a block of query rows at a time.

    Blocks come from :func:`attnscope.analysis.access.layer_rows`. Each is
    reduced to one float32 value per (head, query row) right away
    (:data:`ROW_VALUES`), in work buffers the size of one block that every
    block reuses; :meth:`result` takes the means over queries.

    Parameters
    ----------
    stream, position
        The stream and the position of the layer in it.
    sets
        The token sets of the stream (:meth:`TokenSets.of`).
    buffers
        Work tensors to reuse (share one between the layers of a pass).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope.analysis.access import layer_rows
    >>> t = AttentionTrace(list("abcd"), np.full((1, 2, 4, 4), 0.25, np.float32))
    >>> stats = LayerStatistics(t.stream, 0, TokenSets.of(t, t.stream))
    >>> for rows, heads, weights in layer_rows(t.stream, 0):
    ...     stats.add(rows, heads, weights)
    >>> result = stats.result()
    >>> round(float(result["entropy"][0]), 6) == round(float(np.log(4)), 6)
    True
    >>> result["confidence"].tolist(), result["sink"].tolist()
    ([0.25, 0.25], [0.25, 0.25])
    """

    def __init__(
        self,
        stream: AttentionStream,
        position: int,
        sets: TokenSets,
        buffers: Buffers | None = None,
    ) -> None:
        import torch

        self.stream, self.position, self.sets = stream, position, sets
        self.buffers = Buffers() if buffers is None else buffers
        self._row_shape = (stream.num_heads, stream.q_len)
        # Made at the first block: a reducer sent to a remote model travels without them.
        self._rows: dict[str, Float64Array] = {}
        # A row's mass on a key set is one matrix-vector product.
        key_sets = {"cls": sets.cls_keys, "sep": sets.sep_keys, "punct": sets.punct_keys}
        self._key_sets = {
            name: torch.from_numpy(keys.astype(np.float32)) for name, keys in key_sets.items()
        }
        self._key_columns = {
            name: torch.from_numpy(np.flatnonzero(keys)) for name, keys in key_sets.items()
        }
        self._visible = torch.from_numpy(sets.visible_keys.astype(np.float32))
        self._every_key_visible = bool(sets.visible_keys.all())
        # Visible keys before each key: a span [start, stop) shows cum[stop] - cum[start].
        self._visible_before = np.concatenate([[0], np.cumsum(sets.visible_keys)])
        codes = sets.codes
        self._repeats = codes is not None and repeats_any(codes)
        self.pattern_sums: dict[str, Float64Array] = {
            name: np.zeros(stream.num_heads) for name in PATTERNS
        }
        self._patterns: (
            tuple[tuple[int, int], dict[PatternKind, tuple[Tensor | None, Tensor | None]]] | None
        ) = None

    @property
    def rows(self) -> dict[str, Float64Array]:
        """The values kept per (head, query) of each of :data:`ROW_VALUES`."""
        if not self._rows:
            self._rows = {name: np.zeros(self._row_shape) for name in ROW_VALUES}
        return self._rows

    def add(self, rows: slice, heads: list[int], weights: Tensor) -> None:
        """Reduce the weights of query ``rows`` of ``heads``, float32 ``(heads, rows, width)``.

        ``width`` is ``k_len``, or less when the keys from ``width`` on have
        weight 0 in these rows (:func:`~attnscope.analysis.access.layer_rows`
        with ``narrow``): they are counted without being read.
        """
        import torch

        k_len, width = self.stream.k_len, weights.shape[-1]
        row = self.rows
        row["mass"][heads, rows] = weights.sum(dim=-1).numpy()
        for name, key_set in self._key_sets.items():
            columns = self._key_columns[name]
            columns = columns[: int(torch.searchsorted(columns, width))]
            if len(columns) * GATHER_SHARE <= width:  # a few keys: gathered, not a full pass
                on_set = weights.index_select(-1, columns).sum(dim=-1)
            else:
                on_set = weights.matmul(key_set[:width])
            row[name][heads, rows] = on_set.numpy()
        array = weights.numpy()
        queries = np.arange(self.stream.q_len)[rows]
        local = np.arange(len(queries))
        for name, offset in DIAGONALS.items():
            keys = queries + offset
            exists = (keys >= 0) & (keys < k_len)
            read = exists & (keys < width)
            row[name][np.ix_(np.asarray(heads), queries[exists & ~read])] = 0.0
            row[name][np.ix_(np.asarray(heads), queries[read])] = array[:, local[read], keys[read]]
        row["confidence"][heads, rows] = weights.amax(dim=-1).numpy()
        row["sink"][heads, rows] = array[:, :, 0]

        # In place, in two reused buffers; torch.xlogy is three times slower than
        # log, multiply and sum on this CPU.
        smoothed = self.buffers.get("smoothed", tuple(weights.shape))
        logs = self.buffers.get("logs", tuple(weights.shape))
        torch.mul(weights, 1.0 - SMOOTHING, out=smoothed).add_(SMOOTHING / k_len)
        torch.log(smoothed, out=logs)
        entropy = logs.mul_(smoothed).sum(dim=-1).neg_().numpy()
        if width < k_len:  # each unread key of weight 0 adds -a' ln a' with a' = SMOOTHING / n
            entropy = entropy + (k_len - width) * _unread_entropy(k_len)
        row["entropy"][heads, rows] = entropy
        torch.clamp_min(weights, FLOAT32_TINY, out=logs).log_()  # 0 weight: 0 * ln(tiny) = 0
        row["raw_entropy"][heads, rows] = logs.mul_(weights).sum(dim=-1).neg_().numpy()
        row["visible"][heads, rows] = self._visible_keys(rows, heads, weights, smoothed)

        if self._repeats:
            flat = weights.reshape(len(heads), -1)
            for name, (pattern, spots) in self._pattern_rows(rows, width).items():
                if spots is not None:
                    found = flat.index_select(1, spots).sum(dim=1)
                else:
                    assert pattern is not None
                    found = flat.mv(pattern.reshape(-1))
                self.pattern_sums[name][heads] += found.numpy()

    def _visible_keys(
        self, rows: slice, heads: list[int], weights: Tensor, scratch: Tensor
    ) -> Float64Array:
        """Per head and query row, the keys seen that are not padding (no mask: weight > 0)."""
        import torch

        stream = self.stream
        if stream.mask is None and stream.key_spans is not None:  # the rule alone: no N^2 needed
            spans = stream.key_spans[min(self.position, stream.key_spans.shape[0] - 1)][rows]
            before = self._visible_before
            counts: Float64Array = (before[spans[:, 1]] - before[spans[:, 0]]).astype(np.float64)
            return counts[None, :]
        if stream.has_mask:
            counted = np.empty((len(heads), weights.shape[1]))
            for i, head in enumerate(heads):
                hidden = hidden_rows(stream, self.position, head, rows)
                assert hidden is not None
                counted[i] = (~hidden & self.sets.visible_keys).sum(axis=-1)
            return counted
        seen = torch.sign(weights, out=scratch)  # weights >= 0: 1 where seen (faster than bools)
        visible = self._visible[: weights.shape[-1]]
        per_row = seen.sum(dim=-1) if self._every_key_visible else seen.matmul(visible)
        seen_counts: Float64Array = per_row.numpy().astype(np.float64)
        return seen_counts

    def _pattern_rows(
        self, rows: slice, width: int
    ) -> dict[PatternKind, tuple[Tensor | None, Tensor | None]]:
        """The repeat patterns of query ``rows`` for keys ``0 .. width``, made once a block.

        Each as ``(dense, spots)``: when it marks at most 1 / :data:`GATHER_SHARE`
        of its entries, their flat positions (dense None); else float32
        ``(len(rows), width)`` (spots None).
        """
        import torch

        if self._patterns is None or self._patterns[0] != (rows.start, width):
            assert self.sets.codes is not None
            codes = self.sets.codes
            made: dict[PatternKind, tuple[Tensor | None, Tensor | None]] = {}
            for name in PATTERNS:
                marked = pattern_rows(codes, rows, name)[:, :width]
                spots = np.flatnonzero(marked)
                if len(spots) * GATHER_SHARE <= marked.size:  # gathered: no dense copy needed
                    made[name] = (None, torch.from_numpy(spots))
                else:
                    made[name] = (torch.from_numpy(np.ascontiguousarray(marked, np.float32)), None)
            self._patterns = ((rows.start, width), made)
        return self._patterns[1]

    def result(self) -> dict[str, Float64Array]:
        """``{name: (heads,)}`` for every statistic, in :data:`STATISTICS` order."""
        row = self.rows
        heads, q_len = row["mass"].shape
        k_len = self.stream.k_len
        counted = self.sets.counted_queries[None, :] & (row["mass"] > 0)
        ordinary = counted & self.sets.ordinary_queries[None, :]
        out = {name: _mean_over(row[name], counted) for name in ("cls", "sep", "punct")}
        queries = np.arange(q_len)
        square = self.sets.codes is not None
        for name, offset in DIAGONALS.items():
            exists = (queries + offset >= 0) & (queries + offset < k_len)
            out[name] = (
                _mean_over(row[name], counted & exists) if square else np.full(heads, np.nan)
            )
        out["entropy"] = _mean_over(row["entropy"], counted)
        visible = row["visible"]
        with np.errstate(invalid="ignore", divide="ignore"):
            normalised = row["raw_entropy"] / np.log(np.maximum(visible, 2))
        out["entropy_norm"] = _mean_over(normalised, counted & (visible >= 2))
        out["confidence"] = _mean_over(row["confidence"], ordinary)
        out["sink"] = _mean_over(row["sink"], counted)
        mass = row["mass"].sum(axis=-1)
        for name, total in self.pattern_sums.items():
            with np.errstate(invalid="ignore", divide="ignore"):
                score = np.where(mass > 0, total / mass, np.nan)
            out[name] = score if self._repeats else np.full(heads, np.nan)
        return {name: out[name] for name in STATISTICS}


def statistic_table(trace: AttentionTrace, *, stream: str | None = None) -> dict[str, Float64Array]:
    """Every statistic of every head as ``{name: (layers, heads)}``, computed layer by layer.

    What :func:`attnscope.head_stats` builds its table from, and what the
    widget's ``stats:`` chunk sends; it needs no pandas.

    Examples
    --------
    >>> import numpy as np
    >>> t = AttentionTrace(list("abc"), np.full((2, 4, 3, 3), 1 / 3, np.float32))
    >>> table = statistic_table(t)
    >>> table["sink"].shape, list(table)[:3]
    ((2, 4), ['cls', 'sep', 'punct'])
    """
    chosen = pick_stream(trace, stream)
    sets = TokenSets.of(trace, chosen)
    per_layer = []
    buffers = Buffers()
    for position in range(chosen.num_layers):
        layer = LayerStatistics(chosen, position, sets, buffers)
        for rows, heads, weights in layer_rows(chosen, position, buffers=buffers, narrow=True):
            layer.add(rows, heads, weights)
        per_layer.append(layer.result())
    return stack_layers(per_layer)


def stack_layers(per_layer: list[dict[str, Float64Array]]) -> dict[str, Float64Array]:
    """``{name: (layers, heads)}`` from each layer's ``{name: (heads,)}``.

    Examples
    --------
    >>> stack_layers([{"sink": np.zeros(2)}, {"sink": np.ones(2)}])["sink"].tolist()
    [[0.0, 0.0], [1.0, 1.0]]
    """
    return {name: np.stack([layer[name] for layer in per_layer]) for name in per_layer[0]}
