"""spans_from_blocked against a plain reading of each row, on random and edge masks."""

from __future__ import annotations

import numpy as np
import pytest

from attnscope.trace import key_spans
from attnscope.trace.key_spans import spans_from_blocked


def _reference(blocked: np.ndarray) -> np.ndarray | None:
    spans = []
    for row in ~blocked:
        seen = np.flatnonzero(row)
        if not len(seen):
            spans.append([0, 0])
        elif seen[-1] - seen[0] + 1 != len(seen):
            return None
        else:
            spans.append([seen[0], seen[-1] + 1])
    return np.array(spans, np.int32)


def test_spans_are_each_rows_run_or_none(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    monkeypatch.setattr(key_spans, "SPAN_BLOCK_VALUES", 16)  # several blocks of rows
    for _ in range(300):
        q_len, k_len = rng.integers(1, 9, size=2)
        starts = rng.integers(0, k_len + 1, size=q_len)
        stops = np.maximum(starts, rng.integers(0, k_len + 1, size=q_len))
        keys = np.arange(k_len)
        blocked = ~((keys >= starts[:, None]) & (keys < stops[:, None]))
        if rng.random() < 0.3:  # a hole in one row: not contiguous (or still one run)
            blocked[rng.integers(q_len), rng.integers(k_len)] ^= True
        got, expected = spans_from_blocked(blocked), _reference(blocked)
        assert (got is None) == (expected is None), blocked
        if expected is not None:
            assert got is not None
            assert got.tolist() == expected.tolist(), blocked
