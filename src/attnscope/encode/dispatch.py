"""One chunk dispatcher: every chunk a widget serves, by its key's kind, through one cache.

A key names a chunk of the trace (``docs/protocol.md``, "Chunk keys"); most
kinds are the trace's own (:func:`~attnscope.encode.chunks.encode_chunk`). A
widget's parts add to that: ``segments=`` and collapsed image rows serve the
``segments:`` kind themselves, a ``scan=`` table adds its statistics' arrays
after the ``stats:`` chunk of its stream, and a comparison answers
``<side>/<key>`` keys from its aligned inputs. :class:`ChunkDispatcher` holds
them all, so the widget, its exported page and its saved state encode each
chunk once, the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attnscope.encode.analysis_chunks import analysable
from attnscope.encode.arrays import NamedArray
from attnscope.encode.chunks import ChunkCache, encode_chunk, parse_key
from attnscope.encode.keys import ChunkKey, stats_key
from attnscope.encode.messages import MESSAGE_BYTES, reply_messages

if TYPE_CHECKING:
    from attnscope.encode.comparison import ComparisonChunks
    from attnscope.trace import AttentionTrace

Serve = Callable[[ChunkKey], list[NamedArray]]
"""Encodes one chunk of a kind a part serves itself."""

CACHE_BYTES = 256 * 1024 * 1024
"""How many bytes of encoded chunks a widget keeps before the least recently used go."""


class ChunkDispatcher(ChunkCache):
    """Serve every chunk kind a widget answers, each encoded once and cached.

    Parameters
    ----------
    max_bytes
        The cache's bound (see :class:`~attnscope.encode.chunks.ChunkCache`).
    served
        Chunk kinds a part serves itself (``segments``), by kind.
    stats
        ``(stream, arrays)``: arrays that join that stream's ``stats:`` chunk (a
        scan's statistics), served alone when the stream is too long for its own.
    compared
        A comparison's chunks: keys sent as ``<side>/<key>`` are theirs.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> t = AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32))
    >>> extra = [("scan:x", np.zeros((1, 2), np.float32))]
    >>> dispatcher = ChunkDispatcher(stats=("self", extra))
    >>> [n for n, _ in dispatcher.encode_raw(t, "stats:self")][-1]
    'scan:x'
    >>> [(c["chunks"][0]["key"], len(b)) for c, b in dispatcher.answer(t, ["attn:self:0:1"])]
    [('attn:self:0:1', 2)]
    """

    def __init__(
        self,
        max_bytes: int = CACHE_BYTES,
        *,
        served: Mapping[str, Serve] | None = None,
        stats: tuple[str, Sequence[NamedArray]] | None = None,
        compared: ComparisonChunks | None = None,
    ) -> None:
        super().__init__(max_bytes)
        self.served = dict(served or {})
        """Chunk kinds a part serves itself (``segments``: its segments=), by kind."""
        self.stats = None if stats is None else (stats[0], list(stats[1]))
        """The stream whose ``stats:`` chunk carries extra arrays, and those arrays."""
        self.compared = compared
        """A comparison's side chunks, or None."""

    def encode(
        self, trace: AttentionTrace, key: ChunkKey, *, top_k: int | None = None
    ) -> list[NamedArray]:
        """The chunk's arrays: a part's own kind, the trace's, extra statistics after its own.

        ``top_k`` as in :meth:`ChunkCache.encode` (a part's own kinds ignore it).
        """
        serve = self.served.get(key.kind)
        if serve is not None:
            return self.get(key.key, lambda: serve(key))
        stats = self.stats
        if stats is None or key.kind != "stats" or key.stream != stats[0]:
            return super().encode(trace, key, top_k=top_k)
        return self.get(key.key, lambda: [*encode_chunk(trace, key), *stats[1]])

    def page_encode(
        self, trace: AttentionTrace, key: ChunkKey, *, top_k: int | None = None
    ) -> list[NamedArray]:
        """A chunk for an exported page: a part's through the cache, the trace's own afresh.

        A page embeds many chunks once; only those the parts serve or extend
        (``segments:``, a scan's ``stats:``) are kept, as the live widget serves them.
        ``top_k``: keys a row of a ``top:`` chunk (:func:`encode_chunk`).
        """
        stats = self.stats
        if key.kind in self.served or (stats is not None and key.kind == "stats"):
            return self.encode(trace, key)
        return encode_chunk(trace, key, top_k=top_k)

    def encode_raw(self, trace: AttentionTrace, raw: object) -> list[NamedArray]:
        """Serve a key as the browser sent it; raise ValueError for one it cannot serve.

        A stream too long for its own statistics still has the extra ones (a
        scan's need no weights).
        """
        if self.compared is not None:
            return self.compared.encode(raw)
        stats = self.stats
        if stats is not None:
            key = stats_key(stats[0])
            if raw == key and not analysable(trace.streams[stats[0]]):
                return self.get(key, lambda: list(stats[1]))
        return self.encode(trace, parse_key(raw, trace))

    def answer(
        self, trace: AttentionTrace, keys: object, *, max_bytes: int = MESSAGE_BYTES
    ) -> Iterator[tuple[dict[str, Any], list[bytes]]]:
        """The ``chunks`` messages answering a request for ``keys`` (see ``reply_messages``)."""
        return reply_messages(
            trace, keys, max_bytes=max_bytes, encode=lambda raw: self.encode_raw(trace, raw)
        )
