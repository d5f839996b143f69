"""save_html: one offline page holding the bundle, the state and every chunk."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attnscope import AttentionTrace, AttentionWidget, save_html
from attnscope._static import STATIC, MissingBundleError, code_texts, static_file
from attnscope.display.page import DEFAULT_MAX_BYTES, page_html
from attnscope.encode.byte_layout import little_endian_bytes
from attnscope.encode.chunks import all_keys, encode_chunk, parse_key
from attnscope.encode.pack import unpack_bytes
from attnscope.encode.plan import derived_streams
from attnscope.trace.recompute import recompute_attention

DTYPES = {"i8": "<i1", "u8": "<u1", "u16": "<u2", "u32": "<u4", "f32": "<f4"}


def embedded(page: str, element_id: str) -> Any:
    found = re.search(
        f'<script type="application/json" id="{element_id}">(.*?)</script>', page, re.S
    )
    assert found, element_id
    return json.loads(found.group(1))


def split_arrays(chunk: dict[str, Any]) -> dict[str, np.ndarray]:
    """Read an embedded chunk the way js/data.ts does: 8-byte aligned, in order."""
    data = unpack_bytes(chunk["data"])
    arrays, offset = {}, 0
    for spec in chunk["arrays"]:
        offset = -(-offset // 8) * 8
        dtype = np.dtype(DTYPES[spec["dtype"]])
        count = int(np.prod(spec["shape"]))
        if spec.get("encoding") == "f16-shuffled":  # all high bytes, then all low bytes
            pairs = np.frombuffer(data, np.uint8, 2 * count, offset).reshape(2, count)
            half = np.ascontiguousarray(pairs[::-1].T).view("<f2").reshape(spec["shape"])
            arrays[spec["name"]] = half.astype(np.float32)
            offset += 2 * count
            continue
        arrays[spec["name"]] = np.frombuffer(data, dtype, count, offset).reshape(spec["shape"])
        offset += count * dtype.itemsize
    assert offset == len(data)
    return arrays


def external_urls(text: str) -> set[str]:
    """URL-looking strings other than XML namespace names (which are never fetched)."""
    urls = set(re.findall(r"(?:https?:)?//[A-Za-z0-9.-]+\.[a-z]{2,}[^\s\"'`]*", text))
    return {u for u in urls if not u.startswith("http://www.w3.org/")}


@pytest.fixture
def qk_trace() -> AttentionTrace:
    rng = np.random.default_rng(0)
    q = rng.normal(size=(2, 4, 6, 8)).astype(np.float32)
    k = rng.normal(size=(2, 2, 6, 8)).astype(np.float32)
    mask = np.triu(np.ones((6, 6), bool), 1)[None, None]
    att = recompute_attention(q, k, np.full(2, 0.35, np.float32), mask=mask)
    labels = ["[CLS]", "a", "[SEP]", "b", "c", "[SEP]"]
    return AttentionTrace(
        labels, att, queries=q, keys=k, scaling=0.35, mask=mask, segments=[0, 0, 0, 1, 1, 1]
    )


def test_page_is_written_and_self_contained(tmp_path: Path, qk_trace: AttentionTrace) -> None:
    path = save_html(qk_trace, tmp_path / "sub" / "attention")
    assert path == tmp_path / "sub" / "attention.html"
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>")
    assert static_file("widget.css").read_text(encoding="utf-8").strip() in page
    loader = static_file("page_loader.js").read_text(encoding="utf-8")
    assert loader.replace("</script", "<\\/script").strip() in page
    assert sorted(embedded(page, "attnscope-code")) == sorted(
        code_texts("page", ("head", "model", "neuron"))
    )
    assert external_urls(page) == set()
    assert "<link" not in page
    assert "<script src" not in page
    assert '<div id="attnscope-root"' in page
    state = embedded(page, "attnscope-state")
    assert state["view"] == "head"
    assert state["heads"] == [0, 1, 2, 3]
    assert state["_meta"]["embedded"] is True
    assert state["_meta"]["sides"]["source"]["labels"][1] == "a"


def page_keys(trace: AttentionTrace, **kwargs: Any) -> list[str]:
    """The keys a page holds when everything fits: top:/attn: left out where q/k derive them."""
    views = kwargs.get("views", ("head", "model", "neuron"))
    derived = derived_streams(trace, views, DEFAULT_MAX_BYTES)
    return all_keys(trace, **kwargs, derived=derived)


def test_every_chunk_decodes_to_what_encode_produced(qk_trace: AttentionTrace) -> None:
    chunks = embedded(page_html(qk_trace, qk_dtype="float32"), "attnscope-chunks")
    assert sorted(chunks) == sorted(page_keys(qk_trace))
    assert not any(k.startswith(("top:", "attn:")) for k in chunks)  # the page computes them
    attention = qk_trace.stream.attention
    for key, chunk in chunks.items():
        parsed = parse_key(key, qk_trace)
        expected = encode_chunk(qk_trace, parsed)
        if parsed.kind == "qk":  # each row's largest weight, for the page's check
            assert parsed.layer is not None
            assert parsed.head is not None
            rowmax = attention[parsed.layer, parsed.head].max(-1)
            expected = [*expected, ("rowmax", rowmax)]
        assert [a["name"] for a in chunk["arrays"]] == [name for name, _ in expected]
        decoded = split_arrays(chunk)
        for name, array in expected:
            assert decoded[name].tobytes() == little_endian_bytes(array), (key, name)
        assert all("encoding" not in a for a in chunk["arrays"])


def test_q_and_k_travel_as_shuffled_float16_by_default(qk_trace: AttentionTrace) -> None:
    chunks = embedded(page_html(qk_trace), "attnscope-chunks")
    lean = embedded(page_html(qk_trace, views=("neuron",)), "attnscope-chunks")
    full = embedded(page_html(qk_trace, views=("neuron",), qk_dtype="float32"), "attnscope-chunks")
    for key in [k for k in chunks if k.startswith("qk:")]:
        expected = dict(encode_chunk(qk_trace, parse_key(key, qk_trace)))
        specs = {a["name"]: a for a in chunks[key]["arrays"]}
        assert {n for n, a in specs.items() if a.get("encoding")} == {"q", "k"}
        assert specs["q"]["dtype"] == "f32"
        decoded = split_arrays(chunks[key])
        for name in ("q", "k"):
            np.testing.assert_allclose(decoded[name], expected[name], rtol=2**-11, atol=0)
        np.testing.assert_array_equal(decoded["scaling"], expected["scaling"])
        assert len(lean[key]["data"]) < 0.75 * len(full[key]["data"])


def test_values_beyond_float16_stay_float32(qk_trace: AttentionTrace) -> None:
    stream = qk_trace.streams["self"]
    assert stream.queries is not None
    stream.queries[0, 0, 0, 0] = 1e5
    chunk = embedded(page_html(qk_trace), "attnscope-chunks")["qk:self:0:0"]
    assert [a.get("encoding") for a in chunk["arrays"][:2]] == [None, "f16-shuffled"]
    assert split_arrays(chunk)["q"][0, 0] == 1e5


def test_a_bad_qk_dtype_is_explained(tmp_path: Path, qk_trace: AttentionTrace) -> None:
    with pytest.raises(ValueError, match=r"qk_dtype='f16'.*'float16'.*'float32'"):
        save_html(qk_trace, tmp_path / "x.html", qk_dtype="f16")
    assert not (tmp_path / "x.html").exists()


def test_widget_page_keeps_the_selection(tmp_path: Path, qk_trace: AttentionTrace) -> None:
    w = AttentionWidget(qk_trace, view="neuron", layer=1, heads=[2], head=2, query=3, theme="dark")
    page = w.save_html(tmp_path / "w.html").read_text(encoding="utf-8")
    state = embedded(page, "attnscope-state")
    assert {k: state[k] for k in ("view", "layer", "heads", "head", "query", "theme")} == {
        "view": "neuron",
        "layer": 1,
        "heads": [2],
        "head": 2,
        "query": 3,
        "theme": "dark",
    }
    assert "qk:self:1:2" in embedded(page, "attnscope-chunks")


def test_script_end_tags_in_tokens_are_escaped() -> None:
    evil = "</script><script>alert(1)</script>"
    trace = AttentionTrace([evil, "<!--"], np.full((1, 1, 2, 2), 0.5, np.float32))
    page = page_html(trace)
    assert page.lower().count("</script") == 4  # the four script elements' own end tags
    assert "<!--" not in page
    labels = embedded(page, "attnscope-state")["_meta"]["sides"]["source"]["labels"]
    assert labels == [evil, "<!--"]


def test_budget_keeps_thumbnails_and_the_current_layer_first(qk_trace: AttentionTrace) -> None:
    w = AttentionWidget(qk_trace, layer=1)
    full = embedded(page_html(w, views=("head", "model")), "attnscope-chunks")
    keys = all_keys(qk_trace, layer=1)
    # Thumbnails and statistics, then every layer's top keys (current layer first) so the
    # head view can switch layers, its pseudo-heads, then the current layer's neuron data.
    first = ["thumbs:self", "stats:self", "top:self:1", "top:self:0", "pseudo:self:1"]
    assert keys[:6] == [*first, "pseudo:self:0"]
    budget = sum(len(full[k]["data"]) + 200 for k in first)
    page = page_html(w, max_bytes=budget)
    chunks = embedded(page, "attnscope-chunks")
    assert set(chunks) == set(first)
    notes = embedded(page, "attnscope-state")["_meta"]["notes"]
    assert any("left out" in n and "max_bytes" in n for n in notes)


def chunk_kinds(page: str) -> dict[str, set[str]]:
    """Embedded chunk keys by kind (``top``, ``attn``, ...)."""
    kinds: dict[str, set[str]] = {}
    for key in embedded(page, "attnscope-chunks"):
        kinds.setdefault(key.split(":")[0], set()).add(key)
    return kinds


@pytest.mark.parametrize(
    ("views", "kinds"),
    [
        (("head",), {"top", "pseudo"}),
        (("model",), {"thumbs", "stats", "attn"}),
        (("neuron",), {"qk"}),
        (("head", "model"), {"top", "pseudo", "thumbs", "stats", "attn"}),
        (("neuron", "head"), {"qk", "pseudo"}),
        (("head", "model", "neuron"), {"pseudo", "thumbs", "stats", "qk"}),
    ],
)
def test_page_holds_only_the_chunks_its_views_need(
    qk_trace: AttentionTrace, views: tuple[Any, ...], kinds: set[str]
) -> None:
    page = page_html(AttentionWidget(qk_trace, layer=1), views=views)
    found = chunk_kinds(page)
    assert set(found) == kinds
    assert sorted(k for keys in found.values() for k in keys) == sorted(
        page_keys(qk_trace, layer=1, views=views)
    )
    for kind in kinds - {"thumbs", "stats"}:  # every layer, every head
        per_layer = 1 if kind in ("top", "pseudo") else qk_trace.stream.num_heads
        assert len(found[kind]) == qk_trace.stream.num_layers * per_layer
    state = embedded(page, "attnscope-state")
    assert state["_meta"]["views"] == list(views)
    assert state["view"] == ("head" if "head" in views else views[0])


def test_chunk_order_follows_the_views_needs(qk_trace: AttentionTrace) -> None:
    keys = all_keys(qk_trace, layer=1, views=("head", "model"))
    # Model view's hover preview (full-resolution weights) comes after every top chunk.
    assert keys[:6] == [
        "thumbs:self",
        "stats:self",
        "top:self:1",
        "top:self:0",
        "pseudo:self:1",
        "pseudo:self:0",
    ]
    assert all(k.startswith("attn:") for k in keys[6:])
    neuron = all_keys(qk_trace, layer=1, views=("neuron",))
    assert neuron[:2] == ["qk:self:1:0", "qk:self:1:1"]
    assert neuron[4] == "qk:self:0:0"  # the current layer's 4 heads first
    # Every head's q/k (O(N·d)) before any head's N² weights: a budget cuts weights first.
    assert all(k.startswith("qk:") for k in neuron[:8])
    assert neuron[8:] == [f"attn:self:{layer}:{h}" for layer in (1, 0) for h in range(4)]
    plain = AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32))
    assert all_keys(plain, views=("neuron",)) == []  # no q/k: nothing the neuron view can use


def test_page_views_default_to_the_widgets(qk_trace: AttentionTrace) -> None:
    w = AttentionWidget(qk_trace, views=("model", "neuron"))
    assert w.view == "model"
    page = page_html(w)
    assert embedded(page, "attnscope-state")["_meta"]["views"] == ["model", "neuron"]
    assert set(chunk_kinds(page)) == {"thumbs", "stats", "qk"}  # attn: computed from qk:
    # A page without the widget's current view opens on its first view.
    state = embedded(page_html(w, views=("head",)), "attnscope-state")
    assert (state["view"], state["_meta"]["views"]) == ("head", ["head"])
    assert embedded(page_html(qk_trace), "attnscope-state")["_meta"]["views"] == [
        "head",
        "model",
        "neuron",
    ]


@pytest.mark.parametrize(
    ("views", "message"),
    [
        ((), "non-empty"),
        ("head", "is a string"),
        (("head", "graph"), r"unknown view\(s\) \['graph'\]"),
        (("head", "head"), r"\['head'\] more than once"),
    ],
)
def test_bad_views_are_explained(
    tmp_path: Path, qk_trace: AttentionTrace, views: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        save_html(qk_trace, tmp_path / "x.html", views=views)
    assert not (tmp_path / "x.html").exists()


def test_bad_arguments_are_explained(tmp_path: Path, qk_trace: AttentionTrace) -> None:
    with pytest.raises(TypeError, match="AttentionComparison or an AttentionWidget"):
        save_html(np.ones((1, 1, 2, 2)), tmp_path / "x.html")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_bytes"):
        save_html(qk_trace, tmp_path / "x.html", max_bytes=0)
    with pytest.raises(MissingBundleError, match="npm run build"):
        static_file("missing.js")
    assert STATIC.name == "static"


def test_minilm_pair_page(tmp_path: Path, minilm: tuple[Any, Any]) -> None:
    from attnscope import capture

    model, tokenizer = minilm
    text = "The quick brown fox jumps over the lazy dog near the river bank. " * 3
    pair = "A fast fox leapt across a sleeping hound beside the water. " * 3
    trace = capture(model, text, tokenizer=tokenizer, text_pair=pair, max_tokens=64)
    assert len(trace.tokens) == 64
    path = save_html(trace, tmp_path / "minilm.html")
    page = path.read_text(encoding="utf-8")
    chunks = embedded(page, "attnscope-chunks")
    assert sorted(chunks) == sorted(page_keys(trace))
    assert external_urls(page) == set()
    # bertviz's head view page for the same model and length is 13.2 MB. Every view's data,
    # the q and k of each head included, takes a tenth of it: the page computes the lines.
    # The page's code grows with the views it shows, not the data: it is counted apart,
    # against its own budget.
    script = len(static_file("page_loader.js").read_bytes())
    script += sum(len(text) for text in embedded(page, "attnscope-code").values())
    assert script < 160_000
    assert path.stat().st_size - script < 13_200_000 / 10
    # Like for like, a head-view page: over 20x smaller, script included.
    head_only = save_html(trace, tmp_path / "head.html", views=("head",))
    assert head_only.stat().st_size < 13_200_000 / 20
    # A model-view page's full resolution (its hover preview) costs less than one byte per
    # attention value, base64 included.
    model_only = embedded(page_html(trace, views=("model",)), "attnscope-chunks")
    full = sum(len(c["data"]) for k, c in model_only.items() if k.startswith("attn:"))
    assert 0 < full < trace.attention.size


def test_demo_writes_the_minilm_page(tmp_path: Path) -> None:
    from attnscope.__main__ import write_demo_page

    out = io.StringIO()
    path = write_demo_page(out, tmp_path / "demo.html")
    assert path is not None
    assert str(path.resolve()) in out.getvalue()
    state = embedded(path.read_text(encoding="utf-8"), "attnscope-state")
    assert state["_meta"]["sides"]["source"]["segments"] is not None
    assert state["_meta"]["streams"]["self"]["head_dim"] == 32
