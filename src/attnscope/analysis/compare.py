"""Compare the attention of two inputs head by head: minimal pairs, A − B, heads ranked by change.

:func:`compare` aligns the two inputs' tokens (:mod:`attnscope.analysis.align`)
and :class:`AttentionComparison` gives, per stream, the signed difference
``A − B`` over the aligned rows and columns and, per head, how much its rows
moved: the Jensen–Shannon divergence between aligned rows, averaged over the
query rows both inputs share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from attnscope.analysis.align import Alignment, align_tokens, check_alignment
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionStream, AttentionTrace

FloatArray = npt.NDArray[np.float32]


class HeadChange(NamedTuple):
    """One head's change between the two inputs, as :meth:`AttentionComparison.ranking` lists it."""

    layer: int
    """The model's layer number."""
    head: int
    """The head index."""
    divergence: float
    """Mean Jensen–Shannon divergence of the head's aligned rows, in nats (0 .. ln 2)."""


def js_divergence(p: npt.ArrayLike, q: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Jensen–Shannon divergence of distributions along the last axis, in nats.

    ``JSD(p, q) = ½ KL(p ‖ m) + ½ KL(q ‖ m)`` with ``m = (p + q) / 2``; terms
    with a zero probability contribute nothing. It is symmetric, 0 for equal
    rows and at most ``ln 2`` for rows with disjoint support.

    Examples
    --------
    >>> float(js_divergence([0.5, 0.5], [0.5, 0.5]))
    0.0
    >>> round(float(js_divergence([1.0, 0.0], [0.0, 1.0])), 6) == round(float(np.log(2)), 6)
    True
    """
    p64 = np.asarray(p, np.float64)
    q64 = np.asarray(q, np.float64)
    m = (p64 + q64) / 2

    def kl(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(x > 0, x * np.log(x / m), 0.0)
        return np.asarray(terms.sum(-1))

    return np.maximum(0.5 * kl(p64) + 0.5 * kl(q64), 0.0)


@dataclass(frozen=True)
class AttentionComparison:
    """The attention of two inputs, aligned token by token.

    Build it with :func:`compare`. ``alignment`` pairs positions of A's source
    tokens with B's; every comparison works on those rows and columns only.

    Examples
    --------
    >>> import torch
    >>> from attnscope import AttentionTrace, MultiHeadAttention
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> mha, x = MultiHeadAttention(8, 2, causal=True), torch.randn(1, 4, 8)
    >>> a = AttentionTrace.from_module(mha, x, ["the", "nurse", "said", "she"])
    >>> y = x.clone(); y[0, 3] = torch.randn(8)
    >>> b = AttentionTrace.from_module(mha, y, ["the", "nurse", "said", "he"])
    >>> c = compare(a, b)
    >>> c.labels()[-1], c.difference().shape
    ('she | he', (1, 2, 4, 4))
    >>> bool(abs(c.difference()[0, :, :3]).max() == 0)  # rows before "she" cannot see it
    True
    """

    a: AttentionTrace
    b: AttentionTrace
    alignment: Alignment

    @property
    def streams(self) -> list[str]:
        """The streams both traces have, in A's order."""
        return [name for name in self.a.streams if name in self.b.streams]

    def _pair(self, stream: str | None) -> tuple[str, AttentionStream, AttentionStream]:
        name = stream if stream is not None else self.streams[0]
        if name not in self.streams:
            raise AttnscopeError(
                f"stream {name!r} is not in both traces; compare one of {self.streams}."
            )
        return name, self.a.streams[name], self.b.streams[name]

    def _positions(self, s_a: AttentionStream) -> tuple[npt.NDArray[np.intp], ...]:
        ia = np.array([p for p, _ in self.alignment], dtype=np.intp)
        ib = np.array([p for _, p in self.alignment], dtype=np.intp)
        if s_a.query_side != "source" or s_a.key_side != "source":
            raise AttnscopeError(
                "only streams over the source tokens can be compared (the alignment pairs "
                "source tokens); pick the 'self' or 'encoder' stream."
            )
        return ia, ib

    def labels(self) -> list[str]:
        """One label per aligned position: the token, or ``"A | B"`` where the two differ."""
        la, lb = self.a.source.labels, self.b.source.labels
        return [la[i] if la[i] == lb[j] else f"{la[i]} | {lb[j]}" for i, j in self.alignment]

    def difference(self, stream: str | None = None) -> FloatArray:
        """``A − B`` over the aligned rows and columns, ``(layers, heads, n, n)``, float32."""
        _, s_a, s_b = self._pair(stream)
        ia, ib = self._positions(s_a)
        out = np.empty((s_a.num_layers, s_a.num_heads, len(ia), len(ia)), np.float32)
        for layer in range(s_a.num_layers):
            rows_a = s_a.layer_attention(layer)[:, ia][:, :, ia]
            rows_b = s_b.layer_attention(layer)[:, ib][:, :, ib]
            out[layer] = rows_a - rows_b
        return out

    def divergence(self, stream: str | None = None) -> npt.NDArray[np.float64]:
        """Per head, the mean JS divergence of aligned rows, ``(layers, heads)``, in nats.

        Each aligned query row of A and of B is restricted to the aligned keys
        and renormalised (a no-op when every token is aligned); rows that see
        none of the aligned keys in either input are left out of the mean. A
        head with no such row gives NaN.
        """
        _, s_a, s_b = self._pair(stream)
        ia, ib = self._positions(s_a)
        out = np.full((s_a.num_layers, s_a.num_heads), np.nan)
        for layer in range(s_a.num_layers):
            rows_a = s_a.layer_attention(layer)[:, ia][:, :, ia].astype(np.float64)
            rows_b = s_b.layer_attention(layer)[:, ib][:, :, ib].astype(np.float64)
            mass_a, mass_b = rows_a.sum(-1, keepdims=True), rows_b.sum(-1, keepdims=True)
            seen = (mass_a[..., 0] > 0) & (mass_b[..., 0] > 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                jsd = js_divergence(rows_a / mass_a, rows_b / mass_b)
            for head in range(s_a.num_heads):
                if seen[head].any():
                    out[layer, head] = float(jsd[head][seen[head]].mean())
        return out

    def ranking(self, stream: str | None = None) -> list[HeadChange]:
        """Every head, the most changed first (by :meth:`divergence`; NaN heads last)."""
        _, s_a, _ = self._pair(stream)
        div = self.divergence(stream)
        heads = [
            HeadChange(int(s_a.layers[p]), h, float(div[p, h]))
            for p in range(div.shape[0])
            for h in range(div.shape[1])
        ]
        return sorted(heads, key=lambda c: (np.isnan(c.divergence), -np.nan_to_num(c.divergence)))


def compare(
    trace_a: AttentionTrace,
    trace_b: AttentionTrace,
    *,
    alignment: Sequence[tuple[int, int]] | None = None,
) -> AttentionComparison:
    """Compare two traces of the same model on two inputs (a minimal pair, say).

    Parameters
    ----------
    trace_a, trace_b
        Traces with the same streams, layers and heads (the same model and
        ``layers=``), on two inputs.
    alignment
        Pairs ``(position in A, position in B)`` of source tokens to compare.
        Default: position by position for inputs of equal length, otherwise
        :func:`~attnscope.analysis.align.align_tokens` over the raw tokens.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> t = AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> c = compare(t, t)
    >>> float(abs(c.difference()).max()), float(c.divergence().max())
    (0.0, 0.0)
    """
    for name, trace in (("trace_a", trace_a), ("trace_b", trace_b)):
        if not isinstance(trace, AttentionTrace):
            raise AttnscopeTypeError(
                f"compare takes two AttentionTrace objects; {name} is {type(trace).__name__}. "
                "Build them with attnscope.capture(model, text) on each input."
            )
    shared = [n for n in trace_a.streams if n in trace_b.streams]
    if not shared:
        raise AttnscopeError(
            f"the traces share no stream (A has {list(trace_a.streams)}, B has "
            f"{list(trace_b.streams)}); capture both with the same model."
        )
    for name in shared:
        s_a, s_b = trace_a.streams[name], trace_b.streams[name]
        if s_a.layers != s_b.layers or s_a.num_heads != s_b.num_heads:
            raise AttnscopeError(
                f"stream {name!r} differs in shape: A has layers {list(s_a.layers)} x "
                f"{s_a.num_heads} heads, B has {list(s_b.layers)} x {s_b.num_heads}; capture "
                "both with the same model and the same layers=."
            )
    len_a, len_b = len(trace_a.source), len(trace_b.source)
    pairs = align_tokens(trace_a.source.raw, trace_b.source.raw) if alignment is None else alignment
    return AttentionComparison(trace_a, trace_b, check_alignment(pairs, len_a, len_b))
