"""Where one head looked at each generation step: its strongest key, step by step.

What a retrieval head is judged on (Wu et al. 2024; :func:`attnscope.retrieval_scores`):
at the step that wrote token ``p``, the query ``p - 1``'s strongest key
``j* < p`` (lowest index on ties), and whether it is a copy of a needle token.
:func:`looked_at` lists it for one head, so a head ranked high by retrieval
can be read step by step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attnscope.analysis.access import pick_stream, require_self_attention
from attnscope.analysis.frames import pandas_for
from attnscope.analysis.retrieval import check_needle, check_start, strongest_keys
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionTrace

if TYPE_CHECKING:
    import pandas as pd


def looked_at(
    trace: AttentionTrace,
    *,
    layer: int,
    head: int,
    start: int | None = None,
    needle: tuple[int, int] | None = None,
    stream: str | None = None,
) -> pd.DataFrame:
    """Each step's strongest key of one head: where it looked as it wrote each token.

    Parameters
    ----------
    trace
        A self-attention trace, usually of a generation (``capture(...,
        max_new_tokens=N)``).
    layer, head
        The head: the model's layer index (as in the trace's ``layers``) and head.
    start
        The first position scored; None for the first generated token.
    needle
        ``(first, stop)``, the needle's tokens, to mark copies; None for no needle.
    stream
        Which stream; None for the trace's first.

    Returns
    -------
    pandas.DataFrame
        One row per position ``p >= start``: ``step`` (0 for ``start``),
        ``position`` (``p``), ``token`` (the raw token written at ``p``),
        ``key`` (the strongest key ``j* < p`` of query ``p - 1``), ``key_token``;
        with a needle also ``in_needle`` and ``copy`` (``j*`` in the needle and
        holding the token written, Wu et al.'s copy).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> tokens = ["x", "a", "b", "c", "a", "b", "c"]
    >>> weights = np.zeros((1, 1, 7, 7), np.float32)
    >>> weights[0, 0, np.arange(7), np.maximum(np.arange(7) - 2, 0)] = 1  # query i -> key i - 2
    >>> df = looked_at(AttentionTrace(tokens, weights), layer=0, head=0, start=4, needle=(1, 4))
    >>> df[["step", "position", "token", "key", "key_token", "copy"]].values.tolist()
    [[0, 4, 'a', 1, 'a', True], [1, 5, 'b', 2, 'b', True], [2, 6, 'c', 3, 'c', True]]
    """
    chosen = pick_stream(trace, stream)
    require_self_attention(chosen, "looked_at")
    if layer not in chosen.layers:
        raise AttnscopeError(
            f"layer={layer!r} is not in stream {chosen.name!r}, whose layers are "
            f"{list(chosen.layers)}; pass one of them (the model's layer index)."
        )
    if not isinstance(head, int) or not 0 <= head < chosen.num_heads:
        raise AttnscopeError(
            f"head={head!r} is out of range: stream {chosen.name!r} has {chosen.num_heads} "
            f"heads (0..{chosen.num_heads - 1})."
        )
    length = chosen.q_len
    begin = check_start(start, trace, length)
    span = None if needle is None else check_needle(needle, length)
    pandas = pandas_for("attnscope.analysis.looked_at")
    keys = strongest_keys(chosen, list(chosen.layers).index(layer), head, begin)
    raw = np.asarray(trace.tokens_for(chosen.key_side).raw, dtype=object).astype(str)
    written = raw[begin:]
    columns: dict[str, object] = {
        "step": np.arange(len(keys)),
        "position": np.arange(begin, length),
        "token": written,
        "key": keys,
        "key_token": raw[keys],
    }
    if span is not None:
        inside = (keys >= span[0]) & (keys < span[1])
        columns |= {"in_needle": inside, "copy": inside & (raw[keys] == written)}
    frame: pd.DataFrame = pandas.DataFrame(columns)
    return frame
