"""A long page write shows tqdm's bar while it runs and leaves nothing behind."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

import attnscope
from attnscope import _progress


def _trace() -> attnscope.AttentionTrace:
    rng = np.random.default_rng(0)
    q = rng.normal(size=(3, 2, 10, 4)).astype(np.float32)
    return attnscope.AttentionTrace([str(i) for i in range(10)], None, queries=q, keys=q)


def test_a_long_page_write_shows_a_bar_and_clears_it(monkeypatch: Any, tmp_path: Path) -> None:
    out = io.StringIO()
    monkeypatch.setattr(_progress, "FILE", out)
    monkeypatch.setattr(_progress, "DELAY", 0.0)  # every write counts as long
    attnscope.save_html(_trace(), tmp_path / "page.html")
    text = out.getvalue()
    assert "attnscope page" in text
    assert "chunk" in text
    last = text.rsplit("\r", 2)
    assert last[-1] == ""  # ends on a carriage return ...
    assert last[-2].strip() == ""  # ... after blanking the bar's line: nothing is left


def test_a_write_shorter_than_the_delay_prints_nothing(monkeypatch: Any, tmp_path: Path) -> None:
    out = io.StringIO()
    monkeypatch.setattr(_progress, "FILE", out)
    monkeypatch.setattr(_progress, "DELAY", 3600.0)
    attnscope.save_html(_trace(), tmp_path / "page.html")
    assert out.getvalue() == ""
