"""Rows of one head's attention, computed on demand from q, k and the terms around them.

Everything that reads attention (chunks for the views, statistics, the
trace's own check) asks for a block of query rows of one ``(layer, head)``
at a time, so no more than :data:`BLOCK_VALUES` weights exist at once, however
long the input. Rows come from stored weights when the stream keeps them,
otherwise they are recomputed exactly as transformers' eager attention does:
``scores = (q · kᵀ) * scaling``, ``+ bias``, optional ``tanh`` softcap,
hidden keys set to ``-inf``, optional sink logit, softmax (a query that sees
no key gets a row of zeros).
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from attnscope.errors import AttnscopeError

if TYPE_CHECKING:
    import torch

BLOCK_VALUES = 1 << 22
"""Most attention weights computed at once (16 MiB of float32)."""

Rows = slice | np.ndarray[Any, Any]

_Array = np.ndarray[Any, Any]


class _StreamParts(Protocol):
    """The parts of a stream that rows are computed from.

    :class:`attnscope.trace.stream.AttentionStream` has them; this module reads
    them through this protocol so that it needs nothing from the stream's
    module, which calls it (no import circle, type-only imports included).
    """

    @property
    def name(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def k_len(self) -> int: ...
    @property
    def weights(self) -> _Array | None: ...
    @property
    def queries(self) -> _Array | None: ...
    @property
    def keys(self) -> _Array | None: ...
    @property
    def scaling(self) -> _Array | None: ...
    @property
    def bias(self) -> _Array | None: ...
    @property
    def mask(self) -> _Array | None: ...
    @property
    def softcap(self) -> _Array | None: ...
    @property
    def sinks(self) -> _Array | None: ...
    @property
    def key_spans(self) -> _Array | None: ...
    def kv_head(self, head: int) -> int: ...


def block_rows(k_len: int) -> int:
    """Query rows per block so that a block holds at most :data:`BLOCK_VALUES` weights.

    Examples
    --------
    >>> block_rows(4096)
    1024
    """
    return max(1, BLOCK_VALUES // max(k_len, 1))


def row_blocks(q_len: int, k_len: int) -> Iterator[slice]:
    """Slices of query rows covering ``0 .. q_len`` in blocks of :func:`block_rows`.

    Examples
    --------
    >>> list(row_blocks(3, BLOCK_VALUES // 2))
    [slice(0, 2, None), slice(2, 3, None)]
    """
    step = block_rows(k_len)
    for start in range(0, q_len, step):
        yield slice(start, min(start + step, q_len))


def _tensor(array: np.ndarray[Any, Any]) -> torch.Tensor:
    """A tensor over ``array``'s memory, or over a copy when it is read-only or strided."""
    import torch

    if not array.flags.writeable:
        array = array.copy()
    return torch.from_numpy(np.ascontiguousarray(array))


def _term(array: np.ndarray[Any, Any], position: int, head: int, rows: Rows) -> Any:
    """The ``(rows, k)`` part of a term broadcastable to ``(layers, heads, q, k)``."""
    part = array[position if array.shape[0] > 1 else 0, head if array.shape[1] > 1 else 0]
    if part.shape[0] > 1:
        part = part[rows]
    return _tensor(part)


def _heads_term(array: np.ndarray[Any, Any], position: int, rows: Rows) -> Any:
    """The ``(heads or 1, rows or 1, k)`` part of a term broadcastable to ``(L, H, Q, K)``."""
    part = array[position if array.shape[0] > 1 else 0]
    if part.shape[1] > 1:
        part = part[:, rows]
    return _tensor(part)


def _hide_outside_spans(
    scores: torch.Tensor, spans: np.ndarray[Any, Any], position: int, rows: Rows
) -> None:
    """Set ``-inf`` where a key lies outside its query's span, touching only columns that can.

    ``scores`` is ``(..., len(rows), keys)``: any leading axes (heads) share
    the rows' spans. Keys before every span's start and after every span's
    stop are filled whole; the comparison runs only over the columns in
    between (under a causal mask, one block's width instead of the whole row).
    """
    import torch

    layer = spans[position if spans.shape[0] > 1 else 0]
    part = _tensor(layer[rows]).to(scores.device)
    width = scores.shape[-1]
    low = min(int(part[:, 0].min()), width) if part.numel() else 0
    high = min(int(part[:, 0].max()), width) if part.numel() else 0
    scores[..., :low] = -torch.inf
    if high > low:
        keys = torch.arange(low, high, dtype=torch.int32, device=scores.device)
        scores[..., low:high].masked_fill_(keys < part[:, :1], -torch.inf)
    first = max(min(int(part[:, 1].min()), width), 0) if part.numel() else width
    last = min(int(part[:, 1].max()), width) if part.numel() else width
    scores[..., last:] = -torch.inf
    if last > first:
        keys = torch.arange(first, last, dtype=torch.int32, device=scores.device)
        scores[..., first:last].masked_fill_(keys >= part[:, 1:], -torch.inf)


def visible_stop(stream: _StreamParts, position: int, rows: Rows) -> int:
    """One past the last key any of query ``rows`` can see: ``k_len`` unless a mask rule says less.

    Keys from there on have weight 0 in every one of these rows, so readers
    that reduce rows (top keys, thumbnails) need not compute them: half the
    work under a causal mask.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> q = np.zeros((1, 1, 4, 2), np.float32)
    >>> causal = np.array([[[0, 1], [0, 2], [0, 3], [0, 4]]], np.int32)
    >>> visible_stop(AttentionStream(queries=q, keys=q, key_spans=causal), 0, slice(0, 2))
    2
    """
    if stream.key_spans is None:
        return stream.k_len
    layer = stream.key_spans[position if stream.key_spans.shape[0] > 1 else 0]
    stops = layer[rows, 1]
    return int(stops.max()) if stops.size else 0


def logit_rows(
    stream: _StreamParts, position: int, head: int, rows: Rows, stop: int | None = None
) -> torch.Tensor:
    """Scores of query ``rows`` for keys ``0 .. stop``, float32, ``-inf`` where a key is hidden.

    ``(q · kᵀ) * scaling``, ``+ bias``, softcap and the mask, as eager
    attention computes them before its softmax, on the stream's device. The
    sink logit, when the stream has one, is not a column: see :func:`sink_logit`.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> q = np.ones((1, 1, 2, 4), np.float32)
    >>> s = AttentionStream(queries=q, keys=q, mask=np.triu(np.ones((2, 2), bool), 1)[None, None])
    >>> logit_rows(s, 0, 0, slice(0, 2)).tolist()
    [[2.0, -inf], [2.0, 2.0]]
    """
    import torch

    queries, _ = _qk(stream)
    stop = stream.k_len if stop is None else stop
    q = _tensor(queries[position, head, rows]).to(stream.device, torch.float32)
    k = layer_keys(stream, position)[stream.kv_head(head), :stop]
    return _eager_terms(
        q @ k.T, stream, position, rows, lambda term: _term(term, position, head, rows)
    )


def _qk(stream: _StreamParts) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    if stream.queries is None or stream.keys is None or stream.scaling is None:
        raise AttnscopeError(f"stream {stream.name!r} has neither weights nor q/k to compute from.")
    return stream.queries, stream.keys


def _eager_terms(
    scores: torch.Tensor,
    stream: _StreamParts,
    position: int,
    rows: Rows,
    part: Callable[[np.ndarray[Any, Any]], torch.Tensor],
) -> torch.Tensor:
    """``q · kᵀ`` scores made eager attention's: scaled, biased, soft-capped and masked.

    ``part(term)`` is the piece of a bias or mask term that broadcasts
    against ``scores`` (``(..., len(rows), keys)``).
    """
    import torch

    stop, device = scores.shape[-1], scores.device
    assert stream.scaling is not None
    scores *= float(stream.scaling[position])
    if stream.bias is not None:
        scores += part(stream.bias)[..., :stop].to(device)
    if stream.softcap is not None and stream.softcap[position] > 0:
        cap = float(stream.softcap[position])
        scores.div_(cap).tanh_().mul_(cap)  # tanh(s / cap) * cap, in place
    if stream.mask is not None:
        scores.masked_fill_(part(stream.mask)[..., :stop].to(device), -torch.inf)
    if stream.key_spans is not None:
        _hide_outside_spans(scores, stream.key_spans, position, rows)
    return scores


_WORK = threading.local()


def layer_keys(stream: _StreamParts, position: int) -> torch.Tensor:
    """One layer's keys ``(kv_heads, k_len, head_dim)`` as float32 on the stream's device.

    float32 keys are a view of the stream's own array (copied only to reach
    another device). Half-precision keys are converted once per layer and
    kept while this thread reads that layer (one layer, O(N·d)), so the
    blocks of a layer compute in float32 without converting its keys per block.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> q = np.ones((1, 1, 2, 4), np.float16)
    >>> layer_keys(AttentionStream(queries=q, keys=q), 0).dtype
    torch.float32
    """
    import torch

    _, keys = _qk(stream)
    layer = keys[position]
    if layer.dtype == np.float32:
        return _tensor(layer).to(stream.device)
    kept = _WORK.__dict__.get("keys")
    if kept is not None and kept[0]() is keys and kept[1] == (position, stream.device):
        found: torch.Tensor = kept[2]
        return found
    _WORK.keys = None  # the old layer's copy goes before the new one is made
    if torch.device(stream.device).type == "cpu":
        converted = torch.from_numpy(layer.astype(np.float32))
    else:  # half the bytes cross to the device, converted there
        converted = _tensor(layer).to(stream.device).float()
    # A weak reference: the cache never keeps a trace's keys alive.
    _WORK.keys = (weakref.ref(keys), (position, stream.device), converted)
    return converted


_TOKENS = itertools.count()


class _Kept:
    """One thread's work buffer on one device, and the finaliser that frees it with its owner."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor
        self.token = next(_TOKENS)
        self.owner: weakref.finalize[Any, Any] | None = None

    def adopt(self, owner: object, kept: dict[str, _Kept], place: str) -> None:
        """Free this buffer when ``owner`` is freed (the owner it had before lets go)."""
        if self.owner is not None and self.owner.alive:
            if self.owner.peek()[0] is owner:  # type: ignore[index]
                return
            self.owner.detach()
        self.owner = weakref.finalize(owner, _drop, kept, place, self.token)


def _drop(kept: dict[str, _Kept], place: str, token: int) -> None:
    entry = kept.get(place)
    if entry is not None and entry.token == token:
        del kept[place]


def work_buffer(
    values: int, device: torch.device | str, *, reserve: int = 0, owner: object | None = None
) -> torch.Tensor:
    """A float32 tensor of ``values`` elements over memory this thread keeps for such blocks.

    A loop that computes a block's scores, keeps a small result and frees
    the scores leaves a hole in the heap that the kept results then split,
    so the next block's scores no longer fit it: the process grows by a
    block per block (13 GB over the top keys of one 32768-token layer).
    Scores written here reuse one allocation, kept while the thread lives
    and grown when a block needs more: to ``reserve`` values at once (the
    most any block of the loop can need; a buffer grown a little per block
    would be a new hole per block). The tensor is valid until this thread
    asks again.

    The memory is bounded: one buffer per thread and device. Given an
    ``owner`` (the stream whose blocks it holds), the buffer is freed when
    that owner is (a closed widget's trace leaves no buffer behind) unless a
    later owner adopted it.

    Examples
    --------
    >>> work_buffer(6, "cpu").shape
    torch.Size([6])
    >>> work_buffer(4, "cpu").data_ptr() == work_buffer(6, "cpu").data_ptr()
    True
    """
    import torch

    kept: dict[str, _Kept] = _WORK.__dict__.setdefault("buffers", {})
    place = str(device)
    entry = kept.get(place)
    if entry is None or entry.tensor.numel() < values:
        if entry is not None and entry.owner is not None:
            entry.owner.detach()
        kept.pop(place, None)
        size = max(values, reserve, 1)
        entry = kept[place] = _Kept(torch.empty(size, dtype=torch.float32, device=device))
    if owner is not None:
        entry.adopt(owner, kept, place)
    return entry.tensor[:values]


def logit_heads(
    stream: _StreamParts,
    position: int,
    rows: Rows,
    stop: int | None = None,
    *,
    reuse: bool = False,
) -> torch.Tensor:
    """:func:`logit_rows` of every head at once: float32 ``(heads, len(rows), stop)``.

    One batched product over the heads (each query head with its key head),
    so a block of a few rows costs a few large operations, not a few per head.
    With ``reuse`` the scores are written into :func:`work_buffer`: for a
    caller that is done with them before it asks again.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> q = np.array([[[[1.0], [0.0]], [[2.0], [1.0]]]], np.float32)  # two query heads
    >>> k = np.array([[[[1.0], [3.0]]]], np.float32)  # one key head for both
    >>> logit_heads(AttentionStream(queries=q, keys=k), 0, slice(0, 2)).tolist()
    [[[1.0, 3.0], [0.0, 0.0]], [[2.0, 6.0], [1.0, 3.0]]]
    """
    import torch

    queries, keys = _qk(stream)
    stop = stream.k_len if stop is None else stop
    q = _tensor(queries[position][:, rows]).to(stream.device, torch.float32)
    layer = keys[position]
    # The first keys of each head as a view (a copy of them would be the largest
    # cost of a block at long inputs); a read-only array is copied only that far;
    # half-precision keys are converted once per layer (layer_keys).
    if layer.dtype != np.float32:
        k = layer_keys(stream, position)[:, :stop]
    elif layer.flags.writeable:
        k = _tensor(layer)[:, :stop].to(stream.device)
    else:
        k = _tensor(layer[:, :stop]).to(stream.device)
    # Query heads sharing a key head are consecutive: one product per key head.
    heads, n = q.shape[0], q.shape[1]
    grouped = q.reshape(k.shape[0], -1, q.shape[2])
    if reuse:
        reserve = heads * n * stream.k_len  # this block's rows at any stop
        buffer = work_buffer(heads * n * stop, q.device, reserve=reserve, owner=stream)
        out = buffer.view(k.shape[0], -1, stop)
        scores = torch.matmul(grouped, k.transpose(1, 2), out=out)
    else:
        scores = grouped @ k.transpose(1, 2)
    return _eager_terms(
        scores.view(heads, n, stop),
        stream,
        position,
        rows,
        lambda term: _heads_term(term, position, rows),
    )


def sink_logit(stream: _StreamParts, position: int, head: int) -> float | None:
    """The head's attention-sink logit (joined to every row before softmax), or None.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> print(sink_logit(AttentionStream(np.full((1, 1, 1, 1), 1.0, np.float32)), 0, 0))
    None
    """
    if stream.sinks is None:
        return None
    return float(stream.sinks[position, head])


def compute_heads(stream: _StreamParts, position: int, rows: Rows) -> torch.Tensor:
    """Attention of query ``rows`` of every head, float32 ``(heads, len(rows), k_len)``, on the CPU.

    :func:`compute_rows` of all heads in one batched computation (a few
    large operations instead of a few per head), for readers of a few rows
    of every head such as ``check()``.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> q = np.zeros((1, 2, 3, 4), np.float16)
    >>> compute_heads(AttentionStream(queries=q, keys=q), 0, np.array([0, 2])).shape
    torch.Size([2, 2, 3])
    """
    import torch

    if stream.weights is not None:
        return _tensor(stream.weights[position][:, rows]).float()
    scores = logit_heads(stream, position, rows)
    if stream.sinks is not None:
        sinks = torch.tensor(stream.sinks[position], dtype=torch.float32, device=scores.device)
        column = sinks[:, None, None].expand(scores.shape[0], scores.shape[1], 1)
        weights = torch.softmax(torch.cat([scores, column], dim=-1), dim=-1)[..., :-1]
    else:
        weights = torch.softmax(scores, dim=-1)
    return torch.nan_to_num_(weights, nan=0.0).cpu()


def compute_rows(
    stream: _StreamParts, position: int, head: int, rows: Rows, stop: int | None = None
) -> torch.Tensor:
    """Attention of query ``rows`` of one head, float32 ``(len(rows), stop)``, on the CPU.

    Stored weights are read when the stream has them; otherwise the rows are
    recomputed from q and k. ``stop`` (default ``k_len``) keeps keys
    ``0 .. stop``: with :func:`visible_stop`, the keys after it have weight 0
    in these rows and are not computed. Use :meth:`AttentionStream.attention_rows`.
    """
    import torch

    if stream.weights is not None:
        return _tensor(stream.weights[position, head, rows, :stop]).float()
    scores = logit_rows(stream, position, head, rows, stop)
    sink = sink_logit(stream, position, head)
    if sink is not None:
        column = torch.full((scores.shape[0], 1), sink, device=scores.device)
        scores = torch.cat([scores, column], dim=1)
    weights = torch.softmax(scores, dim=-1)
    if sink is not None:
        weights = weights[:, :-1]
    # A query that sees no key: softmax of all -inf is NaN; the row is zeros.
    return torch.nan_to_num_(weights, nan=0.0).cpu()
