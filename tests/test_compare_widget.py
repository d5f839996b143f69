"""A comparison in the widget and the page: _meta, side chunks, signed A − B, the side trait."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import traitlets

import attnscope
from attnscope import AttentionTrace, AttentionWidget, MultiHeadAttention
from attnscope.analysis.aligned import aligned_traces
from attnscope.encode.pack import unpack_bytes

SHE = "The nurse said that she was tired."
HE = "The nurse said that he was tired."
DTYPES = {"i8": "<i1", "u8": "<u1", "u16": "<u2", "u32": "<u4", "f32": "<f4"}


def chunk(widget: AttentionWidget, key: str) -> dict[str, np.ndarray]:
    """Ask the widget for one chunk as the browser does; decode its buffers."""
    [(content, buffers)] = widget.answer({"type": "request", "keys": [key]})
    [entry] = content["chunks"]
    assert "error" not in entry, entry.get("error")
    return {
        a["name"]: np.frombuffer(buffers[a["buffer"]], DTYPES[a["dtype"]]).reshape(a["shape"])
        for a in entry["arrays"]
    }


def error(widget: AttentionWidget, key: str) -> str:
    [(content, _)] = widget.answer({"type": "request", "keys": [key]})
    return str(content["chunks"][0]["error"])


@pytest.fixture(scope="module")
def pair(minilm: tuple[Any, Any]) -> AttentionWidget:
    model, tokenizer = minilm
    return attnscope.show_head_view(model, SHE, compare=HE, tokenizer=tokenizer)


def test_minimal_pair_widget_meta(pair: AttentionWidget) -> None:
    meta = pair._meta
    labels = meta["sides"]["source"]["labels"]
    assert labels == pair.comparison.labels()
    assert labels[5] == "she | he"
    c = meta["comparison"]
    assert c["alignment"] == [[i, i] for i in range(len(labels))]
    assert (c["a"]["labels"][5], c["b"]["labels"][5]) == ("she", "he")
    divergence = np.array(c["divergence"]["self"])
    assert divergence.shape == (6, 12)
    np.testing.assert_allclose(divergence, pair.comparison.divergence())
    ranking = c["ranking"]["self"]
    assert len(ranking) == 72
    ranked = [divergence[layer, head] for layer, head in ranking]
    assert ranked == sorted(ranked, reverse=True)
    assert ranked[0] > ranked[-1] >= 0
    assert pair.compare_side == "diff"
    assert json.dumps(meta)  # plain JSON: no binary in the initial state


def test_sides_and_signed_difference(pair: AttentionWidget) -> None:
    a, b = pair.comparison.a, pair.comparison.b
    for side, trace in (("a", a), ("b", b)):
        top = chunk(pair, f"{side}/top:self:2")
        decoded = top["weight"] / 255 * top["rowmax"][..., None]
        np.testing.assert_allclose(decoded, trace.attention[2], atol=1 / 510 + 1e-6)
    diff = chunk(pair, "diff/top:self:2")
    assert (diff["weight"].dtype, diff["rowmax"].dtype) == (np.int8, np.float32)
    decoded = diff["weight"] / 127 * diff["rowmax"][..., None]
    truth = a.attention[2] - b.attention[2]
    np.testing.assert_allclose(decoded, truth, atol=float(np.abs(truth).max()) / 254 + 1e-7)
    np.testing.assert_allclose(diff["rowmax"], np.abs(truth).max(-1), rtol=1e-6)
    # Both signs occur: attention moves towards some keys and away from others.
    assert diff["weight"].min() < 0 < diff["weight"].max()

    thumbs = chunk(pair, "diff/thumbs:self")
    assert thumbs["thumbs"].shape == (6, 12, len(a.source), len(a.source))
    full = a.attention - b.attention
    np.testing.assert_allclose(thumbs["absmax"], np.abs(full).max((2, 3)), rtol=1e-6)
    assert np.abs(thumbs["thumbs"]).max() == 127

    one = chunk(pair, "diff/attn:self:0:3")
    miss = np.abs(one["weight"] / 127 * one["rowmax"][:, None] - full[0, 3])
    assert np.all(miss <= one["rowmax"][:, None] / 254 + 1e-7)  # half a step of each row
    qk_a, qk_b = chunk(pair, "a/qk:self:0:3"), chunk(pair, "b/qk:self:0:3")
    assert not np.array_equal(qk_a["q"], qk_b["q"])  # the inputs differ, so do their queries


def test_keys_a_comparison_cannot_serve_are_explained(pair: AttentionWidget) -> None:
    assert "ask for a/qk:self:0:0 and b/qk:self:0:0" in error(pair, "diff/qk:self:0:0")
    assert "'<side>/<key>'" in error(pair, "top:self:0")
    assert "unknown side 'c'" in error(pair, "c/top:self:0")
    assert "out of range" in error(pair, "a/top:self:9")


def test_a_trace_compared_with_itself_shows_zero(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    trace = attnscope.capture(model, SHE, tokenizer=tokenizer, layers=[0, 1])
    w = AttentionWidget(attnscope.compare(trace, trace))
    assert np.all(np.array(w._meta["comparison"]["divergence"]["self"]) == 0)
    for key in ("diff/thumbs:self", "diff/top:self:1", "diff/attn:self:0:0"):
        arrays = chunk(w, key)
        assert not arrays["thumbs" if "thumbs" in key else "weight"].any(), key


def test_compare_side_is_validated(pair: AttentionWidget) -> None:
    plain = AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32))
    w = AttentionWidget(plain)
    assert (w.compare_side, w.comparison) == (None, None)
    with pytest.raises(traitlets.TraitError, match="applies to comparisons"):
        w.compare_side = "a"
    assert "comparison" not in w._meta
    pair.compare_side = "a"
    assert pair.compare_side == "a"
    with pytest.raises(traitlets.TraitError):
        pair.compare_side = "c"
    assert pair.compare_side == "a"
    pair.compare_side = None  # a comparison has no "nothing": None means A - B
    assert pair.compare_side == "diff"


def _module_pair(extra: int) -> tuple[AttentionTrace, AttentionTrace]:
    torch.manual_seed(1)
    mha = MultiHeadAttention(8, 2, causal=True)
    x = torch.randn(1, 4, 8)
    y = torch.cat([x[:, :2], torch.randn(1, extra, 8), x[:, 2:]], dim=1)
    tokens_b = ["the", "cat", *(["big"] * extra), "sat", "down"]
    a = AttentionTrace.from_module(mha, x, ["the", "cat", "sat", "down"])
    return a, AttentionTrace.from_module(mha, y, tokens_b)


def test_unequal_lengths_show_the_aligned_tokens_renormalised() -> None:
    a, b = _module_pair(extra=1)
    c = attnscope.compare(a, b)
    assert c.alignment == ((0, 0), (1, 1), (2, 3), (3, 4))
    a2, b2 = aligned_traces(c)
    assert a2.tokens == b2.tokens == ["the", "cat", "sat", "down"]
    np.testing.assert_array_equal(a2.attention, a.attention)  # A is whole: unchanged
    np.testing.assert_allclose(b2.attention.sum(-1), 1, atol=1e-6)
    # The restricted q/k and mask still give the rows shown: the neuron view stays exact.
    np.testing.assert_allclose(b2.stream.recompute(), b2.attention, atol=1e-6)
    meta = AttentionWidget(c)._meta
    assert meta["comparison"]["alignment"] == [[0, 0], [1, 1], [2, 3], [3, 4]]
    assert meta["comparison"]["b"]["labels"] == ["the", "cat", "big", "sat", "down"]
    # The left-out token is quoted as an isolate (FSI … PDI): its text cannot reorder the note.
    isolated = "“\u2068big\u2069” (#2)"
    assert any(isolated in note and "renormalised" in note for note in meta["notes"])


def test_user_alignment_is_shown(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    w = attnscope.show_model_view(
        model,
        "The cat sat.",
        compare="The cat sat down.",
        tokenizer=tokenizer,
        alignment=[(0, 0), (1, 1), (2, 2)],
    )
    assert w.view == "model"
    assert w._meta["comparison"]["alignment"] == [[0, 0], [1, 1], [2, 2]]
    assert w._meta["sides"]["source"]["labels"] == ["[CLS]", "The", "cat"]


def test_show_neuron_view_compares(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    w = attnscope.show_neuron_view(model, SHE, compare=HE, tokenizer=tokenizer, query=5, layer=2)
    assert (w.view, w.query, w.layer, w.compare_side) == ("neuron", 5, 2, "diff")
    assert attnscope.show_head_view(w.comparison, compare_side="b").compare_side == "b"


def test_compare_arguments_are_checked(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    attention = (np.full((1, 1, 2, 2), 0.5),)
    with pytest.raises(TypeError, match="needs a model"):
        attnscope.show_head_view(attention, tokens=["a", "b"], compare=attention)
    with pytest.raises(TypeError, match="pass compare= the second input"):
        attnscope.show_head_view(model, SHE, tokenizer=tokenizer, alignment=[(0, 0)])
    with pytest.raises(TypeError, match="drop compare_tokens"):
        attnscope.show_head_view(model, SHE, compare=HE, compare_tokens=["x"])
    trace = attnscope.capture(model, SHE, tokenizer=tokenizer, layers=[0])
    with pytest.raises(TypeError, match="shown as it is"):
        attnscope.show_head_view(attnscope.compare(trace, trace), compare=HE)
    with pytest.raises(attnscope.errors.AttnscopeError, match="out of range"):
        attnscope.show_head_view(model, SHE, compare=HE, tokenizer=tokenizer, alignment=[(0, 99)])


def embedded(page: str, element_id: str) -> Any:
    found = re.search(f'<script type="application/json" id="{element_id}">(.*?)</script>', page)
    assert found, element_id
    return json.loads(found.group(1))


def test_save_html_of_a_comparison_and_of_its_widget(tmp_path: Path, pair: AttentionWidget) -> None:
    page = attnscope.save_html(pair.comparison, tmp_path / "pair").read_text()
    state = embedded(page, "attnscope-state")
    assert state["compare_side"] == "diff"
    assert (
        state["_meta"]["comparison"]["ranking"]["self"]
        == pair._meta["comparison"]["ranking"]["self"]
    )
    chunks = embedded(page, "attnscope-chunks")
    sides = {key.split("/")[0] for key in chunks}
    assert sides == {"a", "b", "diff"}
    assert {"diff/thumbs:self", "a/qk:self:0:0", "b/attn:self:0:0"} <= set(chunks)
    assert not any(k.startswith("diff/qk:") for k in chunks)
    spec = chunks["diff/top:self:0"]
    assert [a["dtype"] for a in spec["arrays"]] == ["i8", "f32"]
    weight = np.frombuffer(
        unpack_bytes(spec["data"]), "<i1", int(np.prod(spec["arrays"][0]["shape"]))
    )
    assert weight.min() < 0 < weight.max()

    pair.compare_side, pair.layer = "b", 4
    page = pair.save_html(tmp_path / "widget.html").read_text()
    state = embedded(page, "attnscope-state")
    assert (state["compare_side"], state["layer"]) == ("b", 4)
    assert list(embedded(page, "attnscope-chunks"))[:3] == [
        "diff/thumbs:self",
        "a/thumbs:self",
        "b/thumbs:self",
    ]
