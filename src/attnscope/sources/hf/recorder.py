"""The generic route's recorder: an attention function that notes what it computes.

transformers 5.x models call ``ALL_ATTENTION_FUNCTIONS[config._attn_implementation]``
with q and k exactly as they are dot-producted (after RoPE and q/k norms; keys
before the grouped-query repeat). :class:`Recorder` is registered under a
fresh name and keeps q, k, scaling, mask, bias, softcap and sinks of each
call: O(N) per head, from which the weights are recomputed on demand. It
computes the call's output with the fast implementation (sdpa) where the
call allows it, and asks the model's own ``eager_attention_forward`` only for
a few query rows (:data:`REFERENCE_ROWS`): their weights are kept as the
reference ``trace.check()`` holds the recomputed rows to, and their output
must match the fast one within what two correct kernels of the model's dtype
may differ by (:func:`out_tolerance`), or the call is run eager after all.
Eager runs a block of query rows at a time (:func:`eager_in_blocks`), so no
call ever holds more than one block of one layer's scores. Calls that were
not asked for run the model's original implementation. A probe recorder
(``weights=True``) returns the eager weights instead, so that calls can be
told apart by the identity of the weights in the model's outputs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from attnscope.sources.hf.row_mask import RowMask

AttentionFunction = Callable[..., tuple[torch.Tensor, torch.Tensor | None]]


@dataclass
class AttentionCall:
    """What one call of the attention function saw (batch item 0 only).

    ``weights``/``query``/``key`` are None for calls that were not recorded;
    ``weights`` also for calls recorded as q/k, whose ``reference`` holds the
    eager weights ``(heads, R, k_len)`` of query rows ``reference_rows``, and
    where the model returned something other than a tensor (``returned``).

    Examples
    --------
    >>> AttentionCall().weights is None
    True
    """

    weights: torch.Tensor | None = None
    weights_ptr: int = 0
    query: torch.Tensor | None = None
    key: torch.Tensor | None = None
    scaling: float = 1.0
    mask: torch.Tensor | RowMask | None = None
    """True where a key is hidden; a :class:`RowMask` (True = attend) past a dense mask's size."""
    bias: torch.Tensor | None = None
    softcap: float = 0.0
    sinks: torch.Tensor | None = None
    reference_rows: list[int] | None = None
    reference: torch.Tensor | None = None
    returned: str = ""
    """Why the model gave no weights tensor for this layer, when it did not (Pegasus-X: a dict)."""
    eager_why: str = ""
    """Why this call's output came from eager attention although a fast one was at hand."""
    causal: bool = False
    """The mask hides exactly the future keys (no padding, window or bias): a rule, not data."""

    @property
    def recorded(self) -> bool:
        """True when the call kept weights or q/k (it was asked for)."""
        return self.weights is not None or self.query is not None


class CannotRecordError(LookupError):
    """The generic route cannot record this model; capture falls back to weights only.

    Examples
    --------
    >>> issubclass(CannotRecordError, LookupError)
    True
    """


def eager_forward_for(module: torch.nn.Module) -> AttentionFunction:
    """The ``eager_attention_forward`` of the modeling file that defines ``module``.

    Examples
    --------
    >>> from transformers import BertConfig
    >>> from transformers.models.bert.modeling_bert import BertSelfAttention
    >>> module = BertSelfAttention(BertConfig(hidden_size=8, num_attention_heads=2))
    >>> eager_forward_for(module).__module__
    'transformers.models.bert.modeling_bert'
    """
    for cls in type(module).__mro__:
        found = getattr(sys.modules.get(cls.__module__), "eager_attention_forward", None)
        if callable(found):
            return found  # type: ignore[no-any-return]
    raise CannotRecordError(
        f"{type(module).__name__} (from {type(module).__module__}) has no "
        "eager_attention_forward to compute its weights with"
    )


