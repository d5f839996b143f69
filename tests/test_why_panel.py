"""The neuron view's "why" panel, Python side: why: chunks are qk_sources' split (issue 36).

Real MiniLM: a widget without a model answers why: keys with an error that says how to give
it one; with the model (explain, or show_neuron_view on a loaded model) it splits the pair
asked for, and the chunk's sums are the table's; whys: lists the pairs; a saved page embeds
them with a note naming them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attnscope
from attnscope.display.page import page_html
from attnscope.display.why_sources import KEPT_PAIRS, answer_why, why_sources
from attnscope.encode.pack import unpack_bytes

TEXT = "The cat sat on the mat."
_DTYPES = {"u8": np.uint8, "u32": np.uint32, "f32": np.float32}


@pytest.fixture(scope="module")
def minilm_model(minilm_path: Path) -> Any:
    from transformers import AutoModel

    return AutoModel.from_pretrained(minilm_path).eval()


def _chunk(widget: Any, key: str) -> dict[str, Any]:
    rest, replies = answer_why(widget, {"type": "request", "keys": [key]}, 2**20)
    assert rest is None
    ((content, buffers),) = replies
    (chunk,) = content["chunks"]
    if "error" in chunk:
        return {"error": chunk["error"]}
    data = b"".join(buffers)
    out: dict[str, Any] = {}
    offset = 0
    for spec in chunk["arrays"]:
        offset = -(-offset // 8) * 8
        dtype = np.dtype(_DTYPES[spec["dtype"]])
        count = int(np.prod(spec["shape"]))
        out[spec["name"]] = np.frombuffer(data, dtype, count, offset).reshape(spec["shape"])
        offset += count * dtype.itemsize
    return out


def test_without_a_model_the_chunk_says_how_to_give_one(minilm_model: Any) -> None:
    widget = attnscope.AttentionWidget(attnscope.capture(minilm_model, TEXT))
    got = _chunk(widget, "why:self:2:3:4:1")
    assert "widget.explain(model)" in got["error"]
    assert _chunk(widget, "whys:self")["pairs"].shape == (0, 4)


def test_the_chunk_is_the_tables_split(minilm_model: Any) -> None:
    trace = attnscope.capture(minilm_model, TEXT)
    widget = attnscope.AttentionWidget(trace, view="neuron")
    widget.explain(minilm_model)
    got = _chunk(widget, "why:self:2:3:4:1")
    table = attnscope.qk_sources(minilm_model, trace, layer=2, head=3, query=4, key=1)
    names = bytes(got["names"]).decode().split("\n")
    by_query = table.groupby("query_source", sort=False).contribution.sum()
    by_key = table.groupby("key_source", sort=False).contribution.sum()
    assert names == [*by_query.index, *by_key.index]
    np.testing.assert_allclose(got["query"], by_query.to_numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["key"], by_key.to_numpy(), rtol=1e-5, atol=1e-6)
    score = table.attrs["score"]
    np.testing.assert_allclose(got["score"], [score], rtol=1e-5)
    np.testing.assert_allclose(got["query"].sum(), score, rtol=1e-4)
    # The pairs named one by one are the largest, each the table's own number.
    largest = table.contribution.abs().sort_values(ascending=False).head(len(got["pair"]))
    np.testing.assert_allclose(np.abs(got["pair"]), largest.to_numpy(), rtol=1e-5)
    assert _chunk(widget, "whys:self")["pairs"].tolist() == [[2, 3, 4, 1]]
    # A key the mask hides, or a position past the trace: the error qk_sources gives, as a chunk.
    assert "outside" in _chunk(widget, "why:self:2:3:99:1")["error"]


def test_saved_page_embeds_the_pairs_and_names_them(minilm_model: Any) -> None:
    trace = attnscope.capture(minilm_model, TEXT)
    widget = attnscope.AttentionWidget(trace, view="neuron")
    table = widget.explain(minilm_model, layer=1, head=0, query=5, key=2)
    assert table is not None
    assert table.attrs["layer"] == 1
    page = page_html(widget)
    found = re.search(r'id="attnscope-chunks">(.*?)</script>', page, re.S)
    assert found is not None
    chunks = json.loads(found[1])
    assert {"why:self:1:0:5:2", "whys:self"} <= set(chunks)
    pairs = np.frombuffer(unpack_bytes(chunks["whys:self"]["data"]), np.uint32)
    assert pairs.tolist() == [1, 0, 5, 2]
    state = re.search(r'id="attnscope-state">(.*?)</script>', page, re.S)
    assert state is not None
    notes = json.loads(state[1])["_meta"]["notes"]
    said = "holds the 1 pair(s) split in the notebook (query → key): layer 1 head 0: 5 → 2"
    assert any(said in note for note in notes), notes


def test_show_on_a_loaded_model_gives_the_panel_its_model(minilm_model: Any) -> None:
    widget = attnscope.show_neuron_view(minilm_model, TEXT, display=False)
    assert why_sources(widget).live
    kept = why_sources(widget)
    for query in range(KEPT_PAIRS + 2):  # the oldest pairs go
        kept._keep(f"why:self:0:0:{query}:0", [("score", np.zeros(1, np.float32))])
    assert len(kept._pairs()) == KEPT_PAIRS
    assert kept._pairs()[0].tolist() == [0, 0, 2, 0]
