"""A shown widget's saved state is never empty: a first chunk too large gives a smaller screen.

``_saved`` holds at most ``SAVED_STATE_BYTES`` of the current view's first
chunks. The neuron view of an 8192-token input needs q and k of one head
(8192 x 32 x 2 halves: more than 1 MB of base64), which used to leave
``_saved == {}``: a docs page then showed "Loading q and k…" and blamed a
kernel that does not exist (issue 40). Now the state holds the model view's
first screen (thumbnails and the overview tile), which every renderer draws.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import attnscope
from attnscope import AttentionTrace, AttentionWidget, MultiHeadAttention, show_neuron_view
from attnscope.display.snapshot import SAVED_STATE_BYTES, saved_chunks
from attnscope.encode.chunks import encode_chunk, parse_key
from attnscope.encode.pack import unpack_bytes
from attnscope.encode.plan import Shown, shown_keys

N = 8192


@pytest.fixture(scope="module")
def long_neuron() -> AttentionWidget:
    torch.manual_seed(0)
    mha = MultiHeadAttention(64, 2)  # head_dim 32
    tokens = [f"t{i}" for i in range(N)]
    return show_neuron_view(mha, torch.randn(1, N, 64), tokens=tokens, display=False)


def test_the_neuron_view_at_8192_tokens_saves_a_smaller_first_screen(
    long_neuron: AttentionWidget,
) -> None:
    widget = long_neuron
    qk = shown_keys(widget.trace, Shown("neuron", widget.stream, widget.layer, widget.head))
    assert qk[0] == "qk:self:0:0"
    assert widget._saved == {}  # nothing before it is displayed
    widget._repr_mimebundle_()
    saved = widget._saved
    assert saved, "a shown view left an empty saved state"
    assert "qk:self:0:0" not in saved  # its q and k alone pass the budget
    assert list(saved) == ["thumbs:self", "tile:self:0:0:0:0:0"]  # the model view's screen
    assert len(json.dumps(saved)) < SAVED_STATE_BYTES
    for key, chunk in saved.items():  # each is the chunk the kernel would send, byte for byte
        [(name, array)] = encode_chunk(widget.trace, parse_key(key, widget.trace))
        assert [a["name"] for a in chunk["arrays"]] == [name]
        assert unpack_bytes(chunk["data"]) == array.tobytes()


def test_a_python_change_keeps_it_non_empty(long_neuron: AttentionWidget) -> None:
    long_neuron._repr_mimebundle_()
    long_neuron.head = 1  # a later cell: the saved state follows what is now shown
    assert list(long_neuron._saved) == ["thumbs:self", "tile:self:0:1:0:0:0"]


def test_a_view_that_fits_saves_its_own_chunks() -> None:
    weights = np.full((2, 4, 3, 3), 1 / 3, np.float32)
    widget = AttentionWidget(AttentionTrace(["a", "b", "c"], weights))
    assert list(saved_chunks(widget)) == ["top:self:0"]
    # With no room for the head view's chunk, the model view's screen, then the tile alone.
    assert list(saved_chunks(widget, max_bytes=230)) == ["thumbs:self"]
    widget.rank_by = "sink"
    assert saved_chunks(widget, max_bytes=230)


def test_a_comparison_falls_back_to_the_model_views_thumbnails() -> None:
    torch.manual_seed(1)
    mha = MultiHeadAttention(8, 2, causal=True)
    x = torch.randn(1, 4, 8)
    a = AttentionTrace.from_module(mha, x, ["the", "cat", "sat", "down"])
    b = AttentionTrace.from_module(mha, x + 0.1, ["the", "cat", "sat", "down"])
    widget = AttentionWidget(attnscope.compare(a, b))
    assert list(saved_chunks(widget)) == ["diff/top:self:0", "a/top:self:0", "b/top:self:0"]
    # No room for the head view's A − B chunk: the model view's thumbnails, A − B first.
    assert list(saved_chunks(widget, max_bytes=270)) == ["diff/thumbs:self"]
