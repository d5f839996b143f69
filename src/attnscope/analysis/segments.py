"""Attention between segments (sentences, chat turns) and receiver heads (Thought Anchors).

Bogdan, Macar, Nanda, Conmy (2025), "Thought Anchors: Which LLM Reasoning
Steps Matter?" (arXiv:2506.19143), section 4: token attention is averaged into
a sentence x sentence matrix per head; each sentence's *vertical score* is
the mean attention it receives from sentences at least ``proximity`` later;
a head's *receiver score* is the kurtosis of its vertical scores over the
sentences: high when a few sentences draw the attention of all later ones.

One pass reads each layer a block of rows at a time
(:func:`~attnscope.analysis.access.layer_rows`): each block's weights are
summed into key segments at once, ``(heads, rows, keys) @ (keys, S)``, so no
more than a block of weights and ``(heads, S, S)`` sums exist at once.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from attnscope.analysis.access import (
    Buffers,
    Float64Array,
    layer_rows,
    pick_stream,
    require_self_attention,
)
from attnscope.analysis.frames import head_frame
from attnscope.analysis.token_sets import of_kind
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionStream, AttentionTrace, Tokens

if TYPE_CHECKING:
    import pandas as pd

IntArray = npt.NDArray[np.int64]

SENTENCE_ENDS = (".", "!", "?")
"""A token whose label ends with one of these ends a sentence (so does a line break)."""

BLANKS = "\u2423"
"""What a display label shows for a space-only token (``␣``); line breaks show as ``\\n``."""

PROXIMITY = 4
"""Thought Anchors leave out the attention of the nearest later sentences (their default: 4)."""

MIN_RECEIVING = 4
"""Fewest segments with a vertical score for a receiver score: kurtosis needs four values."""


def _opens(tokens: Tokens, index: int) -> bool:
    """Whether token ``index`` can open a sentence: ordinary, with more than blanks."""
    label = tokens.labels[index]
    blank = not label.replace("\\n", "").replace("\\t", "").strip().strip(BLANKS)
    return tokens.kinds[index] != "special" and not blank


def sentence_starts(tokens: Tokens) -> list[int]:
    r"""Where each sentence starts: after a token ending in ``.``, ``!``, ``?`` or a line break.

    Special tokens and blanks right after a sentence end (``[SEP]``, ``</s>``, a
    space token) stay with it: the next sentence starts at the next token with text.

    Examples
    --------
    >>> sentence_starts(Tokens(["Hi", ".", "How", "are", "you", "?", "Fine"]))
    [0, 2, 6]
    >>> sentence_starts(Tokens(["Hi", ".", "[SEP]"], kinds=["token", "token", "special"]))
    [0]
    >>> sentence_starts(Tokens(["Hi", "\\n", "\\n", "Yes"]))  # labels show line breaks as \n
    [0, 3]
    """
    starts = [0]
    kinds = tokens.kinds
    for i, label in enumerate(tokens.labels[:-1]):
        if kinds[i] == "special" or not (
            label.rstrip(" ").endswith(SENTENCE_ENDS) or "\\n" in label or "\n" in label
        ):
            continue
        after = next((j for j in range(i + 1, len(kinds)) if _opens(tokens, j)), None)
        if after is not None and after > starts[-1]:
            starts.append(after)
    return starts


def turn_starts(tokens: Tokens, prompt_length: int | None) -> list[int]:
    """Where each chat turn starts: at each run of template (special) tokens after content.

    A chat trace marks the template's role names and markers ``"special"``;
    a turn is its markers and the content after them. Generated tokens start
    a turn of their own unless the template's generation prompt comes just
    before them (then they are the assistant turn it opened).

    Examples
    --------
    >>> kinds = ["special", "token", "token", "special", "special", "token"]
    >>> turn_starts(Tokens(["<|user|>", "Hi", "!", "</s>", "<|assistant|>", "Yo"],
    ...                    kinds=kinds), None)
    [0, 3]
    """
    kinds = tokens.kinds
    starts = {0}
    starts |= {i for i in range(1, len(kinds)) if kinds[i] == "special" and kinds[i - 1] == "token"}
    begin = 0 if prompt_length is None else prompt_length
    if 0 < begin < len(kinds) and kinds[begin - 1] != "special":
        starts.add(begin)
    return sorted(starts)


def _check_turns(trace: AttentionTrace) -> None:
    """Refuse ``"turns"`` for a trace captured from plain text: it has no turns.

    Its only special tokens are the tokenizer's (``[CLS]``, ``[SEP]``), which a
    turn split would take for a chat template's markers.
    """
    metadata = trace.metadata
    captured = metadata.get("source") == "transformers"
    if captured and not metadata.get("chat") and not metadata.get("generation"):
        raise AttnscopeError(
            "boundaries='turns' splits a chat at its template's turns, but this trace was "
            "captured from plain text (its special tokens are the tokenizer's, such as [SEP]); "
            "capture chat messages ([{'role': 'user', 'content': ...}]), or split with "
            "'sentences' or a list of token positions."
        )


def check_boundaries(
    boundaries: object, trace: AttentionTrace, length: int, tokens: Tokens | None = None
) -> IntArray:
    """Segment edges ``[0, s1, ..., length]`` from positions, ``"sentences"`` or ``"turns"``.

    Positions are where segments start; 0 is added when missing. ``tokens``
    are those split into sentences or turns (default: the trace's source).

    Examples
    --------
    >>> t = AttentionTrace(list("abcd"), np.full((1, 1, 4, 4), 0.25, np.float32))
    >>> check_boundaries([2], t, 4).tolist()
    [0, 2, 4]
    >>> check_boundaries([2, 2], t, 4)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: boundaries=[2, 2] must be increasing token positions ...
    """
    split = trace.source if tokens is None else tokens
    # isinstance first: an array compared with a string is an array (no truth value)
    if isinstance(boundaries, str) and boundaries == "sentences":
        starts = sentence_starts(split)
    elif isinstance(boundaries, str) and boundaries == "turns":
        _check_turns(trace)
        generation = trace.prompt_length if split is trace.source else None
        starts = turn_starts(split, generation)
    elif isinstance(boundaries, str):
        raise AttnscopeError(
            f"boundaries={boundaries!r} is not a way to split; use 'sentences', 'turns' or "
            "a list of the token positions where segments start."
        )
    else:
        given = list(boundaries) if isinstance(boundaries, Sequence | np.ndarray) else None
        ok = given is not None and all(
            isinstance(b, int | np.integer) and not isinstance(b, bool) for b in given
        )
        starts = [int(b) for b in given] if ok and given is not None else []
        if (
            not ok
            or any(b >= a for a, b in zip(starts[1:], starts, strict=False))
            or (starts and not 0 <= starts[0] <= starts[-1] < length)
        ):
            raise AttnscopeError(
                f"boundaries={boundaries!r} must be increasing token positions in 0..{length - 1} "
                "where segments start (or 'sentences' / 'turns')."
            )
    edges = sorted({0, *starts})
    return np.array([*edges, length], dtype=np.int64)


def kurtosis(values: Float64Array) -> Float64Array:
    """Excess kurtosis over the last axis, ignoring NaN: ``m4 / m2^2 - 3`` (population moments).

    NaN where fewer than four values (:data:`MIN_RECEIVING`: the excess kurtosis of
    any two values is -2 and of any three -1.5, so it ranks nothing) or no spread.
    Otherwise ``scipy.stats.kurtosis``'s default (``fisher=True, bias=True``).

    Examples
    --------
    >>> round(float(kurtosis(np.array([0.0, 0.0, 0.0, 1.0]))), 6)  # 2.333... - 3
    -0.666667
    >>> round(float(kurtosis(np.array([0.0] * 9 + [1.0]))), 6)  # one spike among ten: tailed
    5.111111
    >>> kurtosis(np.array([0.0, 1.0, 5.0]))  # three values: always -1.5, so no score
    array(nan)
    """
    valid = ~np.isnan(values)
    count = valid.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(valid, values, 0.0).sum(axis=-1) / count
        centred = np.where(valid, values - mean[..., None], 0.0)
        m2 = (centred**2).sum(axis=-1) / count
        m4 = (centred**4).sum(axis=-1) / count
        result = m4 / m2**2 - 3.0
    out: Float64Array = np.where((count >= MIN_RECEIVING) & (m2 > 0), result, np.nan)
    return out


@dataclass(frozen=True)
class SegmentAttention:
    """Attention between segments of one stream, per layer and head; see :func:`segments`.

    Attributes
    ----------
    edges
        ``(S + 1,)``: segment ``s`` is tokens ``edges[s] .. edges[s + 1] - 1``.
    layers
        The model's layer of each row of the arrays.
    mass
        ``(layers, heads, S, S)``: mean over the queries of segment ``a`` of the
        weight summed over the keys of segment ``b``; rows of a causal head sum to 1.
    mean
        ``(layers, heads, S, S)``: the mean weight per token pair, ``mass / len(b)``
        (Thought Anchors' sentence matrix).
    vertical
        ``(layers, heads, S)``: each segment's mean of ``mean[a, b]`` over later
        segments ``a >= b + proximity``; NaN where there are none.
    receiver
        ``(layers, heads)``: the kurtosis of ``vertical`` over the segments.
    """

    edges: IntArray
    layers: tuple[int, ...]
    mass: Float64Array
    mean: Float64Array
    vertical: Float64Array
    receiver: Float64Array

    def heads(self) -> pd.DataFrame:
        """One row per (layer, head): ``receiver`` and the ``top_segment`` it points to.

        Examples
        --------
        >>> t = AttentionTrace(list("abcdef"), np.full((1, 2, 6, 6), 1 / 6, np.float32))
        >>> segments(t, [2, 4], proximity=1).heads().columns.tolist()
        ['layer', 'head', 'receiver', 'top_segment']
        """
        filled = np.where(np.isnan(self.vertical), -np.inf, self.vertical)
        top = np.where(np.isnan(self.vertical).all(axis=-1), -1, filled.argmax(axis=-1))
        table = {"receiver": self.receiver, "top_segment": top}
        return head_frame("SegmentAttention.heads", self.layers, self.receiver.shape[1], table)


def _segment_sums(
    stream: AttentionStream, position: int, edges: IntArray, counted: npt.NDArray[np.bool_]
) -> tuple[Float64Array, Float64Array]:
    """Per head: the summed ``(S, S)`` weight of counted queries, and their count per segment.

    Sums over a segment's keys (and then its queries) are ``np.add.reduceat``
    at the segment edges: O(rows x keys) per block, however many segments.
    """
    count = len(edges) - 1
    segment_of = np.repeat(np.arange(count), np.diff(edges))
    sums = np.zeros((stream.num_heads, count, count))
    queries = np.zeros((stream.num_heads, count))
    buffers = Buffers()
    for rows, heads, weights in layer_rows(stream, position, buffers=buffers):
        # (heads, rows, S), float64 sums of each key segment
        to_segments = np.add.reduceat(weights.numpy(), edges[:-1], axis=-1).astype(np.float64)
        live = counted[None, rows] & (to_segments.sum(axis=-1) > 0)
        to_segments *= live[..., None]
        # The block's rows lie in consecutive segments: sum each run of rows at once.
        rows_segment = segment_of[rows]
        runs = np.flatnonzero(np.r_[True, np.diff(rows_segment) != 0])
        picked = np.asarray(heads)
        sums[picked[:, None], rows_segment[runs]] += np.add.reduceat(to_segments, runs, axis=1)
        queries[picked[:, None], rows_segment[runs]] += np.add.reduceat(
            live, runs, axis=1, dtype=np.float64
        )
    return sums, queries


def layer_mass(
    trace: AttentionTrace, edges: Sequence[int], position: int, *, stream: str | None = None
) -> Float64Array:
    """One layer's :attr:`SegmentAttention.mass`, ``(heads, S, S)``, for segment ``edges``.

    What :func:`segments` computes for every layer, for the layer at ``position``
    alone (the head view's image rows ask for one layer at a time). ``edges``
    are ``[0, s1, ..., n]`` as :func:`check_boundaries` gives them.

    Examples
    --------
    >>> w = np.tril(np.ones((4, 4), np.float32))
    >>> w /= w.sum(-1, keepdims=True)
    >>> layer_mass(AttentionTrace(list("abcd"), w[None, None]), [0, 2, 4], 0)[0].round(3).tolist()
    [[1.0, 0.0], [0.583, 0.417]]
    """
    chosen = pick_stream(trace, stream)
    require_self_attention(chosen, "segments")
    found = np.asarray(edges, dtype=np.int64)
    counted = ~of_kind(trace.tokens_for(chosen.query_side), "padding")
    sums, queries = _segment_sums(chosen, position, found, counted)
    with np.errstate(invalid="ignore", divide="ignore"):
        mass: Float64Array = np.where(queries[..., None] > 0, sums / queries[..., None], np.nan)
    return mass


def segments(
    trace: AttentionTrace,
    boundaries: Sequence[int] | str,
    *,
    proximity: int = PROXIMITY,
    stream: str | None = None,
) -> SegmentAttention:
    """Segment x segment attention of every head, and Thought Anchors' receiver scores.

    With segments ``a`` (queries) and ``b`` (keys), ``|b|`` the tokens of ``b``
    and ``Q(a)`` the counted queries of ``a`` (not padding, some weight)::

        mass[a, b]   = 1/|Q(a)| * sum_{i in Q(a)} sum_{j in b} A[i, j]
        mean[a, b]   = mass[a, b] / |b|
        vertical[b]  = mean over a >= b + proximity of mean[a, b]
        receiver     = kurtosis_b(vertical[b]) = m4 / m2^2 - 3

    ``mean`` is Thought Anchors' sentence matrix (token attention averaged
    over each block of the matrix), ``vertical`` their vertical attention
    score (attention a sentence receives from later sentences, the nearest
    ``proximity - 1`` left out) and ``receiver`` their receiver-head score
    (Bogdan et al. 2025, "Thought Anchors: Which LLM Reasoning Steps Matter?",
    section 4). Receiver heads are those with high scores, averaged over many
    traces (see :func:`attnscope.scan`'s pattern of one row per input).

    Parameters
    ----------
    trace
        A self-attention trace (long inputs: computed from q and k a block
        of rows at a time).
    boundaries
        Token positions where segments start (0 is implied), ``"sentences"``
        (split after ``.``, ``!``, ``?`` and line breaks) or ``"turns"``
        (a chat's turns, from its template tokens; the generation).
    proximity
        How many segments later a query segment must be to count toward a
        vertical score (1: every later segment).
    stream
        Which stream; None for the trace's first.

    Returns
    -------
    SegmentAttention
        ``mass``, ``mean``, ``vertical``, ``receiver`` and ``edges``;
        ``.heads()`` as a DataFrame.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> w = np.tril(np.ones((6, 6), np.float32))
    >>> w /= w.sum(-1, keepdims=True)
    >>> found = segments(AttentionTrace(list("abcdef"), w[None, None]), [2, 4], proximity=1)
    >>> found.mass[0, 0].round(3).tolist()
    [[1.0, 0.0, 0.0], [0.583, 0.417, 0.0], [0.367, 0.367, 0.267]]
    >>> found.vertical[0, 0].round(3).tolist()
    [0.238, 0.183, nan]
    """
    chosen = pick_stream(trace, stream)
    require_self_attention(chosen, "segments")
    if not isinstance(proximity, int) or isinstance(proximity, bool) or proximity < 1:
        raise AttnscopeError(
            f"proximity={proximity!r} must be an int >= 1: how many segments later a query "
            "segment must be to count (1: every later one; Thought Anchors use 4)."
        )
    edges = check_boundaries(boundaries, trace, chosen.q_len, trace.tokens_for(chosen.query_side))
    sizes = np.diff(edges).astype(np.float64)
    shape = (chosen.num_layers, chosen.num_heads, len(sizes), len(sizes))
    mass = np.zeros(shape)
    for position in range(chosen.num_layers):
        mass[position] = layer_mass(trace, edges.tolist(), position, stream=chosen.name)
    mean = mass / sizes
    later = np.subtract.outer(np.arange(len(sizes)), np.arange(len(sizes))) >= proximity  # a - b
    picked = np.where(later, mean, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "mean of empty slice": NaN is meant
        vertical = np.nanmean(picked, axis=-2)
    receiving = len(sizes) - proximity
    if receiving < MIN_RECEIVING:
        warnings.warn(
            f"{len(sizes)} segments with proximity={proximity} leave {max(receiving, 0)} "
            f"with a vertical score; a receiver score needs {MIN_RECEIVING} (the kurtosis of "
            f"fewer ranks nothing), so every receiver score is NaN. Split a longer text "
            f"(at least {proximity + MIN_RECEIVING} segments) or pass a smaller proximity=.",
            stacklevel=2,
        )
    return SegmentAttention(
        edges=edges,
        layers=chosen.layers,
        mass=mass,
        mean=mean,
        vertical=vertical,
        receiver=kurtosis(vertical),
    )
