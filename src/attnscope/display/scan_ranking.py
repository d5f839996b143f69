"""A table of heads over many inputs as model-view statistics: the widget's ``scan=``.

:func:`attnscope.scan` gives one row per (input, layer, head); the model view
ranks heads by statistics of the ``stats:`` chunk (``docs/protocol.md``,
"Chunks"). :func:`scan_ranking` turns the first into the second: per head the
mean of each statistic column over the inputs and its spread (population std)
across them, as ``scan:<column>`` arrays appended to the ``stats:<stream>``
chunk and entries appended to ``_meta.statistics``, so the existing ranking
(``rank_by``, badges, hover numbers) shows them. A table already one row per
head (:func:`attnscope.retrieval_scores`, ``needle_in_a_haystack(...).heads``)
is taken as it is, a ``<column>_std`` column as its spread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from attnscope.analysis.access import pick_stream
from attnscope.analysis.scan import head_ranking
from attnscope.analysis.statistics import STATISTICS
from attnscope.encode.arrays import NamedArray
from attnscope.encode.dispatch import CACHE_BYTES, ChunkDispatcher, Serve
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionStream, AttentionTrace
from attnscope.trace.label_text import isolate

PREFIX = "scan:"
"""How the widget names a scan's statistics: ``scan:<column>``."""
SPREAD = ":spread"
"""Suffix of the array holding a statistic's spread: ``scan:<column>:spread``."""
STRONGEST = ":strongest"
"""Suffix of the array holding the input where each head is strongest (f32, NaN for none)."""
FIRST_RANKED = ("retrieval", "receiver", "induction", "duplicate", "prev", "sink", "next", "self")
"""Columns a ranking starts on, the first present: those that find a kind of head (a
retrieval, receiver, induction, duplicate-token, previous-token or sink head), not a
table's first column (``cls``, where few heads differ)."""
KEYS = ("input", "layer", "head")
"""Columns that say which head (and input) a row is, never statistics."""
COUNTS = frozenset({"runs", "count", "steps"})
"""Columns of a per-head table that count, and are not ranked by."""
INDEXES = frozenset({"top_segment"})
"""Columns that name a place (``SegmentAttention.heads``' strongest segment), never ranked by."""
KNOWN_COLUMNS: dict[str, tuple[str, str, str]] = {
    "receiver": (
        "receiver score (Thought Anchors)",
        "kurtosis over segments b of vertical[b] = mean over segments a >= b + proximity of "
        "mean[a, b] (the mean weight from a's tokens to b's)",
        "Bogdan et al. 2025, Thought Anchors, section 4 (attnscope.segments)",
    ),
}
"""Label, formula and source of table columns that are not head statistics."""


