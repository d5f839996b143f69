"""From a head in a scan to the input where it is strongest (for ``open_strongest``).

A scan ranks heads over many inputs; the one to look at next is the input where
a chosen head scores highest: :func:`strongest_input` finds it
(:func:`~attnscope.analysis.scan.head_ranking`'s ``strongest_input``) and
:func:`strongest_trace` captures it (or takes it, when the input is a trace),
with the selection that opens a widget on that head.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attnscope.analysis.scan import head_ranking
from attnscope.display.scan_ranking import PREFIX, statistic_columns
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionTrace


def strongest_input(scan: Any, *, layer: int, head: int, statistic: str | None = None) -> int:
    """The ``input`` of ``scan`` where (``layer``, ``head``) scores highest on ``statistic``.

    ``layer`` is the model's layer index (the scan's ``layer`` column);
    ``statistic`` defaults to the scan's first statistic column. The lowest
    input wins a tie; inputs where the statistic is NaN are passed over.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"input": [0, 0, 1, 1], "layer": 0, "head": [0, 1, 0, 1],
    ...                    "prev": [0.2, 0.9, 0.6, 0.1]})
    >>> strongest_input(df, layer=0, head=0), strongest_input(df, layer=0, head=1)
    (1, 0)
    >>> strongest_input(df, layer=3, head=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: layer=3 is not in the scan, whose layers are [0]; ...
    """
    columns = statistic_columns(scan)
    if "input" not in scan.columns:
        raise AttnscopeError(
            "open_strongest needs a scan of many inputs (attnscope.scan's DataFrame, with an "
            "'input' column); this table has one row per head and names no input."
        )
    name = columns[0] if statistic is None else statistic.removeprefix(PREFIX)
    if name not in columns:
        raise AttnscopeError(
            f"statistic={statistic!r} is not a statistic column of the scan; choose one of "
            f"{columns}."
        )
    for value, what in ((layer, "layer"), (head, "head")):
        if not isinstance(value, int) or isinstance(value, bool):
            raise AttnscopeError(f"{what}={value!r} must be an int (the scan's {what} column).")
    layers = sorted({int(v) for v in scan["layer"]})
    if layer not in layers:
        raise AttnscopeError(
            f"layer={layer} is not in the scan, whose layers are {layers}; pass one of them "
            "(the model's layer index, as in the scan's 'layer' column)."
        )
    ranked = head_ranking(scan, name)
    row = ranked[(ranked["layer"] == layer) & (ranked["head"] == head)]
    if row.empty:
        heads = sorted({int(v) for v in scan.loc[scan["layer"] == layer, "head"]})
        raise AttnscopeError(
            f"head={head} has no value of {name!r} in layer {layer} of the scan (its heads "
            f"there are {heads}, NaN rows left out); choose another head or statistic."
        )
    return int(row["strongest_input"].iloc[0])


def strongest_trace(
    scan: Any,
    inputs: Sequence[Any],
    model: Any = None,
    *,
    layer: int,
    head: int,
    statistic: str | None = None,
    tokenizer: Any = None,
    **capture_options: Any,
) -> tuple[AttentionTrace, dict[str, Any]]:
    """The trace of the input where the head is strongest, and the widget selection on that head.

    See :func:`attnscope.open_strongest` for the parameters.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> traces = [AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32))
    ...           for _ in range(2)]
    >>> df = pd.DataFrame({"input": [0, 0, 1, 1], "layer": 0, "head": [0, 1, 0, 1],
    ...                    "prev": [0.2, 0.9, 0.6, 0.1]})
    >>> trace, selection = strongest_trace(df, traces, layer=0, head=1)
    >>> trace is traces[0], selection
    (True, {'stream': 'self', 'layer': 0, 'head': 1, 'heads': [1], 'rank_by': 'scan:prev'})
    """
    index = strongest_input(scan, layer=layer, head=head, statistic=statistic)
    name = statistic_columns(scan)[0] if statistic is None else statistic.removeprefix(PREFIX)
    if isinstance(inputs, str | AttentionTrace) or not isinstance(inputs, Sequence):
        raise AttnscopeError(
            f"inputs must be the list the scan was given; got a {type(inputs).__name__}."
        )
    if index >= len(inputs):
        raise AttnscopeError(
            f"the scan names input {index}, but inputs has {len(inputs)} items; pass the same "
            "inputs the scan was given."
        )
    item = inputs[index]
    if isinstance(item, AttentionTrace):
        trace = item
    else:
        if model is None:
            raise AttnscopeError(
                f"inputs[{index}] is a {type(item).__name__} that needs a model to capture it; "
                "pass the model the scan used (or give traces as inputs)."
            )
        from attnscope.sources import capture

        layers = sorted({int(v) for v in scan["layer"]})
        trace = capture(model, item, tokenizer=tokenizer, layers=layers, **capture_options)
    stream = trace.streams.get(str(scan.attrs.get("stream")), trace.stream)
    if layer not in stream.layers:
        raise AttnscopeError(
            f"inputs[{index}] holds layers {list(stream.layers)}, not layer {layer}; give the "
            "traces the scan was run on."
        )
    selection = {
        "stream": stream.name,
        "layer": list(stream.layers).index(layer),
        "head": head,
        "heads": [head],
        "rank_by": PREFIX + name,
    }
    return trace, selection
