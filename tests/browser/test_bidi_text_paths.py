"""U+202E in every text attnscope quotes, in the exported page in offline chromium (issue 40).

A RIGHT-TO-LEFT OVERRIDE sits in the model's name (the widget title), in two
of the trace's notes, in a scan's column name (``scan=``: the rank menu, its
tooltip and the hover line), in a token (the overview's canvas row labels)
and, on a comparison's page, in a token left out of the alignment (the note
Python writes). Each must reach the page as an isolate (FSI … PDI, its
controls closed inside): the DOM text of the notes and the menu, the SVG
export's caption and texts, and every canvas text drawn (recorded before the
page loads) leave no bidi control open outside its isolate.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from browser_kit import wait_for_widget
from hostile_kit import RECORDER
from page_kit import ExportedPage
from test_hostile_page import check_svg, download

import attnscope
from attnscope import AttentionTrace, AttentionWidget, MultiHeadAttention

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hostile_tokens import bidi_leaks, without_bidi

pytestmark = pytest.mark.browser

RLO, FSI, PDI = "\u202e", "\u2068", "\u2069"
TOKENS = ["the", f"c{RLO}at", "sat", "on", "a", "mat", "and", "slept"]
TITLE = f"evil{RLO}model"
NOTES = [f"first note {RLO}reversed", "second note"]
COLUMN = f"col{RLO}umn"


@pytest.fixture(scope="module")
def scan_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(0)
    n = len(TOKENS)
    weights = np.tril(rng.random((2, 2, n, n))).astype(np.float32)
    weights /= weights.sum(-1, keepdims=True)
    trace = AttentionTrace(TOKENS, weights, metadata={"display_name": TITLE}, notes=NOTES)
    frame = pd.DataFrame(
        {
            "input": [i for i in range(3) for _ in range(4)],
            "layer": [layer for _ in range(3) for layer in (0, 0, 1, 1)],
            "head": [0, 1, 0, 1] * 3,
            COLUMN: rng.random(12),
        }
    )
    widget = AttentionWidget(trace, scan=frame)
    return widget.save_html(tmp_path_factory.mktemp("bidi") / "scan", views=("head", "model"))


@pytest.fixture(scope="module")
def compare_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(1)
    mha = MultiHeadAttention(8, 2, causal=True)
    x = torch.randn(1, 4, 8)
    y = torch.cat([x[:, :2], torch.randn(1, 1, 8), x[:, 2:]], dim=1)
    a = AttentionTrace.from_module(mha, x, ["the", "cat", "sat", "down"])
    b = AttentionTrace.from_module(mha, y, ["the", "cat", f"big{RLO}gib", "sat", "down"])
    widget = AttentionWidget(attnscope.compare(a, b))
    return widget.save_html(tmp_path_factory.mktemp("bidi") / "compare", views=("head",))


def contained(text: str) -> None:
    assert FSI in text, ascii(text)
    assert not bidi_leaks(text), ascii(text)


def test_notes_menu_caption_and_canvas_labels_are_isolated(page: Any, scan_page: Path) -> None:
    page.add_init_script(RECORDER)
    exported = ExportedPage(page, scan_page.as_uri()).open()
    notes = exported.root.locator(".attnscope-notes").evaluate("el => el.textContent")
    contained(notes)
    for note in NOTES:  # each note its own isolate, its override closed inside it
        assert f"{FSI}{note}" in notes
    assert without_bidi(notes).startswith("first note reversed second note")

    view = exported.show("model")
    menu = view.locator('[data-testid="rank-by"] option').evaluate_all(
        "(os) => os.map((o) => [o.value, o.textContent, o.title])"
    )
    [(_, words, tooltip)] = [o for o in menu if o[0] == f"scan:{COLUMN}"]
    contained(words)
    contained(tooltip)
    assert words.startswith(f"rank: {FSI}scan:{COLUMN}")
    assert without_bidi(words) == "rank: scan:column · mean over 3 inputs (± spread)"

    svg = download(exported, "model", "svg").decode("utf-8")
    assert check_svg(svg.encode("utf-8")) > 0  # every SVG text contained
    assert f"{FSI}{TITLE}" in svg  # the title in the caption, isolated

    # The overview of this short input opens by its button; close in, it labels each row.
    exported.redraw_after("model", view.locator('[data-testid="overview-open"]').click)
    wait_for_widget(page, root='[data-testid="overview"]')
    drawn = page.evaluate("() => window.__drawnText")
    rows = [t for t in drawn if t.startswith("1 ")]
    assert rows, drawn
    for text in rows:
        contained(text)
    assert [t for t in drawn if bidi_leaks(t)] == []


def test_a_comparison_note_isolates_the_left_out_token(page: Any, compare_page: Path) -> None:
    exported = ExportedPage(page, compare_page.as_uri()).open()
    notes = exported.root.locator(".attnscope-notes").evaluate("el => el.textContent")
    contained(notes)
    assert f"“{FSI}big{RLO}gib\u202c{PDI}” (#2)" in notes
    assert "Pass alignment= to pair the tokens yourself." in notes
