"""The front door for sources: options read from the builders, one default selection."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest
import torch

from attnscope import (
    AttentionStream,
    AttentionTrace,
    AttentionWidget,
    Tokens,
    capture,
    compare,
    show_head_view,
    show_neuron_view,
)
from attnscope.display.page import page_html
from attnscope.sources.resolve import source_options


def test_every_keyword_of_every_builder_is_an_option() -> None:
    # A builder's new keyword is accepted with no second list to update.
    for kind, builder, first in (
        ("tensors", AttentionTrace.from_tensors, {"attention"}),
        ("cache", AttentionTrace.from_transformer_lens, {"cache"}),
        ("model", capture, {"model", "text", "generate_kwargs"}),
    ):
        names = set(inspect.signature(builder).parameters) - first
        assert set(source_options(kind)) == names, kind


def test_batch_index_reaches_from_tensors() -> None:
    # batch_index was missing from the hand-kept list: show_* refused it.
    attention = tuple(torch.softmax(torch.randn(2, 3, 4, 4), -1) for _ in range(2))
    w = show_head_view(attention, tokens=list("abcd"), batch_index=1, display=False)
    np.testing.assert_allclose(w.trace.attention[1], attention[1][1].numpy(), rtol=1e-6)
    with pytest.raises(IndexError, match="batch_index=2"):
        show_head_view(attention, tokens=list("abcd"), batch_index=2, display=False)


def _weights_then_qk() -> AttentionTrace:
    """A trace whose first stream holds weights only and whose second holds q and k."""
    rng = np.random.default_rng(0)
    weights = np.full((1, 2, 3, 3), 1 / 3, np.float32)
    q = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    k = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    streams = [
        AttentionStream(weights, name="self"),
        AttentionStream(queries=q, keys=k, scaling=np.array([0.5], np.float32), name="encoder"),
    ]
    return AttentionTrace.from_streams(Tokens(["a", "b", "c"]), streams)


def test_neuron_view_opens_on_the_same_stream_however_it_is_made() -> None:
    trace = _weights_then_qk()
    assert list(trace.streams) == ["self", "encoder"]
    direct = AttentionWidget(trace, view="neuron")
    helper = show_neuron_view(trace, display=False)
    assert direct.stream == helper.stream == "encoder"
    # The head view keeps the first stream, and an explicit stream wins.
    assert AttentionWidget(trace).stream == show_head_view(trace, display=False).stream == "self"
    assert AttentionWidget(trace, view="neuron", stream="self").stream == "self"
    # A comparison decides the same way.
    both = compare(trace, trace)
    assert AttentionWidget(both, view="neuron").stream == "encoder"
    assert show_neuron_view(both, display=False).stream == "encoder"


def test_a_widget_offering_only_the_neuron_view_opens_on_q_and_k() -> None:
    assert AttentionWidget(_weights_then_qk(), views=("neuron",)).stream == "encoder"


def test_a_page_offering_only_the_neuron_view_opens_on_q_and_k() -> None:
    page = page_html(_weights_then_qk(), views=("neuron",))
    text = page.split('<script type="application/json" id="attnscope-state">', 1)[1]
    state = json.loads(text.split("</script>", 1)[0])
    assert state["view"] == "neuron"
    assert state["stream"] == "encoder"