@dataclass(frozen=True)
class ScanRanking:
    """A scan's per-head numbers laid out for one stream of the trace a widget shows.

    Attributes
    ----------
    stream
        The stream whose ``stats:`` chunk carries them.
    inputs
        How many inputs (or runs) each mean is over; None for a table of one value a head.
    statistics
        ``_meta.statistics`` entries: ``name``, ``label``, ``formula``, ``source``,
        and where there is a spread: ``spread`` (its array's name), ``inputs`` (how
        many the mean is over) and ``over`` (``"inputs"`` or ``"runs"``); over inputs,
        ``strongest`` (the array of each head's strongest input).
    arrays
        The f32 ``(layers, heads)`` arrays by name, means and spreads (NaN: no value).
    strongest
        Per statistic, the input where each head scores highest (int64
        ``(layers, heads)``, -1 where none); empty for a table without inputs.
    """

    stream: str
    inputs: int | None
    statistics: list[dict[str, Any]]
    arrays: list[NamedArray]
    strongest: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        """The statistics' names, in ``_meta.statistics`` order."""
        return [entry["name"] for entry in self.statistics]

    @property
    def first_ranked(self) -> str:
        """The statistic a view ranks by first: the first of :data:`FIRST_RANKED` with a value.

        Examples
        --------
        >>> import pandas as pd
        >>> from attnscope import AttentionTrace
        >>> t = AttentionTrace(list("ab"), np.full((1, 2, 2, 2), 0.5, np.float32))
        >>> df = pd.DataFrame({"layer": 0, "head": [0, 1], "cls": [0.1, 0.2], "prev": [0.3, 0.4]})
        >>> scan_ranking(df, t).first_ranked
        'scan:prev'
        """
        names = self.names
        held = {name for name, values in self.arrays if np.isfinite(values).any()}
        found = [PREFIX + c for c in FIRST_RANKED if PREFIX + c in held]  # one that applies
        return (found or names)[0]

    def strongest_input(self, name: str, position: int, head: int) -> int:
        """The input where head ``head`` of layer position ``position`` scores highest on ``name``.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from attnscope import AttentionTrace
        >>> t = AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32))
        >>> df = pd.DataFrame({"input": [0, 0, 1, 1], "layer": 0, "head": [0, 1, 0, 1],
        ...                    "prev": [0.2, 0.9, 0.6, 0.1]})
        >>> scan_ranking(df, t).strongest_input("scan:prev", 0, 0)
        1
        """
        if name not in self.names:
            raise AttnscopeError(f"{name!r} is not a statistic of this scan; it has {self.names}.")
        found = self.strongest.get(name)
        if found is None:
            raise AttnscopeError(
                f"{name!r} comes from a table of one row per head, which names no inputs; "
                "rank by a statistic of attnscope.scan's DataFrame (it has an 'input' column)."
            )
        best = int(found[position, head])
        if best < 0:
            raise AttnscopeError(
                f"head {head} of layer position {position} has no value of {name!r} on any "
                "input (NaN everywhere); choose another head or statistic."
            )
        return best


def _columns(frame: Any) -> list[str]:
    columns = getattr(frame, "columns", None)
    if columns is None or not hasattr(frame, "groupby"):
        raise AttnscopeError(
            f"scan= takes a pandas DataFrame of heads (attnscope.scan, retrieval_scores or "
            f"needle_in_a_haystack(...).heads), not {type(frame).__name__}."
        )
    return [str(c) for c in columns]


def statistic_columns(frame: Any) -> list[str]:
    """The columns of ``frame`` a ranking shows: numeric, neither keys, counts nor spreads.

    Examples
    --------
    >>> import pandas as pd
    >>> statistic_columns(pd.DataFrame({"layer": [0], "head": [0], "retrieval": [0.5],
    ...                                 "retrieval_std": [0.1], "runs": [3]}))
    ['retrieval']
    """
    columns = _columns(frame)
    missing = [c for c in ("layer", "head") if c not in columns]
    if missing:
        raise AttnscopeError(
            f"scan= needs a table of heads with columns 'layer' and 'head'; this one has "
            f"{columns}. Pass attnscope.scan(...)'s DataFrame (or retrieval_scores, "
            "needle_in_a_haystack(...).heads)."
        )
    per_head = "input" not in columns
    chosen = []
    for name in columns:
        if name in KEYS or name in INDEXES:
            continue
        if per_head and (name in COUNTS or name.endswith("_std")):
            continue
        if frame[name].dtype.kind in "fiu":
            chosen.append(name)
    if not chosen:
        raise AttnscopeError(
            f"scan= has no numeric statistic column to rank by (columns {columns}); pass "
            "attnscope.scan(...)'s DataFrame with at least one statistic."
        )
    return chosen


def _check_indices(frame: Any) -> None:
    """Refuse key columns that are not whole numbers (``"3"``, ``0.5``): int() misreads them."""
    for name in [c for c in KEYS if c in frame.columns]:
        column = frame[name]
        kind = column.dtype.kind
        whole = kind in "iu" or (
            kind == "f" and bool(np.isfinite(column).all()) and bool((column % 1 == 0).all())
        )
        if not whole:
            bad = next(
                (v for v in column if not isinstance(v, int | np.integer) or isinstance(v, bool)),
                column.iloc[0],
            )
            raise AttnscopeError(
                f"scan= has {name} {bad!r} (column dtype {column.dtype}); the {name!r} column must "
                "hold whole numbers (the model's indices), as attnscope.scan(...) gives them. "
                f"Convert it: scan.astype({{{name!r}: int}}) when the values are whole."
            )


