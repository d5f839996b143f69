"""Pages that derive (docs/protocol.md): the page computes ``top:`` and ``attn:`` from ``qk:``.

A page with the neuron view holds each head's q and k (as float16), so it
leaves out the ``top:`` and ``attn:`` chunks and the page host (js/host.ts,
js/derive.ts) computes them. Here the real page host runs in node on real
pages of every score form the q/k route records (causal and sliding masks,
grouped keys, softcaps, sinks, position biases, cross-attention), and what it
computes is compared with what Python sends for the same chunk.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attnscope
import attnscope.encode.meta as meta_module
from attnscope.display.page import page_html
from attnscope.encode.chunks import encode_chunk, parse_key
from attnscope.encode.plan import derived_streams
from attnscope.encode.selection import VIEWS
from capture_models import SEQ2SEQ, TARGET, TEXT, tiny_model, tokenizer_for
from node_bundle import node_bundle
from test_export import embedded

ROOT = Path(__file__).resolve().parents[1]
DTYPES = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "f32": np.float32}
ENTRY = """
import { readFileSync } from "node:fs";
import { createPageHost } from "%s";
const input = JSON.parse(readFileSync(0, "utf8"));
const host = createPageHost(input.state, input.chunks);
host.on("msg:custom", (msg, buffers) => {
  const out = {};
  for (const c of msg.chunks) {
    if (c.error !== undefined) { out[c.key] = { error: c.error }; continue; }
    out[c.key] = Object.fromEntries(c.arrays.map((a) => {
      const b = buffers[a.buffer];
      const data = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64");
      return [a.name, { dtype: a.dtype, shape: a.shape, data }];
    }));
  }
  process.stdout.write(JSON.stringify(out));
});
host.send({ type: "request", keys: input.keys });
"""

PageHost = Callable[[str, list[str]], dict[str, Any]]


@pytest.fixture(scope="module")
def page_host(tmp_path_factory: pytest.TempPathFactory) -> PageHost:
    """Run the exported page's host (js/host.ts, bundled for node) on a page; answer ``keys``."""
    folder = tmp_path_factory.mktemp("page_host")
    node, bundle = node_bundle(ENTRY % (ROOT / "js" / "host.ts").as_posix(), folder)

    def answer(page: str, keys: list[str]) -> dict[str, Any]:
        state = embedded(page, "attnscope-state")
        chunks = embedded(page, "attnscope-chunks")
        message = json.dumps({"state": state, "chunks": chunks, "keys": keys})
        done = subprocess.run(
            [node, str(bundle)], input=message, capture_output=True, text=True, check=True
        )
        out: dict[str, Any] = {}
        for key, chunk in json.loads(done.stdout).items():
            assert "error" not in chunk, (key, chunk)
            out[key] = {
                name: np.frombuffer(base64.b64decode(a["data"]), DTYPES[a["dtype"]]).reshape(
                    a["shape"]
                )
                for name, a in chunk.items()
            }
        return out

    return answer


@cache
def _tiny_trace(family: str, wordpiece: Any) -> attnscope.AttentionTrace:
    tokenizer = tokenizer_for(family, wordpiece)
    model = tiny_model(family, len(tokenizer))
    extra = {"target": TARGET} if family in SEQ2SEQ else {}
    return attnscope.capture(model, TEXT, tokenizer=tokenizer, **extra)


def dense(arrays: dict[str, np.ndarray], k_len: int) -> np.ndarray:
    """``(H, Q, K)`` weights from a ``top:`` chunk's arrays (or ``(Q, K)`` from ``attn:``)."""
    weight = arrays["weight"].astype(np.float64) / 255 * arrays["rowmax"][..., None]
    if "index" not in arrays:
        return weight
    out = np.zeros((*weight.shape[:-1], k_len))
    np.put_along_axis(out, arrays["index"].astype(np.int64), weight, axis=-1)
    return out


