"""The image view's data (issue 25): ``_meta.images``, ``pixels:`` and ``image:`` chunks.

Tiny random LLaVA (a 4 x 4 grid) and Idefics3 (tiles and an overview) with
synthetic images: each ``image:`` row, laid on the grids of ``_meta.images``,
equals :func:`attnscope.image_attention` for that query and head; the pixels
are the trace's; the image view is offered exactly when the trace has images.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import attnscope
import vlm_models
from attnscope.display.page import page_html
from attnscope.display.snapshot import saved_chunks
from attnscope.encode import image_chunks
from attnscope.encode.chunks import all_keys, encode_chunk, parse_key
from attnscope.encode.keys import image_key, pixels_key
from attnscope.encode.meta import build_meta
from attnscope.errors import AttnscopeError
from vlm_models import TEXT, image


@pytest.fixture(scope="module")
def llava_trace() -> attnscope.AttentionTrace:
    model, processor = vlm_models.llava()
    return attnscope.capture(
        model, TEXT["llava"], images=image(40, 60), processor=processor, max_new_tokens=2
    )


@pytest.fixture(scope="module")
def idefics_trace() -> attnscope.AttentionTrace:
    model, processor = vlm_models.idefics3()
    return attnscope.capture(model, TEXT["idefics3"], images=image(40, 70), processor=processor)


def _laid_on_grids(trace: attnscope.AttentionTrace, layer: int, head: int, row: int) -> list[Any]:
    """Row ``row`` of the ``image:`` chunk of ``layer``, dequantised and cut into its grids."""
    arrays = dict(encode_chunk(trace, parse_key(image_key("self", layer), trace)))
    weights = arrays["weight"][head, row] / 255 * arrays["rowmax"][head, row]
    meta = build_meta(trace)["images"]
    out, start = [], 0
    for img in meta["images"]:
        for grid in img["grids"]:
            cells = grid["rows"] * grid["cols"]
            out.append(weights[start : start + cells].reshape(grid["rows"], grid["cols"]))
            start += cells
    assert start == len(weights)
    return out


def test_image_chunk_equals_image_attention_on_the_grid(
    llava_trace: attnscope.AttentionTrace,
) -> None:
    trace = llava_trace
    meta = build_meta(trace)["images"]
    [region] = trace.images
    assert meta["stream"] == "self"
    shown = set(region.all_positions())
    assert meta["queries"] == [q for q in range(len(trace.tokens)) if q not in shown]
    assert meta["queries"][-2:] == [len(trace.tokens) - 2, len(trace.tokens) - 1]  # generated
    [grid] = meta["images"][0]["grids"]
    assert (grid["rows"], grid["cols"], grid["positions"]) == (4, 4, list(region.positions))
    for layer in range(2):
        for head in (0, 3):
            for row, query in enumerate(meta["queries"]):
                [laid] = _laid_on_grids(trace, layer, head, row)
                [expected] = attnscope.image_attention(trace, layer=layer, head=head, query=query)
                # One byte per weight, scaled to the row's largest weight on the image.
                assert np.abs(laid - expected).max() <= expected.max() / 255 / 2 + 1e-7


def test_pixels_chunk_is_the_pictures(llava_trace: attnscope.AttentionTrace) -> None:
    trace = llava_trace
    [(name, pixels)] = encode_chunk(trace, parse_key(pixels_key("self"), trace))
    assert name == "image0"
    assert pixels.dtype == np.uint8
    assert pixels.shape == trace.images[0].pixels.shape == (32, 32, 3)
    assert np.array_equal(pixels, trace.images[0].pixels)
    size = build_meta(trace)["images"]["images"][0]
    assert (size["height"], size["width"]) == (32, 32)


def test_tiles_and_overview_are_grids_of_the_chunk(
    idefics_trace: attnscope.AttentionTrace,
) -> None:
    trace = idefics_trace
    [region] = trace.images
    grids = build_meta(trace)["images"]["images"][0]["grids"]
    assert [g["name"] for g in grids] == ["image", "overview"]
    assert grids[0]["tiles"] == list(region.tiles or ())
    assert region.tiles is not None
    assert region.tiles != (1, 1)
    assert grids[1]["positions"] == list(region.extra["overview"])
    laid = _laid_on_grids(trace, 1, 2, 0)
    query = build_meta(trace)["images"]["queries"][0]
    [whole] = attnscope.image_attention(trace, layer=1, head=2, query=query)
    assert np.abs(laid[0] - whole).max() <= whole.max() / 255 / 2 + 1e-7
    # The overview's cells are the weights of its own tokens.
    rows = trace.stream.attention_rows(1, 2, np.array([query])).numpy()[0]
    expected = rows[list(region.extra["overview"])].reshape(grids[1]["rows"], grids[1]["cols"])
    assert np.abs(laid[1] - expected).max() <= laid[1].max() / 255 + 1e-7


def test_the_image_view_is_offered_only_with_images(
    llava_trace: attnscope.AttentionTrace,
) -> None:
    plain = attnscope.AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32))
    assert attnscope.AttentionWidget(plain).views == ("head", "model", "neuron")
    assert build_meta(plain)["images"] is None
    assert attnscope.AttentionWidget(llava_trace).views == ("head", "model", "neuron", "image")
    assert attnscope.AttentionWidget(llava_trace, view="image").view == "image"
    with pytest.raises(AttnscopeError, match="has no images"):
        attnscope.AttentionWidget(plain, views=("head", "image"))
    with pytest.raises(AttnscopeError, match="has no images"):
        parse_key(pixels_key("self"), plain)
    keys = all_keys(llava_trace, views=("image",))
    assert keys == [pixels_key("self"), image_key("self", 0), image_key("self", 1)]
    assert "image" not in all_keys(plain, views=("head", "image"))[0]
    # A page with the head view: the image view's first layer up front, its others after the
    # head view's chunks.
    both = all_keys(llava_trace, views=("head", "image"))
    assert both[:2] == [pixels_key("self"), image_key("self", 0)]
    assert both[-1] == image_key("self", 1)
    page = page_html(llava_trace)
    assert '"views":["head","model","neuron","image"]' in page


def test_saved_state_of_the_image_view_holds_its_chunks(
    llava_trace: attnscope.AttentionTrace,
) -> None:
    widget = attnscope.AttentionWidget(llava_trace, view="image", layer=1)
    assert sorted(saved_chunks(widget)) == [image_key("self", 1), pixels_key("self")]


def test_a_long_prompt_offers_its_last_text_queries(
    llava_trace: attnscope.AttentionTrace, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = llava_trace
    heads, columns = trace.stream.num_heads, 16
    whole = build_meta(trace)["images"]
    assert whole["left_out"] == 0
    monkeypatch.setattr(image_chunks, "IMAGE_CHUNK_BYTES", heads * columns * 3)
    cut = build_meta(trace)["images"]
    assert cut["queries"] == whole["queries"][-3:]  # the generated tokens and the prompt's end
    assert cut["left_out"] == len(whole["queries"]) - 3
    arrays = dict(encode_chunk(trace, parse_key(image_key("self", 1), trace)))
    assert arrays["weight"].shape == (heads, 3, columns)
    [laid] = _laid_on_grids(trace, 1, 0, 2)
    [expected] = attnscope.image_attention(trace, layer=1, head=0, query=cut["queries"][2])
    assert np.abs(laid - expected).max() <= expected.max() / 255 / 2 + 1e-7


def test_image_boundaries_collapse_each_image_to_one_segment(
    idefics_trace: attnscope.AttentionTrace,
) -> None:
    trace = idefics_trace
    [region] = trace.images
    first, last = min(region.all_positions()), max(region.all_positions())
    starts = attnscope.image_boundaries(trace)
    # Every token is its own segment, except the image: its tiles, their markers and the
    # overview between its first and last token are one.
    assert first in starts
    assert not set(range(first + 1, last + 1)) & set(starts)
    assert len(starts) == len(trace.tokens) - 1 - (last - first)
    widget = attnscope.AttentionWidget(trace, segments=starts)
    edges = widget._meta["segments"]["edges"]
    assert [first, last + 1] == edges[edges.index(first) : edges.index(first) + 2]
    found = attnscope.segments(trace, starts)
    image = edges.index(first)
    rows = trace.stream.attention_rows(1, 0, np.array([len(trace.tokens) - 1])).numpy()[0]
    assert found.mass[1, 0, -1, image] == pytest.approx(rows[first : last + 1].sum(), abs=1e-6)
    plain = attnscope.AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32))
    with pytest.raises(AttnscopeError, match="no images"):
        attnscope.image_boundaries(plain)


def test_image_tokens_are_labelled_by_grid_cell(idefics_trace: attnscope.AttentionTrace) -> None:
    trace = idefics_trace
    [region] = trace.images
    cols = region.grid[1]
    assert trace.tokens[region.positions[cols + 2]] == "img0 r1c2"
    overview = region.extra["overview"]
    assert [trace.tokens[p] for p in overview] == [
        "img0 ov r0c0",
        "img0 ov r0c1",
        "img0 ov r1c0",
        "img0 ov r1c1",
    ]
    assert all(len(trace.tokens[p]) <= 16 for p in region.all_positions())  # the head view's width


def test_the_widget_answers_the_image_views_requests(
    llava_trace: attnscope.AttentionTrace,
) -> None:
    sent: list[tuple[dict[str, Any], list[bytes]]] = []

    class Recording(attnscope.AttentionWidget):  # type: ignore[misc]
        def send(self, content: dict[str, Any], buffers: list[bytes] | None = None) -> None:
            sent.append((content, list(buffers or [])))

    widget = Recording(llava_trace, view="image")
    keys = [pixels_key("self"), image_key("self", 1), image_key("self", 2)]
    request = {"type": "request", "keys": keys}
    widget._handle_msg(
        {"content": {"data": {"method": "custom", "content": request}}, "buffers": []}
    )
    [(content, buffers)] = sent
    pixels, image, bad = content["chunks"]
    [spec] = pixels["arrays"]
    assert (spec["name"], spec["dtype"], spec["shape"]) == ("image0", "u8", [32, 32, 3])
    assert np.array_equal(
        np.frombuffer(buffers[spec["buffer"]], np.uint8).reshape(32, 32, 3),
        llava_trace.images[0].pixels,
    )
    shapes = {a["name"]: (a["dtype"], a["shape"]) for a in image["arrays"]}
    queries = len(build_meta(llava_trace)["images"]["queries"])
    assert shapes == {"weight": ("u8", [4, queries, 16]), "rowmax": ("f32", [4, queries])}
    assert "out of range" in bad["error"]
