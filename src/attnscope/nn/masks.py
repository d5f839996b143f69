"""Masks for :class:`attnscope.MultiHeadAttention`, in torch.nn.MultiheadAttention's conventions.

Every kind of mask a caller can pass (causal, ``attn_mask``, ``key_padding_mask``;
boolean or additive float) is reduced to two things: a boolean ``blocked``
(True where a key is hidden from a query) and an optional finite additive
``bias``. Keeping the two apart is what lets a trace say *which* keys were
hidden, rather than leave a reader to spot ``-inf`` among the logits.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnscope.errors import AttnscopeError, AttnscopeTypeError


@dataclass(frozen=True)
class Masks:
    """The masks of one forward pass, each 4-D and broadcastable to ``(batch, heads, L, S)``.

    Parameters
    ----------
    blocked
        bool; ``True`` where the key is hidden from the query.
    bias
        Finite float added to the scaled scores, or None when there is none.

    Examples
    --------
    >>> m = build_masks(batch=1, heads=2, q_len=2, k_len=2, causal=True)
    >>> m.blocked[0, 0]
    tensor([[False,  True],
            [False, False]])
    >>> m.bias is None
    True
    """

    blocked: Tensor
    bias: Tensor | None


def build_masks(
    *,
    batch: int,
    heads: int,
    q_len: int,
    k_len: int,
    causal: bool = False,
    attn_mask: Tensor | None = None,
    key_padding_mask: Tensor | None = None,
    device: torch.device | None = None,
) -> Masks:
    """Merge the causal flag, ``attn_mask`` and ``key_padding_mask`` into one :class:`Masks`.

    Parameters
    ----------
    batch, heads, q_len, k_len
        The shape of the attention the masks apply to; ``heads`` counts query heads.
    causal
        Hide every key after the query's own position (upper triangle, aligned
        top-left like ``scaled_dot_product_attention(is_causal=True)``).
    attn_mask
        ``(q_len, k_len)`` or ``(batch * heads, q_len, k_len)``; bool (True =
        hidden) or float (added to the scaled scores; ``-inf`` hides the key).
    key_padding_mask
        ``(batch, k_len)``; bool (True = padding, hidden) or additive float.
    device
        Where to build the causal mask when no other mask says.

    Returns
    -------
    Masks
        ``blocked`` ``(batch or 1, heads or 1, L, S)`` and ``bias`` (1 on the axes
        it does not vary over).

    Examples
    --------
    >>> pad = torch.tensor([[False, False, True]])
    >>> build_masks(batch=1, heads=4, q_len=3, k_len=3, key_padding_mask=pad).blocked[0, 0]
    tensor([[False, False,  True],
            [False, False,  True],
            [False, False,  True]])
    >>> add = torch.tensor([[0.0, -1.0], [0.0, float("-inf")]])
    >>> m = build_masks(batch=1, heads=1, q_len=2, k_len=2, attn_mask=add)
    >>> m.blocked[0, 0].tolist(), m.bias[0, 0].tolist()
    ([[False, False], [False, True]], [[0.0, -1.0], [0.0, 0.0]])
    """
    blocked = torch.zeros(1, 1, q_len, k_len, dtype=torch.bool, device=device)
    bias: Tensor | None = None
    if causal:
        future = torch.ones(q_len, k_len, dtype=torch.bool, device=device).triu(diagonal=1)
        blocked = blocked | future
    parts = []
    if attn_mask is not None:
        parts.append(("attn_mask", _attn_mask_4d(attn_mask, batch, heads, q_len, k_len)))
    if key_padding_mask is not None:
        parts.append(("key_padding_mask", _padding_mask_4d(key_padding_mask, batch, k_len)))
    for name, mask in parts:
        if mask.dtype == torch.bool:
            blocked = blocked | mask.to(blocked.device)
            continue
        if not mask.is_floating_point():
            raise AttnscopeTypeError(
                f"{name} has dtype {mask.dtype}; pass a bool mask (True = hidden) or a float "
                "mask to add to the scores (-inf = hidden). Convert with `mask.bool()`."
            )
        if torch.isnan(mask).any() or torch.isposinf(mask).any():
            raise AttnscopeError(
                f"{name} contains NaN or +inf; an additive mask may hold finite values "
                "and -inf (hidden) only."
            )
        hidden = torch.isneginf(mask)
        blocked = blocked | hidden.to(blocked.device)
        finite = mask.masked_fill(hidden, 0.0)
        # A float mask made from a bool one (0 / -inf) adds nothing: leave bias empty.
        if bool(finite.any()):
            bias = finite if bias is None else bias + finite
    return Masks(blocked=blocked, bias=bias)


def _attn_mask_4d(mask: Tensor, batch: int, heads: int, q_len: int, k_len: int) -> Tensor:
    if mask.dim() == 2 and mask.shape == (q_len, k_len):
        return mask.view(1, 1, q_len, k_len)
    if mask.dim() == 3 and mask.shape == (batch * heads, q_len, k_len):
        return mask.view(batch, heads, q_len, k_len)
    raise AttnscopeError(
        f"attn_mask has shape {tuple(mask.shape)}; expected ({q_len}, {k_len}) for every "
        f"batch item and head, or ({batch * heads}, {q_len}, {k_len}) = (batch * heads, "
        "L, S) as torch.nn.MultiheadAttention takes it."
    )


def _padding_mask_4d(mask: Tensor, batch: int, k_len: int) -> Tensor:
    if mask.shape != (batch, k_len):
        raise AttnscopeError(
            f"key_padding_mask has shape {tuple(mask.shape)}; expected (batch, S) = "
            f"({batch}, {k_len}), True where a key is padding."
        )
    return mask.view(batch, 1, 1, k_len)
