"""bertviz's head_view / model_view calls work after changing only the import."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from attnscope import AttentionWidget, head_view, model_view


@pytest.fixture(scope="module")
def minilm_pair(minilm_path: Path) -> dict[str, Any]:
    """bertviz's README recipe on MiniLM: eager attention, a sentence pair."""
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(minilm_path, attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    inputs = tokenizer("The cat sat on the mat", "The cat lay on the rug", return_tensors="pt")
    with torch.no_grad():
        attention = model(**inputs, output_attentions=True).attentions
    tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())
    sentence_b_start = inputs["token_type_ids"][0].tolist().index(1)
    return {"attention": attention, "tokens": tokens, "sentence_b_start": sentence_b_start}


@pytest.fixture(scope="module")
def t5_outputs() -> dict[str, Any]:
    """An encoder-decoder run as bertviz's README shows (tiny T5 built from a config)."""
    from transformers import T5Config, T5Model

    torch.manual_seed(0)
    config = T5Config(
        vocab_size=64, d_model=16, d_kv=4, num_heads=4, num_layers=2, d_ff=32,
        attn_implementation="eager",
    )  # fmt: skip
    model = T5Model(config).eval()
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor([[5, 6, 7, 1]]),
            decoder_input_ids=torch.tensor([[0, 8, 9]]),
            output_attentions=True,
        )
    return {
        "encoder_attention": out.encoder_attentions,
        "decoder_attention": out.decoder_attentions,
        "cross_attention": out.cross_attentions,
        "encoder_tokens": ["▁She", "▁sees", "▁it", "</s>"],
        "decoder_tokens": ["<pad>", "▁Sie", "▁sieht"],
    }


def test_head_view_with_bertviz_arguments(minilm_pair: dict[str, Any]) -> None:
    w = head_view(minilm_pair["attention"], minilm_pair["tokens"], minilm_pair["sentence_b_start"])
    assert isinstance(w, AttentionWidget)
    assert w.view == "head"
    stacked = np.stack([a[0].numpy() for a in minilm_pair["attention"]])
    np.testing.assert_array_equal(w.trace.attention, stacked)
    segments = w.trace.source.segments
    assert segments is not None
    assert segments.index(1) == minilm_pair["sentence_b_start"]
    assert w.trace.source.kinds[0] == "special"
    w.pair_filter = "AB"  # the sentence A -> B filter bertviz offers


def test_head_view_layer_heads_and_include_layers(minilm_pair: dict[str, Any]) -> None:
    attention, tokens = minilm_pair["attention"], minilm_pair["tokens"]
    w = head_view(attention, tokens, layer=4, heads=[3, 7], include_layers=[2, 4, 5])
    assert w.trace.stream.layers == (2, 4, 5)
    assert (w.layer, w.heads) == (1, [3, 7])  # layer 4 is at position 1
    np.testing.assert_array_equal(w.trace.attention[1], attention[4][0].numpy())
    assert head_view(attention, tokens, layer=5).layer == 5
    with pytest.raises(ValueError, match="not in include_layers"):
        head_view(attention, tokens, layer=1, include_layers=[2, 4])
    raw = head_view(attention, tokens, prettify_tokens=False)
    assert raw.trace.tokens == tokens


def test_model_view_with_bertviz_arguments(minilm_pair: dict[str, Any]) -> None:
    attention, tokens = minilm_pair["attention"], minilm_pair["tokens"]
    w = model_view(attention, tokens, minilm_pair["sentence_b_start"], include_layers=[0, 5])
    assert (w.view, w.theme) == ("model", "dark")
    assert w.trace.attention.shape[:2] == (2, 12)
    w = model_view(attention, tokens, display_mode="light", include_heads=[11, 0])
    # As bertviz: the grid holds those heads only (columns 0 and 1 are heads 11 and 0).
    assert w.theme == "light"
    assert w.trace.attention.shape[:2] == (6, 2)
    full = model_view(attention, tokens).trace.attention
    np.testing.assert_array_equal(w.trace.attention[:, 0], full[:, 11])
    np.testing.assert_array_equal(w.trace.attention[:, 1], full[:, 0])
    with pytest.raises(ValueError, match=r"include_heads=\[12\] must name heads 0\.\.11"):
        model_view(attention, tokens, include_heads=[12])


