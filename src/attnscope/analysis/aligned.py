"""The two inputs of a comparison as traces over the same, aligned tokens.

The views index one token list for both inputs, so a comparison is shown as
two traces restricted to the aligned positions (:func:`aligned_traces`): row
``i`` of either is the aligned pair ``i``. Only streams over the source tokens
on both axes are kept (the alignment pairs source tokens).

Where some tokens have no partner, each restricted row is rescaled so that it
is what softmax over the aligned keys alone gives: divided by its aligned
mass plus whatever mass an attention sink took. Without sinks that is plain
renormalisation, as :meth:`~attnscope.analysis.compare.AttentionComparison.divergence`
does, and the neuron view's softmax over the kept keys still reproduces the
rows. When every token is aligned nothing changes.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from attnscope.analysis.compare import AttentionComparison
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionStream, AttentionTrace, Tokens

FloatArray = npt.NDArray[np.float32]


def comparable_streams(comparison: AttentionComparison) -> list[str]:
    """The streams both inputs have whose queries and keys are both source tokens.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, compare
    >>> t = AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> comparable_streams(compare(t, t))
    ['self']
    """
    return [
        name
        for name in comparison.streams
        if all(
            s.query_side == "source" and s.key_side == "source"
            for s in (comparison.a.streams[name], comparison.b.streams[name])
        )
    ]


def aligned_tokens(comparison: AttentionComparison) -> Tokens:
    """One token per aligned pair: A's label, or ``"A | B"`` where the two differ.

    Raw strings follow the same rule; kinds and sentence segments are A's.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, compare
    >>> a = AttentionTrace(["she", "ran"], np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> b = AttentionTrace(["he", "ran"], np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> aligned_tokens(compare(a, b)).labels
    ('she | he', 'ran')
    """
    ta, tb = comparison.a.source, comparison.b.source
    pairs = comparison.alignment
    raw = [ta.raw[i] if ta.raw[i] == tb.raw[j] else f"{ta.raw[i]} | {tb.raw[j]}" for i, j in pairs]
    segments = None if ta.segments is None else [ta.segments[i] for i, _ in pairs]
    return Tokens(comparison.labels(), raw, [ta.kinds[i] for i, _ in pairs], segments)


def aligned_traces(comparison: AttentionComparison) -> tuple[AttentionTrace, AttentionTrace]:
    """Inputs A and B restricted to the aligned tokens, over :func:`aligned_tokens`.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, compare
    >>> att = np.full((1, 1, 3, 3), 1 / 3, np.float32)
    >>> a = AttentionTrace(["a", "big", "cat"], att)
    >>> b = AttentionTrace(["a", "cat"], np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> a2, b2 = aligned_traces(compare(a, b))
    >>> a2.tokens, a2.attention[0, 0].tolist()  # "big" has no partner: rows renormalised
    (['a', 'cat'], [[0.5, 0.5], [0.5, 0.5]])
    """
    names = comparable_streams(comparison)
    if not names:
        raise AttnscopeError(
            f"the traces share no stream whose queries and keys are both source tokens "
            f"(A has {list(comparison.a.streams)}, B has {list(comparison.b.streams)}); "
            "only such streams can be shown side by side."
        )
    tokens = aligned_tokens(comparison)
    out = []
    for side, trace in enumerate((comparison.a, comparison.b)):
        positions = np.array([pair[side] for pair in comparison.alignment], dtype=np.intp)
        streams = [_restrict(trace.streams[name], positions) for name in names]
        out.append(
            AttentionTrace.from_streams(tokens, streams, metadata=trace.metadata, notes=trace.notes)
        )
    return out[0], out[1]


def _restrict(stream: AttentionStream, keep: npt.NDArray[np.intp]) -> AttentionStream:
    attention = _rows_over(stream.attention, keep)

    def both_axes(array: npt.NDArray[np.generic] | None) -> npt.NDArray[np.generic] | None:
        if array is None:
            return None
        rows = keep if array.shape[2] > 1 else slice(None)
        cols = keep if array.shape[3] > 1 else slice(None)
        return np.ascontiguousarray(array[:, :, rows][:, :, :, cols])

    def positions(array: FloatArray | None) -> FloatArray | None:
        return None if array is None else np.ascontiguousarray(array[:, :, keep])

    return AttentionStream(
        attention=attention,
        layers=stream.layers,
        queries=positions(stream.queries),
        keys=positions(stream.keys),
        scaling=stream.scaling,
        bias=both_axes(stream.bias),  # type: ignore[arg-type]
        mask=both_axes(stream.mask),  # type: ignore[arg-type]
        key_spans=_spans_over(stream, keep),
        softcap=stream.softcap,
        sinks=stream.sinks,
        name=stream.name,
    )


def _spans_over(
    stream: AttentionStream, keep: npt.NDArray[np.intp]
) -> npt.NDArray[np.int32] | None:
    """The stream's key spans over positions ``keep`` (increasing, as every alignment is).

    The keys a query saw in ``[start, stop)`` are still one run among the kept
    positions: those below ``start`` .. those below ``stop``. So causal and
    windowed masks stay rules, and the kept rows' q and k still give their weights.
    """
    if stream.key_spans is None:
        return None
    return np.searchsorted(keep, stream.key_spans[:, keep]).astype(np.int32)


def _rows_over(attention: FloatArray, keep: npt.NDArray[np.intp]) -> FloatArray:
    """Rows and columns ``keep``, each row rescaled to softmax over the kept keys."""
    rows = attention[:, :, keep][:, :, :, keep].astype(np.float64)
    if len(keep) == attention.shape[3]:
        return np.ascontiguousarray(rows, dtype=np.float32)
    full = attention[:, :, keep].astype(np.float64).sum(-1, keepdims=True)
    # A row's full mass is 1 less what a sink took (0 for a fully masked row).
    denominator = rows.sum(-1, keepdims=True) + np.where(full > 0, 1.0 - full, 0.0)
    scaled = np.divide(rows, denominator, out=np.zeros_like(rows), where=denominator > 0)
    return np.ascontiguousarray(np.clip(scaled, 0.0, 1.0), dtype=np.float32)
