"""A widget's saved state follows what a later cell selects from Python, not what the browser did.

nbclient and papermill store each widget's state at the end of the run; a
notebook that shows a widget and then sets ``w.layer = 3`` must save chunks
that draw layer 3, or a kernel-less renderer (nbconvert, the docs site) shows
"not in this notebook's saved widget state" where the widget should be.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnscope import AttentionTrace, AttentionWidget


@pytest.fixture
def widget() -> AttentionWidget:
    rng = np.random.default_rng(0)
    weights = rng.random((3, 2, 5, 5)).astype(np.float32)
    weights /= weights.sum(-1, keepdims=True)
    return AttentionWidget(AttentionTrace(list("abcde"), weights))


def test_nothing_is_saved_before_the_widget_is_displayed(widget: AttentionWidget) -> None:
    widget.layer = 2
    assert widget._saved == {}


def test_a_python_change_after_display_saves_what_is_now_shown(widget: AttentionWidget) -> None:
    widget._repr_mimebundle_()
    assert "top:self:0" in widget._saved
    widget.layer = 2
    assert "top:self:2" in widget._saved
    widget.view = "model"
    assert any(key.startswith("thumbs:self") for key in widget._saved)


def test_a_browser_change_leaves_the_saved_state_to_the_kernel(widget: AttentionWidget) -> None:
    widget._repr_mimebundle_()
    before = dict(widget._saved)
    widget.set_state({"layer": 1})  # as ipywidgets applies a message from the browser
    assert widget.layer == 1
    assert widget._saved == before
