"""attnscope: see inside transformer attention from a notebook.

>>> from attnscope import show_head_view          # doctest: +SKIP
>>> show_head_view(model, "The cat sat on the mat")  # doctest: +SKIP

Public names are imported lazily so that ``import attnscope`` stays fast; the
list below is the whole public API.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_PUBLIC = {
    "AttentionTrace": "attnscope.trace",
    "AttentionStream": "attnscope.trace",
    "Tokens": "attnscope.trace",
    "MultiHeadAttention": "attnscope.nn",
    "MultiHeadAttentionTrace": "attnscope.nn",
    "capture": "attnscope.sources",
    "compare": "attnscope.analysis.compare",
    "AttentionComparison": "attnscope.analysis.compare",
    "AttentionWidget": "attnscope.display",
    "show_head_view": "attnscope.show",
    "show_model_view": "attnscope.show",
    "show_neuron_view": "attnscope.show",
    "head_view": "attnscope.bertviz_compat",
    "model_view": "attnscope.bertviz_compat",
    "save_html": "attnscope.display",
    "set_snapshots": "attnscope.display.snapshot",
    "head_stats": "attnscope.analysis",
    "rollout": "attnscope.analysis",
    "rollout_row": "attnscope.analysis",
    "flow": "attnscope.analysis",
    "heads_mean": "attnscope.analysis",
    "heads_max": "attnscope.analysis",
    "query_sum": "attnscope.analysis",
    "merge_words": "attnscope.analysis",
    "word_ids": "attnscope.analysis",
    "scan": "attnscope.analysis.scan",
    "retrieval_scores": "attnscope.analysis.retrieval",
    "image_attention": "attnscope.analysis.images",
    "image_boundaries": "attnscope.analysis.images",
    "needle_in_a_haystack": "attnscope.analysis.needle",
    "looked_at": "attnscope.analysis.looked_at",
    "open_strongest": "attnscope.display.open_strongest",
    "segments": "attnscope.analysis.segments",
    "head_detector": "attnscope.analysis.head_detector",
    "induction_sweep": "attnscope.analysis.induction_sweep",
    "show_generation": "attnscope.display.live",
    "qk_sources": "attnscope.analysis.qk_sources",
}

__all__ = [
    "AttentionComparison",
    "AttentionStream",
    "AttentionTrace",
    "AttentionWidget",
    "MultiHeadAttention",
    "MultiHeadAttentionTrace",
    "Tokens",
    "__version__",
    "capture",
    "compare",
    "flow",
    "head_detector",
    "head_stats",
    "head_view",
    "heads_max",
    "heads_mean",
    "image_attention",
    "image_boundaries",
    "induction_sweep",
    "looked_at",
    "merge_words",
    "model_view",
    "needle_in_a_haystack",
    "open_strongest",
    "qk_sources",
    "query_sum",
    "retrieval_scores",
    "rollout",
    "rollout_row",
    "save_html",
    "scan",
    "segments",
    "set_snapshots",
    "show_generation",
    "show_head_view",
    "show_model_view",
    "show_neuron_view",
    "word_ids",
]

if TYPE_CHECKING:
    from attnscope.analysis import (
        flow,
        head_stats,
        heads_max,
        heads_mean,
        merge_words,
        query_sum,
        rollout,
        rollout_row,
        word_ids,
    )
    from attnscope.analysis.compare import AttentionComparison, compare
    from attnscope.analysis.head_detector import head_detector
    from attnscope.analysis.images import image_attention, image_boundaries
    from attnscope.analysis.induction_sweep import induction_sweep
    from attnscope.analysis.looked_at import looked_at
    from attnscope.analysis.needle import needle_in_a_haystack
    from attnscope.analysis.qk_sources import qk_sources
    from attnscope.analysis.retrieval import retrieval_scores
    from attnscope.analysis.scan import scan
    from attnscope.analysis.segments import segments
    from attnscope.bertviz_compat import head_view, model_view
    from attnscope.display import AttentionWidget, save_html
    from attnscope.display.live import show_generation
    from attnscope.display.open_strongest import open_strongest
    from attnscope.display.snapshot import set_snapshots
    from attnscope.nn import MultiHeadAttention, MultiHeadAttentionTrace
    from attnscope.show import show_head_view, show_model_view, show_neuron_view
    from attnscope.sources import capture
    from attnscope.trace import AttentionStream, AttentionTrace, Tokens


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'attnscope' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
