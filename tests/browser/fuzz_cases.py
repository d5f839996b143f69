"""Crafted saved widget states for the fuzz tier (issue 40: saved state is untrusted input).

Each case is one widget's state as a notebook stores it (``_meta``, ``_saved``, ``_bundle``
and the selection traits), made from a real widget's state and then changed in one place:
a ``_meta`` number at or past its cap (``js/wire/validate_meta.ts``, docs/protocol.md
"Caps"), a chunk that does not match its key, a bad encoding or a deflate bomb, hostile
text, a missing or foreign ``_bundle``. ``expect`` is what the widget must end in:
``invalid`` (the state-invalid alert, whose text holds ``says``), ``message`` (a view's
error message holding ``says``), ``drawn`` (a view that drew, no error), or ``either``
(drawn or a message: hostile text).
"""

from __future__ import annotations

import base64
import copy
import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from ipywidgets.widgets.widget import _remove_buffers

from attnscope import AttentionTrace, AttentionWidget, MultiHeadAttention
from attnscope._static import packed_code
from attnscope.display.snapshot import saved_chunks
from attnscope.trace.images import ImageRegion

PWNED = "__attnscopePwned"
HOSTILE_TEXT = [
    f"<img src=x onerror=\"window.{PWNED}='img'\">",
    f"</script><script>window.{PWNED}='end-tag'</script>",
    "{{constructor.constructor('window.__attnscopePwned=1')()}}",
    "abc\u202edef",
    "\ud800lone",
    "A" * 100_000,
    "__proto__",
]
FOREIGN_CODE = (
    "globalThis.foreignRan = (globalThis.foreignRan || 0) + 1;"
    "export function setViewLoader() {} export function autoRender() {}"
    "export default { render() { globalThis.foreignRan += 100; } };"
)

State = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One crafted widget: its state, and what it must end in."""

    name: str
    state: State
    expect: str
    says: str = ""


def widget_state(widget: AttentionWidget) -> State:
    """The widget's state as a notebook stores it, ``_saved`` as its display writes it."""
    widget._saved = saved_chunks(widget)
    state, _, _ = _remove_buffers(widget.get_state())
    return {k: v for k, v in state.items() if not k.startswith(("_model", "_view", "_esm"))}


def base_states() -> dict[str, State]:
    """Real widgets' states: head, model, neuron and image views of small traces."""
    rng = np.random.default_rng(40)
    tokens = ["[CLS]", "the", "cat", "sat", "on", "it"]
    weights = rng.dirichlet(np.ones(6), size=(2, 3, 6)).astype("float32")
    plain = AttentionTrace(tokens, weights)
    mha = MultiHeadAttention(8, 2)
    import torch

    torch.manual_seed(0)
    qk = AttentionTrace.from_module(mha, torch.randn(1, 6, 8), tokens)
    long = AttentionTrace(
        [f"t{i}" for i in range(80)], rng.dirichlet(np.ones(80), size=(1, 2, 80)).astype("float32")
    )
    pictured = AttentionTrace(tokens, weights)
    pictured.images = [ImageRegion((1, 2, 3, 4), (2, 2), rng.integers(0, 255, (8, 8, 3), np.uint8))]
    return {
        "head": widget_state(AttentionWidget(plain, view="head")),
        "model": widget_state(AttentionWidget(plain, view="model")),
        "neuron": widget_state(AttentionWidget(qk, view="neuron")),
        "index": widget_state(AttentionWidget(long, view="head")),
        "image": widget_state(AttentionWidget(pictured, view="image")),
    }


def deflate(data: bytes | Iterator[bytes]) -> str:
    """Deflate-raw and base64, as the page embeds chunks."""
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    parts = [z.compress(data)] if isinstance(data, bytes) else [z.compress(d) for d in data]
    return base64.b64encode(b"".join([*parts, z.flush()])).decode()


def inflate(text: str) -> bytes:
    """The bytes of an embedded chunk."""
    return zlib.decompress(base64.b64decode(text), -15)


def zeros(total: int, step: int = 1 << 20) -> Iterator[bytes]:
    """``total`` zero bytes a MiB at a time (a bomb without holding it)."""
    block = bytes(step)
    for start in range(0, total, step):
        yield block[: min(step, total - start)]


