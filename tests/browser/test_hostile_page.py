"""Hostile token strings in the exported page, in offline chromium: nothing runs, labels stay text.

The page of a trace whose tokens are tests/hostile_tokens.py's strings (and
q/k, so all three views work) is opened from disk. Before it loads, the page
gets a recorder of every canvas text and dialogs that would mark an injected
script. Each test walks a view by hover and click and checks: no script ran
and no element came from a label; every label shows its text; tooltips,
canvas texts and SVG texts leave no bidi control open outside its label; the
neuron view's info line keeps its reading order after a hostile label; PNG
and SVG exports download, and every SVG parses as XML.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import torch
from hostile_kit import FOREIGN, READING_ORDER, RECORDER, ROWS
from page_kit import ExportedPage

import attnscope
from attnscope import AttentionTrace, MultiHeadAttention

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hostile_tokens import BIDI_CONTROLS, HOSTILE, PWNED, bidi_leaks, shown, without_bidi

pytestmark = pytest.mark.browser

ROW = 18
BIDI_ROWS = [i for i, t in enumerate(HOSTILE) if any(c in BIDI_CONTROLS for c in t)]


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    trace = AttentionTrace.from_module(mha, torch.randn(1, len(HOSTILE), 8), HOSTILE)
    return attnscope.save_html(trace, tmp_path_factory.mktemp("hostile") / "hostile.html")


@pytest.fixture
def hostile(page: Any, page_file: Path) -> ExportedPage:
    page.add_init_script(RECORDER)
    return ExportedPage(page, page_file.as_uri()).open()


def nothing_ran(exported: ExportedPage) -> None:
    """No injected script ran, no label became an element, every canvas text is contained."""
    page = exported.page
    assert page.evaluate(f"() => window.{PWNED}") is None
    assert exported.root.locator(FOREIGN).count() == 0
    leaking = [t for t in page.evaluate("() => window.__drawnText") if bidi_leaks(t)]
    assert leaking == []


def token_row(exported: ExportedPage, side: str, i: int) -> Any:
    """The head view's (visible) row of token ``i`` in the ``query`` or ``key`` column."""
    column = f'.attnscope-hv-col[data-side="{side}"]'
    return exported.page.locator(f'{column} [data-i="{i}"]:not([hidden])')


def scroll_to_row(exported: ExportedPage, i: int) -> None:
    """Scroll the head view so row ``i`` is in view, waiting for the redraw when it moves."""
    exported.page.mouse.move(0, 0)  # no hover that a scroll would move to another row
    viewport = exported.page.locator('[data-testid="head-viewport"]')
    target = f"v => Math.max(0, Math.min({i * ROW} - 2 * {ROW}, v.scrollHeight - v.clientHeight))"
    if viewport.evaluate(f"v => v.scrollTop === ({target})(v)"):
        return
    exported.redraw_after(
        "head", lambda: viewport.evaluate(f"v => {{ v.scrollTop = ({target})(v); }}")
    )


def test_head_view_shows_every_label_as_text(hostile: ExportedPage) -> None:
    seen: dict[tuple[str, int], dict[str, Any]] = {}
    for first in range(0, len(HOSTILE), 10):
        scroll_to_row(hostile, first)
        for side in ("query", "key"):
            column = hostile.page.locator(f'.attnscope-hv-col[data-side="{side}"]')
            for row in column.evaluate(ROWS):
                seen[(side, row["i"])] = row
    assert {i for side, i in seen if side == "query"} == set(range(len(HOSTILE)))
    for (_, i), row in sorted(seen.items()):
        label = shown(HOSTILE[i])
        assert without_bidi(row["text"]) == without_bidi(label), i
        assert row["bdi"], i
        assert row["isolated"], i
        assert without_bidi(row["title"]) == f"{without_bidi(label)} (#{i})", i
        assert not bidi_leaks(row["title"]), i
    nothing_ran(hostile)


