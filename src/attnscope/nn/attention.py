"""Masked multi-head attention in plain PyTorch, written to be read.

This is the module a learner writes while following "Attention Is All You
Need" (Vaswani et al., 2017): three projections, split into heads, scores,
mask, scale, softmax, dropout, weighted sum of values, merge heads, output
projection. Every step is one named line, and ``need_trace=True`` hands back
each intermediate tensor under the name of the step that made it.

It follows ``torch.nn.MultiheadAttention``'s conventions for masks (bool True
= hidden, or an additive float mask) so the two can be compared with
:meth:`MultiHeadAttention.from_torch`, and adds grouped-query attention
(``num_kv_heads < num_heads``) as in Llama 2 and later.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, overload

import torch
from torch import Tensor, nn

from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.nn.masks import build_masks


@dataclass(frozen=True)
class MultiHeadAttentionTrace:
    """Every intermediate tensor of one :class:`MultiHeadAttention` forward pass.

    Names say where each tensor comes from, step by step. Shapes use ``B``
    batch, ``H`` query heads, ``G`` key/value heads (``G == H`` unless
    grouped-query), ``L`` query length, ``S`` key length, ``D`` head size.

    Parameters
    ----------
    q
        ``(B, H, L, D)``: the query projection split into heads.
    k
        ``(B, G, S, D)``: the key projection split into key heads (before the
        grouped-query repeat).
    v
        ``(B, G, S, D)``: the value projection split into value heads.
    scores
        ``(B, H, L, S)``: raw ``q · kᵀ``, before scaling and masking.
    logits
        ``(B, H, L, S)``: ``scores * scaling + bias``, then ``-inf`` where
        ``mask`` is True; the input of the softmax.
    weights
        ``(B, H, L, S)``: softmax of ``logits`` (before dropout). Rows sum to
        1; a row whose keys are all masked is all zeros.
    context
        ``(B, H, L, D)``: the (dropped-out) weights times the values, per head,
        before the heads are merged.
    mask
        bool, 4-D and broadcastable to ``(B, H, L, S)`` (an axis is 1 where the
        mask does not vary over it): True where the key was hidden.
    bias
        float, broadcastable to ``(B, H, L, S)``: the finite part of additive
        float masks, or None when there was none.
    scaling
        The factor the scores were multiplied by, ``1 / sqrt(D)``.

    Examples
    --------
    >>> import torch
    >>> _, t = MultiHeadAttention(8, 2, causal=True)(torch.randn(1, 3, 8), need_trace=True)
    >>> t.q.shape, t.weights.shape, t.scaling
    (torch.Size([1, 2, 3, 4]), torch.Size([1, 2, 3, 3]), 0.5)
    >>> t.mask[0, 0]
    tensor([[False,  True,  True],
            [False, False,  True],
            [False, False, False]])
    """

    q: Tensor
    k: Tensor
    v: Tensor
    scores: Tensor
    logits: Tensor
    weights: Tensor
    context: Tensor
    mask: Tensor
    bias: Tensor | None
    scaling: float


class MultiHeadAttention(nn.Module):
    """Masked multi-head attention, one readable step per line.

    Inputs are batch-first: ``(batch, seq, features)``.

    Parameters
    ----------
    d_model
        Size of the query input and of the output; split evenly over the heads.
    num_heads
        Number of query heads; ``d_model`` must be a multiple of it.
    num_kv_heads
        Number of key/value heads for grouped-query attention; defaults to
        ``num_heads`` (plain multi-head attention). Query head ``h`` uses key
        head ``h // (num_heads // num_kv_heads)``.
    kdim, vdim
        Feature sizes of the key and value inputs (cross-attention from a
        source of another width); default ``d_model``.
    bias
        Give all four projections a bias.
    dropout
        Dropout probability on the attention weights (training mode only).
    causal
        Hide from each query the keys after its own position.

    Notes
    -----
    The scores are scaled *before* the mask is applied, as torch does: an
    additive float mask is added to ``scores * scaling``. Keys hidden by the
    mask get ``-inf`` either way, so for them the paper's order (mask, then
    scale) gives the same weights.

    Examples
    --------
    >>> import torch
    >>> torch.manual_seed(0) and None
    >>> mha = MultiHeadAttention(16, 4, causal=True)
    >>> mha(torch.randn(2, 5, 16)).shape
    torch.Size([2, 5, 16])
    >>> gqa = MultiHeadAttention(16, 4, num_kv_heads=2)
    >>> gqa.k_proj.weight.shape  # two key heads of size 4
    torch.Size([8, 16])
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        *,
        num_kv_heads: int | None = None,
        kdim: int | None = None,
        vdim: int | None = None,
        bias: bool = True,
        dropout: float = 0.0,
        causal: bool = False,
    ) -> None:
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        kdim = d_model if kdim is None else kdim
        vdim = d_model if vdim is None else vdim
        _check_sizes(
            d_model, num_heads, num_kv_heads=num_kv_heads, kdim=kdim, vdim=vdim, dropout=dropout
        )
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.kdim = kdim
        self.vdim = vdim
        self.causal = causal
        self.scaling = 1.0 / math.sqrt(self.head_dim)
        kv_size = num_kv_heads * self.head_dim
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(kdim, kv_size, bias=bias)
        self.v_proj = nn.Linear(vdim, kv_size, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    @overload
    def forward(
        self,
        query: Tensor,
        key: Tensor | None = ...,
        value: Tensor | None = ...,
        *,
        attn_mask: Tensor | None = ...,
        key_padding_mask: Tensor | None = ...,
        need_trace: Literal[False] = ...,
    ) -> Tensor: ...

    @overload
    def forward(
        self,
        query: Tensor,
        key: Tensor | None = ...,
        value: Tensor | None = ...,
        *,
        attn_mask: Tensor | None = ...,
        key_padding_mask: Tensor | None = ...,
        need_trace: Literal[True],
    ) -> tuple[Tensor, MultiHeadAttentionTrace]: ...

    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        *,
        attn_mask: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        need_trace: bool = False,
    ) -> Tensor | tuple[Tensor, MultiHeadAttentionTrace]:
        """Attend from ``query`` to ``key``/``value`` (to ``query`` itself when they are None).

        Parameters
        ----------
        query
            ``(batch, L, d_model)``.
        key, value
            ``(batch, S, kdim)`` and ``(batch, S, vdim)`` for cross-attention;
            pass both or neither.
        attn_mask
            ``(L, S)`` or ``(batch * num_heads, L, S)``: bool (True = hidden) or
            float (added to the scaled scores, ``-inf`` = hidden).
        key_padding_mask
            ``(batch, S)``: bool (True = padding) or additive float.
        need_trace
            Also return a :class:`MultiHeadAttentionTrace` of every step.

        Returns
        -------
        Tensor or tuple
            ``(batch, L, d_model)``, or ``(output, trace)`` with ``need_trace=True``.

        Examples
        --------
        >>> import torch
        >>> mha = MultiHeadAttention(8, 2)
        >>> x = torch.randn(2, 3, 8)
        >>> pad = torch.tensor([[False, False, True], [False, False, False]])
        >>> out, t = mha(x, key_padding_mask=pad, need_trace=True)
        >>> t.weights[0, :, :, 2].abs().max().item()  # nobody attends to the padding
        0.0
        """
        key, value = self._check_inputs(query, key, value)
        batch, q_len, _ = query.shape
        k_len = key.shape[1]
        heads, kv_heads, head_dim = self.num_heads, self.num_kv_heads, self.head_dim

        # Project, then split the features into heads: (B, len, H*D) -> (B, H, len, D).
        q = self.q_proj(query).view(batch, q_len, heads, head_dim).transpose(1, 2)
        k = self.k_proj(key).view(batch, k_len, kv_heads, head_dim).transpose(1, 2)
        v = self.v_proj(value).view(batch, k_len, kv_heads, head_dim).transpose(1, 2)

        # Grouped-query attention: each key/value head serves a group of query heads.
        group = heads // kv_heads
        k_per_head = k.repeat_interleave(group, dim=1)
        v_per_head = v.repeat_interleave(group, dim=1)

        # How much each query matches each key: (B, H, L, D) @ (B, H, D, S) -> (B, H, L, S).
        scores = q @ k_per_head.transpose(-2, -1)

        masks = build_masks(
            batch=batch,
            heads=heads,
            q_len=q_len,
            k_len=k_len,
            causal=self.causal,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            device=query.device,
        )
        # Scale so the logits' spread does not grow with head_dim (which would
        # saturate the softmax), add any additive mask, hide masked keys.
        logits = scores * self.scaling
        if masks.bias is not None:
            logits = logits + masks.bias.to(logits)
        logits = logits.masked_fill(masks.blocked, float("-inf"))

        weights = torch.softmax(logits, dim=-1)
        # A query that may see no key at all gets 0/0 = NaN from softmax; give it zeros.
        no_key_visible = masks.blocked.all(dim=-1, keepdim=True)
        weights = weights.masked_fill(no_key_visible, 0.0)

        # Mix the values each query attends to: (B, H, L, S) @ (B, H, S, D) -> (B, H, L, D).
        context = self.dropout(weights) @ v_per_head

        # Merge the heads back side by side: (B, H, L, D) -> (B, L, H*D).
        merged = context.transpose(1, 2).reshape(batch, q_len, heads * head_dim)
        output: Tensor = self.out_proj(merged)

        if not need_trace:
            return output
        trace = MultiHeadAttentionTrace(
            q=q,
            k=k,
            v=v,
            scores=scores,
            logits=logits,
            weights=weights,
            context=context,
            mask=masks.blocked,
            bias=masks.bias,
            scaling=self.scaling,
        )
        return output, trace

    def _check_inputs(
        self, query: Tensor, key: Tensor | None, value: Tensor | None
    ) -> tuple[Tensor, Tensor]:
        """Raise on shapes that do not fit; return (key, value) with self-attention filled in."""
        if (key is None) != (value is None):
            raise AttnscopeError(
                "pass both key and value (cross-attention) or neither (self-attention)."
            )
        key = query if key is None else key
        value = query if value is None else value
        expected = (
            ("query", query, self.d_model, "d_model"),
            ("key", key, self.kdim, "kdim"),
            ("value", value, self.vdim, "vdim"),
        )
        for name, tensor, size, size_name in expected:
            if tensor.dim() != 3 or tensor.shape[-1] != size:
                hint = " Add a batch axis with x[None]." if tensor.dim() == 2 else ""
                raise AttnscopeError(
                    f"{name} has shape {tuple(tensor.shape)}; expected (batch, seq, "
                    f"{size_name}={size}), batch first.{hint}"
                )
        if key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]:
            raise AttnscopeError(
                f"query {tuple(query.shape)}, key {tuple(key.shape)} and value "
                f"{tuple(value.shape)} must share the batch size, and key and value "
                "the sequence length."
            )
        return key, value

    def extra_repr(self) -> str:
        """Sizes and options, shown by ``print(module)``."""
        kv = "" if self.num_kv_heads == self.num_heads else f", num_kv_heads={self.num_kv_heads}"
        return f"d_model={self.d_model}, num_heads={self.num_heads}{kv}, causal={self.causal}"

    @classmethod
    def from_torch(cls, m: nn.MultiheadAttention, *, causal: bool = False) -> MultiHeadAttention:
        """Copy a ``torch.nn.MultiheadAttention``'s weights into a new module.

        The copy computes what ``m`` computes, so the two can be compared
        step by step. ``m`` may be batch-first or not (the weights do not
        depend on it), but this module always takes ``(batch, seq, features)``:
        with torch's default ``batch_first=False``, compare
        ``m(x.transpose(0, 1), ...)`` transposed back.

        Parameters
        ----------
        m
            The module to copy. ``add_bias_kv`` and ``add_zero_attn`` have no
            counterpart here and are refused.
        causal
            Build the copy with a built-in causal mask (torch passes
            ``is_causal``/``attn_mask`` per call instead).

        Returns
        -------
        MultiHeadAttention
            Same sizes, dropout, weights, device, dtype and training mode as ``m``.

        Examples
        --------
        >>> import torch
        >>> ref = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval()
        >>> mine = MultiHeadAttention.from_torch(ref)
        >>> x = torch.randn(1, 3, 8)
        >>> torch.allclose(mine(x), ref(x, x, x)[0], atol=1e-6)
        True
        """
        if not isinstance(m, nn.MultiheadAttention):
            raise AttnscopeTypeError(
                f"from_torch takes a torch.nn.MultiheadAttention, not {type(m).__name__}."
            )
        if m.bias_k is not None or m.bias_v is not None:
            raise AttnscopeError(
                "this MultiheadAttention was built with add_bias_kv=True (a learned extra "
                "key/value), which MultiHeadAttention does not have; build it without."
            )
        if m.add_zero_attn:
            raise AttnscopeError(
                "this MultiheadAttention was built with add_zero_attn=True (an extra zero "
                "key/value), which MultiHeadAttention does not have; build it without."
            )
        has_bias = m.in_proj_bias is not None
        if has_bias != (m.out_proj.bias is not None):
            raise AttnscopeError(
                "the input projections and out_proj disagree on having a bias; "
                "MultiHeadAttention gives all four projections a bias or none."
            )
        copy = cls(
            m.embed_dim,
            m.num_heads,
            kdim=m.kdim,
            vdim=m.vdim,
            bias=has_bias,
            dropout=m.dropout,
            causal=causal,
        )
        weight = m.out_proj.weight
        copy.to(device=weight.device, dtype=weight.dtype)
        if m.in_proj_weight is not None:  # packed: one (3E, E) matrix for q, k and v
            w_q, w_k, w_v = m.in_proj_weight.chunk(3)
        else:  # kdim/vdim differ from embed_dim: three separate matrices
            w_q, w_k, w_v = m.q_proj_weight, m.k_proj_weight, m.v_proj_weight
        with torch.no_grad():
            for proj, w in ((copy.q_proj, w_q), (copy.k_proj, w_k), (copy.v_proj, w_v)):
                proj.weight.copy_(w)
            copy.out_proj.weight.copy_(weight)
            if m.in_proj_bias is not None and m.out_proj.bias is not None:
                b_q, b_k, b_v = m.in_proj_bias.chunk(3)
                for proj, b in ((copy.q_proj, b_q), (copy.k_proj, b_k), (copy.v_proj, b_v)):
                    proj.bias.copy_(b)
                copy.out_proj.bias.copy_(m.out_proj.bias)
        copy.train(m.training)
        return copy