def _check_heads(frame: Any, stream: AttentionStream) -> None:
    _check_indices(frame)
    layers = sorted({int(v) for v in frame["layer"]})
    outside = [layer for layer in layers if layer not in stream.layers]
    if outside:
        raise AttnscopeError(
            f"scan= has layer {outside[0]}, which stream {stream.name!r} of this trace does not "
            f"hold (its layers are {list(stream.layers)}); show a trace of the same model with "
            "those layers, or pass scan[scan['layer'].isin(trace layers)]."
        )
    heads = sorted({int(v) for v in frame["head"]})
    if heads and not 0 <= heads[0] <= heads[-1] < stream.num_heads:
        bad = heads[-1] if heads[-1] >= stream.num_heads else heads[0]
        raise AttnscopeError(
            f"scan= has head {bad}, but stream {stream.name!r} has {stream.num_heads} heads "
            f"(0..{stream.num_heads - 1}): the scan is of another model; scan the model this "
            "trace is of."
        )


def _label(column: str, inputs: int | None, noun: str, about: Any = None) -> tuple[str, str, str]:
    """Label, formula and source of a scan statistic (a table's ``attrs["about"]`` first)."""
    known = STATISTICS.get(column)
    label = known.label if known else column
    formula = known.formula if known else f"the {column!r} column of the table"
    source = known.source if known else "the scan= table"
    if column in KNOWN_COLUMNS:
        label, formula, source = KNOWN_COLUMNS[column]
    ours = known is not None or column in KNOWN_COLUMNS
    said = about.get(column) if isinstance(about, dict) else None
    if isinstance(said, list | tuple) and len(said) == 3:  # e.g. induction_sweep's protocol
        label, formula, source = (str(v) for v in said)
        ours = False
    if inputs is not None:
        # The table's own name is isolated: a bidi control in it cannot reorder our words.
        named = label if ours else isolate(label)
        label = f"{named}: mean over {inputs} {noun} (± spread across them)"
    return label, formula, source


def scan_ranking(frame: Any, trace: AttentionTrace, *, stream: str | None = None) -> ScanRanking:
    """Lay a table of heads out as statistics of ``stream`` (the trace's first when None).

    Parameters
    ----------
    frame
        :func:`attnscope.scan`'s DataFrame (one row per input, layer, head: per
        head the mean over inputs and the population std as spread), or one row
        per head (:func:`attnscope.retrieval_scores`; ``needle_in_a_haystack(...).heads``,
        whose ``retrieval_std`` is the spread and ``runs`` the count).
    trace
        The trace the widget shows; its stream must hold the table's layers and heads.
    stream
        Which stream of the trace; ``frame.attrs["stream"]`` when the table says, else the first.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from attnscope import AttentionTrace
    >>> t = AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32))
    >>> df = pd.DataFrame({"input": [0, 0, 1, 1], "layer": 0, "head": [0, 1, 0, 1],
    ...                    "prev": [0.2, 0.9, 0.6, 0.1]})
    >>> r = scan_ranking(df, t)
    >>> r.names, r.statistics[0]["label"]
    (['scan:prev'], 'previous token: mean over 2 inputs (± spread across them)')
    >>> [n for n, _ in r.arrays]
    ['scan:prev', 'scan:prev:spread', 'scan:prev:strongest']
    >>> [a.astype(float).round(2).tolist() for _, a in r.arrays]
    [[[0.4, 0.5]], [[0.2, 0.4]], [[1.0, 0.0]]]
    """
    columns = statistic_columns(frame)
    if stream is None and frame.attrs.get("stream") in trace.streams:
        stream = str(frame.attrs["stream"])
    chosen = pick_stream(trace, stream)
    _check_heads(frame, stream=chosen)
    positions = {layer: i for i, layer in enumerate(chosen.layers)}
    shape = (chosen.num_layers, chosen.num_heads)

    def scatter(layers: Any, heads: Any, values: Any, fill: Any, dtype: Any) -> Any:
        out = np.full(shape, fill, dtype)
        rows = np.array([positions[int(v)] for v in layers], np.int64)
        out[rows, np.asarray(heads, np.int64)] = np.asarray(values, dtype)
        return out

    if "input" in frame.columns:
        return _over_inputs(frame, columns, chosen.name, scatter)
    return _per_head(frame, columns, chosen.name, scatter)


