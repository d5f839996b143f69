"""Attention over a vision-language model's image tokens, laid out on each image's grid."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from attnscope.analysis.access import pick_stream
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionStream, AttentionTrace

Float32Array = npt.NDArray[np.float32]


def _indices(value: int | Sequence[int], count: int, what: str) -> list[int]:
    found = [value] if isinstance(value, int) else list(value)
    if not found or not all(isinstance(i, int) and not isinstance(i, bool) for i in found):
        raise AttnscopeTypeError(
            f"{what} must be an int or a non-empty list of ints; got {value!r}."
        )
    bad = [i for i in found if not -count <= i < count]
    if bad:
        raise AttnscopeError(
            f"{what}={bad[0]} is out of range: there are {count} (0..{count - 1}, or "
            "negative from the end)."
        )
    return [i % count for i in found]


def _heads(head: int | Sequence[int] | Literal["mean"], stream: AttentionStream) -> list[int]:
    if isinstance(head, str):
        if head != "mean":
            raise AttnscopeError(f'head={head!r}: pass a head index, a list of them, or "mean".')
        return list(range(stream.num_heads))
    return _indices(head, stream.num_heads, "head")


def image_attention(
    trace: AttentionTrace,
    *,
    layer: int,
    head: int | Sequence[int] | Literal["mean"] = "mean",
    query: int | Sequence[int] = -1,
    stream: str | None = None,
) -> list[Float32Array]:
    """A query's attention over each image's tokens, laid out on that image's grid.

    Parameters
    ----------
    trace
        A trace with images (``attnscope.capture(model, text, images=...)``).
    layer
        The model's layer index (as captured; negative counts from the last
        captured layer).
    head
        One head, a list of heads (their mean) or ``"mean"`` (every head).
    query
        The query token's position, or a list of them (their rows summed);
        the last token by default.
    stream
        Which stream (the first one by default).

    Returns
    -------
    list of numpy.ndarray
        One float32 ``(rows, cols)`` array per image of ``trace.images``: cell
        ``(r, c)`` is the weight the query gives the token of that cell.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope.trace.images import ImageRegion
    >>> trace = AttentionTrace(list("abcde"), np.full((1, 1, 5, 5), 0.2, np.float32))
    >>> trace.images = [ImageRegion((1, 2, 3, 4), (2, 2), np.zeros((4, 4, 3), np.uint8))]
    >>> image_attention(trace, layer=0, head=0, query=0)[0].shape
    (2, 2)
    """
    chosen = pick_stream(trace, stream)
    if not trace.images:
        raise AttnscopeError(
            "this trace has no images (trace.images is empty); capture a vision-language "
            "model with attnscope.capture(model, text, images=..., processor=...). Where a "
            "model's image layout cannot be read, trace.notes says why."
        )
    if chosen.query_side != "source" or chosen.key_side != "source":
        raise AttnscopeError(
            f"stream {chosen.name!r} does not attend from the input tokens to themselves; "
            "images are in the input: pick stream='self'."
        )
    if not isinstance(layer, int) or isinstance(layer, bool):
        raise AttnscopeTypeError(f"layer must be an int (a model layer index); got {layer!r}.")
    position = chosen.layer_position(chosen.layers[layer] if layer < 0 else layer)
    heads = _heads(head, chosen)
    rows = _indices(query, chosen.q_len, "query")
    total = np.zeros(chosen.k_len, np.float64)
    for h in heads:
        total += chosen.attention_rows(position, h, np.asarray(rows)).double().sum(0).numpy()
    total /= len(heads)
    return [
        total[list(region.positions)].reshape(region.grid).astype(np.float32)
        for region in trace.images
    ]


def image_boundaries(trace: AttentionTrace) -> list[int]:
    """Segment starts that make each image one segment and every other token its own.

    Pass them as ``segments=`` to collapse each image to one row of the head
    view (its segments mode): ``AttentionWidget(trace, segments=image_boundaries(trace))``.
    An image's segment runs from its first token to its last, markers between
    its tiles included.

    Parameters
    ----------
    trace
        A trace with images (``attnscope.capture(model, text, images=...)``).

    Returns
    -------
    list of int
        Token positions where segments start (0 implied), as
        :func:`attnscope.segments` takes them.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope.trace.images import ImageRegion
    >>> trace = AttentionTrace(list("abcdef"), np.full((1, 1, 6, 6), 1 / 6, np.float32))
    >>> trace.images = [ImageRegion((1, 2, 3), (1, 3), np.zeros((2, 6, 3), np.uint8))]
    >>> image_boundaries(trace)
    [1, 4, 5]
    """
    if not trace.images:
        raise AttnscopeError(
            "this trace has no images (trace.images is empty), so there is no image to "
            "collapse; capture a vision-language model with "
            "attnscope.capture(model, text, images=..., processor=...)."
        )
    inside: set[int] = set()
    for region in trace.images:
        shown = region.all_positions()
        inside.update(range(min(shown) + 1, max(shown) + 1))
    return [i for i in range(1, len(trace.source)) if i not in inside]
