"""The snapshot's fallback text: what is left of it where a sanitizer drops the frame.

JupyterLab shows an untrusted notebook's ``text/html`` through its sanitizer,
which removes the snapshot's ``<iframe>`` (its ``srcdoc`` page with it) and keeps
the text inside the element; ``tests/browser/test_untrusted_snapshot.py``
shows it there. Here: the text is all a tag-stripping parser finds, escaped,
with a hostile model name quoted as an isolate.
"""

from __future__ import annotations

import html
from html.parser import HTMLParser

import numpy as np

from attnscope import AttentionTrace, AttentionWidget
from attnscope.display.snapshot import snapshot_html, snapshot_text, undrawn_text
from attnscope.trace.label_text import FSI, PDI

HOSTILE = "</iframe><script>alert(1)</script>\u202eevil"


class TextOnly(HTMLParser):
    """What a sanitizer that drops every tag (and its attributes) keeps: the text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def widget(name: str = "tiny-model") -> AttentionWidget:
    weights = np.full((2, 4, 3, 3), 1 / 3, np.float32)
    return AttentionWidget(
        AttentionTrace(["a", "b", "c"], weights, metadata={"display_name": name}), layer=1
    )


def test_what_a_sanitizer_keeps_is_the_text_saying_why_and_what_to_do() -> None:
    shown = widget()
    parser = TextOnly()
    parser.feed(snapshot_html(shown))
    parser.close()
    assert parser.tags == ["iframe"]  # the page is in srcdoc, an attribute: dropped with it
    kept = "".join(parser.text)
    assert kept == undrawn_text(shown)
    assert kept.startswith("This attention view is not drawn here (attnscope AttentionWidget: ")
    assert "head view, \u2068tiny-model\u2069, 2 layers x 4 heads, 3 tokens, layer 1" in kept
    assert "\u201cTrust Notebook\u201d" in kept
    assert kept.endswith("or re-run the cell.")
    assert snapshot_text(shown).split(": ", 1)[1].split(";")[0] in kept  # same description


def test_a_hostile_model_name_stays_text_inside_its_isolate() -> None:
    shown = widget(HOSTILE)
    frame = snapshot_html(shown)
    assert frame.count("</iframe>") == 1
    assert frame.endswith("</iframe>")
    assert "<script" not in frame  # the page's scripts are escaped inside srcdoc
    fallback = frame[frame.index('">', frame.index("srcdoc=")) + 2 : -len("</iframe>")]
    assert html.unescape(fallback) == undrawn_text(shown)
    name = f"{FSI}</iframe><script>alert(1)</script>\u202eevil\u202c{PDI}"
    assert name in undrawn_text(shown)  # RLO closed and isolated: it cannot reorder the note
