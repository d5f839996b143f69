"""What each host embeds, pinned: chunk keys in order, their arrays, and the plan's _meta.

A page (``page_html``), a notebook snapshot (``snapshot_html``) and a widget's
saved state (``saved_chunks``) hold a budgeted, ordered list of chunks
(``encode/plan.py``). This test records, for a handful of real traces, what each
host holds and compares it with ``tests/fixtures/plan/golden.json``, so moving
the rules cannot change what a host holds. ``ATTNSCOPE_WRITE_GOLDEN=1`` rewrites
the fixture (only after a change that is meant to change what hosts hold).

What is meant to be stable is compared exactly: keys and their order, array names,
dtypes and shapes, ``_meta``'s views, notes and blocks. What follows float
arithmetic is compared within a tolerance, never bit for bit: another CPU (other
SIMD kernels, another BLAS, another thread count) rounds sums differently, which
moves a quantised byte by one here and there and a compressed chunk's size by a
few bytes. So each array is pinned by its mean within its dtype's tolerance
(:data:`MEAN_TOLERANCE`) and each chunk's compressed size within
:data:`SIZE_RTOL` (the budget class it falls in, not its bytes).
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attnscope
import vlm_models
from attnscope import AttentionTrace, AttentionWidget
from attnscope.display.page import page_html
from attnscope.display.snapshot import saved_chunks, snapshot_html
from capture_models import FAMILIES, SMALL
from test_export import embedded, split_arrays
from test_scan_segments import REASONING

GOLDEN = Path(__file__).parent / "fixtures" / "plan" / "golden.json"
# (relative, absolute) tolerance on an array's mean: one byte of rounding on a share
# of quantised values, a float32 sum's rounding on float arrays, a reordered tie on indices.
MEAN_TOLERANCE = {
    "i8": (0.01, 0.05),
    "u8": (0.01, 0.05),
    "u16": (0.02, 0.5),
    "u32": (0.02, 0.5),
    "f32": (1e-4, 1e-6),
}
SIZE_RTOL = 0.02  # a compressed chunk's size: a few bytes of another CPU's rounding
TEXT = "The quick brown fox jumps over the lazy dog near the river bank. "


def described(key: str, chunk: dict[str, Any]) -> dict[str, Any]:
    """A chunk as the golden file holds it: key, compressed size, each array's spec and mean."""
    decoded = split_arrays(chunk)
    arrays = []
    for spec in chunk["arrays"]:
        values = decoded[spec["name"]].astype(np.float64)
        finite = values[np.isfinite(values)]
        arrays.append(
            {
                "name": spec["name"],
                "dtype": spec["dtype"],
                "shape": list(spec["shape"]),
                "nonfinite": int(values.size - finite.size),
                "mean": float(np.abs(finite).mean()) if finite.size else 0.0,
            }
        )
    return {"key": key, "size": len(chunk["data"]), "arrays": arrays}


def held(page: str) -> dict[str, Any]:
    """The chunks a page holds (:func:`described`) and what its _meta plans."""
    chunks = embedded(page, "attnscope-chunks")
    meta = embedded(page, "attnscope-state")["_meta"]
    return {
        "chunks": [described(k, c) for k, c in chunks.items()],
        "views": meta["views"],
        "notes": meta["notes"],
        "streams": {
            name: {"top_block": s["top_block"], "qk_missing": s.get("qk_missing")}
            for name, s in meta["streams"].items()
        },
    }


def framed(frame: str) -> dict[str, Any]:
    """:func:`held` of the page inside a snapshot's iframe."""
    found = re.search(r'srcdoc="([^"]*)">', frame)
    assert found
    return held(html.unescape(found.group(1)))


def saved(widget: AttentionWidget) -> list[dict[str, Any]]:
    return [described(k, c) for k, c in saved_chunks(widget).items()]


def hosts_of_widget(widget: AttentionWidget, views: tuple[str, ...]) -> dict[str, Any]:
    """Per view: the snapshot's page and the saved state of the widget on that view."""
    out: dict[str, Any] = {}
    for view in views:
        widget.view = view
        out[view] = {"snapshot": framed(snapshot_html(widget)), "saved": saved(widget)}
    return out