def _meta_cases(b: dict[str, State]) -> Iterator[Case]:
    def meta(base: str, edit: Callable[[dict[str, Any]], None]) -> State:
        state = copy.deepcopy(b[base])
        edit(state["_meta"])
        return state

    def stream(**fields: Any) -> Callable[[dict[str, Any]], None]:
        return lambda m: m["streams"]["self"].update(fields)

    def tokens(n: int, **fields: Any) -> Callable[[dict[str, Any]], None]:
        def edit(m: dict[str, Any]) -> None:
            m["sides"]["source"] = {"labels": ["t"] * n}
            m["streams"]["self"].update(q_len=n, k_len=n, **fields)

        return edit

    def layers(n: int, heads: int = 3) -> Callable[[dict[str, Any]], None]:
        return stream(layers=list(range(n)), num_heads=heads, num_kv_heads=heads)

    # The issue's numbers (2026-11-28 run) and each cap + 1: the alert, at once.
    past = {
        "num_heads 1e9": (
            "head",
            stream(num_heads=10**9),
            "num_heads 1000000000 is past the cap 1024",
        ),
        "num_heads 1025": ("model", stream(num_heads=1025, num_kv_heads=3), "past the cap 1024"),
        "q_len 1e9": ("head", stream(q_len=10**9), "q_len 1000000000 is past the cap 2097152"),
        "q_len + 1": ("head", stream(q_len=7), "q_len 7 does not match the 6 tokens"),
        "tokens 2^21 + 1": ("head", tokens(2**21 + 1, top_k=6), "past the cap 2097152"),
        "layers 200000": ("model", layers(200_000), "layers has 200000 entries, past the cap 1024"),
        "layers 1025": ("model", layers(1025), "layers has 1025 entries, past the cap 1024"),
        "cells 65537": ("model", layers(257, 256), "past the cap 65536 cells"),
        "head_dim 16385": ("neuron", stream(head_dim=16385), "head_dim 16385 is past the cap"),
        "thumb_rows 1e6": ("model", stream(thumb_rows=10**6), "thumb_rows 1000000 is past"),
        "top_k 1e9": ("head", stream(top_k=10**9), "top_k 1000000000 is past k_len 6"),
        "top_k -1": ("head", stream(top_k=-1), "top_k -1 is below 1"),
        "top_k 1.5": ("head", stream(top_k=1.5), "top_k 1.5 is not a whole number"),
        "num_heads text": ("head", stream(num_heads="3"), "num_heads a string"),
        "num_heads NaN-like": ("head", stream(num_heads=None), "num_heads null"),
        "streams 17": (
            "head",
            lambda m: m["streams"].update({f"s{i}": m["streams"]["self"] for i in range(16)}),
            "streams has 17 entries, past the cap 16",
        ),
        "sides null": ("head", lambda m: m.update(sides=None), "sides is null"),
        "labels short": (
            "head",
            lambda m: m["sides"].update(source={"labels": ["a"]}),
            "does not match the 1 tokens",
        ),
        "segments 100000": (
            "head",
            lambda m: m.update(
                segments={
                    "stream": "self",
                    "by": "positions",
                    "edges": list(range(100_001)),
                    "labels": [],
                    "titles": [],
                }
            ),
            "segments.edges has 100001 entries",
        ),
        "segments unordered": (
            "head",
            lambda m: m.update(
                segments={
                    "stream": "self",
                    "by": "positions",
                    "edges": [0, 4, 2, 6],
                    "labels": ["a", "b", "c"],
                    "titles": ["a", "b", "c"],
                }
            ),
            "segments.edges do not rise",
        ),
        "grid 1e6 x 1e6": (
            "image",
            lambda m: m["images"]["images"][0]["grids"][0].update(rows=10**6, cols=10**6),
            "rows 1000000 is past the cap 4096",
        ),
        "grid positions": (
            "image",
            lambda m: m["images"]["images"][0]["grids"][0].update(positions=[1, 2, 3, 99]),
            "positions[3] 99 is past the last key 5",
        ),
        "image 1e6 px": (
            "image",
            lambda m: m["images"]["images"][0].update(height=10**6),
            "height 1000000 is past the cap 4096",
        ),
        "images 65": (
            "image",
            lambda m: m["images"].update(images=m["images"]["images"] * 65),
            "images.images has 65 entries",
        ),
        "image queries": ("image", lambda m: m["images"].update(queries=[10**9]), "queries[0]"),
        "notes 257": ("head", lambda m: m.update(notes=["n"] * 257), "notes has 257 entries"),
        "notes 2^20 + 1 characters": (
            "head",
            lambda m: m.update(notes=["n" * 2**19, "n " * 2**18 + "n"]),
            "notes hold 1048577 characters, past the cap 1048576",
        ),
        "statistics 4097": (
            "model",
            lambda m: m.update(statistics=[m["statistics"][0]] * 4097),
            "statistics has 4097",
        ),
        "generation past": (
            "head",
            lambda m: m.update(
                generation={
                    "stream": "self",
                    "prompt_length": 4,
                    "generated": 10**9,
                    "thumb_rows": 1,
                    "thumb_cols": 6,
                }
            ),
            "generation.generated 1000000000",
        ),
        "meta without sides": ("head", lambda m: (m.clear(), m.update(streams=[1])), "sides is a"),
    }
    for name, (base, edit, says) in past.items():
        yield Case(f"past cap: {name}", meta(base, edit), "invalid", says)
    # The app's own check before the caps: no streams at all.
    yield Case(
        "no streams", meta("head", lambda m: m.update(streams={})), "message", "no attention data"
    )

    # At each cap: valid _meta; the views mount, and a saved chunk that no longer matches is a
    # message (never a hang: the caps bound what the views lay out).
    at = {
        "num_heads 1024": ("head", stream(num_heads=1024, num_kv_heads=1024), "message"),
        "layers 1024": ("head", layers(1024), "drawn"),
        "cells 65536 (model)": ("model", layers(1024, 64), "message"),
        "tokens 2^21": ("head", tokens(2**21, top_k=6, thumb_rows=64, thumb_cols=64), "message"),
        "head_dim 16384": ("neuron", stream(head_dim=16384), "message"),
        "thumbs 256": ("model", tokens(256, thumb_rows=256, thumb_cols=256), "message"),
        "segments 1024": (
            "head",
            lambda m: (
                tokens(1024, top_k=6)(m),
                m.update(
                    segments={
                        "stream": "self",
                        "by": "positions",
                        "edges": list(range(1025)),
                        "labels": ["s"] * 1024,
                        "titles": ["s"] * 1024,
                    }
                ),
            ),
            "message",
        ),
        "image 4096 px": (
            "image",
            lambda m: m["images"]["images"][0].update(height=4096, width=4096),
            "message",
        ),
        "grid 64 x 64": (
            "image",
            lambda m: (
                tokens(4096, top_k=6)(m),
                m.update(segments=None),
                m["images"]["images"][0]["grids"][0].update(
                    rows=64, cols=64, positions=list(range(4096))
                ),
            ),
            "message",
        ),
        "notes 256, 2^20 characters": (
            "head",
            lambda m: m.update(notes=["n" * 2**12] * 255 + ["n" * (2**20 - 255 * 2**12)]),
            "drawn",
        ),
        "streams 16": (
            "head",
            lambda m: m["streams"].update({f"s{i}": m["streams"]["self"] for i in range(15)}),
            "drawn",
        ),
    }
    for name, (base, edit, expect) in at.items():
        yield Case(f"at cap: {name}", meta(base, edit), expect)


