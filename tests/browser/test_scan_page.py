"""A widget ranked by a scan, saved as a page (issue 24), in the offline chromium.

MiniLM scanned over three texts; the page of ``AttentionWidget(trace,
scan=df)`` must rank the model view by the scan's mean (not by the shown
input's own statistic): the select names it as a mean over 3 inputs, the
hover shows mean ± spread, and the first column of a layer is the head with
the largest scan mean there (a click on it opens that head).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from page_kit import ExportedPage
from playwright.sync_api import expect

import attnscope
from attnscope.analysis.scan import head_ranking

TEXTS = [
    "The cat sat on the mat.",
    "A dog ran home, and the dog slept by the door.",
    "Rain fell; rain fell again.",
]


@pytest.fixture(scope="module")
def scanned(minilm: tuple[Any, Any]) -> tuple[Any, attnscope.AttentionTrace]:
    model, tokenizer = minilm
    df = attnscope.scan(model, TEXTS, tokenizer=tokenizer, statistics=["prev", "entropy"])
    return df, attnscope.capture(model, TEXTS[0], tokenizer=tokenizer)


def top_heads(ranked: Any, layer: int) -> int:
    return int(ranked[ranked["layer"] == layer].iloc[0]["head"])


def test_the_model_view_is_ordered_by_the_scan_mean(
    page: Any, scanned: tuple[Any, attnscope.AttentionTrace], tmp_path: Path
) -> None:
    df, trace = scanned
    ranked = head_ranking(df, "prev")
    own = attnscope.head_stats(trace)
    own_top = own.loc[own.groupby("layer")["prev"].idxmax()].set_index("layer")["head"]
    # A layer whose strongest head by the scan is neither head 0 (unranked order) nor the
    # shown input's own strongest: only a ranking by the scan's mean puts it first.
    layer = next(
        lay for lay in range(6) if top_heads(ranked, lay) not in (0, int(own_top.loc[lay]))
    )
    head = top_heads(ranked, layer)
    widget = attnscope.AttentionWidget(trace, scan=df)
    path = widget.save_html(tmp_path / "scan", views=("head", "model"))
    exported = ExportedPage(page, path.as_uri()).open()
    exported.show("model")
    model = exported.view("model")
    expect(model).to_have_attribute("data-ranked-by", "scan:prev")
    select = page.locator('[data-testid="rank-by"]')
    expect(select).to_have_value("scan:prev")
    chosen = select.locator("option:checked")
    # The scan's column name isolated (FSI … PDI) in attnscope's words.
    expect(chosen).to_have_text("rank: \u2068scan:prev\u2069 · mean over 3 inputs (± spread)")

    canvas = exported.canvas("model")
    box = canvas.bounding_box()
    step = (box["width"] - 34) / 12  # 34 px of layer labels, 16 px of head labels
    row = float(model.get_attribute("data-row-px"))  # a ranked grid has a badge band per row
    at = {"x": 34 + step * 0.5, "y": 16 + row * layer + step * 0.4}
    canvas.hover(position=at)
    caption = page.locator(".attnscope-mv-caption")
    expect(caption).to_contain_text(f"Layer {layer} · head {head}")
    mean = ranked[(ranked["layer"] == layer) & (ranked["head"] == head)].iloc[0]
    expect(caption).to_contain_text(
        re.compile(rf"scan:prev\u2069 {mean['mean']:.2f} ± {mean['std']:.2f}")
    )
    expect(caption).to_contain_text(f"(strongest: input {int(mean['strongest_input'])})")
    canvas.click(position=at)
    page.wait_for_selector('[data-testid="head-view"][data-ready="true"]')
    pressed = page.locator('.attnscope-swatch[aria-pressed="true"]')
    assert pressed.count() == 1
    assert pressed.get_attribute("data-head") == str(head)


def test_a_needle_run_page_says_where_the_chosen_head_looked_at_each_step(
    page: Any, tmp_path: Path
) -> None:
    from test_looked_at import needle_run

    trace = needle_run()  # head 0 of layer 0 copies the needle "a b c" as it writes it
    scores = attnscope.retrieval_scores(trace, needle=(1, 4))
    widget = attnscope.AttentionWidget(trace, scan=scores, heads=[0], head=0, step=0)
    expected = attnscope.looked_at(trace, layer=0, head=0)
    path = widget.save_html(tmp_path / "needle", views=("head", "model"))
    exported = ExportedPage(page, path.as_uri()).open()
    caption = page.locator('[data-testid="step-caption"]')
    for step, key in enumerate(expected["key"].tolist()):
        if step:
            exported.redraw_after("head", lambda: page.click('[data-testid="step-next"]'))
        label = expected["key_token"].iloc[step]
        expect(caption).to_contain_text(f'head 0 looked most at "{label}" (#{key})')
        expect(caption).to_have_attribute("data-key", str(key))
    # Two heads selected: no single head to speak for.
    exported.redraw_after("head", lambda: page.click('.attnscope-swatch[data-head="1"]'))
    expect(caption).to_have_attribute("data-key", "")
