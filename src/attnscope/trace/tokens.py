"""Tokens: one token sequence as the views label it.

Display labels, the tokenizer's raw strings, each token's kind (ordinary,
special, padding) and, for sentence pairs, which sentence it belongs to; and,
computed once when first asked for, what the views read besides: which pieces
continue a word, the word of each token, and the strings mended for the browser.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace.labels import (
    TokenKind,
    continues_word,
    display_labels,
    guess_kinds,
    mend_surrogates,
)


def token_strings(tokens: Any, what: str = "tokens") -> tuple[str, ...]:
    """``tokens`` as a tuple of strings, one per position; refuses None, a string, or nothing.

    Examples
    --------
    >>> token_strings(["The", "cat"])
    ('The', 'cat')
    >>> token_strings(None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeTypeError: tokens must be a list of strings, one per position; ...
    """
    if tokens is None or isinstance(tokens, str | bytes) or not isinstance(tokens, Iterable):
        got = "None" if tokens is None else f"{type(tokens).__name__} {_short(tokens)}"
        raise AttnscopeTypeError(
            f"{what} must be a list of strings, one per position; got {got}. Pass e.g. "
            f"{what}=tokenizer.convert_ids_to_tokens(input_ids[0]), or list(text) for "
            "one token per character."
        )
    strings = tuple(str(t) for t in tokens)
    if not strings:
        raise AttnscopeError(
            f"{what} is empty: a trace needs one token per position of the attention. Pass "
            f"the strings the model saw, e.g. {what}=tokenizer.convert_ids_to_tokens("
            "input_ids[0]); an empty text has nothing to attend to."
        )
    return strings


def _mended(strings: tuple[str, ...]) -> tuple[str, ...]:
    mended = tuple(mend_surrogates(s) for s in strings)
    return strings if mended == strings else mended


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(frozen=True)
class Tokens:
    """The tokens of one sequence: display labels, raw tokens and their kinds.

    Parameters
    ----------
    labels
        Readable display strings (``Ġcat`` shown as ``cat``).
    raw
        The tokenizer's own strings, kept for tooltips. Defaults to ``labels``.
    kinds
        ``"token"``, ``"special"`` (``[CLS]``, ``<s>`` ...) or ``"padding"`` per
        token. Defaults to all ``"token"``.
    segments
        For sentence pairs: 0 for tokens of sentence A, 1 for sentence B.

    Notes
    -----
    :attr:`continues`, :attr:`word_ids`, :attr:`mended_labels` and
    :attr:`mended_raw` are computed from the fields the first time they are
    read and kept: the fields never change, so every later read (the head
    view's ``_meta``, the ``words:`` and ``segments:`` chunks) gets the same
    tuple.

    Examples
    --------
    >>> Tokens(["[CLS]", "hi", "[SEP]"], kinds=["special", "token", "special"]).labels
    ('[CLS]', 'hi', '[SEP]')
    """

    labels: tuple[str, ...]
    raw: tuple[str, ...] = ()
    kinds: tuple[TokenKind, ...] = ()
    segments: tuple[int, ...] | None = None

    def __init__(
        self,
        labels: Sequence[str],
        raw: Sequence[str] | None = None,
        kinds: Sequence[TokenKind] | None = None,
        segments: Sequence[int] | None = None,
    ) -> None:
        labels_t = token_strings(labels)
        raw_t = token_strings(raw, "raw_tokens") if raw is not None else labels_t
        kinds_t: tuple[TokenKind, ...] = (
            tuple(kinds) if kinds is not None else tuple("token" for _ in labels_t)
        )
        if len(raw_t) != len(labels_t):
            raise AttnscopeError(
                f"raw tokens has {len(raw_t)} entries but labels has {len(labels_t)}; "
                "pass one raw token per label."
            )
        if len(kinds_t) != len(labels_t):
            raise AttnscopeError(
                f"kinds has {len(kinds_t)} entries but labels has {len(labels_t)}; "
                "pass one kind per token."
            )
        bad = sorted({k for k in kinds_t if k not in ("token", "special", "padding")})
        if bad:
            raise AttnscopeError(
                f"unknown token kind(s) {bad}; use 'token', 'special' or 'padding'."
            )
        seg_t: tuple[int, ...] | None = None
        if segments is not None:
            seg_t = tuple(int(s) for s in segments)
            if len(seg_t) != len(labels_t):
                raise AttnscopeError(
                    f"segments has {len(seg_t)} entries but labels has {len(labels_t)}; "
                    "pass one segment id (0 = sentence A, 1 = sentence B) per token."
                )
            if any(s not in (0, 1) for s in seg_t):
                raise AttnscopeError("segments must be 0 (sentence A) or 1 (sentence B).")
        object.__setattr__(self, "labels", labels_t)
        object.__setattr__(self, "raw", raw_t)
        object.__setattr__(self, "kinds", kinds_t)
        object.__setattr__(self, "segments", seg_t)

    def __len__(self) -> int:
        return len(self.labels)

    @cached_property
    def continues(self) -> tuple[bool, ...]:
        """Which tokens continue the word before them (``un|##bel``, ``ĠPe|mber``).

        See :func:`attnscope.trace.labels.continues_word` for the rules of each
        tokenizer family.

        Examples
        --------
        >>> Tokens.from_strings(["[CLS]", "un", "##bel", ",", "[SEP]"]).continues
        (False, False, True, False, False)
        """
        return tuple(continues_word(self.raw, self.kinds))

    @cached_property
    def word_ids(self) -> tuple[int, ...]:
        """The word each token belongs to, numbered from 0 in order.

        A token that :attr:`continues` a word shares its number; punctuation,
        special and padding tokens are words of their own.

        Examples
        --------
        >>> Tokens.from_strings(["[CLS]", "play", "##ing", "cards", "[SEP]"]).word_ids
        (0, 1, 1, 2, 3)
        >>> Tokens.from_strings(["The", "Ġcat", "s", "Ġsat"]).word_ids
        (0, 1, 1, 2)
        """
        ids: list[int] = []
        word = -1
        for continues in self.continues:
            word += 0 if continues and ids else 1
            ids.append(word)
        return tuple(ids)

    @cached_property
    def mended_labels(self) -> tuple[str, ...]:
        r""":attr:`labels` as valid Unicode, for the browser: lone surrogates made U+FFFD.

        A kernel's UTF-8 messages cannot carry a lone surrogate; the tokens
        keep the original (see :func:`attnscope.trace.labels.mend_surrogates`).

        Examples
        --------
        >>> Tokens(["a", "\udc80"]).mended_labels == ("a", "\ufffd")
        True
        """
        return _mended(self.labels)

    @cached_property
    def mended_raw(self) -> tuple[str, ...]:
        r""":attr:`raw` as valid Unicode, for the browser (see :attr:`mended_labels`).

        Examples
        --------
        >>> Tokens(["?"], raw=["\ud83d\ude00"]).mended_raw == ("\U0001f600",)
        True
        """
        return self.mended_labels if self.raw is self.labels else _mended(self.raw)

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form, used by :meth:`AttentionTrace.save` and the widget."""
        return {
            "labels": list(self.labels),
            "raw": list(self.raw),
            "kinds": list(self.kinds),
            "segments": None if self.segments is None else list(self.segments),
        }

    @classmethod
    def from_strings(
        cls, raw: Sequence[str], *, prettify: bool = True, segments: Sequence[int] | None = None
    ) -> Tokens:
        """Tokens from the tokenizer's strings alone: readable labels, kinds guessed.

        Examples
        --------
        >>> Tokens.from_strings(["[CLS]", "Ġcat", "[PAD]"]).kinds
        ('special', 'token', 'padding')
        """
        strings = list(token_strings(raw))
        labels = display_labels(strings) if prettify else strings
        return cls(labels, strings, guess_kinds(strings), segments)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Tokens:
        """Inverse of :meth:`to_json`."""
        return cls(data["labels"], data.get("raw"), data.get("kinds"), data.get("segments"))