def _check_sizes(
    d_model: int, num_heads: int, *, num_kv_heads: int, kdim: int, vdim: int, dropout: float
) -> None:
    """Raise before any parameter is made if the sizes cannot work together."""
    for name, value in (
        ("d_model", d_model),
        ("num_heads", num_heads),
        ("num_kv_heads", num_kv_heads),
        ("kdim", kdim),
        ("vdim", vdim),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise AttnscopeError(f"{name} must be a positive integer; got {value!r}.")
    if d_model % num_heads:
        raise AttnscopeError(
            f"d_model={d_model} cannot be split evenly over num_heads={num_heads}; choose "
            f"a number of heads that divides d_model (such as "
            f"{_divisors_near(d_model, num_heads)})."
        )
    if num_heads % num_kv_heads:
        raise AttnscopeError(
            f"num_heads={num_heads} is not a multiple of num_kv_heads={num_kv_heads}; each "
            "key/value head must serve the same number of query heads."
        )
    if not 0.0 <= dropout < 1.0:
        raise AttnscopeError(f"dropout must be a probability in [0, 1); got {dropout!r}.")


def _divisors_near(n: int, target: int) -> str:
    """Name the two divisors of ``n`` closest to ``target``, for an error message."""
    divisors = sorted((d for d in range(1, n + 1) if n % d == 0), key=lambda d: abs(d - target))
    return " or ".join(str(d) for d in sorted(divisors[:2]))
