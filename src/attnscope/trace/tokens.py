"""Tokens: one token sequence as the views label it.

Display labels, the tokenizer's raw strings, each token's kind (ordinary,
special, padding) and, for sentence pairs, which sentence it belongs to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace.labels import TokenKind, display_labels, guess_kinds


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
