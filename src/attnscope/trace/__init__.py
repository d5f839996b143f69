"""The trace: one forward pass's tokens and attention, validated, recomputable, saveable.

Everything above this package (capture, encode, display) reads and writes
:class:`AttentionTrace`; this package imports only :mod:`attnscope.nn` and the
leaves below it.
"""

from attnscope.trace.attention_trace import STREAM_ORDER, AttentionTrace
from attnscope.trace.labels import TokenKind
from attnscope.trace.stream import AttentionStream, BoolArray, FloatArray, Side
from attnscope.trace.tokens import Tokens

__all__ = [
    "STREAM_ORDER",
    "AttentionStream",
    "AttentionTrace",
    "BoolArray",
    "FloatArray",
    "Side",
    "TokenKind",
    "Tokens",
]
