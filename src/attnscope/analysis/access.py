"""Which stream an analysis reads, and its attention one layer at a time.

Every analysis goes through :func:`layer_block`: it reads
``stream.layer_attention(position)`` and nothing more, so a stream that
computes a layer's weights on demand (from q and k, for long inputs) never
has to hold every layer at once.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import numpy.typing as npt

from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionStream, AttentionTrace

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
        raise TypeError(
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


def layer_block(stream: AttentionStream, position: int) -> Float64Array:
    """One layer's weights, ``(heads, q_len, k_len)``, as float64.

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.ones((2, 3, 1, 1), np.float32))
    >>> layer_block(s, 1).shape, layer_block(s, 1).dtype
    ((3, 1, 1), dtype('float64'))
    """
    return np.asarray(stream.layer_attention(position), dtype=np.float64)


def layer_mask(stream: AttentionStream, position: int) -> npt.NDArray[np.bool_] | None:
    """One layer's mask broadcast to ``(heads, q_len, k_len)`` (True = hidden), or None.

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.ones((2, 3, 1, 1), np.float32), mask=np.zeros((1, 1, 1, 1), bool))
    >>> layer_mask(s, 1).shape
    (3, 1, 1)
    """
    from attnscope.trace.key_spans import blocked_from_spans

    if not stream.has_mask:
        return None
    shape = (stream.num_heads, stream.q_len, stream.k_len)
    hidden = np.zeros(shape[1:], np.bool_)
    if stream.key_spans is not None:  # the mask as a rule (what capture keeps)
        spans = stream.key_spans[min(position, stream.key_spans.shape[0] - 1)]
        hidden = blocked_from_spans(spans, stream.k_len).numpy()
    if stream.mask is None:
        return np.broadcast_to(hidden, shape)
    mask = stream.mask[min(position, stream.mask.shape[0] - 1)]
    return np.broadcast_to(mask, shape) | hidden
