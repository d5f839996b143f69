"""``attnscope.head_stats``: one row per head, one column per statistic, as a DataFrame.

pandas is an optional dependency (``pip install "attnscope[analysis]"``): the
widget's statistics and every other analysis work without it, and a table of
72 rows does not justify a 60 MB import for everyone who only wants the views.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

import numpy as np

from attnscope.analysis.access import pick_stream
from attnscope.analysis.statistics import STATISTICS, statistic_table
from attnscope.trace import AttentionTrace

if TYPE_CHECKING:
    import pandas as pd


def _pandas() -> object:
    try:
        return import_module("pandas")
    except ImportError:
        raise ImportError(
            "attnscope.head_stats returns a pandas DataFrame, and pandas is not installed; "
            'run `pip install "attnscope[analysis]"` (or `pip install pandas`). '
            "attnscope.analysis.statistic_table gives the same numbers as numpy arrays."
        ) from None


def head_stats(trace: AttentionTrace, *, stream: str | None = None) -> pd.DataFrame:
    """Statistics of every head of one stream: which heads look where, how sharply.

    Parameters
    ----------
    trace
        The trace to summarise.
    stream
        Which stream (``"self"``, ``"encoder"``, ``"decoder"``, ``"cross"``);
        None for the trace's first.

    Returns
    -------
    pandas.DataFrame
        One row per (layer, head), layer-major. ``layer`` is the model's layer
        number, ``head`` the head index; then one float column per statistic:

        - ``cls``, ``sep``, ``punct``: mean over queries of the attention mass on
          [CLS]-like keys (special tokens before the first ordinary one), on
          the other special keys ([SEP], ``</s>``), and on keys labelled ``.`` or
          ``,`` (Clark et al. 2019).
        - ``prev``, ``self``, ``next``: mean over queries of ``A[i, i-1]``,
          ``A[i, i]``, ``A[i, i+1]`` over the queries where that key exists:
          ``prev`` is the key just *before* the query (Clark et al. 2019; their
          notebook's legend swaps the two names).
        - ``entropy``: mean over queries of ``-Σ a' ln a'``, ``a' = 0.9999 a +
          0.0001 / n``, in nats (Clark et al. 2019).
        - ``entropy_norm``: each row's entropy ``-Σ a ln a`` divided by
          ``ln v``, ``v`` the keys it can see (mask, not padding), averaged over
          rows with ``v >= 2``: 1 is uniform over what the query sees.
        - ``confidence``: mean over non-special queries of the row maximum
          (Voita et al. 2019).
        - ``sink``: ``α₁``, the mean over queries of ``A[i, 0]`` (Gu et al. 2024).
        - ``sink_value`` (only when the trace holds value norms:
          ``capture(..., value_norms=True)``): the same share read off value-weighted
          rows, ``α_i0 ‖f(x_0)‖ / Σ_j α_ij ‖f(x_j)‖`` (Kobayashi et al. 2020), so a
          sink whose value carries little scores low here.
        - ``induction``, ``duplicate``: TransformerLens's ``detect_head`` "mul"
          scores on *this* input, ``(A ⊙ P).sum() / A.sum()`` (equal to
          :func:`attnscope.head_detector`'s with no exclusions); NaN when the
          input repeats no token. This ``induction`` is not the score papers
          and courses quote (TransformerLens/ARENA: BOS + random tokens
          repeated, the stripe at offset ``-(seq_len-1)``), which
          :func:`attnscope.induction_sweep` computes and which reads about
          twice as high on the same head.

        Each column's protocol: ``cls``/``sep``/``punct``/``prev``/``self``/
        ``next``/``entropy`` Clark et al. 2019; ``confidence`` Voita et al.
        2019; ``sink`` Gu et al. 2024; ``entropy_norm`` attnscope's
        normalisation of Clark's entropy.

        "Queries" are those that are not padding and carry weight. Position
        statistics are NaN for cross-attention. ``attnscope.analysis.STATISTICS``
        holds each formula and source; ``df.attrs["stream"]`` the stream's name.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> uniform = np.full((2, 3, 4, 4), 0.25, np.float32)
    >>> df = head_stats(AttentionTrace(["a", "b", "c", "d"], uniform))
    >>> df.shape, list(df.columns[:4])
    ((6, 14), ['layer', 'head', 'cls', 'sep'])
    >>> round(float(df["entropy"][0]), 6) == round(float(np.log(4)), 6)
    True
    """
    chosen = pick_stream(trace, stream)
    pandas = _pandas()
    table = statistic_table(trace, stream=chosen.name)
    layers = np.repeat(np.array(chosen.layers, dtype=np.int64), chosen.num_heads)
    heads = np.tile(np.arange(chosen.num_heads, dtype=np.int64), chosen.num_layers)
    columns: dict[str, np.ndarray] = {"layer": layers, "head": heads}  # type: ignore[type-arg]
    columns |= {name: table[name].reshape(-1) for name in STATISTICS}
    if chosen.value_norms is not None:  # issue 36: beside sink, in order
        from attnscope.analysis.value_weighted import sink_value

        after = list(columns).index("sink") + 1
        items = list(columns.items())
        items.insert(after, ("sink_value", sink_value(chosen).reshape(-1)))
        columns = dict(items)
    frame: pd.DataFrame = pandas.DataFrame(columns)  # type: ignore[attr-defined]
    frame.attrs["stream"] = chosen.name
    return frame
