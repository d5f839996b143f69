"""A RowMask's key spans come from transformers' mask function in closed form (O(N)).

Each rule transformers builds (causal, sliding windows of several sizes,
chunks, bidirectional windows, padding at either end, offsets) gives exactly
the spans evaluating the function over every (query, key) pair gives (the
old path, called explicitly). Anything else (or_masks, a user's function, a
padding mask with a gap, another build) is not recognised and still gives
the evaluated spans; tiny real Mistral and Gemma 2 give the same trace both
ways.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from transformers.masking_utils import (
    and_masks,
    bidirectional_mask_function,
    causal_mask_function,
    chunked_causal_mask_function,
    or_masks,
    padding_mask_function,
    sdpa_mask,
    sliding_window_bidirectional_mask_function,
    sliding_window_causal_mask_function,
)

from attnscope.sources.hf import recorder, row_mask
from attnscope.sources.hf.mask_spans import closed_form_spans
from test_row_mask import _capture

N = 37


def _padding(length: int, left: int = 0, right: int = 0) -> torch.Tensor:
    keep = torch.ones(1, length, dtype=torch.bool)
    keep[0, :left] = False
    keep[0, length - right :] = False
    return keep


def _left(pad: int) -> torch.Tensor:
    return torch.tensor([pad])


RULES: dict[str, dict[str, Any]] = {
    "causal": {"mask_function": causal_mask_function},
    **{
        f"window {w}": {"mask_function": sliding_window_causal_mask_function(w), "local_size": w}
        for w in (1, 2, 5, 16, N, 1000)
    },
    **{
        f"chunk {c} pad {p}": {"mask_function": chunked_causal_mask_function(c, _left(p))}
        for c in (1, 5, 8, 64)
        for p in (0, 3)
    },
    "bidirectional": {"mask_function": bidirectional_mask_function},
    "window both ways 3": {"mask_function": sliding_window_bidirectional_mask_function(3)},
    "causal, left padding": {
        "mask_function": causal_mask_function,
        "attention_mask": _padding(N, 5),
    },
    "causal, right padding": {
        "mask_function": causal_mask_function,
        "attention_mask": _padding(N, right=6),
    },
    "window 4, left padding": {
        "mask_function": sliding_window_causal_mask_function(4),
        "attention_mask": _padding(N, 9),
    },
    "window 4, right padding": {
        "mask_function": sliding_window_causal_mask_function(4),
        "attention_mask": _padding(N, right=9),
    },
    "chunk 8, left padding 5": {
        "mask_function": chunked_causal_mask_function(8, _left(5)),
        "attention_mask": _padding(N, 5),
    },
    "bidirectional, both ends padded": {
        "mask_function": bidirectional_mask_function,
        "attention_mask": _padding(N, 2, 3),
    },
    "all padding": {"mask_function": causal_mask_function, "attention_mask": _padding(N, N)},
    "padding inside the function": {
        "mask_function": and_masks(
            sliding_window_causal_mask_function(6), padding_mask_function(_padding(N, 4))
        )
    },
    "window 6, offsets": {
        "mask_function": sliding_window_causal_mask_function(6),
        "q_length": 20,
        "q_offset": 13,
        "kv_length": 30,
        "kv_offset": 4,
        "attention_mask": _padding(20, 7),  # shorter than the keys: padded with False
    },
    "chunk 5, offsets": {
        "mask_function": chunked_causal_mask_function(5, _left(2)),
        "q_length": 9,
        "q_offset": 25,
        "kv_length": N,
        "kv_offset": 0,
    },
    "causal, tensor offset": {
        "mask_function": causal_mask_function,
        "q_length": 4,
        "q_offset": torch.tensor(30),
        "kv_length": N,
    },
}


def _mask(arguments: dict[str, Any], build: Callable[..., Any] = sdpa_mask) -> row_mask.RowMask:
    args = {"batch_size": 1, "q_length": N, "kv_length": N, **arguments}
    return row_mask.RowMask(args, build, 1, int(args["q_length"]), int(args["kv_length"]))


@pytest.mark.parametrize("rule", RULES)
def test_each_rule_has_the_spans_the_evaluated_mask_has(
    rule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(row_mask, "SPAN_ROWS_VALUES", 3 * N)  # the cross-check: 3 rows a block
    mask = _mask(RULES[rule])
    evaluated = mask._evaluated_spans()
    assert evaluated is not None
    closed = closed_form_spans(mask.arguments, mask.build, mask.q_len, mask.k_len)
    assert closed is not None, rule
    assert closed.dtype == np.int32
    assert closed.tolist() == evaluated.tolist()
    whole = mask.spans()
    assert whole is not None
    assert whole.tolist() == evaluated.tolist()
    assert mask[..., :20].spans().tolist() == mask[..., :20]._evaluated_spans().tolist()


def _custom(batch: Any, head: Any, q: Any, kv: Any) -> Any:
    return kv == q + 2


UNKNOWN: dict[str, dict[str, Any]] = {
    "or_masks": {"mask_function": or_masks(sliding_window_causal_mask_function(3), _custom)},
    "a user's function": {"mask_function": lambda b, h, q, kv: (kv <= q) & (kv > q - 3)},
    "and_masks with a user's part": {"mask_function": and_masks(causal_mask_function, _custom)},
    "padding with a gap": {
        "mask_function": sliding_window_causal_mask_function(3),
        "attention_mask": _padding(N, 12) | ~_padding(N, 10),  # keys 10 and 11 hidden
    },
}


@pytest.mark.parametrize("case", UNKNOWN)
def test_a_function_not_recognised_is_evaluated(case: str) -> None:
    mask = _mask(UNKNOWN[case])
    assert closed_form_spans(mask.arguments, mask.build, mask.q_len, mask.k_len) is None
    found = mask.spans()
    evaluated = mask._evaluated_spans()
    assert (found is None) == (evaluated is None)
    if found is not None and evaluated is not None:
        assert found.tolist() == evaluated.tolist()
    if case == "or_masks":  # window 3 or two keys ahead: two runs in most rows
        assert found is None


def test_another_build_is_not_read_by_formula() -> None:
    def build(**arguments: Any) -> Any:  # one query later: the formula would be wrong
        return sdpa_mask(**{**arguments, "q_offset": int(arguments.get("q_offset") or 0) + 1})

    mask = _mask({"mask_function": sliding_window_causal_mask_function(4)}, build)
    assert closed_form_spans(mask.arguments, mask.build, mask.q_len, mask.k_len) is None
    spans, evaluated = mask.spans(), mask._evaluated_spans()
    assert spans is not None
    assert evaluated is not None
    assert spans.tolist() == evaluated.tolist()
    assert spans[5].tolist() == [3, 7]  # the shifted window, not the model's [2, 6]


def test_a_formula_the_function_disagrees_with_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    def off_by_one(*args: Any) -> np.ndarray[Any, Any] | None:
        return closed_form_spans(*args) + np.array([0, 1], np.int32)  # type: ignore[operator]

    monkeypatch.setattr(row_mask, "closed_form_spans", off_by_one)
    mask = _mask({"mask_function": sliding_window_causal_mask_function(4)})
    assert mask.spans().tolist() == mask._evaluated_spans().tolist()  # type: ignore[union-attr]


@pytest.mark.parametrize("family", ["mistral", "gemma2"])
def test_a_windowed_model_gives_the_trace_the_evaluated_spans_give(
    family: str, minilm: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(row_mask, "DENSE_MASK_VALUES", 0)  # every mask a RowMask
    monkeypatch.setattr(row_mask, "SPAN_ROWS_VALUES", 200)  # several blocks of rows
    monkeypatch.setattr(recorder, "FAST_BLOCK_VALUES", 256)
    evaluated: list[int] = []
    full_pass = row_mask.RowMask._evaluated_spans

    def counted(self: row_mask.RowMask) -> Any:
        evaluated.append(self.q_len)
        return full_pass(self)

    monkeypatch.setattr(row_mask.RowMask, "_evaluated_spans", counted)
    closed = _capture(family, minilm[1])
    assert not evaluated  # every mask was read by formula
    monkeypatch.setattr(row_mask, "closed_form_spans", lambda *_: None)
    old = _capture(family, minilm[1])
    assert evaluated  # the old path ran
    assert closed.streams.keys() == old.streams.keys()
    for name, stream in old.streams.items():
        other = closed.streams[name]
        spans = np.asarray(stream.key_spans)
        assert spans.shape[-2] > 8  # longer than the window: the window bites
        assert np.asarray(other.key_spans).tolist() == spans.tolist()
        for field in ("queries", "keys", "mask", "weights"):
            a, b = getattr(stream, field, None), getattr(other, field, None)
            assert (a is None) == (b is None), (name, field)
            if a is not None:
                np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=f"{name}.{field}")
    assert closed.check() <= 1e-5
