"""Masks that are not a rule (windows, chunks, padding), made a block of query rows at a time.

transformers builds the mask sdpa and eager attention receive as one
``(batch, 1, q, k)`` boolean tensor: 16 GiB at 131072 tokens for a sliding
window of 4096 keys. A plain causal mask is left out as a rule already
(:func:`~attnscope.sources.hf.generic.boolean_mask`); every other mask past
:data:`DENSE_MASK_VALUES` becomes a :class:`RowMask`, which keeps the mask's
recipe (transformers' own mask function and arguments) and evaluates it for
the query rows one block of attention needs. The recorder computes each block
with its rows of the mask, and the trace keeps the mask as key spans
(``[start, stop)`` per query): from the mask function's formula where
transformers' factories built it (:mod:`~attnscope.sources.hf.mask_spans`,
O(N)), else by evaluating it a block of rows at a time (N² evaluations).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from attnscope.errors import AttnscopeTypeError
from attnscope.sources.hf.mask_spans import closed_form_spans
from attnscope.trace.key_spans import spans_from_blocked

DENSE_MASK_VALUES = 1 << 24
"""Largest mask (batch x q x k booleans, 16 MiB) still built whole; larger ones are a RowMask."""
SPAN_ROWS_VALUES = 1 << 22
"""Mask entries evaluated at a time when reading a :class:`RowMask` as key spans (4 MiB)."""


class _MaskBuildError(Exception):
    """Raised by a stand-in mask function: transformers was about to build the mask."""


def _refuse(*_: Any) -> Any:
    raise _MaskBuildError


def skipped_or_lazy(
    sdpa_mask: Callable[..., torch.Tensor | None], arguments: Mapping[str, Any]
) -> torch.Tensor | RowMask | None:
    """The mask for ``arguments``: None (a rule), the tensor, or a :class:`RowMask`.

    A mask of up to :data:`DENSE_MASK_VALUES` entries is built whole, as
    transformers builds it. A larger one is first asked whether transformers
    would leave it out (it then returns None) with a mask function that stops
    the build if it starts, so nothing N² is made to decide; if the build
    starts, a :class:`RowMask` stands for the mask.

    Examples
    --------
    >>> from transformers.masking_utils import sdpa_mask, sliding_window_causal_mask_function
    >>> args = dict(batch_size=1, q_length=3, kv_length=3, local_size=2,
    ...             mask_function=sliding_window_causal_mask_function(2))
    >>> skipped_or_lazy(sdpa_mask, args).int().tolist()
    [[[[1, 0, 0], [1, 1, 0], [0, 1, 1]]]]
    """
    batch = int(arguments.get("batch_size", 1))
    q_len, k_len = _lengths(arguments)
    if batch * q_len * k_len <= DENSE_MASK_VALUES:
        return sdpa_mask(**arguments)
    try:
        skipped = sdpa_mask(**{**arguments, "mask_function": _refuse})
    except _MaskBuildError:
        return RowMask(dict(arguments), sdpa_mask, batch, q_len, k_len)
    return skipped


def _lengths(arguments: Mapping[str, Any]) -> tuple[int, int]:
    """``(q_length, kv_length)`` of a mask's arguments (older transformers: cache_position)."""
    k_len = int(arguments["kv_length"])
    if arguments.get("q_length") is not None:
        return int(arguments["q_length"]), k_len
    return int(arguments["cache_position"].shape[0]), k_len