def _over_inputs(frame: Any, columns: list[str], stream: str, scatter: Any) -> ScanRanking:
    inputs = int(frame["input"].nunique())
    entries, arrays, strongest = [], [], {}
    for column in columns:
        ranked = head_ranking(frame, column)
        name = PREFIX + column
        where = (ranked["layer"], ranked["head"])
        arrays.append((name, scatter(*where, ranked["mean"], np.nan, np.float32)))
        arrays.append((name + SPREAD, scatter(*where, ranked["std"], np.nan, np.float32)))
        strongest[name] = scatter(*where, ranked["strongest_input"], -1, np.int64)
        best = np.where(strongest[name] >= 0, strongest[name], np.nan).astype(np.float32)
        arrays.append((name + STRONGEST, best))
        label, formula, source = _label(column, inputs, "inputs", frame.attrs.get("about"))
        entries.append(
            {"name": name, "label": label, "formula": formula, "source": source}
            | {"spread": name + SPREAD, "inputs": inputs, "over": "inputs"}
            | {"strongest": name + STRONGEST}
        )
    return ScanRanking(stream, inputs, entries, arrays, strongest)


def _per_head(frame: Any, columns: list[str], stream: str, scatter: Any) -> ScanRanking:
    repeated = frame.duplicated(subset=["layer", "head"])
    if bool(repeated.any()):
        row = frame[repeated].iloc[0]
        raise AttnscopeError(
            f"scan= has two rows for layer {int(row['layer'])} head {int(row['head'])} and no "
            "'input' column; a table of many inputs needs one (attnscope.scan's has it)."
        )
    runs = int(frame["runs"].max()) if "runs" in frame.columns else None
    entries, arrays = [], []
    where = (frame["layer"], frame["head"])
    for column in columns:
        name = PREFIX + column
        arrays.append((name, scatter(*where, frame[column], np.nan, np.float32)))
        spread = f"{column}_std" in frame.columns and runs is not None
        label, formula, source = _label(
            column, runs if spread else None, "runs", frame.attrs.get("about")
        )
        entry: dict[str, Any] = {"name": name, "label": label, "formula": formula}
        entry["source"] = source
        if spread:
            arrays.append((name + SPREAD, scatter(*where, frame[f"{column}_std"], np.nan, "f4")))
            entry |= {"spread": name + SPREAD, "inputs": runs, "over": "runs"}
        entries.append(entry)
    return ScanRanking(stream, runs, entries, arrays)


class RankedChunkCache(ChunkDispatcher):
    """A widget's chunk dispatcher whose ``stats:`` chunk of the ranked stream carries the scan's.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from attnscope import AttentionTrace
    >>> t = AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32))
    >>> df = pd.DataFrame({"layer": 0, "head": [0, 1], "retrieval": [0.5, 0.0]})
    >>> cache = RankedChunkCache(scan_ranking(df, t))
    >>> [n for n, _ in cache.encode_raw(t, "stats:self")][-1]
    'scan:retrieval'
    """

    def __init__(
        self,
        ranking: ScanRanking | None,
        max_bytes: int = CACHE_BYTES,
        *,
        served: Mapping[str, Serve] | None = None,
    ) -> None:
        stats = None if ranking is None else (ranking.stream, ranking.arrays)
        super().__init__(max_bytes, served=served, stats=stats)
        self.ranking = ranking
        """The scan's statistics; None for a widget that only serves chunks of its own."""
