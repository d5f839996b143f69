"""Every ``_meta`` Python writes passes the front end's caps (issue 40, docs/protocol.md "Caps").

The front end refuses to mount a widget whose ``_meta`` is past a cap or out of step with
itself (``js/wire/validate_meta.ts``); a cap a real widget reaches would refuse a real
widget. Here widgets and pages of every shape Python makes (an encoder-decoder's three
streams, a generation, a comparison with tokens left out, ``segments=``, a trace's images,
an exported page that derives, q/k left out by a page's budget) are checked by the real
validator, bundled for node.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import transformers

import attnscope
from attnscope import AttentionTrace, AttentionWidget
from attnscope.trace.images import ImageRegion
from capture_models import TARGET, TEXT, tiny_model, tokenizer_for
from node_bundle import ROOT, node_bundle
from test_export import embedded

ENTRY = """
import { readFileSync } from "node:fs";
import { metaProblem } from "%s";
const metas = JSON.parse(readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(metas.map((m) => metaProblem(m))));
"""


def problems(metas: list[Any], folder: Path) -> list[str | None]:
    """``metaProblem`` of each ``_meta``, as the browser computes it."""
    node, bundle = node_bundle(
        ENTRY % (ROOT / "js" / "wire" / "validate_meta.ts").as_posix(), folder
    )
    done = subprocess.run(
        [node, str(bundle)], input=json.dumps(metas), capture_output=True, text=True, check=True
    )
    found: list[str | None] = json.loads(done.stdout)
    return found


def _generation() -> AttentionTrace:
    tok = tokenizer_for("gpt2", None)
    config = transformers.AutoConfig.for_model(
        "gpt2", n_layer=2, n_head=4, n_embd=32, vocab_size=len(tok)
    )
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    return attnscope.capture(model, TEXT, tokenizer=tok, max_new_tokens=3)


def test_every_meta_python_writes_passes_the_caps(tmp_path: Path) -> None:
    tok = tokenizer_for("t5", None)
    seq2seq = attnscope.capture(tiny_model("t5", len(tok)), TEXT, tokenizer=tok, target=TARGET)
    gpt = tokenizer_for("gpt2", None)
    causal = tiny_model("gpt2", len(gpt))
    a = attnscope.capture(causal, "The cat sat on the mat. It slept.", tokenizer=gpt)
    b = attnscope.capture(causal, "A big dog sat on a red mat.", tokenizer=gpt)
    rng = np.random.default_rng(1)
    pictured = AttentionTrace(list("abcdef"), rng.dirichlet(np.ones(6), (2, 3, 6)).astype("f4"))
    pictured.images = [ImageRegion((1, 2, 3, 4), (2, 2), np.zeros((8, 8, 3), np.uint8))]
    widgets = {
        "encoder-decoder": AttentionWidget(seq2seq),
        "generation": AttentionWidget(_generation()),
        "comparison": AttentionWidget(attnscope.compare(a, b)),
        "segments": AttentionWidget(a, segments="sentences"),
        "images": AttentionWidget(pictured),
    }
    pages = {
        "page of an encoder-decoder": attnscope.save_html(seq2seq, tmp_path / "s.html"),
        "page of a generation": attnscope.save_html(_generation(), tmp_path / "g.html"),
        "page with q/k left out": attnscope.save_html(a, tmp_path / "b.html", max_bytes=20_000),
    }
    metas = {name: w._meta for name, w in widgets.items()}
    for name, path in pages.items():
        metas[name] = embedded(path.read_text("utf-8"), "attnscope-state")["_meta"]
    assert metas["comparison"]["notes"], "the comparison should leave tokens out"
    found = dict(zip(metas, problems(list(metas.values()), tmp_path), strict=True))
    assert found == dict.fromkeys(metas)


def test_a_million_token_meta_passes(tmp_path: Path) -> None:
    """The live widget's 1M-token traces stay allowed (docs/scale.md)."""
    from attnscope.encode.meta import build_meta

    tokens = 2**20
    weights = np.zeros((1, 1, 1, 1), np.float32)
    meta: dict[str, Any] = dict(build_meta(AttentionTrace(["t"], weights)))
    meta["sides"]["source"] = {"labels": ["t"] * tokens}
    meta["streams"]["self"].update(q_len=tokens, k_len=tokens)
    assert problems([meta], tmp_path) == [None]
