"""Per-head tables as pandas DataFrames, for the analyses over heads and inputs.

pandas is optional (``pip install "attnscope[analysis]"``); each function
that returns a DataFrame imports it through :func:`pandas_for`, which names
the function in its error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


def pandas_for(what: str) -> Any:
    """The pandas module, or an ImportError saying that ``what`` needs it and how to install it.

    Examples
    --------
    >>> pandas_for("attnscope.scan").DataFrame.__name__
    'DataFrame'
    """
    try:
        return import_module("pandas")
    except ImportError:
        raise ImportError(
            f"{what} returns a pandas DataFrame, and pandas is not installed; run "
            '`pip install "attnscope[analysis]"` (or `pip install pandas`).'
        ) from None


def head_frame(
    what: str,
    layers: Sequence[int],
    num_heads: int,
    table: Mapping[str, np.ndarray[Any, Any]],
) -> pd.DataFrame:
    """One row per (layer, head), layer-major: ``layer``, ``head``, then each ``(layers, heads)``.

    Examples
    --------
    >>> df = head_frame("demo", [0, 3], 2, {"score": np.arange(4.0).reshape(2, 2)})
    >>> df.values.tolist()
    [[0.0, 0.0, 0.0], [0.0, 1.0, 1.0], [3.0, 0.0, 2.0], [3.0, 1.0, 3.0]]
    """
    pandas = pandas_for(what)
    columns: dict[str, np.ndarray[Any, Any]] = {
        "layer": np.repeat(np.array(layers, dtype=np.int64), num_heads),
        "head": np.tile(np.arange(num_heads, dtype=np.int64), len(layers)),
    }
    columns |= {name: np.asarray(values).reshape(-1) for name, values in table.items()}
    frame: pd.DataFrame = pandas.DataFrame(columns)
    return frame
