"""Which stream an analysis reads, and its attention a block of rows at a time.

Every analysis goes through :func:`layer_rows`: it reads
``stream.attention_rows(position, head, rows)`` and nothing more, so a stream
that computes its weights on demand (from q and k, for long inputs) never has
to hold more than a block of one head's weights at once (every head of a
layer only when the whole layer is that small).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionStream, AttentionTrace

if TYPE_CHECKING:
    from torch import Tensor

Float64Array = npt.NDArray[np.float64]


def pick_stream(trace: AttentionTrace, stream: str | None) -> AttentionStream:
    """The stream named ``stream``, or the trace's first one when it is None.

    Examples
    --------
    >>> import numpy as np
    >>> t = AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32))
    >>> pick_stream(t, None).name
    'self'
    >>> pick_stream(t, "cross")
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: stream='cross' is not in this trace; it has ['self'].
    """
    if not isinstance(trace, AttentionTrace):
        raise AttnscopeTypeError(
            f"expected an attnscope.AttentionTrace, got {type(trace).__name__}; build one with "
            "attnscope.capture(model, text) or AttentionTrace(tokens, attention)."
        )
    if stream is None:
        return trace.stream
    found = trace.streams.get(stream)
    if found is None:
        raise AttnscopeError(
            f"stream={stream!r} is not in this trace; it has {list(trace.streams)}."
        )
    return found


def require_self_attention(stream: AttentionStream, what: str) -> None:
    """Refuse a stream whose queries and keys are not the same tokens (cross-attention).

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.ones((1, 1, 1, 2), np.float32) / 2, name="cross",
    ...                     query_side="target")
    >>> require_self_attention(s, "rollout")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: rollout needs self-attention, ...
    """
    if stream.query_side != stream.key_side or stream.q_len != stream.k_len:
        raise AttnscopeError(
            f"{what} needs self-attention, where queries and keys are the same tokens; "
            f"stream {stream.name!r} goes from {stream.query_side} ({stream.q_len}) to "
            f"{stream.key_side} ({stream.k_len}) tokens. Pick stream='encoder', 'decoder' "
            "or 'self'."
        )


def require_consecutive_layers(stream: AttentionStream, what: str) -> None:
    """Refuse a stream whose captured layers have gaps (layer ``l`` must feed ``l + 1``).

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.ones((2, 1, 1, 1), np.float32), layers=(0, 5))
    >>> require_consecutive_layers(s, "rollout")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: rollout multiplies consecutive layers, ...
    """
    layers = stream.layers
    if any(b != a + 1 for a, b in pairwise(layers)):
        raise AttnscopeError(
            f"{what} multiplies consecutive layers, but stream {stream.name!r} holds layers "
            f"{list(layers)}; capture every layer from the first one you need (leave out "
            "layers= when capturing)."
        )


class Buffers:
    """float32 work tensors, each reused from block to block and layer to layer.

    Filling a fresh tensor of a few megabytes costs more than the arithmetic
    on it (the memory is first touched there), so the passes over a layer
    write their intermediate results into these instead.

    Examples
    --------
    >>> buffers = Buffers()
    >>> a = buffers.get("scores", (2, 3))
    >>> buffers.get("scores", (3, 2)).data_ptr() == a.data_ptr(), tuple(a.shape)
    (True, (2, 3))
    """

    def __init__(self) -> None:
        self._held: dict[str, Tensor] = {}

    def get(self, name: str, shape: tuple[int, ...]) -> Tensor:
        """The buffer ``name`` viewed as ``shape`` (its contents are whatever was last written)."""
        import torch

        size = math.prod(shape)
        held = self._held.get(name)
        if held is None or held.numel() < size:
            held = self._held[name] = torch.empty(size)
        return held[:size].view(shape)


def layer_rows(
    stream: AttentionStream,
    position: int,
    heads: Sequence[int] | None = None,
    buffers: Buffers | None = None,
    *,
    narrow: bool = False,
) -> Iterator[tuple[slice, list[int], Tensor]]:
    """One layer's weights in blocks, ``(rows, heads, weights)``, covering every (head, query) once.

    ``weights`` is float32 ``(len(heads), len(rows), k_len)``, each head's rows
    from :meth:`~attnscope.trace.AttentionStream.attention_rows`. A block holds
    at most :data:`attnscope.trace.rows.BLOCK_VALUES` weights: the whole layer
    when it is that small (one block: a few large tensor operations instead of
    many small ones), otherwise one head's block of query rows, so a long
    input is never held whole. Every head of a block of rows comes before the
    next block, so what depends only on the rows is made once for all heads.
    ``heads`` picks some heads (None: every one). A block of several heads is
    gathered into ``buffers`` when given, and is then overwritten by the next
    block: reduce it before asking for the next.

    With ``narrow``, a block's weights stop at the keys its rows can see
    (:func:`attnscope.trace.rows.visible_stop`; at least one key):
    ``(len(heads), len(rows), stop)``, the keys after ``stop`` having weight 0
    in those rows. Under a causal or windowed mask that skips about half of
    the work; the blocks are then half as tall, so the cut follows the
    diagonal more closely.

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.full((1, 2, 3, 3), 1 / 3, np.float32))
    >>> [(rows, heads, tuple(w.shape)) for rows, heads, w in layer_rows(s, 0)]
    [(slice(0, 3, None), [0, 1], (2, 3, 3))]
    """
    import torch

    from attnscope.trace import rows as rows_module

    picked = list(range(stream.num_heads) if heads is None else heads)
    q_len, k_len = stream.q_len, stream.k_len
    narrow = narrow and stream.key_spans is not None
    if len(picked) * q_len * k_len <= rows_module.BLOCK_VALUES:
        groups, blocks = [picked], [slice(0, q_len)]
    else:
        groups, blocks = [[h] for h in picked], list(rows_module.row_blocks(q_len, k_len))
        if narrow:
            step = max(1, rows_module.block_rows(k_len) // 2)
            blocks = [slice(i, min(i + step, q_len)) for i in range(0, q_len, step)]
    for rows in blocks:
        stop = max(1, rows_module.visible_stop(stream, position, rows)) if narrow else None
        for group in groups:
            weights = [stream.attention_rows(position, head, rows, stop) for head in group]
            if len(group) == 1:
                yield rows, group, weights[0][None]
                continue
            shape = (len(group), *weights[0].shape)
            out = None if buffers is None else buffers.get("weights", shape)
            yield rows, group, torch.stack(weights, out=out)


def hidden_rows(
    stream: AttentionStream, position: int, head: int, rows: slice
) -> npt.NDArray[np.bool_] | None:
    """Where one head's mask hides a key from query ``rows``, ``(len(rows), k_len)``; None: nowhere.

    The mask as a rule (``key_spans``) and as an array (``mask``) together.

    Examples
    --------
    >>> import numpy as np
    >>> causal = np.triu(np.ones((3, 3), bool), 1)[None, None]
    >>> s = AttentionStream(np.full((1, 1, 3, 3), 1 / 3, np.float32), mask=causal)
    >>> hidden_rows(s, 0, 0, slice(1, 3)).tolist()
    [[False, False, True], [False, False, False]]
    """
    from attnscope.trace.key_spans import blocked_from_spans

    if not stream.has_mask:
        return None
    hidden = np.zeros((len(range(stream.q_len)[rows]), stream.k_len), np.bool_)
    if stream.key_spans is not None:
        spans = stream.key_spans[min(position, stream.key_spans.shape[0] - 1)]
        hidden |= blocked_from_spans(spans[rows], stream.k_len).numpy()
    if stream.mask is not None:
        layer = stream.mask[min(position, stream.mask.shape[0] - 1)]
        shape = (stream.num_heads, stream.q_len, stream.k_len)
        hidden |= np.broadcast_to(layer, shape)[head, rows]
    return hidden