def synthetic(n: int, seed: int = 0) -> AttentionTrace:
    """A trace of ``n`` tokens with weights and q/k (2 layers x 4 heads)."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((2, 4, n, 16)).astype(np.float32)
    k = rng.standard_normal((2, 4, n, 16)).astype(np.float32)
    return AttentionTrace([f"t{i}" for i in range(n)], None, queries=q, keys=k)


def case_minilm(minilm: tuple[Any, Any]) -> dict[str, Any]:
    model, tokenizer = minilm
    trace = attnscope.capture(model, TEXT * 6, tokenizer=tokenizer, max_tokens=64)
    widget = AttentionWidget(trace, layer=2, head=1)
    return {
        "page": held(page_html(trace)),
        "page_model_only": held(page_html(trace, views=("model",))),
        "page_head_only": held(page_html(trace, views=("head",))),
        "page_tight": held(page_html(trace, max_bytes=400_000)),
        "page_tighter": held(page_html(trace, max_bytes=60_000)),
        "widget_page": held(page_html(widget)),
        "widget": hosts_of_widget(widget, ("head", "model", "neuron")),
    }


def case_llama(minilm: tuple[Any, Any]) -> dict[str, Any]:
    import torch
    import transformers

    tokenizer = minilm[1]  # deterministic (a trained unigram tokenizer is not)
    overrides = {**SMALL, "vocab_size": len(tokenizer), **FAMILIES["llama"][0]}
    config = transformers.AutoConfig.for_model(
        "llama", **{**overrides, "max_position_embeddings": 512}
    )
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    trace = attnscope.capture(model, TEXT * 24, tokenizer=tokenizer, max_tokens=300)
    assert trace.stream.q_len == 300
    assert trace.stream.has_qk
    widget = AttentionWidget(trace, view="neuron")
    return {
        "page": held(page_html(trace)),
        "page_f32": held(page_html(trace, qk_dtype="float32")),
        "page_no_derive": held(page_html(trace, max_bytes=200_000)),
        "page_tight": held(page_html(trace, max_bytes=60_000)),
        "widget": hosts_of_widget(widget, ("neuron", "head")),
    }


def case_comparison(minilm: tuple[Any, Any]) -> dict[str, Any]:
    model, tokenizer = minilm
    a = attnscope.capture(model, "The cat sat on the mat.", tokenizer=tokenizer)
    b = attnscope.capture(model, "The dog sat on the mat.", tokenizer=tokenizer)
    comparison = attnscope.compare(a, b)
    widget = AttentionWidget(comparison)
    return {
        "page": held(page_html(comparison)),
        "page_tight": held(page_html(comparison, max_bytes=100_000)),
        "widget": hosts_of_widget(widget, ("head", "model")),
    }


def case_segments(minilm: tuple[Any, Any]) -> dict[str, Any]:
    model, tokenizer = minilm
    trace = attnscope.capture(model, REASONING * 2, tokenizer=tokenizer)
    widget = AttentionWidget(trace, segments="sentences", layer=2)
    return {
        "page": held(page_html(widget)),
        "page_head": held(page_html(widget, views=("head",))),
        "widget": hosts_of_widget(widget, ("head", "model")),
    }


def case_image(minilm: tuple[Any, Any]) -> dict[str, Any]:
    model, processor = vlm_models.idefics3()
    trace = attnscope.capture(
        model, vlm_models.TEXT["idefics3"], images=vlm_models.image(40, 70), processor=processor
    )
    widget = AttentionWidget(trace)
    return {
        "page": held(page_html(trace)),
        "widget_page": held(page_html(widget)),
        "widget": hosts_of_widget(widget, ("image", "head")),
    }


def case_long(minilm: tuple[Any, Any]) -> dict[str, Any]:
    trace = synthetic(600)
    widget = AttentionWidget(trace, query=300)
    return {
        "page": held(page_html(trace, max_bytes=3_000_000)),
        "page_head": held(page_html(trace, views=("head",), max_bytes=2_000_000)),
        "page_neuron_tight": held(page_html(trace, views=("neuron",), max_bytes=500_000)),
        "widget": hosts_of_widget(widget, ("head", "neuron")),
    }


CASES: dict[str, Callable[[tuple[Any, Any]], dict[str, Any]]] = {
    "minilm_64": case_minilm,
    "llama_300_qk": case_llama,
    "comparison": case_comparison,
    "segments_sentences": case_segments,
    "idefics3_image": case_image,
    "long_600": case_long,
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_host_holds_what_it_held(name: str, minilm: tuple[Any, Any]) -> None:
    got = json.loads(json.dumps(CASES[name](minilm)))
    if os.environ.get("ATTNSCOPE_WRITE_GOLDEN"):
        golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
        golden[name] = got
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(golden_text(golden))
    want = json.loads(GOLDEN.read_text())[name]
    assert_holds_the_same(got, want, name)


def golden_text(golden: dict[str, Any]) -> str:
    """The fixture as JSON, one line per chunk so a diff names the chunks that moved."""
    lines: list[str] = []

    def one_line(value: Any) -> Any:
        if isinstance(value, dict) and {"key", "size", "arrays"} <= value.keys():
            lines.append(json.dumps(value, sort_keys=True))
            return f"@chunk{len(lines) - 1}@"
        if isinstance(value, dict):
            return {k: one_line(v) for k, v in value.items()}
        if isinstance(value, list):
            return [one_line(v) for v in value]
        return value

    text = json.dumps(one_line(golden), indent=1, sort_keys=True)
    text = re.sub(r'"@chunk(\d+)@"', lambda m: lines[int(m.group(1))], text)
    return text + "\n"


def assert_holds_the_same(got: Any, want: Any, where: str) -> None:
    """Exact on structure, keys, names, dtypes and shapes; tolerant on what floats decide."""
    if isinstance(want, dict) and {"key", "size", "arrays"} <= want.keys():
        assert isinstance(got, dict), where
        where = f"{where}/{want['key']}"
        assert got["key"] == want["key"], where
        assert got["size"] == pytest.approx(want["size"], rel=SIZE_RTOL, abs=16), where
        assert len(got["arrays"]) == len(want["arrays"]), where
        for mine, theirs in zip(got["arrays"], want["arrays"], strict=True):
            at = f"{where}/{theirs['name']}"
            for field in ("name", "dtype", "shape", "nonfinite"):
                assert mine[field] == theirs[field], f"{at}: {field}"
            rel, abs_ = MEAN_TOLERANCE[theirs["dtype"]]
            assert mine["mean"] == pytest.approx(theirs["mean"], rel=rel, abs=abs_), at
    elif isinstance(want, dict):
        assert isinstance(got, dict), where
        assert sorted(got) == sorted(want), where
        for k in want:
            assert_holds_the_same(got[k], want[k], f"{where}/{k}")
    elif isinstance(want, list):
        assert isinstance(got, list), where
        assert len(got) == len(want), f"{where}: {len(got)} items, golden {len(want)}"
        for i, (mine, theirs) in enumerate(zip(got, want, strict=True)):
            assert_holds_the_same(mine, theirs, f"{where}[{i}]")
    else:
        assert got == want, where
