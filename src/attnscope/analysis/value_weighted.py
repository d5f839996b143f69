"""Attention weighted by what the values carry (Kobayashi et al. 2020).

A head's output at query i is ``Σ_j α_ij f_h(x_j)``; a weight on a key whose
``‖f_h(x_j)‖`` is small moves little. With the norms a trace holds
(``capture(..., value_norms=True)``), each row ``α_ij ‖f_h(x_j)‖`` renormalised
to sum to 1 says where the head's output actually comes from; ``sink_value`` is
``sink`` (the first key's share) read off those rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from attnscope.analysis.access import layer_rows
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionStream

if TYPE_CHECKING:
    from torch import Tensor

Float64Array = npt.NDArray[np.float64]


def _norms(stream: AttentionStream) -> npt.NDArray[np.float32]:
    if stream.value_norms is None:
        raise AttnscopeError(
            f"stream {stream.name!r} holds no value norms; capture with "
            "attnscope.capture(model, text, value_norms=True)."
        )
    return stream.value_norms


def value_weighted(weights: Tensor, norms: Tensor) -> Tensor:
    """Rows ``α_ij ‖f(x_j)‖ / Σ_k α_ik ‖f(x_k)‖`` (a row with no mass stays 0).

    Examples
    --------
    >>> import torch
    >>> value_weighted(torch.tensor([[0.5, 0.5]]), torch.tensor([1.0, 3.0])).tolist()
    [[0.25, 0.75]]
    """
    import torch

    scaled = weights * norms
    total = scaled.sum(dim=-1, keepdim=True)
    return torch.where(total > 0, scaled / torch.where(total > 0, total, 1.0), 0.0)


def value_weighted_rows(stream: AttentionStream, position: int, head: int, rows: slice) -> Tensor:
    """One head's value-weighted rows ``(len(rows), k_len)``, float32.

    Examples
    --------
    >>> s = AttentionStream(np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> s.set_value_norms(np.array([[[1.0, 3.0]]], np.float32))
    >>> value_weighted_rows(s, 0, 0, slice(0, 1)).tolist()
    [[0.25, 0.75]]
    """
    import torch

    norms = torch.from_numpy(_norms(stream)[position, head]).to(stream.device)
    return value_weighted(stream.attention_rows(position, head, rows), norms)


def sink_value(stream: AttentionStream) -> Float64Array:
    """``(layers, heads)``: the mean over queries of the first key's value-weighted share.

    Queries whose row carries no weight (fully masked) are left out, as for ``sink``.

    Examples
    --------
    >>> s = AttentionStream(np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> s.set_value_norms(np.array([[[1.0, 3.0]]], np.float32))
    >>> sink_value(s).tolist()
    [[0.25]]
    """
    import torch

    norms = _norms(stream)
    out = np.full((stream.num_layers, stream.num_heads), np.nan)
    for position in range(stream.num_layers):
        sums = np.zeros(stream.num_heads)
        counts = np.zeros(stream.num_heads)
        for _rows, heads, weights in layer_rows(stream, position):
            scale = torch.from_numpy(norms[position, heads]).to(weights.device)[:, None, :]
            shares = value_weighted(weights, scale)
            counted = (weights.sum(dim=-1) > 0).double()
            sums[heads] += (shares[..., 0].double() * counted).sum(dim=-1).cpu().numpy()
            counts[heads] += counted.sum(dim=-1).cpu().numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            out[position] = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return out