def split_mask(
    mask: torch.Tensor | None, k_len: int
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Split a mask as eager attention receives it into (blocked, extra bias).

    An additive float mask holds a very negative number where a key is hidden
    and 0 elsewhere; any other finite value is a bias the model folded into
    its mask, and is returned as such so the recompute stays exact.

    Examples
    --------
    >>> import torch
    >>> blocked, bias = split_mask(torch.tensor([[[[0.0, -3.4e38]]]]), 2)
    >>> blocked.tolist(), bias
    ([[[[False, True]]]], None)
    """
    if mask is None:
        return None, None
    mask = mask[..., :k_len]
    if mask.dtype == torch.bool:  # sdpa convention: True = attend
        return ~mask, None
    blocked = mask <= torch.finfo(mask.dtype).min / 2
    # A float copy of the mask only when it folds a bias in: at 32768 tokens the
    # mask alone is 4.3 GB, and the usual one holds nothing but 0 and the minimum.
    if not bool(((mask != 0) & ~blocked).any()):
        return blocked, None
    return blocked, mask.masked_fill(blocked, 0.0)


def additive(mask: Any, dtype: torch.dtype) -> Any:
    """A boolean mask (True = attend) as the float one eager attention adds; anything else as is.

    Examples
    --------
    >>> import torch
    >>> additive(torch.tensor([True, False]), torch.float32).tolist()
    [0.0, -3.4028234663852886e+38]
    """
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        return mask
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(
        ~mask, torch.finfo(dtype).min
    )


CAUSAL_CHECK_ROWS = 1024
"""Query rows compared at a time when checking a mask is plainly causal (bounds its memory)."""


def _is_plain_causal(
    blocked: torch.Tensor | None, folded: torch.Tensor | None, *, attend: bool = False
) -> bool:
    """True for a split mask that hides exactly the future keys (no padding, window, bias).

    With ``attend`` the mask is sdpa's boolean one (True = attend), read as
    it is: no inverted copy of an N² mask is made to check it.

    Examples
    --------
    >>> import torch
    >>> future = torch.ones(3, 3, dtype=torch.bool).triu(1)[None, None]
    >>> _is_plain_causal(future, None), _is_plain_causal(~future, None)
    (True, False)
    >>> _is_plain_causal(~future, None, attend=True)
    True
    """
    if blocked is None or folded is not None or blocked.shape[0] != 1 or blocked.shape[1] != 1:
        return False
    q_len, k_len = blocked.shape[-2:]
    if q_len != k_len:
        return False
    keys = torch.arange(k_len, device=blocked.device)
    for start in range(0, q_len, CAUSAL_CHECK_ROWS):
        rows = torch.arange(start, min(start + CAUSAL_CHECK_ROWS, q_len), device=blocked.device)
        hidden = keys[None, :] > rows[:, None]
        if not torch.equal(blocked[0, 0, rows], ~hidden if attend else hidden):
            return False
    return True


REFERENCE_ROWS = 8
"""Query rows per recorded call whose weights eager attention computes for reference."""
EAGER_BLOCK_VALUES = 1 << 22
"""Most scores (heads x query rows x keys) one eager call computes: 16 MiB of float32."""
FAST_BLOCK_VALUES = 1 << 22
"""Most scores one sdpa call over a block of rows of a :class:`RowMask` computes (16 MiB)."""


def out_tolerance(dtype: torch.dtype) -> float:
    """Largest |fast - eager| in a call's output (relative to its scale) taken as equal.

    Two correct kernels round differently: float32 agrees to ~1e-6, but
    bfloat16 and float16 outputs of sdpa and eager differ by about half
    their epsilon (measured: 2e-3 to 3e-3 for bfloat16, 4e-4 for float16,
    relative to 1 + the largest output). Four epsilons of the dtype, and
    never less than 1e-4, keep a fast path that only rounds differently;
    one that drops a term is off by the size of the output itself.

    Examples
    --------
    >>> out_tolerance(torch.float32), out_tolerance(torch.bfloat16), out_tolerance(torch.float16)
    (0.0001, 0.03125, 0.00390625)
    """
    return max(1e-4, 4 * float(torch.finfo(dtype).eps))


def _rows_of(value: Any, rows: torch.Tensor | slice, q_len: int) -> Any:
    """The query rows of an attention-shaped (4-D, ``(..., q_len, k)``) argument."""
    if isinstance(value, RowMask):
        return value.rows(rows)
    if isinstance(value, torch.Tensor) and value.ndim == 4 and value.shape[-2] == q_len > 1:
        if isinstance(rows, slice):
            return value[..., rows, :]
        return value.index_select(-2, rows.to(value.device))
    return value


def eager_in_blocks(
    eager: AttentionFunction,
    call: tuple[Any, ...],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    rows: torch.Tensor | None = None,
    *,
    causal: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Eager attention of ``call`` = (module, query, key, value, mask), a block of rows at a time.

    Each eager call sees a block of query rows (all of them, or those listed
    in ``rows``), with the mask's and every attention-shaped argument's rows
    cut alike, so its scores hold at most :data:`EAGER_BLOCK_VALUES` values
    (one query row when a row alone holds more); the float mask eager adds is
    made per block from the boolean one. With ``causal`` (the mask was left
    out as a rule, and ``mask`` is None) each block's causal mask is made
    from its query positions. Rows of a softmax do not depend on each other,
    so the blocks joined are the call's output, and its weights (None when
    eager gave none).

    Examples
    --------
    >>> import torch
    >>> from transformers.models.llama.modeling_llama import eager_attention_forward
    >>> module = torch.nn.Module(); module.num_key_value_groups = 1
    >>> q = torch.randn(1, 2, 5, 4)
    >>> mask = torch.ones(5, 5, dtype=torch.bool).tril()[None, None]
    >>> whole, _ = eager_attention_forward(module, q, q, q, additive(mask, q.dtype), scaling=0.5)
    >>> parts, weights = eager_in_blocks(eager_attention_forward, (module, q, q, q, mask), (),
    ...                                  {"scaling": 0.5})
    >>> torch.allclose(whole, parts), weights.shape
    (True, torch.Size([1, 2, 5, 5]))
    >>> ruled, _ = eager_in_blocks(eager_attention_forward, (module, q, q, q, None), (),
    ...                            {"scaling": 0.5}, causal=True)
    >>> torch.allclose(whole, ruled)
    True
    """
    module, query, key, value, mask = call
    heads, q_len, k_len = query.shape[1], query.shape[-2], key.shape[-2]
    count = q_len if rows is None else len(rows)
    step = max(1, EAGER_BLOCK_VALUES // max(heads * k_len, 1))
    outs: list[torch.Tensor] = []
    weights: list[torch.Tensor] = []
    for start in range(0, count, step):
        stop = min(start + step, count)
        part: torch.Tensor | slice = slice(start, stop) if rows is None else rows[start:stop]
        if rows is None and start == 0 and stop == q_len:
            block_query, block_mask, sliced = query, _rows_of(mask, part, q_len), kwargs
        else:
            block_query = (
                query[:, :, part] if isinstance(part, slice) else query.index_select(2, part)
            )
            block_mask = _rows_of(mask, part, q_len)
            sliced = {k: _rows_of(v, part, q_len) for k, v in kwargs.items()}
        if causal and mask is None:
            block_mask = causal_block(part, k_len, query.device)
        out, weight = eager(
            module, block_query, key, value, additive(block_mask, query.dtype), *args, **sliced
        )
        outs.append(out)
        if weight is not None:
            weights.append(weight)
    joined = None if len(weights) != len(outs) else torch.cat(weights, dim=-2)
    if len(outs) == 1:
        return outs[0], joined
    # eager returns (batch, q, heads, d); the query axis is the one the blocks cut
    axis = 1 if outs[0].shape[1] == min(step, count) else 2
    return torch.cat(outs, dim=axis), joined


def causal_block(
    rows: torch.Tensor | slice, k_len: int, device: torch.device | None = None
) -> torch.Tensor:
    """The boolean causal mask (True = attend) of query ``rows``: ``(1, 1, rows, k_len)``.

    Built for one block of rows at a time, so a causal rule never becomes N².

    Examples
    --------
    >>> causal_block(slice(1, 3), 3).int().tolist()
    [[[[1, 1, 0], [1, 1, 1]]]]
    """
    if isinstance(rows, slice):
        positions = torch.arange(rows.start or 0, rows.stop, device=device)
    else:
        positions = rows.to(device)
    keys = torch.arange(k_len, device=device)
    return (keys[None, :] <= positions[:, None])[None, None]


def reference_rows(q_len: int) -> list[int]:
    """:data:`REFERENCE_ROWS` query rows spread over ``0 .. q_len-1``, the last included.

    Examples
    --------
    >>> reference_rows(3), reference_rows(100)
    ([0, 1, 2], [0, 14, 28, 42, 57, 71, 85, 99])
    """
    if q_len <= REFERENCE_ROWS:
        return list(range(q_len))
    picked = [i * q_len // (REFERENCE_ROWS - 1) for i in range(REFERENCE_ROWS - 1)]
    return [*picked, q_len - 1]


class Recorder:
    """An attention function to register with ``transformers.AttentionInterface``.

    Parameters
    ----------
    keep
        Indices of the calls (in the order the model makes them) to record;
        None records every call.
    fallback
        Runs calls that are not recorded (the model's original implementation);
        None uses the model's eager function and drops its weights.
    fast
        Computes the output of recorded calls (sdpa); None runs them eager.
    weights
        Return (and note) the full eager weights of recorded calls, keeping no
        q/k: the probe pass that labels calls by their weights. It notes which
        calls had a plainly causal mask (``AttentionCall.causal``).
    causal_calls
        Indices of the calls whose mask is plainly causal (the probe's
        finding): such a call that receives no mask was given none because
        transformers left the causal mask out as a rule (sdpa's
        ``is_causal``), and is computed causal, never with an N² mask.

    Examples
    --------
    >>> rec = Recorder()
    >>> rec.calls
    []
    """

    def __init__(
        self,
        keep: frozenset[int] | None = None,
        fallback: AttentionFunction | None = None,
        *,
        fast: AttentionFunction | None = None,
        weights: bool = False,
        causal_calls: frozenset[int] = frozenset(),
    ) -> None:
        self.keep = keep
        self.causal_calls = causal_calls
        self.fallback = fallback
        self.fast = fast
        self.weights = weights
        self.calls: list[AttentionCall] = []
        self.rejected = ""
        """Why the fast function was given up, once it was (empty while it is used)."""
        self._causal: dict[tuple[int, tuple[int, ...]], bool] = {}
        self._split: dict[tuple[int, tuple[int, ...], int], tuple[Any, Any]] = {}

    def _for_sdpa(self, mask: torch.Tensor | None) -> tuple[torch.Tensor | None, bool]:
        """The mask and ``is_causal`` flag for sdpa, as eager would apply ``mask``.

        A plain causal mask becomes ``is_causal=True`` with no mask: sdpa's fast
        kernels take that path, and a dense float mask costs them several times
        more at thousands of tokens. Eager reads no mask as "attend everywhere".
        """
        if mask is None:
            return None, False
        if isinstance(mask, RowMask):  # a window, chunks or padding: never a plain causal one
            return mask, False
        key = (mask.data_ptr(), tuple(mask.shape))
        if key not in self._causal:  # layers share one mask tensor: check it once
            if mask.shape[0] != 1:
                self._causal[key] = False
            elif mask.dtype == torch.bool:  # sdpa's mask, read as it is
                self._causal[key] = _is_plain_causal(mask, None, attend=True)
            else:
                blocked, folded = self._split_mask(mask, int(mask.shape[-1]))
                whole = blocked[None] if isinstance(blocked, torch.Tensor) else None
                self._causal[key] = _is_plain_causal(whole, folded)
        return (None, True) if self._causal[key] else (mask, False)

    def _split_mask(
        self, mask: torch.Tensor | RowMask | None, k_len: int
    ) -> tuple[torch.Tensor | RowMask | None, torch.Tensor | None]:
        """:func:`split_mask`, once per mask tensor (layers share one); a RowMask as it is."""
        if mask is None:
            return None, None
        if isinstance(mask, RowMask):
            return (mask if mask.k_len == k_len else mask[..., :k_len]), None
        key = (mask.data_ptr(), tuple(mask.shape), k_len)
        if key not in self._split:
            blocked, folded = split_mask(mask, k_len)
            self._split[key] = (
                None if blocked is None else blocked[0],
                None if folded is None else folded[0],
            )
        return self._split[key]

    def _run_fast(
        self,
        function: AttentionFunction,
        call: tuple[Any, ...],
        kwargs: dict[str, Any],
        rule: bool = False,
    ) -> torch.Tensor:
        """Run ``function`` on ``call`` = (module, query, key, value, mask) the sdpa way.

        ``rule``: the call is causal by rule (its mask was left out).
        """
        module, query, key, value, attention_mask = call
        mask, causal = (None, True) if rule else self._for_sdpa(attention_mask)
        # eager ignores is_causal (the mask says it all), so ours replaces the model's
        rest = {k: v for k, v in kwargs.items() if k != "is_causal"}
        if not isinstance(mask, RowMask):
            out, _ = function(module, query, key, value, mask, is_causal=causal, **rest)
            return out
        # A mask made a block of query rows at a time: sdpa a block of rows at a time too.
        q_len, k_len = query.shape[-2], key.shape[-2]
        step = max(1, FAST_BLOCK_VALUES // max(query.shape[1] * k_len, 1))
        # Keys no row of a block sees are left out of its call and its mask (a window's
        # block: window + rows keys, not all N), unless another argument spans the keys too.
        narrow = not any(
            isinstance(v, torch.Tensor) and v.ndim == 4 and v.shape[-1] == k_len
            for v in rest.values()
        )
        outs = []
        for start in range(0, q_len, step):
            part = slice(start, min(start + step, q_len))
            sliced = {k: _rows_of(v, part, q_len) for k, v in rest.items()}
            seen = mask.visible(part) if narrow else slice(0, k_len)
            block, _ = function(
                module,
                query[:, :, part],
                key[..., seen, :],
                value[..., seen, :],
                mask.block(part, seen),
                is_causal=False,
                **sliced,
            )
            outs.append(block)
        # sdpa returns (batch, q, heads, d); the query axis is the one the blocks cut
        axis = 1 if outs[0].shape[1] == min(step, q_len) else 2
        return outs[0] if len(outs) == 1 else torch.cat(outs, dim=axis)

    def __call__(
        self,
        module: torch.nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        *args: Any,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Run one attention call, recording it when asked to."""
        index = len(self.calls)
        eager = eager_forward_for(module)
        special = kwargs.get("softcap") is not None or kwargs.get("s_aux") is not None or args
        q_len, k_len = query.shape[-2], key.shape[-2]
        # transformers left a plainly causal mask out (sdpa's is_causal): a rule, not N² data
        rule = attention_mask is None and index in self.causal_calls and q_len == k_len > 1
        if self.keep is not None and index not in self.keep:
            self.calls.append(AttentionCall())
            call = (module, query, key, value, attention_mask)
            if self.fallback is not None and not special:
                return self._run_fast(self.fallback, call, kwargs, rule), None
            return eager_in_blocks(eager, call, args, kwargs, causal=rule)[0], None
        if self.weights:
            full = additive(attention_mask, query.dtype)
            probed, weights = eager(module, query, key, value, full, *args, **kwargs)
            if weights is None:
                raise RuntimeError(
                    f"{type(module).__name__}'s eager attention returned no weights; "
                    "attnscope cannot capture this model's attention."
                )
            plain = attention_mask is not None and attention_mask.shape[-1] == k_len
            self.calls.append(
                AttentionCall(
                    weights=weights[0],
                    weights_ptr=weights.data_ptr(),
                    causal=plain and self._for_sdpa(attention_mask)[1],
                )
            )
            return probed, weights
        rows = reference_rows(q_len)
        picked = torch.tensor(rows, device=query.device)
        call = (module, query, key, value, attention_mask)
        out_rows, reference = eager_in_blocks(eager, call, args, kwargs, picked, causal=rule)
        if reference is None:
            raise RuntimeError(
                f"{type(module).__name__}'s eager attention returned no weights; "
                "attnscope cannot capture this model's attention."
            )
        out: torch.Tensor | None = None
        why = ""
        if self.fast is not None and not special:
            fast_out = self._run_fast(self.fast, call, kwargs, rule)
            # The fast output must be eager's (up to the dtype's rounding) on the rows both
            # computed.
            expected = out_rows.float()
            got = fast_out.index_select(1, picked).float()
            scale = 1.0 + float(expected.abs().max())
            off = float((got - expected).abs().max()) / scale
            if off <= out_tolerance(query.dtype):
                out = fast_out
            else:  # this model's fast path is not eager's: eager from now on
                self.fast = None
                self.rejected = (
                    f"its sdpa attention's output differs from its eager attention's by "
                    f"{off:.2g} (relative), more than {str(query.dtype).removeprefix('torch.')} "
                    f"rounding allows ({out_tolerance(query.dtype):.2g}): capture computed "
                    "every layer eagerly, a block of query rows at a time, and the trace holds "
                    "eager's attention, which may differ from what the model computes with sdpa."
                )
        if out is None:
            out, _ = eager_in_blocks(eager, call, args, kwargs, causal=rule)
            why = self.rejected
        # A plain causal mask is kept as a rule (the flag below), never as an N² copy.
        causal = attention_mask is not None and attention_mask.shape[-1] == k_len
        causal = rule or (causal and self._for_sdpa(attention_mask)[1])
        blocked, folded = (
            (None, None) if causal else self._split_mask(attention_mask, key.shape[-2])
        )
        bias = kwargs.get("position_bias")
        if bias is not None:
            bias = bias[0, ..., : key.shape[-2]]
        if folded is not None:
            bias = folded if bias is None else bias + folded
        sinks = kwargs.get("s_aux")
        softcap = kwargs.get("softcap")
        scaling = kwargs.get("scaling")
        self.calls.append(
            AttentionCall(
                query=query[0],
                key=key[0],
                scaling=float(query.shape[-1] ** -0.5 if scaling is None else scaling),
                mask=blocked,
                bias=bias,
                softcap=float(softcap or 0.0),
                sinks=None if sinks is None else sinks.reshape(-1),
                reference_rows=rows,
                reference=reference[0].float(),
                eager_why=why,
                causal=causal,
            )
        )
        return out, None
