"""Analyses of a trace: head statistics, rollout and flow, aggregations, words, comparisons.

Every function reads the trace one layer at a time (``stream.layer_attention(layer)``)
and returns numpy arrays; :func:`head_stats` wraps the statistics in a pandas
DataFrame (pandas is optional: ``pip install "attnscope[analysis]"``). This
layer sits between the sources and the encoders: the widget's ``stats:`` and
pseudo-head chunks are encoded from what it computes. Comparisons of two
inputs live in :mod:`attnscope.analysis.compare`.
"""

from attnscope.analysis.aggregate import heads_max, heads_mean, query_sum
from attnscope.analysis.flow import MAX_FLOW_NODES, flow
from attnscope.analysis.head_stats import head_stats
from attnscope.analysis.rollout import residual_attention, rollout, rollout_row
from attnscope.analysis.statistics import STATISTICS, Statistic, statistic_table
from attnscope.analysis.words import merge_words, word_ids, word_labels

__all__ = [
    "MAX_FLOW_NODES",
    "STATISTICS",
    "Statistic",
    "flow",
    "head_stats",
    "heads_max",
    "heads_mean",
    "merge_words",
    "query_sum",
    "residual_attention",
    "rollout",
    "rollout_row",
    "statistic_table",
    "word_ids",
    "word_labels",
]
