"""Sliding-window attention returned as bands (Longformer, LED), spread over the key axis.

These models return each query's weights over the ``w + 1`` keys of its
window only: column ``j`` of a row is the key at offset ``j - w/2`` from the
query. A stream needs one column per key, so the band is placed on the full
key axis and the keys outside the window are marked hidden (weight 0).
"""

from __future__ import annotations

import torch

BANDED = {"longformer", "led"}
"""Model types whose returned attention is a band around each query."""


def spread_band(band: torch.Tensor, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(heads, q, w + 1)`` band weights to ``(heads, q, length)`` weights and hidden mask.

    Window positions that fall before the first or after the last key (the
    model pads to a multiple of its window) are dropped; they carry no weight.

    Examples
    --------
    >>> band = torch.tensor([[[0.0, 0.75, 0.25], [0.5, 0.5, 0.0]]])
    >>> weights, hidden = spread_band(band, 2)
    >>> weights.tolist(), hidden.tolist()
    ([[[0.75, 0.25], [0.5, 0.5]]], [[[False, False], [False, False]]])
    """
    heads, q_len, width = band.shape
    half = (width - 1) // 2
    keys = torch.arange(q_len)[:, None] + torch.arange(width)[None, :] - half
    inside = (keys >= 0) & (keys < length)
    weights = band.new_zeros(heads, q_len, length)
    rows = torch.arange(q_len)[:, None].expand(q_len, width)
    weights[:, rows[inside], keys[inside]] = band[:, inside]
    hidden = torch.ones(1, q_len, length, dtype=torch.bool)
    hidden[:, rows[inside], keys[inside]] = False
    return weights, hidden