@dataclass(frozen=True)
class RowMask:
    """A boolean attention mask (True = attend) evaluated a block of query rows at a time.

    Parameters
    ----------
    arguments
        The keyword arguments transformers gave the mask function (its
        ``mask_function``, offsets, padding mask, ...).
    build
        transformers' ``sdpa_mask``, which evaluates them for a range of rows.
    batch, q_len, k_len
        The shape of the whole mask, ``(batch, 1, q_len, k_len)``.

    Examples
    --------
    >>> from transformers.masking_utils import sdpa_mask, sliding_window_causal_mask_function
    >>> args = dict(batch_size=1, q_length=4, kv_length=4,
    ...             mask_function=sliding_window_causal_mask_function(2))
    >>> mask = RowMask(args, sdpa_mask, 1, 4, 4)
    >>> mask.rows(slice(2, 4)).int().tolist()
    [[[[0, 1, 1, 0], [0, 0, 1, 1]]]]
    >>> mask.spans().tolist()
    [[0, 1], [0, 2], [1, 3], [2, 4]]
    """

    arguments: dict[str, Any]
    build: Callable[..., torch.Tensor | None] = field(repr=False)
    batch: int
    q_len: int
    k_len: int
    _found: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    dtype = torch.bool
    ndim = 4

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """``(batch, 1, q_len, k_len)``, as the whole mask would be."""
        return (self.batch, 1, self.q_len, self.k_len)

    def dim(self) -> int:
        """4, as the whole mask's."""
        return 4

    def __getitem__(self, index: Any) -> RowMask:
        """The first keys only (``mask[..., :k]`` / ``mask[:, :, :, :k]``, as models cut it)."""
        parts = index if isinstance(index, tuple) else (index,)
        *lead, last = parts
        whole = all(p is Ellipsis or p == slice(None) for p in lead)
        if not (whole and isinstance(last, slice) and last.start is None and last.step is None):
            raise AttnscopeTypeError(
                f"a mask made a block of rows at a time can only be cut to its first keys "
                f"(mask[..., :k]), not indexed with {index!r}"
            )
        keys = min(self.k_len, self.k_len if last.stop is None else int(last.stop))
        cut = {**self.arguments, "kv_length": keys}
        return RowMask(cut, self.build, self.batch, self.q_len, keys)

    def rows(self, rows: slice | torch.Tensor) -> torch.Tensor:
        """The mask's ``(batch, 1, len(rows), k_len)`` booleans for query ``rows``.

        ``rows`` is a slice (one evaluation) or a tensor of row indices (one
        evaluation per run of consecutive rows).
        """
        if isinstance(rows, slice):
            start, stop, _ = rows.indices(self.q_len)
            return self._range(start, stop)
        listed = [int(r) for r in rows.tolist()]
        runs: list[tuple[int, int]] = []
        for row in listed:
            if runs and runs[-1][1] == row:
                runs[-1] = (runs[-1][0], row + 1)
            else:
                runs.append((row, row + 1))
        return torch.cat([self._range(a, b) for a, b in runs], dim=-2)

    def visible(self, rows: slice) -> slice:
        """The keys any of query ``rows`` sees (all keys where that is not one span per row)."""
        spans = self._whole_spans() if self.batch == 1 else None
        if spans is None:
            return slice(0, self.k_len)
        part = spans[rows]
        part = part[part[:, 1] > part[:, 0]]
        if not len(part):
            return slice(0, self.k_len)
        return slice(int(part[:, 0].min()), int(part[:, 1].max()))

    def block(self, rows: slice, keys: slice) -> torch.Tensor:
        """The mask's ``(batch, 1, len(rows), len(keys))`` booleans: a block of rows and keys.

        Evaluated over those keys only (transformers' mask function takes a key
        offset), so a window's block costs rows x window, not rows x N.
        """
        start, stop, _ = rows.indices(self.q_len)
        first, last, _ = keys.indices(self.k_len)
        offset = int(self.arguments.get("kv_offset") or 0)
        cut = {**self.arguments, "kv_length": last - first, "kv_offset": offset + first}
        return RowMask(cut, self.build, self.batch, self.q_len, last - first)._range(start, stop)

    def _whole_spans(self) -> np.ndarray[Any, Any] | None:
        """Every query's visible-key span of batch item 0, found once.

        From the mask function's formula where transformers built it
        (:func:`~attnscope.sources.hf.mask_spans.closed_form_spans`: O(N)),
        checked against the function itself on its first, middle and last
        block of rows; else by evaluating it over every (query, key) pair.
        """
        if "spans" not in self._found:
            spans = closed_form_spans(self.arguments, self.build, self.q_len, self.k_len)
            if spans is None or not self._agrees(spans):
                spans = self._evaluated_spans()
            self._found["spans"] = spans
        found: np.ndarray[Any, Any] | None = self._found["spans"]
        return found

    def _agrees(self, spans: np.ndarray[Any, Any]) -> bool:
        """Whether the function's own first, middle and last block of rows have ``spans``."""
        step = self._span_rows()
        if not self.q_len:
            return True
        for first in sorted({0, (self.q_len // 2) // step * step, (self.q_len - 1) // step * step}):
            found = self._evaluated_block(first)
            if found is None or not np.array_equal(found, spans[first : first + step]):
                return False
        return True

    def _evaluated_spans(self) -> np.ndarray[Any, Any] | None:
        """The spans evaluating the mask over every (query, key) pair finds, a block at a time."""
        found: list[np.ndarray[Any, Any]] = []
        for first in range(0, self.q_len, self._span_rows()):
            span = self._evaluated_block(first)
            if span is None:  # a row whose keys are not one span: no spans at all
                return None
            found.append(span)
        return np.concatenate(found) if found else np.zeros((0, 2), np.int32)

    def _span_rows(self) -> int:
        """Query rows one span-finding evaluation covers (:data:`SPAN_ROWS_VALUES` booleans)."""
        return max(1, SPAN_ROWS_VALUES // max(self.k_len, 1))

    def _evaluated_block(self, first: int) -> np.ndarray[Any, Any] | None:
        """The spans of the block of rows from ``first``, by evaluating the mask function."""
        stop = min(first + self._span_rows(), self.q_len)
        return spans_from_blocked(~self._range(first, stop)[0, 0])

    def _range(self, start: int, stop: int) -> torch.Tensor:
        arguments = {**self.arguments, "allow_is_causal_skip": False}
        arguments.pop("allow_is_bidirectional_skip", None)
        position = arguments.get("cache_position")
        if arguments.get("q_length") is None and isinstance(position, torch.Tensor):
            arguments["cache_position"] = position[start:stop]
        else:
            arguments["q_length"] = stop - start
            arguments["q_offset"] = int(arguments.get("q_offset") or 0) + start
        built = self.build(**arguments)
        if built is None:  # the rows attend to every key
            return torch.ones(self.batch, 1, stop - start, self.k_len, dtype=torch.bool)
        return built.expand(self.batch, 1, stop - start, self.k_len)

    def spans(
        self, rows: list[int] | None = None, cols: list[int] | None = None
    ) -> np.ndarray[Any, Any] | None:
        """``(q, 2)`` visible-key spans of batch item 0 (None if a row's keys are not contiguous).

        ``rows`` and ``cols`` keep some query and key positions only (sorted),
        as a stream keeps the non-padding ones.
        """
        whole = self._whole_spans()
        if whole is not None:  # trimmed from the spans found once
            spans = whole if rows is None else whole[np.asarray(rows, dtype=np.int64)]
            if cols is not None:
                kept = np.asarray(cols)
                spans = np.stack(
                    [np.searchsorted(kept, spans[:, 0]), np.searchsorted(kept, spans[:, 1])], -1
                )
                spans[spans[:, 1] == spans[:, 0]] = 0
            return spans.astype(np.int32)
        queries = torch.arange(self.q_len) if rows is None else torch.tensor(rows)
        step = self._span_rows()
        found = []
        for first in range(0, len(queries), step):
            part = queries[first : first + step]
            attend = self.rows(part)[0, 0]
            if cols is not None:
                attend = attend[:, cols]
            span = spans_from_blocked(~attend.cpu())
            if span is None:
                return None
            found.append(span)
        return np.concatenate(found) if found else np.zeros((0, 2), np.int32)

    def dense(self) -> torch.Tensor:
        """The whole mask as one tensor (N²: only where a caller needs it whole)."""
        return self._range(0, self.q_len)