def _chunk_cases(b: dict[str, State]) -> Iterator[Case]:
    def chunk(base: str, key: str, edit: Callable[[dict[str, Any]], Any]) -> State:
        state = copy.deepcopy(b[base])
        assert key in state["_saved"], (key, list(state["_saved"]))
        replaced = edit(state["_saved"][key])
        if replaced is not None:
            state["_saved"][key] = None if replaced == "null" else replaced
        return state

    def respec(
        spec: Callable[[dict[str, Any]], None], data: bytes | None = None
    ) -> Callable[[dict[str, Any]], None]:
        def edit(c: dict[str, Any]) -> None:
            for a in c["arrays"]:
                spec(a)
            if data is not None:
                c["data"] = deflate(data)

        return edit

    def rename(a: dict[str, Any]) -> None:
        a["name"] = a["name"] + "s"

    def shrink(a: dict[str, Any]) -> None:
        a["shape"] = [max(0, a["shape"][0] - 1), *a["shape"][1:]]

    def flatten(a: dict[str, Any]) -> None:
        a["shape"] = [int(np.prod(a["shape"]))]

    def set_field(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
        return lambda a: a.update({field: value})

    def first(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
        return lambda c: c["arrays"][0].update({field: value})

    top, thumbs, qk, pixels = "top:self:0", "thumbs:self", "qk:self:0:0", "pixels:self"
    mismatch = "does not match the widget's _meta"
    cases: dict[str, tuple[str, str, Callable[[dict[str, Any]], Any], str]] = {
        "arrays renamed": ("head", top, respec(rename), 'has no array "weight"'),
        "arrays renamed (model)": ("model", thumbs, respec(rename), 'has no array "thumbs"'),
        "arrays renamed (neuron)": ("neuron", qk, respec(rename), 'has no array "q"'),
        "not an object: 5": ("head", top, lambda c: 5, "it is not an object"),
        "not an object: null": ("head", top, lambda c: "null", "it is not an object"),
        "not an object: list": ("head", top, lambda c: [1, 2], "it is not an object"),
        "not an object: text": ("head", top, lambda c: "x", "it is not an object"),
        "arrays not a list": ("head", top, lambda c: c.update(arrays={"weight": 1}), "not a list"),
        "array spec null": ("head", top, lambda c: c.update(arrays=[None]), "has no name"),
        "shape smaller": ("head", top, respec(shrink), mismatch),
        "shape smaller (model)": ("model", thumbs, respec(shrink), mismatch),
        "shape smaller (neuron)": ("neuron", qk, respec(shrink), mismatch),
        "shape flattened": ("head", top, respec(flatten), mismatch),
        "shape flattened (model)": ("model", thumbs, respec(flatten), mismatch),
        "shape negative": ("head", top, first("shape", [-1, 6, 6]), "not a list of whole numbers"),
        "shape 1e12": ("head", top, first("shape", [10**12, 6, 6]), "would take more than"),
        "shape text": ("head", top, first("shape", "3,6,6"), "not a list of whole numbers"),
        "dtype f32": ("head", top, first("dtype", "f32"), mismatch),
        "dtype unknown": ("head", top, first("dtype", "f128"), "unknown dtype f128"),
        "dtype null (pixels)": ("image", pixels, first("dtype", None), "unknown dtype null"),
        "encoding unknown": ("head", top, first("encoding", "zstd"), "unknown encoding zstd"),
        "encoding f16 on u8": ("neuron", qk, respec(set_field("encoding", "f16")), "encoding f16"),
        "data not base64": ("head", top, lambda c: c.update(data="!!not base64!!"), "decode"),
        "data not deflate": (
            "head",
            top,
            lambda c: c.update(data=base64.b64encode(b"\xff" * 64).decode()),
            "could not decode",
        ),
        "data truncated": (
            "head",
            top,
            lambda c: c.update(data=c["data"][: len(c["data"]) // 2]),
            "could not decode",
        ),
        "data empty": ("head", top, lambda c: c.update(data=""), "holds 0 bytes"),
        "data number": ("head", top, lambda c: c.update(data=5), "holds 0 bytes"),
        "data short": ("head", top, lambda c: c.update(data=deflate(bytes(10))), "holds 10 bytes"),
        "bomb 64 MiB": (
            "head",
            top,
            lambda c: c.update(data=deflate(zeros(64 << 20))),
            "inflates past",
        ),
        "bomb 64 MiB (pixels)": (
            "image",
            pixels,
            lambda c: c.update(data=deflate(zeros(64 << 20))),
            "inflates past",
        ),
        "arrays named with bidi controls": (
            "head",
            top,
            respec(lambda a: a.update(name="\u202e" + a["name"])),
            "has no array",
        ),
        "dtype with bidi controls": ("head", top, first("dtype", "u8\u202e"), "unknown dtype"),
        "error text": ("head", top, lambda c: {"error": "\u202ecrafted error"}, "crafted error"),
        "index past keys": ("index", "top:self:0", _index_past_keys, "past the stream's 80 keys"),
    }
    for name, (base, key, edit, says) in cases.items():
        yield Case(f"chunk: {name}", chunk(base, key, edit), "message", says)
    bidi = copy.deepcopy(b["head"])
    bidi["_meta"]["streams"]["\u202eevil"] = bidi["_meta"]["streams"]["self"] | {"num_heads": 10**9}
    yield Case("stream named with bidi controls past a cap", bidi, "invalid", "past the cap 1024")
    saved_list = copy.deepcopy(b["head"])
    saved_list["_saved"] = [1, 2]
    yield Case("chunk: _saved a list", saved_list, "either")


def _index_past_keys(c: dict[str, Any]) -> None:
    """The first top key of the first row pointed past the stream's keys."""
    raw = bytearray(inflate(c["data"]))
    specs = c["arrays"]
    assert specs[0]["name"] == "index", specs
    assert specs[0]["dtype"] == "u16", specs
    raw[0:2] = (60000).to_bytes(2, "little")
    c["data"] = deflate(bytes(raw))


def _text_cases(b: dict[str, State]) -> Iterator[Case]:
    for i, text in enumerate(HOSTILE_TEXT):
        for where, base, edit in (
            ("title", "head", lambda m, t: m.update(title=t)),
            ("notes", "head", lambda m, t: m.update(notes=[t, t])),
            (
                "labels",
                "head",
                lambda m, t: m["sides"]["source"].update(labels=[t] * 6, raw=[t] * 6),
            ),
            ("stream label", "head", lambda m, t: m["streams"]["self"].update(label=t)),
            ("neuron_unavailable", "neuron", lambda m, t: m.update(neuron_unavailable=t)),
            (
                "statistics",
                "model",
                lambda m, t: m["statistics"][0].update(label=t, formula=t, source=t),
            ),
            (
                "grid name",
                "image",
                lambda m, t: m["images"]["images"][0]["grids"][0].update(name=t),
            ),
        ):
            state = copy.deepcopy(b[base])
            edit(state["_meta"], text)
            capped = {
                "title": "title",
                "neuron_unavailable": "neuron_unavailable",
            }
            if len(text) > 20_000 and where in capped:
                says = f"{capped[where]} has 100000 characters"
                yield Case(f"text {i}: {where}", state, "invalid", says)
            else:
                yield Case(f"text {i}: {where}", state, "either")
        state = copy.deepcopy(b["head"])
        state["view"] = text
        state["stream"] = text
        yield Case(f"text {i}: view and stream traits", state, "either")


def _trait_cases(b: dict[str, State]) -> Iterator[Case]:
    """Selection traits out of range or of another type: kept inside the trace, or a message."""
    traits: dict[str, dict[str, Any]] = {
        "layer 1e9": {"layer": 10**9},
        "layer -1": {"layer": -1},
        "layer text": {"layer": "0"},
        "heads 1e9": {"heads": [10**9]},
        "heads a text": {"heads": "012"},
        "heads 2^20 entries": {"heads": list(range(2**20))},
        "head 1e9": {"head": 10**9},
        "query 1e9": {"query": 10**9},
        "query -5": {"query": -5},
        "key text": {"key": "x"},
        "queries 2^20": {"queries": list(range(2**20))},
        "pseudo_heads a text": {"pseudo_heads": "mean"},
        "step 1e9": {"step": 10**9},
        "rank_by unknown": {"rank_by": "__proto__"},
        "theme unknown": {"theme": "<b>"},
    }
    for name, change in traits.items():
        for base in ("head", "model", "neuron"):
            state = copy.deepcopy(b[base])
            state.update(change)
            yield Case(f"trait {name} ({base})", state, "either")


def _bundle_cases(b: dict[str, State]) -> Iterator[Case]:
    good = b["head"]["_bundle"]
    foreign = dict.fromkeys(good, packed_code({"x": FOREIGN_CODE})["x"])
    swapped = {**good, next(iter(good)): packed_code({"x": FOREIGN_CODE})["x"]}
    for name, bundle in (
        ("missing", None),
        ("empty", {}),
        ("foreign", foreign),
        ("one module swapped", swapped),
        ("not text", dict.fromkeys(good, 5)),
    ):
        state = copy.deepcopy(b["head"])
        state["_bundle"] = bundle
        # The page takes each module from a widget whose text checks: this one draws too.
        yield Case(f"_bundle {name}", state, "drawn")


def all_cases() -> list[Case]:
    """Every crafted widget, after one untouched widget of each base."""
    b = base_states()
    cases = [Case(f"base: {name}", copy.deepcopy(s), "drawn") for name, s in b.items()]
    for make in (_meta_cases, _chunk_cases, _text_cases, _trait_cases, _bundle_cases):
        cases.extend(make(b))
    return cases


def compact(value: Any) -> Any:
    """``value`` with each long list of one repeated item, or of 0 .. n - 1, as a short form.

    The host page expands ``{"@repeat": item, "n": n}`` and ``{"@range": n}`` while it parses,
    so a 2^21-token ``_meta`` costs the page its lists, not Playwright 10 MB of transfer.
    """
    if isinstance(value, dict):
        return {k: compact(v) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) > 1000 and value == list(range(len(value))):
            return {"@range": len(value)}
        if len(value) > 64 and all(v == value[0] for v in value):
            return {"@repeat": value[0], "n": len(value)}
        return [compact(v) for v in value]
    return value


def states_json(cases: list[Case]) -> str:
    """The cases' states as the host page reads them: ``{"bundles": [...], "states": [...]}``.

    A ``_bundle`` several cases share is sent once (``{"@bundle": i}``); lone surrogates stay
    escapes (``ensure_ascii``), so the page gets them as crafted.
    """
    bundles: list[Any] = []
    states = []
    for case in cases:
        state = dict(case.state)
        bundle = state.get("_bundle")
        if isinstance(bundle, dict) and bundle:
            if bundle not in bundles:
                bundles.append(bundle)
            state["_bundle"] = {"@bundle": bundles.index(bundle)}
        states.append(compact(state))
    return json.dumps({"bundles": bundles, "states": states}, ensure_ascii=True)
