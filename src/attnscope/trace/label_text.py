"""Quoting untrusted text (tokens, names) inside attnscope's own sentences.

A token is the model's text: it may hold bidi controls (U+202E RIGHT-TO-LEFT
OVERRIDE, an embedding never closed, a stray POP DIRECTIONAL ISOLATE) that
would reorder whatever is written after it, the rest of attnscope's note
included. A note that quotes such a string quotes it as an isolate: its
controls balanced so they end where it ends, wrapped in FIRST STRONG ISOLATE
(U+2068) ... POP DIRECTIONAL ISOLATE (U+2069). The front end's twin is
``js/label_text.ts`` (``balanceBidi``, ``isolate``), which also isolates each
note as a whole.
"""

from __future__ import annotations

FSI = "\u2068"
"""FIRST STRONG ISOLATE: opens an isolate that takes the direction of its first strong letter."""
PDI = "\u2069"
"""POP DIRECTIONAL ISOLATE: closes the last isolate and every embedding opened inside it."""

_EMBEDDING_OPENERS = frozenset("\u202a\u202b\u202d\u202e")  # LRE RLE LRO RLO
_ISOLATE_OPENERS = frozenset("\u2066\u2067\u2068")  # LRI RLI FSI
_PDF = "\u202c"
# Paragraph separators end every embedding and isolate (the bidi algorithm's class B).
_PARAGRAPH = frozenset("\n\r\x1c\x1d\x1e\x85\u2029")
_CONTROLS = _EMBEDDING_OPENERS | _ISOLATE_OPENERS | _PARAGRAPH | {_PDF, PDI}


def balance_bidi(text: str) -> str:
    r"""``text`` with its bidi controls balanced, so they end where ``text`` ends.

    A PDF or PDI with nothing to close is dropped, whatever is still open at
    the end is closed there (innermost first), and a paragraph separator
    becomes a space (it would end the isolate around ``text`` early). Text
    without controls comes back as it is.

    Examples
    --------
    >>> balance_bidi("abc\u202edef") == "abc\u202edef\u202c"
    True
    >>> balance_bidi("stray\u2069") == "stray"
    True
    >>> balance_bidi("plain")
    'plain'
    """
    if not _CONTROLS.intersection(text):
        return text
    opened: list[str] = []  # "e": an embedding or override, "i": an isolate
    out: list[str] = []
    for ch in text:
        if ch in _EMBEDDING_OPENERS:
            opened.append("e")
        elif ch in _ISOLATE_OPENERS:
            opened.append("i")
        elif ch == _PDF:
            # A PDF closes an embedding opened since the last isolate, or nothing.
            if not opened or opened[-1] != "e":
                continue
            opened.pop()
        elif ch == PDI:
            # A PDI closes the last isolate and every embedding opened inside it, or nothing.
            if "i" not in opened:
                continue
            del opened[len(opened) - 1 - opened[::-1].index("i") :]
        elif ch in _PARAGRAPH:
            out.append(" ")
            continue
        out.append(ch)
    out.extend(_PDF if kind == "e" else PDI for kind in reversed(opened))
    return "".join(out)


def isolate(text: str) -> str:
    r"""``text`` as a first-strong isolate (FSI ... PDI), its controls balanced inside it.

    What a note quoting a token writes, so that the token keeps its own
    direction and cannot reorder the note around it.

    Examples
    --------
    >>> isolate("abc") == "\u2068abc\u2069"
    True
    >>> isolate("\u202eevil") == "\u2068\u202eevil\u202c\u2069"
    True
    """
    return FSI + balance_bidi(text) + PDI
