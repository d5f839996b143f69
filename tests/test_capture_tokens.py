"""Token labels from real tokenizers: WordPiece, byte-level BPE, SentencePiece; kinds; segments."""

from __future__ import annotations

from typing import Any

from attnscope.sources.hf.tokenize import encode_text, tokens_from_encoding
from attnscope.trace.labels import offset_labels
from capture_models import bpe_tokenizer, unigram_tokenizer


def test_wordpiece_continuations_and_original_casing(minilm: tuple[Any, Any]) -> None:
    tokens = encode_text(minilm[1], "Tokenization is unaffable").tokens
    assert "##ization" in tokens.raw  # the raw token keeps its marker for the tooltip
    assert tokens.labels[tokens.raw.index("##ization")] == "ization"
    assert tokens.labels[1] == "Token"  # cut from the text: casing the tokenizer dropped
    assert tokens.kinds[0] == tokens.kinds[-1] == "special"
    assert set(tokens.kinds[1:-1]) == {"token"}


def test_wordpiece_unknown_shows_the_text(minilm: tuple[Any, Any]) -> None:
    tokens = encode_text(minilm[1], "hi 😀").tokens
    assert tokens.raw[2] == "[UNK]"
    assert tokens.labels[2] == "😀"


def test_byte_level_bpe() -> None:
    tokens = encode_text(bpe_tokenizer(), "A café in Zürich").tokens
    assert any(r.startswith("Ġ") for r in tokens.raw)
    assert not any("Ġ" in label for label in tokens.labels)
    assert "".join(tokens.labels).startswith("A ca")
    # é is two byte symbols in one token here: shown as the character, not as Ã©
    assert any("é" in label for label in tokens.labels)
    assert not any("Ã" in label for label in tokens.labels)


def test_byte_level_split_character_shows_bytes() -> None:
    labels = offset_labels(["Ã", "©"], ["token", "token"], [(0, 1), (0, 1)], ["é"])
    assert labels == ["é", "<A9>"]


def test_sentencepiece() -> None:
    tokens = encode_text(unigram_tokenizer(), "The cat sat").tokens
    assert tokens.raw[0].startswith("▁")
    assert not any("▁" in label for label in tokens.labels)
    assert tokens.labels[-1] == "</s>"
    assert tokens.kinds[-1] == "special"
    starts = [
        label for raw, label in zip(tokens.raw, tokens.labels, strict=True) if raw.startswith("▁")
    ]
    assert all(label.startswith(" ") or label == "␣" for label in starts)  # word starts


def test_padding_kind(minilm: tuple[Any, Any]) -> None:
    tokenizer = minilm[1]
    encoding = tokenizer(
        "hi there",
        padding="max_length",
        max_length=8,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
    )
    encoding = {k: [v] for k, v in encoding.items()}
    tokens = tokens_from_encoding(tokenizer, _Batch(encoding), ["hi there"])
    assert tokens.kinds == ("special", "token", "token", "special") + ("padding",) * 4
    assert tokens.labels[-1] == "[PAD]"


def test_pair_segments_from_token_types(minilm: tuple[Any, Any]) -> None:
    tokens = encode_text(minilm[1], "The cat", text_pair="It slept").tokens
    assert tokens.labels == ("[CLS]", "The", "cat", "[SEP]", "It", "slept", "[SEP]")
    assert tokens.segments == (0, 0, 0, 0, 1, 1, 1)


def test_pair_segments_from_sequence_ids() -> None:
    # A RoBERTa-style template has no token types: segments come from sequence ids.
    tokens = encode_text(bpe_tokenizer(wrap=True), "The cat", text_pair="A dog").tokens
    assert tokens.raw[0] == "<s>"
    assert tokens.kinds[0] == "special"
    assert tokens.segments is not None
    first_b = tokens.labels.index("A")
    assert set(tokens.segments[:first_b]) == {0}
    assert set(tokens.segments[first_b:]) == {1}
    assert tokens.labels[first_b - 1] == "</s>"


class _Batch(dict[str, Any]):
    """A plain-dict encoding with no sequence ids, as a slow tokenizer would give."""
