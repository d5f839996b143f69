"""The comparison's neuron view picks its head as the neuron view does: one option per head."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from browser_kit import wait_for_widget

import attnscope
from attnscope import AttentionTrace, AttentionWidget, MultiHeadAttention

pytestmark = pytest.mark.browser

VIEW = '[data-testid="compare-neuron-view"]'


@pytest.fixture(scope="module")
def compare_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, causal=True)
    x = torch.randn(1, 5, 16)
    y = x.clone()
    y[:, 2] = torch.randn(16)
    a = AttentionTrace.from_module(mha, x, ["the", "nurse", "said", "she", "slept"])
    b = AttentionTrace.from_module(mha, y, ["the", "nurse", "said", "he", "slept"])
    widget = AttentionWidget(attnscope.compare(a, b), view="neuron", compare_side="diff")
    return widget.save_html(tmp_path_factory.mktemp("cmp") / "page", views=("neuron",))


def test_head_picker_lists_every_head_and_moves_the_view(page: Any, compare_page: Path) -> None:
    page.goto(compare_page.as_uri())
    view = wait_for_widget(page, root=VIEW)
    picker = view.locator('select[data-testid="neuron-head"]')
    options = picker.locator("option").all_inner_texts()
    assert options == ["head 0", "head 1", "head 2", "head 3"]
    assert picker.input_value() == "0"
    drawn = int(view.get_attribute("data-draws") or 0)
    picker.select_option("2")
    page.wait_for_function(
        "([sel, n]) => Number(document.querySelector(sel).dataset.draws) > n"
        " && document.querySelector(sel).dataset.ready === 'true'",
        arg=[VIEW, drawn],
    )
    assert "head 2" in view.locator('[data-testid="neuron-info"]').inner_text()
    assert picker.input_value() == "2"
