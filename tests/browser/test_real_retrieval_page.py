"""A retrieval head of a trained model on a real needle-in-a-haystack run, drawn in the
exported page (the README's picture; ``--screenshots=docs/images`` writes it).

SmolLM2-135M-Instruct is asked, in its chat format, for a number hidden at the end of a
haystack of filler sentences (depth 1.0, so that the needle and the answer fit in the head
view's ~30 rows); it answers by repeating the needle sentence. Scored as Wu
et al. 2024 do (:func:`attnscope.retrieval_scores`: a step copies when the head's
strongest key lies in the needle and holds the token generated), the best head copies
several needle tokens, and the picture shows it at one such step: the generated token's
query with its line to the needle token it copies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from page_kit import ExportedPage

import attnscope
from attnscope.analysis.needle import build_prompt, needle_tokens
from real_models import smollm2

pytestmark = [pytest.mark.browser, pytest.mark.real]

HAYSTACK = (
    "The grass is green and the sky is blue. Rivers run to the sea. "
    "Bread is baked in the morning, and the market opens at nine. "
)
NEEDLE = "The secret number is 7431."
QUESTION = "What is the secret number?"
CHAT = "<|im_start|>user\n{context}\n\n{question}<|im_end|>\n<|im_start|>assistant\n"
"""SmolLM2-Instruct's chat format: without it the model ends its turn at once."""
NEW_TOKENS = 10


@pytest.fixture(scope="module")
def run() -> tuple[Any, tuple[int, int]]:
    model, tokenizer = smollm2()
    prompt = build_prompt(
        tokenizer,
        haystack=HAYSTACK,
        needle=NEEDLE,
        question=QUESTION,
        length=96,
        depth=1.0,  # the head view shows ~30 rows: the needle ends the haystack
        template=CHAT,
    )
    trace = attnscope.capture(model, prompt.text, tokenizer=tokenizer, max_new_tokens=NEW_TOKENS)
    return trace, needle_tokens(tokenizer, prompt, trace.prompt_length)


def test_retrieval_head_screenshot(
    page: Any, run: tuple[Any, tuple[int, int]], tmp_path: Path, screenshots: Any
) -> None:
    trace, (first, stop) = run
    start = trace.prompt_length
    generated = "".join(trace.tokens[start:])
    assert "7431" in generated.replace("␣", " ").replace(" ", ""), generated
    scores = attnscope.retrieval_scores(trace, needle=(first, stop))
    best = scores.sort_values("retrieval", ascending=False).iloc[0]
    layer, head = int(best["layer"]), int(best["head"])
    assert best["retrieval"] >= 0.3, scores.nlargest(5, "retrieval")
    # A copy step: the row that produced a generated token looks hardest at that token
    # inside the needle.
    position = trace.stream.layer_position(layer)
    copies = []
    for query in range(start - 1, len(trace.tokens) - 1):
        row = trace.attention[position, head, query, : query + 1]
        key = int(np.argmax(row))
        if first <= key < stop and trace.tokens[key] == trace.tokens[query + 1]:
            copies.append((query, key, float(row[key])))
    assert len(copies) >= 3, copies
    # A digit of the number if one is copied (else the first copy): its needle token and
    # the query share the view.
    digits = [c for c in copies if trace.tokens[c[1]].strip().isdigit()]
    query, _, _ = (digits or copies)[0]
    widget = attnscope.AttentionWidget(trace, layer=position, heads=[head], query=query)
    out = attnscope.save_html(widget, tmp_path / "retrieval", views=["head", "model"])
    page.set_viewport_size({"width": 900, "height": 1500})
    exported = ExportedPage(page, out.as_uri()).open()
    assert exported.view("head").locator('[data-head][aria-pressed="true"]').count() == 1
    screenshots.take("real-retrieval-head", exported.picture())
