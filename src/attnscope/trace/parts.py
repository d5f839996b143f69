"""What a trace is made of, checked: what every trace builder returns.

The builders (:mod:`~attnscope.trace.from_module`,
:mod:`~attnscope.trace.from_transformer_lens`, :mod:`~attnscope.trace.file`)
return :class:`TraceParts`, and :class:`~attnscope.AttentionTrace` is built
from them: the builders need nothing from the trace's module, so the trace
package imports in one direction only (no circle, type-only imports included).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from attnscope.errors import AttnscopeError
from attnscope.trace.images import ImageRegion, check_regions
from attnscope.trace.stream import AttentionStream
from attnscope.trace.tokens import Tokens

STREAM_ORDER = ("self", "encoder", "decoder", "cross")
"""The order a trace keeps its streams in; other names follow."""


class TraceParts:
    """Tokens, streams, metadata, notes and images of one trace, checked against each other.

    Parameters
    ----------
    source
        The input (or encoder) tokens.
    streams
        The streams, by name or as a sequence (each keeps its ``name``);
        kept in :data:`STREAM_ORDER`.
    target
        The decoder's tokens, for streams with a ``"target"`` side.
    metadata
        JSON-able facts about the source (no NaN or inf).
    notes
        Sentences for the reader.
    images
        One :class:`~attnscope.trace.images.ImageRegion` per image in the input.

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> list(TraceParts(Tokens(["a", "b"]), [s], metadata={"source": "tensors"}).streams)
    ['self']
    >>> TraceParts(Tokens(["a"]), [s])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: stream 'self' has 2 rows (queries) but there are 1 source ...
    """

    def __init__(
        self,
        source: Tokens,
        streams: Mapping[str, AttentionStream] | Sequence[AttentionStream],
        *,
        target: Tokens | None = None,
        metadata: Mapping[str, Any] | None = None,
        notes: Sequence[str] = (),
        images: Sequence[ImageRegion] = (),
    ) -> None:
        items = dict(streams) if isinstance(streams, Mapping) else {s.name: s for s in streams}
        check_streams(source, target, items)
        meta = dict(metadata or {})
        try:
            json.dumps(meta, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise AttnscopeError(
                f"metadata must be JSON-serialisable (no NaN or inf): {err}"
            ) from None
        self.source = source
        self.target = target
        self.streams: dict[str, AttentionStream] = {
            n: items[n] for n in sorted(items, key=_stream_rank)
        }
        self.metadata: dict[str, Any] = meta
        self.notes: list[str] = [str(n) for n in notes]
        self.images: list[ImageRegion] = check_regions(images, len(source)) if images else []


def check_streams(
    source: Tokens, target: Tokens | None, streams: Mapping[str, AttentionStream]
) -> None:
    """Refuse streams that are missing, misnamed, or that do not fit the tokens.

    Examples
    --------
    >>> check_streams(Tokens(["a"]), None, {})
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: a trace needs at least one stream of attention.
    """
    if not streams:
        raise AttnscopeError("a trace needs at least one stream of attention.")
    for name, stream in streams.items():
        if name != stream.name:
            raise AttnscopeError(f"stream stored under {name!r} is named {stream.name!r}.")
        for side, length, axis in (
            (stream.query_side, stream.q_len, "rows (queries)"),
            (stream.key_side, stream.k_len, "columns (keys)"),
        ):
            toks = source if side == "source" else target
            if toks is None:
                raise AttnscopeError(
                    f"stream {name!r} uses target tokens but the trace has none; "
                    "pass target= tokens."
                )
            if len(toks) != length:
                raise AttnscopeError(
                    f"stream {name!r} has {length} {axis} but there are {len(toks)} "
                    f"{side} tokens; pass one token per position."
                )


def _stream_rank(name: str) -> int:
    return STREAM_ORDER.index(name) if name in STREAM_ORDER else len(STREAM_ORDER)