def assert_same_chunks(
    trace: attnscope.AttentionTrace, page_host: PageHost, *, tolerance: float
) -> int:
    """Every top:/attn: chunk the page computes equals Python's within ``tolerance``."""
    page = page_html(trace)
    derived = derived_streams(trace, VIEWS, 5e7)
    assert derived == set(trace.streams)
    keys = [
        key
        for name, s in trace.streams.items()
        for layer in range(s.num_layers)
        for key in [f"top:{name}:{layer}", *(f"attn:{name}:{layer}:{h}" for h in range(2))]
    ]
    assert not set(keys) & set(embedded(page, "attnscope-chunks"))
    computed = page_host(page, keys)
    for key in keys:
        parsed = parse_key(key, trace)
        python = dict(encode_chunk(trace, parsed))
        page_arrays = computed[key]
        assert sorted(page_arrays) == sorted(python), key
        for name in page_arrays:
            assert page_arrays[name].shape == python[name].shape, (key, name)
        k_len = trace.streams[parsed.stream].k_len
        got, want = dense(page_arrays, k_len), dense(python, k_len)
        # Each side rounds to a byte of its row maximum: one step apart at most, plus
        # what float16 q and k move a weight by.
        allowed = python["rowmax"][..., None] / 255 + tolerance
        if "index" in python:
            # A key one side kept and the other did not lies at the cut of the strongest
            # keys: it is no stronger than the weakest key either side kept in that row.
            cut = [
                a["weight"][..., -1:] / 255 * a["rowmax"][..., None] for a in (python, page_arrays)
            ]
            allowed = allowed + np.maximum(*cut)
        assert np.all(np.abs(got - want) <= allowed), (key, np.abs(got - want).max())
        np.testing.assert_allclose(page_arrays["rowmax"], python["rowmax"], rtol=tolerance)
    return len(keys)


@pytest.mark.parametrize(
    "family",
    [
        "bert",  # no mask, word pieces
        "gpt2",  # causal
        "llama",  # grouped keys, RoPE
        "mistral",  # sliding window
        "gemma2",  # softcap
        "gpt_oss",  # sinks
        "t5",  # position bias; encoder, decoder and cross-attention streams
    ],
)
def test_the_page_computes_what_python_sends(
    family: str, page_host: PageHost, minilm: tuple[Any, Any]
) -> None:
    trace = _tiny_trace(family, minilm[1])
    # q and k travel as float16 (2^-11 relative each): a weight moves by ~1e-3 at most
    # (T5's unscaled scores move most), far less than a missing bias, cap or sink would.
    assert assert_same_chunks(trace, page_host, tolerance=2e-3) > 0


def test_a_long_minilm_page_keeps_each_rows_strongest_keys(
    page_host: PageHost, minilm: tuple[Any, Any]
) -> None:
    model, tokenizer = minilm
    text = "The quick brown fox jumps over the lazy dog near the river bank. " * 8
    trace = attnscope.capture(model, text, tokenizer=tokenizer, max_tokens=100)
    assert trace.stream.k_len == 100  # more keys than a top: chunk keeps (64)
    assert assert_same_chunks(trace, page_host, tolerance=2e-3) > 0


def test_a_page_that_derives_offers_the_head_view_blocks_of_rows(
    page_host: PageHost, minilm: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A layer switch then computes the rows the head view draws, not the layer.
    model, tokenizer = minilm
    text = "The quick brown fox jumps over the lazy dog near the river bank. " * 8
    trace = attnscope.capture(model, text, tokenizer=tokenizer, max_tokens=100)
    stream = trace.stream
    per_row = stream.num_heads * stream.k_len * (stream.head_dim or 1)
    monkeypatch.setattr(meta_module, "DERIVE_BLOCK_SCORES", 32 * per_row)
    page = page_html(trace)
    assert embedded(page, "attnscope-state")["_meta"]["streams"]["self"]["top_block"] == 32
    firsts = range(0, stream.q_len, 32)
    got = page_host(page, ["top:self:1", *(f"top:self:1:{first}" for first in firsts)])
    whole = got["top:self:1"]
    for first in firsts:
        block = got[f"top:self:1:{first}"]
        assert sorted(block) == sorted(whole)
        for name, array in block.items():
            np.testing.assert_array_equal(array, whole[name][:, first : first + 32])
    # A page that does not derive embeds whole layers and offers no blocks.
    head_only = page_html(trace, views=("head",))
    assert embedded(head_only, "attnscope-state")["_meta"]["streams"]["self"]["top_block"] is None
