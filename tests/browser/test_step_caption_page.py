"""The generation step caption: one tie rule with ``looked_at``, never cut (issue 39, point 6).

A 400-token generation whose last step's query weighs key 132 at 0.0020712 and
key 380 at 0.0020731 of a row (the ratio of the issue's report): ``looked_at``
and the saved page's caption must name the same key and say that another ties,
and the caption must show all of itself in a 1400-px window and a narrow one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_kit import Screenshots
from page_kit import ExportedPage
from playwright.sync_api import expect

import attnscope
from test_looked_at import near_tie_trace

_CUT = "(el) => el.scrollWidth - el.clientWidth"


def test_the_caption_names_looked_at_s_key_and_shows_all_of_itself(
    page: Any, tmp_path: Path, screenshots: Screenshots
) -> None:
    trace = near_tie_trace()
    expected = attnscope.looked_at(trace, layer=0, head=0)
    assert expected[["key", "tied"]].values.tolist() == [[132, 1]]
    widget = attnscope.AttentionWidget(trace, heads=[0], head=0, step=0)
    path = widget.save_html(tmp_path / "near_tie", views=("head",))
    for width in (1400, 760):
        page.set_viewport_size({"width": width, "height": 800})
        exported = ExportedPage(page, path.as_uri()).open()
        caption = page.locator('[data-testid="step-caption"]')
        expect(caption).to_have_attribute("data-key", "132")
        expect(caption).to_contain_text('head 0 looked most at "t132" (#132; 1 more key as strong')
        screenshots.take(f"step-caption-near-tie-{width}", exported.picture())
        assert caption.evaluate(_CUT) <= 0, "the caption is cut"
        box, view = caption.bounding_box(), exported.view("head").bounding_box()
        assert box["x"] + box["width"] <= view["x"] + view["width"] + 1, (box, view)
