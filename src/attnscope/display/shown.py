"""What the page and the snapshot read of a widget: its trace, selection and chunk cache.

:class:`~attnscope.AttentionWidget` has all of it. The page writer
(:mod:`attnscope.display.page`) and the notebook snapshot
(:mod:`attnscope.display.snapshot`) sit below the widget class, which calls
them, so they read a widget through this protocol instead of importing it: the
display package has no import circle, type-only imports included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from attnscope.analysis.compare import AttentionComparison
    from attnscope.encode.chunks import ChunkCache
    from attnscope.encode.comparison import ComparisonChunks
    from attnscope.encode.selection import ViewName
    from attnscope.trace import AttentionTrace


class ShownWidget(Protocol):
    """A widget as the page and the snapshot see it (:class:`~attnscope.AttentionWidget`).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, AttentionWidget
    >>> def stream_of(widget: ShownWidget) -> str:
    ...     return widget.stream
    >>> stream_of(AttentionWidget(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32))))
    'self'
    """

    view: ViewName
    stream: str
    layer: int
    head: int
    query: int | None
    rank_by: str | None
    generated_only: bool
    pseudo_heads: list[str]

    @property
    def trace(self) -> AttentionTrace:
        """The trace shown (for a comparison, input A over the aligned tokens)."""

    @property
    def comparison(self) -> AttentionComparison | None:
        """The comparison shown, or None."""

    @property
    def compared_chunks(self) -> ComparisonChunks | None:
        """A comparison's chunks of A, B and A − B, or None."""

    @property
    def chunk_cache(self) -> ChunkCache:
        """The chunks the widget has encoded."""

    @property
    def views(self) -> Sequence[ViewName]:
        """The views offered, in tab order."""
