"""capture(..., device=): where a trace recomputes attention on demand (issue 33)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from attnscope.errors import AttnscopeError
from attnscope.sources.hf import work_device as placing
from capture_models import TEXT, tiny_model, tokenizer_for


def _llama(minilm: tuple[Any, Any]) -> tuple[Any, Any]:
    tokenizer = tokenizer_for("llama", minilm[1])
    return tiny_model("llama", len(tokenizer)), tokenizer


def test_device_is_where_the_trace_recomputes(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = _llama(minilm)
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer, device="cpu")
    assert trace.device == "cpu"
    assert all(s.device == "cpu" for s in trace.streams.values())
    assert trace.check() <= 1e-5


def test_a_device_torch_cannot_use_is_refused_before_the_model_runs(
    minilm: tuple[Any, Any],
) -> None:
    model, tokenizer = _llama(minilm)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    calls: list[int] = []
    hook = model.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        with pytest.raises(AttnscopeError, match=r"device='tpu:3' cannot hold tensors here"):
            attnscope.capture(model, TEXT, tokenizer=tokenizer, device="tpu:3")
    finally:
        hook.remove()
    assert calls == []
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_a_full_device_moves_the_work_to_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    q = np.zeros((1, 2, 4096, 64), np.float16)
    stream = attnscope.AttentionStream(queries=q, keys=q)
    monkeypatch.setattr(placing, "device_available", lambda _: 1_000_000)
    where, note = placing.work_device(torch.device("cuda:0"), None, [stream])
    assert where == "cpu"
    assert note is not None
    assert "cuda:0 has 0.00 GB free" in note
    monkeypatch.setattr(placing, "device_available", lambda _: 10**12)
    assert placing.work_device(torch.device("cuda:0"), None, [stream]) == ("cuda:0", None)
    assert placing.work_device(torch.device("cuda:0"), "cpu", [stream]) == ("cpu", None)
