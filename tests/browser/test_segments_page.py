"""The head view's segments mode in an exported page: sentence rows, lines per head, the toggle.

A MiniLM run over seven sentences, shown by ``AttentionWidget(trace, segments="sentences")``
and saved with ``save_html``; the page opens in offline chromium on segment rows. The
labels must be the sentences' first words (hover: token range), the canvas must hold
ink where the lines run, focusing a sentence must keep only its lines, and the toggle
must go back to token rows and forth again. ``--screenshots=DIR`` writes the picture.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from page_kit import ExportedPage, canvas_stats

import attnscope

pytestmark = pytest.mark.browser

REASONING = (
    "First, add the numbers. Then check the sum! Is it even? "
    "It is. So halve it. The answer is six. Done."
    " Check it once more. It holds. Write it down. Then stop. Good."
)
"""Twelve sentences: eight have four or more after them, so heads get receiver scores."""
SEGMENT_CANVAS = ".attnscope-seg-canvas"


@pytest.fixture(scope="module")
def segmented_page(minilm: tuple[Any, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    model, tokenizer = minilm
    trace = attnscope.capture(model, REASONING, tokenizer=tokenizer)
    widget = attnscope.AttentionWidget(trace, segments="sentences", layer=1, heads=[0, 3, 7])
    return widget.save_html(tmp_path_factory.mktemp("segments") / "segments.html")


def lines(exported: ExportedPage) -> int:
    return int(exported.attr("head", "data-lines") or 0)


def test_segment_rows_draw_sentences_and_lines(
    page: Any, segmented_page: Path, screenshots: Any
) -> None:
    exported = ExportedPage(page, segmented_page.as_uri()).open()
    view = exported.view("head")
    assert "is-segments" in (view.get_attribute("class") or "")
    assert page.locator(".attnscope-hv-viewport").is_hidden()
    queries = page.locator(".attnscope-seg-q .attnscope-seg-label")
    keys = page.locator(".attnscope-seg-k .attnscope-seg-label")
    assert queries.all_inner_texts() == [
        "First, add the numbers.",
        "Then check the sum!",
        "Is it even?",
        "It is.",
        "So halve it.",
        "The answer is six.",
        "Done.",
        "Check it once more.",
        "It holds.",
        "Write it down.",
        "Then stop.",
        "Good.",
    ]
    assert keys.count() == 12
    assert "tokens 7\u2013" in (queries.nth(1).get_attribute("title") or "")
    # Lines of three heads between the label columns: ink in the middle of the canvas.
    everything = lines(exported)
    assert everything > 12
    canvas = page.locator(SEGMENT_CANVAS)
    box = canvas.evaluate("(c) => [c.width, c.height]")
    middle = (box[0] // 3, 0, box[0] // 3, box[1])
    assert canvas_stats(canvas, middle).painted > 500
    screenshots.take("head-view-segments", exported.picture())
    page.screenshot(path="/tmp/attnscope-segments.png", full_page=True)

    # Hovering a sentence keeps only its lines (to the sentences it can see: causal or not,
    # at most 7 a head), and its key bars say where its attention goes.
    exported.redraw_after("head", lambda: queries.nth(5).hover())
    assert 0 < lines(exported) <= 3 * 12 < everything
    assert "is-hover" in (queries.nth(5).get_attribute("class") or "")
    assert keys.nth(0).get_attribute("data-weight") not in (None, "")
    page.screenshot(path="/tmp/attnscope-segments-hover.png", full_page=True)

    # The toggle goes back to token rows (the token lines draw) and forth to sentences.
    toggle = page.locator('[data-testid="toggle-segments"]')
    assert toggle.is_checked()
    exported.redraw_after("head", toggle.uncheck)
    assert "is-segments" not in (view.get_attribute("class") or "")
    assert page.locator(".attnscope-hv-viewport").is_visible()
    assert page.locator('.attnscope-hv-col[data-side="query"] [data-i="0"]').inner_text() == "[CLS]"
    assert lines(exported) > 0
    exported.redraw_after("head", toggle.check)
    assert page.locator(".attnscope-seg").is_visible()
    assert lines(exported) == everything


def saved(exported: ExportedPage, kind: str) -> bytes:
    """The file the head view's PNG or SVG button saves."""
    with exported.page.expect_download() as info:
        exported.view("head").locator(f'[data-testid="save-{kind}"]').click()
    return Path(info.value.path()).read_bytes()


def test_segment_rows_export_png_and_svg(page: Any, segmented_page: Path) -> None:
    exported = ExportedPage(page, segmented_page.as_uri()).open()
    assert page.locator('[data-testid="save-png"]').is_visible()
    png = saved(exported, "png")
    Path("/tmp/attnscope-segments-export.png").write_bytes(png)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    panel = page.locator(SEGMENT_CANVAS).bounding_box()
    assert width >= 2 * round(panel["width"])  # twice the CSS size
    assert height > 2 * round(panel["height"])  # and a caption band above the rows

    svg = ET.fromstring(saved(exported, "svg"))
    ns = "{http://www.w3.org/2000/svg}"
    texts = ["".join(t.itertext()).strip("\u2066\u2067\u2068\u2069") for t in svg.iter(f"{ns}text")]
    caption = " ".join(texts[:3])
    assert "layer 1" in caption
    assert "heads 0, 3, 7" in caption
    assert "12 rows: sentences" in caption
    # Each sentence drawn on both sides, and the lines the canvas holds.
    assert texts.count("First, add the numbers.") == 2
    assert texts.count("Done.") == 2
    assert len(list(svg.iter(f"{ns}line"))) == lines(exported)


def test_model_view_ranks_by_receiver_score(page: Any, segmented_page: Path) -> None:
    exported = ExportedPage(page, segmented_page.as_uri()).open()
    exported.show("model")
    select = page.locator('[data-testid="rank-by"]')
    offered = select.locator("option").all_inner_texts()
    receiver = [o for o in offered if "receiver score (Thought Anchors)" in o]
    assert len(receiver) == 1
    exported.redraw_after("model", lambda: select.select_option(label=receiver[0]))
    assert select.input_value() == "scan:receiver"
