"""Hostile token strings (tests/hostile_tokens.py) through every Python path.

Traces keep each token exactly (also through a file); the browser gets valid
Unicode (lone surrogates as U+FFFD) that a kernel's UTF-8 messages can carry;
capture with a tokenizer whose vocabulary is the hostile strings labels each
token with its text; the exported page's HTML has exactly the elements of a
page with harmless tokens, so no token opened or closed an element.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from jupyter_client.session import json_packer

import attnscope
from attnscope import AttentionTrace, AttentionWidget
from attnscope.display.page import page_html
from attnscope.encode.meta import build_meta
from attnscope.trace.labels import display_label
from hostile_tokens import HOSTILE, has_lone_surrogate, shown

SEPARATOR = "\U000e0001"  # a tag character: in no hostile token, split on by the tokenizer


def test_the_list_covers_every_kind() -> None:
    assert len(HOSTILE) >= 40
    assert any("<script>" in t for t in HOSTILE)
    assert any("</script>" in t for t in HOSTILE)
    assert "<!--" in HOSTILE
    assert "__proto__" in HOSTILE
    assert any("{{" in t for t in HOSTILE)
    assert any("\u202e" in t for t in HOSTILE)
    assert any("\u200b" in t for t in HOSTILE)
    assert any("\x00" in t for t in HOSTILE)
    assert sum(has_lone_surrogate(t) for t in HOSTILE) >= 3
    assert any(len(t) >= 10_000 for t in HOSTILE)
    assert any("\u200d" in t and len(t) > 4 for t in HOSTILE)  # an emoji ZWJ sequence


def hostile_trace(tokens: list[str] = HOSTILE) -> AttentionTrace:
    n = len(tokens)
    att = np.tril(np.ones((n, n), np.float32))
    att /= att.sum(-1, keepdims=True)
    return AttentionTrace(tokens, np.stack([att, att.T / att.T.sum(-1, keepdims=True)])[None])


def test_attention_trace_keeps_every_token() -> None:
    trace = hostile_trace()
    assert trace.tokens == HOSTILE
    assert trace.raw_tokens == HOSTILE


@pytest.mark.parametrize("prettify", [True, False])
def test_from_tensors_keeps_every_raw_token(prettify: bool) -> None:
    n = len(HOSTILE)
    att = (torch.full((1, 2, n, n), 1 / n),)
    trace = AttentionTrace.from_tensors(att, HOSTILE, prettify_tokens=prettify)
    assert trace.raw_tokens == HOSTILE
    assert len(trace.tokens) == n
    if not prettify:
        assert trace.tokens == HOSTILE


def test_the_file_round_trip_is_exact(tmp_path: Path) -> None:
    trace = hostile_trace()
    loaded = AttentionTrace.load(trace.save(tmp_path / "hostile"))
    assert loaded.tokens == HOSTILE
    assert loaded.raw_tokens == HOSTILE
    assert np.array_equal(loaded.attention, trace.attention)


def test_meta_carries_valid_unicode_and_the_trace_keeps_the_raw_token() -> None:
    trace = hostile_trace()
    meta = build_meta(trace)
    assert meta["sides"]["source"]["labels"] == [shown(t) for t in HOSTILE]
    assert meta["sides"]["source"]["raw"] == [shown(t) for t in HOSTILE]
    json.dumps(meta, ensure_ascii=False).encode("utf-8")  # what a kernel message needs
    assert trace.raw_tokens == HOSTILE  # the trace itself is untouched


def test_widget_state_packs_as_a_kernel_message() -> None:
    widget = AttentionWidget(hostile_trace())
    packed = json_packer(widget.get_state())
    packed.decode("utf-8")  # strict: no lone surrogate leaked out as raw bytes
    assert json.loads(packed)["_meta"]["sides"]["source"]["labels"] == [shown(t) for t in HOSTILE]
    assert widget.trace.tokens == HOSTILE


def capturable() -> list[str]:
    """The hostile strings a tokenizer can hold (no lone surrogates, not empty)."""
    return list(dict.fromkeys(t for t in HOSTILE if t and not has_lone_surrogate(t)))


def hostile_tokenizer(tokens: list[str]) -> Any:
    """A real fast tokenizer whose vocabulary is ``tokens``, split on :data:`SEPARATOR`."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, **{t: i + 1 for i, t in enumerate(tokens)}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Split(SEPARATOR, behavior="removed")
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")


def test_capture_labels_each_hostile_token_with_its_text() -> None:
    from transformers import BertConfig, BertModel

    tokens = capturable()
    assert len(tokens) >= 40
    config = BertConfig(
        vocab_size=len(tokens) + 1,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=128,
    )
    model = BertModel(config).eval()
    trace = attnscope.capture(model, SEPARATOR.join(tokens), tokenizer=hostile_tokenizer(tokens))
    assert trace.raw_tokens == tokens
    # labels are the text, with newlines, tabs and blank tokens made visible
    assert trace.tokens == [display_label(t) for t in tokens]
    assert trace.check() < 1e-5


class Elements(HTMLParser):
    """The start and end tags of a page, in order (text and attributes ignored)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self.tags.append(f"/{tag}")
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)


def elements(page: str) -> Elements:
    parser = Elements()
    parser.feed(page)
    parser.close()
    return parser


def test_exported_page_has_the_elements_of_a_harmless_page() -> None:
    hostile = elements(page_html(hostile_trace()))
    harmless = elements(page_html(hostile_trace([f"t{i}" for i in range(len(HOSTILE))])))
    assert hostile.tags == harmless.tags
    state = json.loads(hostile.scripts[0])
    assert state["_meta"]["sides"]["source"]["labels"] == [shown(t) for t in HOSTILE]
    assert all(s.isascii() for s in hostile.scripts[:2])  # JSON \u-escapes every other char


def test_comparison_widget_state_packs_as_a_kernel_message() -> None:
    trace = hostile_trace()
    other = hostile_trace([*HOSTILE[1:], "end"])
    widget = AttentionWidget(attnscope.compare(trace, other))
    packed = json.loads(json_packer(widget.get_state()).decode("utf-8"))
    assert packed["_meta"]["comparison"]["a"]["raw"] == [shown(t) for t in HOSTILE]
    assert packed["_meta"]["comparison"]["b"]["raw"][-1] == "end"
    assert trace.raw_tokens == HOSTILE  # the traces keep the raw tokens
