"""Readable display labels for tokenizer output.

Tokenizers mark word boundaries in their own ways: WordPiece continues a word
with ``##x``, byte-level BPE (GPT-2, RoBERTa, Llama 3) starts a word with
``Ġx`` and spells non-ASCII text as byte symbols, SentencePiece (T5, Llama 2,
ALBERT) starts a word with ``▁x``. The views show the text a reader would
recognise and keep the raw token for the tooltip.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

TokenKind = Literal["token", "special", "padding"]
"""What a token is to the views: an ordinary token, a special one, or padding."""

_SPECIAL = re.compile(r"^(\[[A-Z_]+\]|<\|?[^<>\s]{1,40}\|?>)$")
_PADDING = {"[PAD]", "<pad>", "<|pad|>", "<|endoftext|>PAD"}
_PADDING_RE = re.compile(r"pad", re.IGNORECASE)


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """Inverse of byte-level BPE's printable byte alphabet (GPT-2's scheme)."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


def _looks_byte_level(tokens: Sequence[str]) -> bool:
    return any(t.startswith(("Ġ", "Ċ")) or "Ġ" in t for t in tokens)


def _decode_byte_level(token: str) -> str:
    decoder = _byte_decoder()
    if not all(ch in decoder for ch in token):
        return token
    raw = bytes(decoder[ch] for ch in token)
    text = raw.decode("utf-8", errors="replace")
    if "\ufffd" in text:  # a piece of a multi-byte character: show its bytes
        return " ".join(f"<{b:02X}>" for b in raw if b >= 0x80) or text
    return text


def display_label(token: str, *, byte_level: bool = False) -> str:
    """One token's readable label (see :func:`display_labels`).

    Examples
    --------
    >>> display_label("##ing"), display_label("▁cat"), display_label("Ġcat", byte_level=True)
    ('ing', ' cat', ' cat')
    """
    if is_special(token):
        return token
    if byte_level:
        text = _decode_byte_level(token)
    elif token.startswith("##") and len(token) > 2:
        text = token[2:]
    else:
        text = token.replace("▁", " ")
    return _visible(text)


def _visible(text: str) -> str:
    """Show control whitespace as escapes and a whitespace-only label as ``␣``."""
    text = text.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return text if text.strip() or not text else "␣" * len(text)


def display_labels(tokens: Sequence[str]) -> list[str]:
    r"""Readable labels for a sequence of raw tokens.

    ``##`` continuations lose their marker, ``Ġ``/``▁`` become a leading space,
    byte-level symbols are decoded back to text, newlines and tabs are shown
    as ``\\n``/``\\t``, and special tokens are kept as they are.

    Examples
    --------
    >>> display_labels(["[CLS]", "play", "##ing", "[SEP]"])
    ['[CLS]', 'play', 'ing', '[SEP]']
    >>> display_labels(["The", "Ġcat", "Ċ"])
    ['The', ' cat', '\\n']
    """
    byte_level = _looks_byte_level(tokens)
    return [display_label(t, byte_level=byte_level) for t in tokens]


def is_special(token: str) -> bool:
    """True for tokens like ``[CLS]``, ``<s>``, ``<|endoftext|>``.

    Examples
    --------
    >>> is_special("[SEP]"), is_special("cat")
    (True, False)
    """
    return bool(_SPECIAL.match(token))


def guess_kinds(tokens: Sequence[str]) -> list[TokenKind]:
    """Token kinds from the strings alone, for sources with no tokenizer.

    Examples
    --------
    >>> guess_kinds(["[CLS]", "hi", "[PAD]"])
    ['special', 'token', 'padding']
    """
    kinds: list[TokenKind] = []
    for t in tokens:
        if t in _PADDING or (is_special(t) and _PADDING_RE.search(t)):
            kinds.append("padding")
        elif is_special(t):
            kinds.append("special")
        else:
            kinds.append("token")
    return kinds


