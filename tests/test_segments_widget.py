"""The widget's ``segments=``: the head view's segment chunks and the receiver-score ranking.

Each ``segments:<stream>:<layer>`` chunk must be ``attnscope.segments(trace, ...).mass``
of that layer, bit for bit (float32), from the live widget, the exported page and the
saved state alike; the model view's ``scan:receiver`` statistic is Thought Anchors'
receiver score of each head (``SegmentAttention.receiver``).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pandas as pd
import pytest
from traitlets import TraitError

import attnscope
import attnscope.display.segmented
from attnscope import AttentionTrace, AttentionWidget
from attnscope.display.page import page_html
from attnscope.encode.keys import segments_key, stats_key
from attnscope.errors import AttnscopeError
from test_export import embedded, split_arrays
from test_scan_segments import REASONING

pytestmark = pytest.mark.filterwarnings("ignore:.*receiver score needs:UserWarning")  # few segments

LONGER = REASONING + " Check it once more. It holds. Write it down. Then stop. Good."
"""Twelve sentences: eight have four or more after them, so heads get receiver scores."""


@pytest.fixture(scope="module")
def trace(minilm: tuple[Any, Any]) -> AttentionTrace:
    model, tokenizer = minilm
    return attnscope.capture(model, LONGER, tokenizer=tokenizer)


def answered(widget: AttentionWidget, key: str) -> dict[str, np.ndarray]:
    """The arrays of one chunk as the browser decodes a reply (little-endian, C order)."""
    [(content, buffers)] = widget.answer({"type": "request", "keys": [key]})
    [chunk] = content["chunks"]
    assert "error" not in chunk, chunk.get("error")
    dtypes = {"f32": "<f4", "u8": "<u1", "u16": "<u2", "u32": "<u4"}
    return {
        a["name"]: np.frombuffer(buffers[a["buffer"]], dtypes[a["dtype"]]).reshape(a["shape"])
        for a in chunk["arrays"]
    }


def test_chunk_is_the_layers_segment_mass(trace: AttentionTrace) -> None:
    widget = AttentionWidget(trace, segments="sentences")
    found = attnscope.segments(trace, "sentences")
    for layer in (0, 3, 5):
        mass = answered(widget, segments_key("self", layer))["mass"]
        assert mass.shape == (12, 12, 12)
        np.testing.assert_array_equal(mass, found.mass[layer].astype(np.float32))
    meta = widget._meta["segments"]
    assert meta["stream"] == "self"
    assert meta["by"] == "sentences"
    assert meta["edges"] == found.edges.tolist()
    # Labels are each sentence's first words, as written (offsets); hovers add the range.
    assert meta["labels"][:3] == ["First, add the numbers.", "Then check the sum!", "Is it even?"]
    first, stop = found.edges[1], found.edges[2]
    assert meta["titles"][1] == f"tokens {first}\u2013{stop - 1}: Then check the sum!"


def test_positions_and_turns_split_as_segments_does(trace: AttentionTrace) -> None:
    widget = AttentionWidget(trace, segments=[4, 9])
    assert widget._meta["segments"]["edges"] == [0, 4, 9, len(trace.tokens)]
    assert widget._meta["segments"]["by"] == "positions"
    mass = answered(widget, segments_key("self", 2))["mass"]
    np.testing.assert_array_equal(mass, attnscope.segments(trace, [4, 9]).mass[2].astype("f4"))


def test_turns_of_a_chat() -> None:
    from capture_models import bpe_tokenizer
    from test_capture_generate import MESSAGES, TEMPLATE, causal_lm

    model, _ = causal_lm("gpt2")
    tokenizer = copy.deepcopy(bpe_tokenizer())
    tokenizer.chat_template = TEMPLATE
    trace = attnscope.capture(model, MESSAGES, tokenizer=tokenizer, max_new_tokens=4)
    widget = AttentionWidget(trace, segments="turns")
    found = attnscope.segments(trace, "turns")
    meta = widget._meta["segments"]
    assert meta["by"] == "turns"
    assert len(meta["labels"]) == 3  # system, user, the assistant's answer
    assert meta["labels"][:2] == ["You are a lazy dog.", "The quick brown fox?"]
    # A random model generated only line breaks: the turn shows its marker and them, not "".
    assert "<|assistant|>\\n" in meta["labels"][2]
    mass = answered(widget, segments_key("self", 1))["mass"]
    np.testing.assert_array_equal(mass, found.mass[1].astype(np.float32))


def test_model_view_ranks_by_receiver_score(trace: AttentionTrace) -> None:
    widget = AttentionWidget(trace, segments="sentences", view="model")
    found = attnscope.segments(trace, "sentences")
    entry = next(s for s in widget._meta["statistics"] if s["name"] == "scan:receiver")
    assert entry["label"] == "receiver score (Thought Anchors)"
    assert "kurtosis" in entry["formula"]
    stats = answered(widget, stats_key("self"))
    np.testing.assert_array_equal(stats["scan:receiver"], found.receiver.astype(np.float32))
    widget.rank_by = "scan:receiver"  # the model view's rank select offers it
    assert widget.rank_by == "scan:receiver"


def test_a_heads_table_ranks_the_same_way(trace: AttentionTrace) -> None:
    heads = attnscope.segments(trace, "sentences").heads()
    widget = AttentionWidget(trace, scan=heads)
    # top_segment is an index, not a score: it is not offered as a statistic.
    assert widget.scan_ranking is not None
    assert widget.scan_ranking.names == ["scan:receiver"]
    assert widget.rank_by == "scan:receiver"


def test_scan_and_segments_rank_together(trace: AttentionTrace) -> None:
    table = pd.DataFrame({"layer": np.repeat(np.arange(6), 12), "head": np.tile(np.arange(12), 6)})
    table["retrieval"] = np.linspace(0, 1, 72)
    widget = AttentionWidget(trace, scan=table, segments="sentences")
    assert widget.scan_ranking is not None
    assert widget.scan_ranking.names == ["scan:retrieval", "scan:receiver"]
    assert widget.rank_by == "scan:retrieval"
    with pytest.raises(AttnscopeError, match="adds them again"):
        AttentionWidget(
            trace, scan=attnscope.segments(trace, "sentences").heads(), segments="sentences"
        )


def test_page_and_saved_state_carry_the_segments(trace: AttentionTrace) -> None:
    widget = AttentionWidget(trace, segments="sentences", layer=2)
    found = attnscope.segments(trace, "sentences")
    page = page_html(widget, views=("head",))
    state = embedded(page, "attnscope-state")
    assert state["_meta"]["segments"] == widget._meta["segments"]
    chunks = embedded(page, "attnscope-chunks")
    assert next(k for k in chunks if k.startswith("segments:")) == segments_key("self", 2)
    for layer in range(6):
        mass = split_arrays(chunks[segments_key("self", layer)])["mass"]
        np.testing.assert_array_equal(mass, found.mass[layer].astype(np.float32))
    model_only = embedded(page_html(widget, views=("model",)), "attnscope-chunks")
    # The model view's collapsed cells read them too (js/views/model/model_segments.ts).
    assert sorted(k for k in model_only if k.startswith("segments:")) == sorted(
        segments_key("self", layer) for layer in range(6)
    )
    bundle = widget._repr_mimebundle_()  # sets the saved state and the kernel-less snapshot
    assert bundle is not None
    assert next(iter(widget._saved)) == segments_key("self", 2)
    assert segments_key("self", 2) in bundle[0]["text/html"]


def test_segment_rows_is_synced_both_ways(trace: AttentionTrace) -> None:
    widget = AttentionWidget(trace, segments="sentences", layer=2)
    assert widget.segment_rows is True  # segments= opens on segment rows
    assert widget.get_state(["segment_rows"]) == {"segment_rows": True}
    # The browser's checkbox: an update message from the front end sets the trait.
    widget.set_state({"segment_rows": False})
    assert widget.segment_rows is False
    # What the widget saves follows: token rows need no segment chunk.
    widget._repr_mimebundle_()
    assert segments_key("self", 2) not in widget._saved
    widget.segment_rows = True
    assert next(iter(widget._saved)) == segments_key("self", 2)
    # Python sets it at the start, and the exported page opens that way.
    tokens_first = AttentionWidget(trace, segments="sentences", segment_rows=False)
    state = embedded(page_html(tokens_first, views=("head",)), "attnscope-state")
    assert state["segment_rows"] is False
    with pytest.raises(TraitError):
        widget.segment_rows = "yes"


def test_show_head_view_passes_segments(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    widget = attnscope.show_head_view(
        model, REASONING, tokenizer=tokenizer, segments="sentences", display=False
    )
    assert len(widget._meta["segments"]["labels"]) == 7


def test_bad_segments_are_refused_before_work(
    trace: AttentionTrace, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(AttnscopeError, match=r"boundaries=\[3, 2\] must be increasing"):
        AttentionWidget(trace, segments=[3, 2])
    with pytest.raises(AttnscopeError, match="comparison"):
        AttentionWidget(attnscope.compare(trace, trace), segments="sentences")
    monkeypatch.setattr(attnscope.display.segmented, "MAX_SEGMENTS", 6)
    with pytest.raises(AttnscopeError, match=r"into 12 segments; the head view shows at most 6"):
        AttentionWidget(trace, segments="sentences")
    monkeypatch.undo()
    plain = AttentionWidget(trace)
    [(content, _)] = plain.answer({"type": "request", "keys": [segments_key("self", 0)]})
    assert "segments=" in content["chunks"][0]["error"]
    widget = AttentionWidget(trace, segments="sentences")
    [(content, _)] = widget.answer({"type": "request", "keys": [segments_key("self", 9)]})
    assert "out of range" in content["chunks"][0]["error"]
