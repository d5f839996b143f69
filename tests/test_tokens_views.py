"""Tokens carry what the views read, computed once in trace/: word marks, word ids, mended strings.

Each is compared with what the functions the wire called before gave
(``continues_word``, the word numbering ``analysis.word_ids`` did over it,
``mend_surrogates``) on real tokenizers of the three families, and each is
computed once however many hosts read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from attnscope import AttentionTrace, Tokens, segments, word_ids
from attnscope.encode import meta as meta_module
from attnscope.encode.analysis_chunks import sides_words
from attnscope.encode.segment_chunks import segments_meta
from attnscope.sources.hf.tokenize import encode_text
from attnscope.trace import tokens as tokens_module
from attnscope.trace.labels import TokenKind, continues_word, mend_surrogates
from capture_models import bpe_tokenizer, unigram_tokenizer


def numbered_words(raw: Sequence[str], kinds: Sequence[TokenKind]) -> list[int]:
    """The numbering ``analysis.words.word_ids`` did before Tokens carried it."""
    ids: list[int] = []
    word = -1
    for continues in continues_word(raw, kinds):
        word += 0 if continues and ids else 1
        ids.append(word)
    return ids


def samples(minilm: tuple[Any, Any]) -> dict[str, Tokens]:
    return {
        "wordpiece": encode_text(minilm[1], "Tokenization is unaffable, truly.").tokens,
        "byte-level BPE": encode_text(bpe_tokenizer(wrap=True), "A café in Zürich").tokens,
        "sentencepiece": encode_text(unigram_tokenizer(), "The cat sat on the mat").tokens,
    }


@pytest.mark.parametrize("family", ["wordpiece", "byte-level BPE", "sentencepiece"])
def test_tokens_give_what_the_old_functions_gave(minilm: tuple[Any, Any], family: str) -> None:
    tokens = samples(minilm)[family]
    old_continues = continues_word(tokens.raw, tokens.kinds)
    assert any(old_continues), f"{family}: the sample has no word piece to mark: {tokens.raw}"
    assert list(tokens.continues) == old_continues
    assert list(tokens.word_ids) == numbered_words(tokens.raw, tokens.kinds)
    assert word_ids(tokens) == numbered_words(tokens.raw, tokens.kinds)  # the public name
    assert tokens.mended_labels == tuple(mend_surrogates(s) for s in tokens.labels)
    assert tokens.mended_raw == tuple(mend_surrogates(s) for s in tokens.raw)
    assert tokens.mended_labels is tokens.labels  # nothing to mend: no copy


def test_wordpiece_words_as_a_reader_sees_them(minilm: tuple[Any, Any]) -> None:
    tokens = samples(minilm)["wordpiece"]
    words: dict[int, str] = {}
    for word, label in zip(tokens.word_ids, tokens.labels, strict=True):
        words[word] = words.get(word, "") + label
    assert list(words.values()) == [
        "[CLS]", "Tokenization", "is", "unaffable", ",", "truly", ".", "[SEP]"
    ]  # fmt: skip


def test_lone_surrogates_are_mended_and_the_tokens_keep_them() -> None:
    labels = ["a\ud800", "\ud83d\ude00", "ok"]
    tokens = Tokens(labels, raw=["\udc80x", "Ġ\ud83d\ude00", "ok"])
    assert tokens.mended_labels == ("a\ufffd", "\U0001f600", "ok")
    assert tokens.mended_raw == ("\ufffdx", "Ġ\U0001f600", "ok")
    assert tokens.labels[0] == "a\ud800"
    assert tokens.raw[0] == "\udc80x"
    assert tokens.mended_labels == tuple(mend_surrogates(s) for s in labels)


def test_meta_sides_are_what_they_were(minilm: tuple[Any, Any]) -> None:
    tokens = samples(minilm)["wordpiece"]
    n = len(tokens)
    hostile = Tokens([*tokens.labels[:-1], "\ud800"], tokens.raw, tokens.kinds)
    trace = AttentionTrace(hostile, np.full((1, 1, n, n), 1 / n, np.float32))
    side = meta_module.build_meta(trace)["sides"]["source"]
    assert side == {
        "labels": [mend_surrogates(s) for s in hostile.labels],
        "raw": [mend_surrogates(s) for s in hostile.raw],
        "kinds": list(hostile.kinds),
        "segments": None,
        "continues": continues_word(hostile.raw, hostile.kinds),
        "words": numbered_words(hostile.raw, hostile.kinds),
    }
    assert side["labels"][-1] == "\ufffd"


def test_each_is_computed_once(minilm: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, ...]] = []

    def counted(raw: Sequence[str], kinds: Sequence[TokenKind]) -> list[bool]:
        calls.append(tuple(raw))
        return continues_word(raw, kinds)

    monkeypatch.setattr(tokens_module, "continues_word", counted)
    tokens = Tokens.from_strings(["[CLS]", "un", "##bel", "##ie", ".", "[SEP]", "ok", "."])
    n = len(tokens)
    trace = AttentionTrace(tokens, np.full((1, 1, n, n), 1 / n, np.float32))
    assert tokens.word_ids is tokens.word_ids
    assert tokens.continues is tokens.continues
    assert tokens.mended_labels is tokens.mended_labels
    first, second = meta_module.build_meta(trace), meta_module.build_meta(trace, embedded=True)
    sides_words(trace)
    segments_meta(segments(trace, "sentences"), trace.source, "self", "sentences")
    assert calls == [tokens.raw]  # four readers, one computation
    assert first["sides"] == second["sides"]
    assert first["sides"]["source"] is not None
    assert first["sides"]["source"]["words"] == [0, 1, 1, 1, 2, 3, 4, 5]
