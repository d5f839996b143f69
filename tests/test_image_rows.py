"""The head view's "collapse images" rows (issue 25): each image one row, every other token its own.

A widget on a trace with images and no ``segments=`` offers ``_meta.segments`` with
``by="images"``: edges from :func:`attnscope.image_boundaries`, the image's row labelled
by its grid ("img0 (4×4 patches)"), not by its patches' labels; each layer's
``segments:`` chunk is :func:`attnscope.segments`' mass for those edges, computed when
asked. The rows start unticked (``segment_rows`` False). Past the row limit (every text
token is a row) the widget keeps token rows and a note says why.
"""

from __future__ import annotations

import numpy as np
import pytest

import attnscope
import vlm_models
from attnscope import AttentionTrace, AttentionWidget
from attnscope.display.image_rows import most_image_rows
from attnscope.display.page import page_html
from attnscope.display.snapshot import saved_chunks
from attnscope.encode.keys import segments_key
from attnscope.trace.images import ImageRegion
from test_segments_widget import answered
from vlm_models import TEXT, image

pytestmark = pytest.mark.filterwarnings("ignore:.*receiver score needs:UserWarning")  # few segments


@pytest.fixture(scope="module")
def llava_trace() -> AttentionTrace:
    model, processor = vlm_models.llava()
    return attnscope.capture(model, TEXT["llava"], images=image(40, 60), processor=processor)


def test_each_image_is_one_labelled_row(llava_trace: AttentionTrace) -> None:
    trace = llava_trace
    [region] = trace.images
    first, last = min(region.all_positions()), max(region.all_positions())
    widget = AttentionWidget(trace)
    meta = widget._meta["segments"]
    assert meta["by"] == "images"
    assert meta["stream"] == "self"
    # Every token before and after the image is its own row; the image is one.
    n = len(trace.tokens)
    assert meta["edges"] == [*range(first + 1), *range(last + 1, n + 1)]
    row = meta["edges"].index(first)
    rows, cols = region.grid
    assert meta["labels"][row] == f"img0 ({rows}×{cols} patches)"
    assert meta["titles"][row].startswith(f"tokens {first}\u2013{last}: image 0")
    # Text rows keep their token's text.
    assert meta["labels"][row + 1] == "at"
    assert len(meta["labels"]) == n - (last - first)
    # Token rows first: the box is there, unticked.
    assert widget.segment_rows is False
    # No receiver ranking: an image among tokens is not a sentence.
    assert widget.scan_ranking is None


def test_chunk_is_the_image_segments_mass(llava_trace: AttentionTrace) -> None:
    trace = llava_trace
    widget = AttentionWidget(trace)
    found = attnscope.segments(trace, attnscope.image_boundaries(trace))
    for layer in range(2):
        got = answered(widget, segments_key("self", layer))["mass"]
        expected = found.mass[layer].astype(np.float32)
        np.testing.assert_array_equal(got, expected)
        # Rows of a causal head sum to one: the image row carries all its tokens' weight.
        assert np.allclose(got.sum(-1), 1.0, atol=1e-5)


def test_explicit_image_boundaries_get_the_same_labels(llava_trace: AttentionTrace) -> None:
    trace = llava_trace
    auto = AttentionWidget(trace)._meta["segments"]
    given = AttentionWidget(trace, segments=attnscope.image_boundaries(trace))._meta["segments"]
    assert given["by"] == "positions"
    assert given["labels"] == auto["labels"]
    assert given["edges"] == auto["edges"]


def test_segment_rows_is_a_trait_python_sets(llava_trace: AttentionTrace) -> None:
    widget = AttentionWidget(llava_trace, segment_rows=True)
    assert widget.segment_rows is True
    # Saved state holds what the head view draws: the segment chunk only while it shows rows.
    assert segments_key("self", 0) in saved_chunks(widget)
    widget.segment_rows = False
    assert segments_key("self", 0) not in saved_chunks(widget)
    # The exported page carries every layer's rows for the box either way.
    page = page_html(widget)
    assert segments_key("self", 0) in page
    assert segments_key("self", 1) in page
    assert '"by":"images"' in page


def _trace_with_image(text_tokens: int, heads: int, layers: int = 1) -> AttentionTrace:
    """``text_tokens`` plain tokens around a 4 x 4 image, uniform causal attention."""
    n = text_tokens + 16
    w = np.tril(np.ones((n, n), np.float32))
    w /= w.sum(-1, keepdims=True)
    weights = np.broadcast_to(w, (layers, heads, n, n)).copy()
    trace = AttentionTrace([f"t{i}" for i in range(n)], weights)
    trace.images = [ImageRegion(tuple(range(3, 19)), (4, 4), np.zeros((8, 8, 3), np.uint8))]
    return trace


def test_three_hundred_text_tokens_and_an_image_still_collapse() -> None:
    # 300 text tokens and the image: 301 rows, over segments='s 256 and under the
    # image rows' limit for 4 heads (512) and for 32 (362).
    trace = _trace_with_image(300, 4)
    widget = AttentionWidget(trace)
    meta = widget._meta["segments"]
    assert len(meta["labels"]) == 301
    assert meta["labels"][3] == "img0 (4×4 patches)"
    mass = answered(widget, segments_key("self", 0))["mass"]
    assert mass.shape == (4, 301, 301)
    assert mass[0, -1, 3] == pytest.approx(16 / 316, abs=1e-6)
    assert most_image_rows(32) >= 301


def test_a_page_gives_the_rows_a_share_of_its_budget() -> None:
    # 32 heads x 301 rows: 11.6 MB a layer (15.5 MB as base64), over a quarter of the page's
    # 50 MB: the page holds the current layer's rows only, and the token rows' chunks still.
    widget = AttentionWidget(_trace_with_image(300, 32, layers=3), layer=1)
    assert widget._page_keys(("head",)) == [segments_key("self", 1)]
    small = AttentionWidget(_trace_with_image(20, 4, layers=3), layer=1)
    assert small._page_keys(("head",)) == [segments_key("self", p) for p in (1, 0, 2)]
    # The model view's "collapse images" cells read the same chunks; the image view does not.
    assert small._page_keys(("model",)) == small._page_keys(("head",))
    assert small._page_keys(("image",)) == []


def test_too_many_rows_keep_token_rows_and_say_why() -> None:
    heads = 32
    trace = _trace_with_image(most_image_rows(heads) + 10, heads)
    widget = AttentionWidget(trace)
    assert not widget._meta.get("segments")
    [note] = [n for n in widget._meta["notes"] if "collapse the images" in n]
    assert f"{most_image_rows(heads) + 11} rows" in note
    assert "image view" in note


def test_a_trace_without_images_has_no_image_rows() -> None:
    trace = AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32))
    widget = AttentionWidget(trace)
    assert widget.segments is None
    assert widget.segment_rows is True  # the schema's default; nothing to show it on
