"""A page and a widget carry the code of the views they show (issue 35), and no more.

The front end is split by view (``js/build.mjs``, ``js/view_units.ts``): a
page embeds its entry module and the modules of the views it offers, each
deflate-raw compressed; a widget's ``_bundle`` holds the modules of its views.
The budget kept since the first page: the head-view page of a 46-token MiniLM
sentence pair is at most 2 bytes per attention value, its code included.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from attnscope import AttentionTrace, AttentionWidget, capture, compare, save_html
from attnscope._static import code_manifest, code_texts, static_file, view_units

PAIR = (
    "The cat sat on the mat while the dog slept by the door of the old house in the quiet village.",
    "The dog lay on the rug and the cat watched it from the warm window sill all afternoon long.",
)
BYTES_PER_VALUE = 2.0


def page_code(page: str) -> dict[str, str]:
    found = re.search(r'<script type="application/json" id="attnscope-code">(.*?)</script>', page)
    assert found
    packed: dict[str, str] = json.loads(found.group(1))
    return {
        name: zlib.decompress(base64.b64decode(b64), -15).decode() for name, b64 in packed.items()
    }


def test_the_head_page_of_a_46_token_pair_is_within_two_bytes_per_value(
    tmp_path: Path, minilm: tuple[Any, Any]
) -> None:
    model, tokenizer = minilm
    trace = capture(model, PAIR[0], tokenizer=tokenizer, text_pair=PAIR[1])
    assert len(trace.tokens) == 46
    head = save_html(trace, tmp_path / "head.html", views=("head",))
    size = head.stat().st_size  # everything the browser gets: code, style, state and data
    assert size / trace.attention.size <= BYTES_PER_VALUE, (size, trace.attention.size)
    code = page_code(head.read_text(encoding="utf-8"))
    manifest: dict[str, Any] = code_manifest()  # type: ignore[assignment]
    assert "view_head.js" in code
    assert not {"view_model.js", "view_neuron.js", "view_image.js"} & set(code)
    # Every text is the build's own: the page's loader checks the same digests.
    for name, text in code.items():
        assert hashlib.sha256(text.encode()).hexdigest() == manifest["files"][name]["sha256"]
    # A page of every view carries more code than the head view's alone.
    every = save_html(trace, tmp_path / "all.html")
    assert set(code) < set(page_code(every.read_text(encoding="utf-8")))


def _trace() -> AttentionTrace:
    return AttentionTrace(["a", "b", "c"], np.full((2, 2, 3, 3), 1 / 3, np.float32))


def test_a_widget_carries_the_modules_of_its_views_only() -> None:
    head = AttentionWidget(_trace(), views=("head",))
    assert sorted(head._bundle) == sorted(code_texts("widget", ("head",)))
    assert "view_model.js" not in head._bundle
    assert "widget.js" in head._bundle
    every = AttentionWidget(_trace())
    assert {"view_head.js", "view_model.js", "view_neuron.js"} <= set(every._bundle)
    # The widget's module (its _esm) is the loader, a few kB, whatever the views.
    assert len(AttentionWidget._esm) < 16_000
    assert sum(map(len, head._bundle.values())) < sum(map(len, every._bundle.values()))


def test_a_comparison_s_neuron_view_brings_its_side_by_side_code(tmp_path: Path) -> None:
    assert view_units(("neuron",), comparison=True) == ("neuron", "neuron_diff")
    page = save_html(compare(_trace(), _trace()), tmp_path / "ab.html", views=("neuron",))
    code = page_code(page.read_text(encoding="utf-8"))
    assert {"view_neuron.js", "view_neuron_diff.js"} <= set(code)
    assert static_file("page_loader.js").read_text(encoding="utf-8")[:200] in page.read_text(
        encoding="utf-8"
    )
