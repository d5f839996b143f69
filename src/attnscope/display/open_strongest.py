"""``attnscope.open_strongest``: show the input of a scan where a head is strongest.

A scan ranks heads over many inputs; the one to look at next is the input where
a chosen head scores highest. :func:`open_strongest` captures it
(:func:`~attnscope.display.strongest.strongest_trace`) and shows it in a
widget on that head, still ranked by the scan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attnscope.display.strongest import strongest_trace
from attnscope.display.where_called import display_where_called
from attnscope.display.widget import AttentionWidget


def open_strongest(
    scan: Any,
    inputs: Sequence[Any],
    model: Any = None,
    *,
    layer: int,
    head: int,
    statistic: str | None = None,
    tokenizer: Any = None,
    view: str = "head",
    display: bool = True,
    **capture_options: Any,
) -> AttentionWidget:
    """Show the input of a scan where a head is strongest, opened on that head.

    Parameters
    ----------
    scan
        The DataFrame of :func:`attnscope.scan` over ``inputs``.
    inputs
        The same inputs the scan was given (strings, chat messages, traces ...).
    model
        The model to capture the input with; None when that input is a trace.
    layer, head
        The head: the model's layer index (the scan's ``layer`` column) and head.
    statistic
        The scan's column to judge by (``"prev"`` or ``"scan:prev"``); None for its first.
    tokenizer
        The model's tokenizer, as given to ``scan``.
    view
        The view the widget opens on (``"head"``, ``"model"`` or ``"neuron"``).
    display
        Display the widget where this is called (in a notebook).
    **capture_options
        Passed to :func:`attnscope.capture`, as they were to ``scan``.

    Returns
    -------
    AttentionWidget
        The input's attention on ``layer`` / ``head``, ranked by the scan
        (``rank_by="scan:<statistic>"``); ``widget.strongest_input()`` is the input shown.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from attnscope import AttentionTrace, open_strongest
    >>> traces = [AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32))
    ...           for _ in range(2)]
    >>> df = pd.DataFrame({"input": [0, 0, 1, 1], "layer": 0, "head": [0, 1, 0, 1],
    ...                    "prev": [0.2, 0.9, 0.6, 0.1]})
    >>> w = open_strongest(df, traces, layer=0, head=0, display=False)
    >>> w.trace is traces[1], w.head, w.heads, w.rank_by
    (True, 0, [0], 'scan:prev')
    """
    trace, selection = strongest_trace(
        scan,
        inputs,
        model,
        layer=layer,
        head=head,
        statistic=statistic,
        tokenizer=tokenizer,
        **capture_options,
    )
    widget = AttentionWidget(trace, scan=scan, view=view, **selection)
    if display:
        display_where_called(widget)
    return widget
