"""Token strings that try to break out of their label, shared by every hostile-text test tier.

Markup and script that would run if a label were ever parsed as HTML (each
sets ``window.__attnscopePwned``), end tags and comment openers that would
close the page's own elements, template syntax, prototype names, bidi and
zero-width controls, control characters that XML forbids, lone surrogates,
10 000-character tokens, emoji sequences and combining-mark stacks.

This file is also copied next to the notebooks of the JupyterLab test, so it
imports nothing.
"""

from __future__ import annotations

PWNED = "__attnscopePwned"
"""The window property an injected script would set."""

BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
"""Embeddings, overrides, isolates, their terminators and the marks."""

HOSTILE: list[str] = [
    # markup and script
    "<b>bold</b>",
    f"<img src=x onerror=\"window.{PWNED}='img'\">",
    f"<svg onload=\"window.{PWNED}='svg'\"></svg>",
    f"<script>window.{PWNED}='script'</script>",
    f"</script><script>window.{PWNED}='end-tag'</script>",
    "</SCRIPT >",
    "</style>",
    "</textarea></title>",
    f"<iframe srcdoc=\"<script>parent.{PWNED}='iframe'</script>\"></iframe>",
    f"javascript:window.{PWNED}='href'",
    f'" onmouseover="window.{PWNED}=\'attr\'" x="',
    f"' onfocus='window.{PWNED}=1' autofocus='",
    "<!--",
    "-->",
    "<![CDATA[x]]>",
    "]]>",
    "&amp;&lt;&#x3C;&#0;",
    "&",
    "<",
    # template syntax
    "{{constructor.constructor('window.__attnscopePwned=1')()}}",
    "${window.__attnscopePwned='template'}",
    "{% raw %}{{ x }}",
    "`${1}`",
    # names that are special to JavaScript objects
    "__proto__",
    "constructor",
    "prototype",
    "toString",
    "hasOwnProperty",
    # bidi controls, alone, unterminated and stray
    "abc\u202edef",
    "\u202bunterminated embedding",
    "\u2067unterminated isolate",
    "stray pop\u202c\u2069",
    "\u200f",
    "\u061c\u200e",
    "שלום",
    "مرحبا",
    # zero-width characters
    "\u200b",
    "a\u200db",
    "\ufeff",
    "\u2060\u180e",
    # control characters (XML 1.0 forbids most C0 controls)
    "a\x00b",
    "\x1b[31mred\x1b[0m",
    "\x0b\x0c",
    "\x07\x08",
    "line\r\nbreak",
    "\t",
    "\x7f\x85\x9f",
    "\u2028\u2029",
    "\ufffe\uffff",
    # lone surrogates
    "\ud800",
    "x\udfffy",
    "\ud83d",
    "\udc80",  # what errors="surrogateescape" makes of byte 0x80
    # long tokens
    "A" * 10_000,
    "ж" * 10_000,
    # emoji sequences
    "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",
    "\U0001f3f3\ufe0f\u200d\U0001f308",
    "\U0001f1fa\U0001f1f3",
    "\U0001f44d\U0001f3fd",
    # combining marks
    "Z" + "\u0336\u0337\u0338\u0334\u0335" * 20,
    "\u0301",
    "e\u0301",
    # empty and blank
    "",
    " ",
    "\u00a0",
    # odd but ordinary
    "\\",
    '"',
    "'",
    "%s%n%x",
    "null",
    "undefined",
    "NaN",
]


def has_lone_surrogate(text: str) -> bool:
    """True when ``text`` holds a surrogate code point (Python strings may; UTF-8 may not)."""
    return any("\ud800" <= c <= "\udfff" for c in text)


def shown(text: str) -> str:
    """What a label shows for ``text``: lone surrogates as U+FFFD, as the browser gets them."""
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)


_EMBEDDINGS = "\u202a\u202b\u202d\u202e"  # LRE RLE LRO RLO
_ISOLATES = "\u2066\u2067\u2068"  # LRI RLI FSI
_PARAGRAPH = "\n\r\x1c\x1d\x1e\x85\u2029"  # the bidi algorithm's paragraph separators


def bidi_leaks(text: str) -> bool:
    """True when a bidi control in ``text`` reaches a character outside every isolate.

    Runs the explicit rules (X1-X8) of the Unicode bidi algorithm over
    ``text`` as one string is drawn (a tooltip, a canvas text, an SVG text):
    text that attnscope writes around an isolated label must sit at the base
    level, and a label that is not isolated must not leave anything open.
    """
    stack: list[str] = []
    for ch in text:
        if ch in _EMBEDDINGS:
            stack.append("e")
        elif ch in _ISOLATES:
            stack.append("i")
        elif ch == "\u202c":  # PDF closes an embedding opened since the last isolate
            if stack and stack[-1] == "e":
                stack.pop()
        elif ch == "\u2069":  # PDI closes the last isolate and what opened inside it
            if "i" in stack:
                del stack[len(stack) - 1 - stack[::-1].index("i") :]
        elif ch in _PARAGRAPH:
            stack.clear()
        elif "i" not in stack and stack:
            return True
    return bool(stack) and "i" not in stack


def without_bidi(text: str) -> str:
    """``text`` with bidi controls removed and paragraph separators as spaces: what is seen."""
    drop = str.maketrans(dict.fromkeys(BIDI_CONTROLS) | dict.fromkeys(_PARAGRAPH, " "))
    return text.translate(drop)
