"""The learner's module: readable masked multi-head attention, as in "Attention is all you need".

It knows nothing else of attnscope; :meth:`attnscope.AttentionTrace.from_module`
turns its step-by-step record into a trace.
"""

from attnscope.nn.attention import MultiHeadAttention, MultiHeadAttentionTrace

__all__ = ["MultiHeadAttention", "MultiHeadAttentionTrace"]
