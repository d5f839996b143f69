"""Per-head statistics of attention, each defined exactly and credited to its paper.

Notation: ``A`` is one head's weights, ``(q_len, k_len)``, row ``i`` the
query, column ``j`` the key; ``n`` is ``k_len``. "Mean over queries" is over
the *counted* queries: not padding, and with some weight in their row (a fully
masked query has none). Statistics that compare query and key positions
(``prev``, ``self``, ``next``, ``induction``, ``duplicate``) need self-attention
and are NaN for cross-attention.

Each is computed one layer at a time from a ``(heads, q_len, k_len)`` block
(:func:`layer_statistics`); :func:`attnscope.head_stats` stacks the layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from attnscope.analysis.access import Float64Array, layer_block, layer_mask, pick_stream
from attnscope.analysis.repeats import duplicate_pattern, induction_pattern
from attnscope.analysis.token_sets import (
    BoolVector,
    leading_specials,
    of_kind,
    other_specials,
    punctuation,
)
from attnscope.trace import AttentionStream, AttentionTrace

SMOOTHING = 0.0001
"""Clark et al.'s smoothing: ``a' = (1 - SMOOTHING) * a + SMOOTHING / n`` keeps ``ln`` finite."""


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
            "induction",
            "(A * P).sum() / A.sum(), P[i, j] = 1 where the token before key j repeats "
            "query token i (j <= i); NaN when the input repeats no token",
            "TransformerLens head detector, error_measure='mul'",
        ),
        Statistic(
            "duplicate",
            "duplicate token",
            "(A * P).sum() / A.sum(), P[i, j] = 1 where key j < i repeats query token i; "
            "NaN when the input repeats no token",
            "TransformerLens head detector, error_measure='mul'",
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
    duplicate: Float64Array | None
    induction: Float64Array | None

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
        square = stream.query_side == stream.key_side
        return cls(
            counted_queries=~of_kind(queries, "padding"),
            ordinary_queries=of_kind(queries, "token"),
            visible_keys=~of_kind(keys, "padding"),
            cls_keys=leading_specials(keys.kinds),
            sep_keys=other_specials(keys.kinds),
            punct_keys=punctuation(keys.labels),
            duplicate=duplicate_pattern(queries) if square else None,
            induction=induction_pattern(queries) if square else None,
        )


def _mean_over(values: Float64Array, counted: npt.NDArray[np.bool_]) -> Float64Array:
    """Mean of ``values`` ``(heads, q)`` over the counted queries of each head; NaN if none."""
    total = np.where(counted, values, 0.0).sum(axis=-1)
    count = counted.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _pattern_score(block: Float64Array, pattern: Float64Array | None) -> Float64Array:
    heads = block.shape[0]
    if pattern is None or not pattern.any():
        return np.full(heads, np.nan)
    mass = block.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(mass > 0, (block * pattern).sum(axis=(1, 2)) / mass, np.nan)


def layer_statistics(
    block: Float64Array, sets: TokenSets, mask: npt.NDArray[np.bool_] | None = None
) -> dict[str, Float64Array]:
    """Every statistic of one layer's heads: ``{name: (heads,)}`` in :data:`STATISTICS` order.

    Parameters
    ----------
    block
        ``(heads, q_len, k_len)`` weights of one layer.
    sets
        The token sets of the stream (:meth:`TokenSets.of`).
    mask
        ``(heads, q_len, k_len)`` True where a key is hidden, or None.

    Examples
    --------
    >>> import numpy as np
    >>> t = AttentionTrace(list("abcd"), np.full((1, 2, 4, 4), 0.25, np.float32))
    >>> stats = layer_statistics(t.attention[0].astype(float), TokenSets.of(t, t.stream))
    >>> round(float(stats["entropy"][0]), 6) == round(float(np.log(4)), 6)
    True
    >>> stats["confidence"].tolist(), stats["sink"].tolist()
    ([0.25, 0.25], [0.25, 0.25])
    """
    heads, q_len, k_len = block.shape
    counted = sets.counted_queries[None, :] & (block.sum(axis=-1) > 0)
    ordinary = counted & sets.ordinary_queries[None, :]
    out: dict[str, Float64Array] = {}
    for name, keys in (("cls", sets.cls_keys), ("sep", sets.sep_keys), ("punct", sets.punct_keys)):
        out[name] = _mean_over(block[:, :, keys].sum(axis=-1), counted)

    square = sets.duplicate is not None
    rows = np.arange(q_len)
    for name, offset in (("prev", -1), ("self", 0), ("next", 1)):
        if not square:
            out[name] = np.full(heads, np.nan)
            continue
        cols = rows + offset
        exists = (cols >= 0) & (cols < k_len)
        diagonal = np.zeros((heads, q_len))
        diagonal[:, exists] = block[:, rows[exists], cols[exists]]
        out[name] = _mean_over(diagonal, counted & exists[None, :])

    smoothed = (1.0 - SMOOTHING) * block + SMOOTHING / k_len
    out["entropy"] = _mean_over(-(smoothed * np.log(smoothed)).sum(axis=-1), counted)

    seen = block > 0 if mask is None else ~mask
    visible = (seen & sets.visible_keys[None, None, :]).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw_entropy = -np.where(block > 0, block * np.log(np.where(block > 0, block, 1.0)), 0.0)
        normalised = raw_entropy.sum(axis=-1) / np.log(np.maximum(visible, 2))
    out["entropy_norm"] = _mean_over(normalised, counted & (visible >= 2))

    out["confidence"] = _mean_over(block.max(axis=-1), ordinary)
    out["sink"] = _mean_over(block[:, :, 0], counted)
    out["induction"] = _pattern_score(block, sets.induction)
    out["duplicate"] = _pattern_score(block, sets.duplicate)
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
    per_layer = [
        layer_statistics(layer_block(chosen, p), sets, layer_mask(chosen, p))
        for p in range(chosen.num_layers)
    ]
    return {name: np.stack([layer[name] for layer in per_layer]) for name in STATISTICS}
