"""Masks that are not a rule are made a block of query rows at a time (issue 33).

Every family capture records as q/k is captured twice: with masks built whole
(as transformers builds them) and with every mask a
:class:`~attnscope.sources.hf.row_mask.RowMask` (the limit set to 0, as past
16 M entries). Sliding windows (Mistral, Gemma 2, gpt-oss), GPT-Neo's local
layers and plain causal or bidirectional masks must give the same trace.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from attnscope.sources.hf import recorder, row_mask
from capture_models import FAMILIES, SEQ2SEQ, TARGET, TEXT, tiny_model, tokenizer_for

TEXT_FAMILIES = [f for f, (_, kind) in FAMILIES.items() if kind and f not in {"deberta-v2"}]


@pytest.fixture(scope="module")
def wordpiece(minilm: tuple[Any, Any]) -> Any:
    return minilm[1]


def _capture(family: str, wordpiece: Any) -> Any:
    tokenizer = tokenizer_for(family, wordpiece)
    model = tiny_model(family, len(tokenizer))
    extra = {"target": TARGET} if family in SEQ2SEQ else {}
    return attnscope.capture(model, TEXT + " " + TEXT, tokenizer=tokenizer, max_tokens=40, **extra)


@pytest.mark.parametrize("family", TEXT_FAMILIES)
def test_row_masks_give_the_trace_whole_masks_give(
    family: str, wordpiece: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = _capture(family, wordpiece)
    monkeypatch.setattr(row_mask, "DENSE_MASK_VALUES", 0)
    monkeypatch.setattr(row_mask, "SPAN_ROWS_VALUES", 40)  # several blocks of rows
    monkeypatch.setattr(recorder, "FAST_BLOCK_VALUES", 64)  # sdpa a few rows, a few keys a call
    lazy = _capture(family, wordpiece)
    assert lazy.streams.keys() == whole.streams.keys()
    for name, stream in whole.streams.items():
        other = lazy.streams[name]
        for field in ("queries", "keys", "key_spans", "mask", "bias", "reference", "weights"):
            a, b = getattr(stream, field, None), getattr(other, field, None)
            assert (a is None) == (b is None), (name, field)
            if a is not None:
                np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6, err_msg=f"{name}.{field}")
    assert lazy.check() <= 1e-5


def test_a_window_is_spans_not_a_mask(wordpiece: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(row_mask, "DENSE_MASK_VALUES", 0)
    built: list[tuple[int, int]] = []
    evaluate = row_mask.RowMask._range

    def counted(self: row_mask.RowMask, start: int, stop: int) -> torch.Tensor:
        built.append((start, stop))
        return evaluate(self, start, stop)

    monkeypatch.setattr(row_mask.RowMask, "_range", counted)
    trace = _capture("mistral", wordpiece)  # sliding_window 4
    assert built  # the window was a RowMask, evaluated by rows
    stream = trace.streams["self"]
    assert stream.mask is None
    spans = np.asarray(stream.key_spans)[0]
    length = spans.shape[0]
    expected = [[max(0, q - 3), q + 1] for q in range(length)]
    assert spans.tolist() == expected


def test_a_row_mask_is_cut_to_its_first_keys_only() -> None:
    from transformers.masking_utils import sdpa_mask, sliding_window_causal_mask_function

    args = {
        "batch_size": 1,
        "q_length": 6,
        "kv_length": 6,
        "local_size": 2,
        "mask_function": sliding_window_causal_mask_function(2),
    }
    mask = row_mask.RowMask(args, sdpa_mask, 1, 6, 6)
    whole = sdpa_mask(**{**args, "allow_is_causal_skip": False})
    assert torch.equal(mask.dense(), whole)
    assert torch.equal(mask[..., :4].dense(), whole[..., :4])
    assert torch.equal(mask.rows(torch.tensor([0, 1, 4])), whole[:, :, [0, 1, 4]])
    with pytest.raises(TypeError, match=r"first keys"):
        mask[0, 0, 2]