def test_bertviz_readme_recipe_outputs_minus_one_is_explained(minilm_path: Path) -> None:
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(minilm_path, attn_implementation="eager").eval()
    inputs = AutoTokenizer.from_pretrained(minilm_path)("The cat sat", return_tensors="pt")
    outputs = model(**inputs, output_attentions=True)
    assert outputs[-1] == ()  # cross_attentions: what bertviz's README passes on
    with pytest.raises(ValueError, match=r"outputs\.attentions"):
        head_view(outputs[-1], ["[CLS]", "the", "cat", "sat", "[SEP]"])


def test_html_action_return_gives_a_self_contained_page(minilm_pair: dict[str, Any]) -> None:
    html = head_view(minilm_pair["attention"], minilm_pair["tokens"], html_action="return")
    assert html.data.startswith("<!doctype html>")
    assert 'id="attnscope-chunks"' in html.data
    # Only XML namespace names (never fetched) may look like URLs.
    urls = set(re.findall(r"https?://[^\s\"'`]*", html.data))
    assert all(u.startswith("http://www.w3.org/") for u in urls), urls
    page = model_view(minilm_pair["attention"], minilm_pair["tokens"], html_action="return")
    assert '"view":"model"' in page.data


def page_chunk_kinds(page: str) -> set[str]:
    found = re.search(r'<script type="application/json" id="attnscope-chunks">(.*?)</script>', page)
    assert found
    return {key.split(":")[0] for key in json.loads(found.group(1))}


def test_returned_pages_hold_one_view_like_bertviz(minilm_pair: dict[str, Any]) -> None:
    attention, tokens = minilm_pair["attention"], minilm_pair["tokens"]
    head = head_view(attention, tokens, html_action="return").data
    assert '"views":["head"]' in head
    assert page_chunk_kinds(head) == {"top", "pseudo"}  # no thumbs, no attn, no qk
    model = model_view(attention, tokens, html_action="return").data
    assert '"views":["model"]' in model
    assert page_chunk_kinds(model) == {"thumbs", "stats", "attn"}
    # The widget keeps every view and opens on the one named.
    w = model_view(attention, tokens)
    assert (w.views, w.view) == (("head", "model", "neuron"), "model")


def test_encoder_decoder_views(t5_outputs: dict[str, Any]) -> None:
    w = head_view(**t5_outputs)
    assert list(w.trace.streams) == ["encoder", "decoder", "cross"]
    assert w.stream == "encoder"
    cross = w.trace.streams["cross"]
    assert (cross.q_len, cross.k_len) == (3, 4)
    assert (cross.query_side, cross.key_side) == ("target", "source")
    assert w.trace.tokens == [" She", " sees", " it", "</s>"]
    w.stream = "cross"
    m = model_view(**t5_outputs, include_layers=[1])
    assert all(s.layers == (1,) for s in m.trace.streams.values())
    only_cross = head_view(
        cross_attention=t5_outputs["cross_attention"],
        encoder_tokens=t5_outputs["encoder_tokens"],
        decoder_tokens=t5_outputs["decoder_tokens"],
    )
    assert list(only_cross.trace.streams) == ["cross"]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"attn": ()}, TypeError, "bertviz's arguments"),
        ({"html_action": "save"}, ValueError, "html_action"),
        ({"display_mode": "blue"}, ValueError, "display_mode"),
        ({"include_layers": [6]}, ValueError, "include_layers"),
        ({"tokens": None}, ValueError, "tokens="),
    ],
)
def test_model_view_bad_arguments(
    minilm_pair: dict[str, Any], kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    args = {"attention": minilm_pair["attention"], "tokens": minilm_pair["tokens"], **kwargs}
    with pytest.raises(error, match=message):
        model_view(**args)


def test_bad_combinations_are_explained(t5_outputs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not both"):
        head_view(t5_outputs["encoder_attention"], ["a"] * 4, **{
            k: v for k, v in t5_outputs.items() if k == "cross_attention"
        })  # fmt: skip
    with pytest.raises(ValueError, match="no attention given"):
        head_view()
    with pytest.raises(ValueError, match="decoder_tokens"):
        head_view(
            cross_attention=t5_outputs["cross_attention"],
            encoder_tokens=t5_outputs["encoder_tokens"],
        )
    # What an sdpa model returns for output_attentions=True, and what bertviz's
    # `outputs[-1]` picks from a BERT in transformers 5 (its empty cross_attentions).
    with pytest.raises(ValueError, match=r"outputs\.attentions.*attn_implementation='eager'"):
        head_view((), ["a"])