def test_head_view_hover_and_click_on_every_token(hostile: ExportedPage) -> None:
    drawn = int(hostile.attr("head", "data-lines") or 0)
    assert drawn > 0
    for i in range(len(HOSTILE)):
        scroll_to_row(hostile, i)
        row = hostile.page.locator(
            f'.attnscope-hv-col[data-side="query"] [data-i="{i}"]:not([hidden])'
        )
        if "is-hover" not in (row.get_attribute("class") or ""):
            hostile.redraw_after("head", row.hover)
        assert 0 < int(hostile.attr("head", "data-lines") or 0) <= drawn
        if (i in BIDI_ROWS or i % 7 == 0) and "is-selected" not in (
            row.get_attribute("class") or ""
        ):
            hostile.redraw_after("head", row.click)
            assert "is-selected" in (row.get_attribute("class") or "")
    key = hostile.page.locator(
        f'.attnscope-hv-col[data-side="key"] [data-i="{len(HOSTILE) - 1}"]:not([hidden])'
    )
    hostile.redraw_after("head", key.hover)
    nothing_ran(hostile)


def test_model_view_hover_and_click(hostile: ExportedPage) -> None:
    hostile.show("model")
    canvas = hostile.canvas("model")
    box = canvas.bounding_box()
    assert box is not None
    for x, y in ((0.3, 0.3), (0.7, 0.6)):
        hostile.page.mouse.move(box["x"] + box["width"] * x, box["y"] + box["height"] * y)
    canvas.click(position={"x": box["width"] * 0.7, "y": box["height"] * 0.6})
    nothing_ran(hostile)


def test_neuron_view_labels_keep_the_info_line_in_order(hostile: ExportedPage) -> None:
    view = hostile.show("neuron")
    query = view.locator('[data-testid="neuron-query"]')
    info = view.locator('[data-testid="neuron-info"]')
    for i in [*BIDI_ROWS, HOSTILE.index("A" * 10_000), 0]:
        hostile.redraw_after("neuron", lambda i=i: (query.fill(str(i)), query.press("Enter")))
        order = info.evaluate(READING_ORDER)
        assert without_bidi(order["label"]) == without_bidi(shown(HOSTILE[i]))
        assert order["text"].startswith(f"” (#{i})")
        for xs in order["lines"]:  # left to right, as written
            assert xs == sorted(xs), (i, order)
        keys = view.locator(".attnscope-nv-row[data-key] > span:first-child").evaluate_all(
            "(spans) => spans.map((s) => [s.title,"
            " s.querySelector('.attnscope-nv-keytok')?.firstElementChild?.tagName])"
        )
        assert keys
        assert [k for k in keys if k[1] != "BDI" or bidi_leaks(k[0])] == []
    nothing_ran(hostile)


def download(exported: ExportedPage, view: str, kind: str) -> bytes:
    with exported.page.expect_download() as info:
        exported.view(view).locator(f'[data-testid="save-{kind}"]').click()
    path = info.value.path()
    return Path(path).read_bytes()


def check_svg(data: bytes) -> int:
    """Parse an exported SVG as XML; return how many texts it has, each contained."""
    root = ET.fromstring(data)  # raises on anything that is not well-formed
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert [t for t in texts if bidi_leaks(t)] == []
    return len(texts)


def test_exports_of_every_view_are_well_formed(hostile: ExportedPage) -> None:
    scroll_to_row(hostile, BIDI_ROWS[0])
    hostile.redraw_after("head", token_row(hostile, "query", BIDI_ROWS[0]).click)
    svgs = {}
    for view in ("head", "model", "neuron"):
        if view != "head":
            hostile.show(view)
        svgs[view] = download(hostile, view, "svg")
        assert check_svg(svgs[view]) > 0
        png = download(hostile, view, "png")
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
    head = svgs["head"].decode("utf-8")
    assert "␀" in head or "␛" in head or "␋" in head  # controls drawn as their pictures
    assert "\u2068" in head  # labels isolated
    nothing_ran(hostile)
