"""AttentionWidget: validated traits, the request/reply path, no binary initial state."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import traitlets

import attnscope
from attnscope import AttentionStream, AttentionTrace, AttentionWidget, Tokens


class RecordingWidget(AttentionWidget):
    """The real widget, with the messages it sends kept for inspection."""

    def __init__(self, trace: AttentionTrace, **options: Any) -> None:
        self.sent: list[tuple[dict[str, Any], list[bytes]]] = []
        super().__init__(trace, **options)

    def send(self, content: dict[str, Any], buffers: list[bytes] | None = None) -> None:
        self.sent.append((content, list(buffers or [])))


def uniform(layers: int, heads: int, q: int, k: int) -> np.ndarray:
    return np.full((layers, heads, q, k), 1 / k, np.float32)


@pytest.fixture
def pair_trace() -> AttentionTrace:
    return AttentionTrace(
        ["[CLS]", "a", "[SEP]", "b", "[SEP]"],
        uniform(3, 4, 5, 5),
        segments=[0, 0, 0, 1, 1],
    )


@pytest.fixture
def enc_dec_trace() -> AttentionTrace:
    enc = AttentionStream(uniform(2, 4, 5, 5), name="encoder")
    dec = AttentionStream(
        uniform(1, 2, 3, 3), name="decoder", query_side="target", key_side="target"
    )
    cross = AttentionStream(
        uniform(1, 2, 3, 5), name="cross", query_side="target", key_side="source"
    )
    return AttentionTrace.from_streams(
        Tokens(list("abcde"), segments=[0, 0, 1, 1, 1]),
        [enc, dec, cross],
        target=Tokens(list("xyz")),
    )


def test_defaults(pair_trace: AttentionTrace) -> None:
    w = AttentionWidget(pair_trace)
    assert w.trace is pair_trace
    assert (w.view, w.stream, w.layer, w.heads, w.head) == ("head", "self", 0, [0, 1, 2, 3], 0)
    assert (w.query, w.key, w.pair_filter, w.theme) == (None, None, "all", "auto")
    assert w._meta["streams"]["self"]["num_heads"] == 4


def test_options_are_applied_and_normalised(pair_trace: AttentionTrace) -> None:
    w = AttentionWidget(
        pair_trace, view="model", layer=2, heads=[3, 1, 3], query=4, key=0, pair_filter="AB"
    )
    assert (w.view, w.layer, w.heads, w.query, w.key, w.pair_filter) == (
        "model",
        2,
        [1, 3],
        4,
        0,
        "AB",
    )
    w.heads = []
    assert w.heads == [0, 1, 2, 3]
    w.heads = None
    assert w.heads == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("trait", "value"),
    [
        ("view", "graph"),
        ("stream", "cross"),
        ("layer", 3),
        ("layer", -1),
        ("heads", [0, 4]),
        ("heads", [-1]),
        ("head", 4),
        ("query", 5),
        ("query", -1),
        ("key", 5),
        ("pair_filter", "AC"),
        ("theme", "blue"),
    ],
)
def test_invalid_values_raise_and_leave_the_widget_unchanged(
    pair_trace: AttentionTrace, trait: str, value: object
) -> None:
    w = AttentionWidget(pair_trace, layer=1, heads=[2], query=1)
    before = {name: getattr(w, name) for name in ("view", "stream", "layer", "heads", "query")}
    before[trait] = getattr(w, trait)
    with pytest.raises(traitlets.TraitError):
        setattr(w, trait, value)
    assert {name: getattr(w, name) for name in before} == before


def test_invalid_constructor_values_raise(pair_trace: AttentionTrace) -> None:
    with pytest.raises(traitlets.TraitError, match="layer=9"):
        AttentionWidget(pair_trace, layer=9)
    with pytest.raises(traitlets.TraitError, match="choose one of"):
        AttentionWidget(pair_trace, stream="self-attention")
    with pytest.raises(TypeError, match="valid options are"):
        AttentionWidget(pair_trace, layers=[0])
    with pytest.raises(TypeError, match="show_head_view"):
        AttentionWidget(np.ones((1, 1, 2, 2)))  # type: ignore[arg-type]


def test_pair_filter_needs_segments() -> None:
    w = AttentionWidget(AttentionTrace(["a", "b"], uniform(1, 1, 2, 2)))
    with pytest.raises(traitlets.TraitError, match="sentence-pair"):
        w.pair_filter = "AB"
    assert w.pair_filter == "all"


def test_browser_state_is_validated_together(enc_dec_trace: AttentionTrace) -> None:
    w = AttentionWidget(enc_dec_trace)
    # The front end sends several traits at once: layer 1 is only valid in the encoder.
    w.set_state({"stream": "decoder", "layer": 0, "heads": [1]})
    assert (w.stream, w.layer, w.heads) == ("decoder", 0, [1])
    with pytest.raises(traitlets.TraitError):
        w.set_state({"stream": "cross", "layer": 1})
    assert (w.stream, w.layer) == ("decoder", 0)


def test_changing_stream_clamps_the_selection(enc_dec_trace: AttentionTrace) -> None:
    w = AttentionWidget(enc_dec_trace, layer=1, heads=[1, 3], head=3, query=4, key=4)
    w.pair_filter = "AB"
    w.stream = "cross"
    assert (w.layer, w.heads, w.head) == (0, [1], 1)
    assert w.query is None  # rows are now target tokens
    assert w.key == 4  # columns are still the source tokens
    assert w.pair_filter == "AB"
    w.stream = "decoder"
    assert w.key is None
    assert w.pair_filter == "all"  # target tokens have no segments
    w.heads = [1]
    w.stream = "encoder"
    assert w.heads == [1]
    w.stream = "cross"
    w.heads = None
    w.stream = "encoder"
    assert w.heads == [0, 1]


def test_stream_option_picks_that_streams_heads(enc_dec_trace: AttentionTrace) -> None:
    assert AttentionWidget(enc_dec_trace, stream="cross").heads == [0, 1]
    assert AttentionWidget(enc_dec_trace, stream="decoder", query=2).query == 2


def test_no_binary_in_initial_state(pair_trace: AttentionTrace) -> None:
    state = AttentionWidget(pair_trace).get_state()

    def walk(value: object) -> None:
        assert not isinstance(value, bytes | bytearray | memoryview), value
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        if isinstance(value, list | tuple):
            for v in value:
                walk(v)

    walk(state)
    assert state["_meta"]["sides"]["source"]["labels"][1] == "a"


def test_request_through_the_comm_message_path(pair_trace: AttentionTrace) -> None:
    w = RecordingWidget(pair_trace)
    request = {"type": "request", "keys": ["thumbs:self", "top:self:2", "attn:self:9:0"]}
    w._handle_msg({"content": {"data": {"method": "custom", "content": request}}, "buffers": []})
    assert len(w.sent) == 1
    content, buffers = w.sent[0]
    assert content["type"] == "chunks"
    thumbs, top, bad = content["chunks"]
    assert thumbs["key"] == "thumbs:self"
    (spec,) = thumbs["arrays"]
    assert (spec["name"], spec["dtype"], spec["shape"]) == ("thumbs", "u8", [3, 4, 5, 5])
    assert np.frombuffer(buffers[spec["buffer"]], np.uint8).max() == 255
    by_name = {a["name"]: a for a in top["arrays"]}
    # 5 keys, all kept: weights in key order at one byte each, no index needed.
    assert "index" not in by_name
    assert (by_name["weight"]["dtype"], by_name["weight"]["shape"]) == ("u8", [4, 5, 5])
    rowmax = np.frombuffer(buffers[by_name["rowmax"]["buffer"]], "<f4")
    np.testing.assert_allclose(rowmax, 0.2)
    assert bad == {"key": "attn:self:9:0", "error": bad["error"]}
    assert "out of range" in bad["error"]
    assert all(isinstance(b, bytes) for b in buffers)


def test_other_messages_get_no_reply(pair_trace: AttentionTrace) -> None:
    w = RecordingWidget(pair_trace)
    for content in ({"type": "hello"}, "request", {"keys": ["thumbs:self"]}):
        w._handle_custom_msg(content, [])
    assert w.sent == []
    w._handle_custom_msg({"type": "request", "keys": "thumbs:self"}, [])
    assert w.sent[0][0]["chunks"][0]["key"] == "thumbs:self"


def test_replies_are_split_under_the_message_cap(pair_trace: AttentionTrace) -> None:
    w = AttentionWidget(pair_trace)
    keys = [f"attn:self:0:{h}" for h in range(4)]
    replies = w.answer({"type": "request", "keys": keys}, max_bytes=2 * (25 + 5 * 4))
    assert [len(c["chunks"]) for c, _ in replies] == [2, 2]


def test_widgets_are_independent(pair_trace: AttentionTrace) -> None:
    other = AttentionTrace(["x", "y"], uniform(1, 2, 2, 2))
    a, b = RecordingWidget(pair_trace), RecordingWidget(other, view="neuron")
    a.layer = 2
    a.heads = [0]
    assert (b.layer, b.heads, b.view) == (0, [0, 1], "neuron")
    b._handle_custom_msg({"type": "request", "keys": ["thumbs:self"]}, [])
    assert a.sent == []
    assert b.sent[0][0]["chunks"][0]["arrays"][0]["shape"] == [1, 2, 2, 2]
    assert a._meta["streams"]["self"]["q_len"] == 5
    assert b._meta["streams"]["self"]["q_len"] == 2


def test_views_are_offered_in_order_and_checked(pair_trace: AttentionTrace) -> None:
    w = AttentionWidget(pair_trace, views=["neuron", "head"])
    assert (w.views, w.view, w._meta["views"]) == (("neuron", "head"), "neuron", ["neuron", "head"])
    assert AttentionWidget(pair_trace)._meta["views"] == ["head", "model", "neuron"]
    assert AttentionWidget(pair_trace, views=("model", "head"), view="head").view == "head"
    with pytest.raises(traitlets.TraitError, match=r"view='model' is not offered.*\['head'\]"):
        AttentionWidget(pair_trace, views=("head",), view="model")
    w.view = "head"
    with pytest.raises(traitlets.TraitError, match="create the widget with views= including"):
        w.view = "model"  # what a browser asking for a hidden tab would get
    assert w.view == "head"
    for views, message in [
        ((), "non-empty tuple of view names"),
        ("model", r"is a string; pass a tuple of view names, e\.g\. \('model',\)"),
        (("head", "attention"), r"unknown view\(s\) \['attention'\]; use a non-empty subset"),
        (("model", "model"), r"names \['model'\] more than once"),
    ]:
        with pytest.raises(ValueError, match=message):
            AttentionWidget(pair_trace, views=views)


def test_the_text_plain_line_names_the_model_not_its_family(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    widget = AttentionWidget(attnscope.capture(model, "Hi there.", tokenizer=tokenizer))
    data, _ = widget._repr_mimebundle_()
    # The model's name isolated (FSI … PDI) in the sentence.
    name = "\u2068all-MiniLM-L6-v2\u2069"
    assert data["text/plain"].startswith(f"attnscope AttentionWidget: head view, {name},")