def offset_labels(
    raw: Sequence[str],
    kinds: Sequence[TokenKind],
    offsets: Sequence[tuple[int, int]],
    texts: Sequence[str],
    sequence_ids: Sequence[int | None] | None = None,
) -> list[str]:
    """Display labels cut from the original text by each token's character offsets.

    The original text is what a reader recognises: it keeps the casing a
    lower-casing tokenizer dropped and shows characters an ``[UNK]`` stands for.
    A word-start marker (``Ġ``, ``▁``) keeps its leading space, as in
    :func:`display_labels`. Special tokens, tokens with an empty span and the
    later pieces of one character split into bytes fall back to
    :func:`display_labels`.

    Parameters
    ----------
    raw
        The tokenizer's tokens.
    kinds
        ``"token"``, ``"special"`` or ``"padding"`` per token.
    offsets
        ``(start, end)`` character span of each token in its text.
    texts
        The text of each sequence (one, or two for a sentence pair).
    sequence_ids
        Which text each token comes from (None for special tokens); None when
        there is one text.

    Examples
    --------
    >>> offset_labels(["[CLS]", "hello", "[UNK]", "[SEP]"],
    ...               ["special", "token", "token", "special"],
    ...               [(0, 0), (0, 5), (6, 7), (0, 0)], ["Hello 😀"])
    ['[CLS]', 'Hello', '😀', '[SEP]']
    >>> offset_labels(["The", "Ġcat"], ["token", "token"], [(0, 3), (4, 7)], ["The cat"])
    ['The', ' cat']
    """
    fallback = display_labels(raw)
    labels: list[str] = []
    ends: dict[int, int] = {}
    for i, (token, kind, (start, end)) in enumerate(zip(raw, kinds, offsets, strict=True)):
        seq = 0 if sequence_ids is None else sequence_ids[i]
        if start < ends.get(seq or 0, 0) and end > start:
            # a later piece of characters an earlier token already showed: its bytes
            labels.append(display_label(token, byte_level=True))
            continue
        if kind != "token" or seq is None or end <= start or not token.strip("Ġ▁"):
            labels.append(fallback[i])  # a lone word-start marker is a space, not a letter
            continue
        text = texts[seq]
        piece = text[start:end]
        if token[:1] in ("Ġ", "▁") and not piece[:1].isspace() and start and text[start - 1] == " ":
            piece = " " + piece
        ends[seq] = end
        labels.append(_visible(piece))
    return labels


def mend_surrogates(text: str) -> str:
    r"""``text`` as valid Unicode: split surrogate pairs joined, lone surrogates made U+FFFD.

    A Python string may hold lone surrogates (from ``errors="surrogateescape"``
    or a JSON ``"\ud83d"``) that UTF-8 cannot encode; the browser gets the
    mended text while the trace keeps the original.

    Examples
    --------
    >>> mend_surrogates("a\ud800b") == "a\ufffdb"
    True
    >>> mend_surrogates("\ud83d\ude00") == "\U0001f600"
    True
    """
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


_WORD_START = ("Ġ", "▁", "Ċ", " ")


def continues_word(raw: Sequence[str], kinds: Sequence[TokenKind]) -> list[bool]:
    """Which tokens continue the word before them (``un|bel|ie|va|bly``), for the views to mark.

    WordPiece marks a continuation (``##bel``); byte-level BPE and
    SentencePiece mark a word's *start* (``Ġcat``, ``▁cat``), so there a piece
    without the mark that follows an ordinary token continues it. Punctuation
    is never a continuation, and raw strings with no marks at all (plain words)
    have none.

    Examples
    --------
    >>> continues_word(["[CLS]", "un", "##bel", "##ie", ",", "[SEP]"], ["special", "token",
    ...     "token", "token", "token", "special"])
    [False, False, True, True, False, False]
    >>> continues_word(["The", "ĠPe", "mber", "ton", ","], ["token"] * 5)
    [False, False, True, True, False]
    """
    wordpiece = any(t.startswith("##") and len(t) > 2 for t in raw)
    starts_marked = any(t[:1] in ("Ġ", "▁") for t in raw)
    out: list[bool] = []
    for i, (token, kind) in enumerate(zip(raw, kinds, strict=True)):
        is_word = kind == "token" and any(ch.isalnum() for ch in token)
        if not is_word:
            out.append(False)
        elif wordpiece:
            out.append(token.startswith("##") and len(token) > 2)
        else:
            after_word = i > 0 and kinds[i - 1] == "token" and raw[i - 1].strip() != ""
            out.append(starts_marked and after_word and not token.startswith(_WORD_START))
    return out
