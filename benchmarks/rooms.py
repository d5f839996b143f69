"""Which modules ("rooms") ``show_head_view`` passes through, followed at run time.

A *stay* is a run of consecutive steps (calls and returns) that execute in one
module of ``attnscope``; a *room* is a module; a *climb back up* is a stay in a
higher layer (``tests/test_layers.py``'s order) than the stay before it, that is
the path coming back up after it went down. The trace is a WordPiece sentence
pair (the words: and continuation marks have work to do), shown with
``display=False``; the first table is the whole call, the second only what
happens inside ``build_meta`` (the tokens' way onto the wire), read once per
function, then every call, then every call of a second ``build_meta`` of the
same trace (what a second host, a page beside the widget, pays).

Run: ``.venv/bin/python benchmarks/rooms.py``.
"""

from __future__ import annotations

import sys
from collections import Counter
from itertools import pairwise
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

import attnscope
from attnscope import AttentionTrace, Tokens
from attnscope.encode import meta as meta_module

PACKAGE = Path(attnscope.__file__).parent
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_layers import layer_of  # noqa: E402


def _module(frame: FrameType | None) -> str | None:
    if frame is None:
        return None
    path = Path(frame.f_code.co_filename)
    if not path.is_relative_to(PACKAGE):
        return None
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def follow(run: Any, *, once: bool = True) -> list[str]:
    """The stays (module names) that ``run()`` makes, in order, reading each function once.

    With ``once``, a function already entered is not followed again (a loop over
    tokens is one visit, as a reader following the code sees it); without, every
    call counts. Module bodies run by a first import are left out.
    """
    stays: list[str] = []
    seen: set[object] = set()
    skipped: set[int] = set()  # ids of frames being skipped, with everything below them

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event not in ("call", "return"):
            return
        if event == "call":
            if skipped or (once and frame.f_code in seen) or frame.f_code.co_name == "<module>":
                skipped.add(id(frame))
                return
            if _module(frame) is not None:
                seen.add(frame.f_code)
            module = _module(frame)
        else:
            if id(frame) in skipped:
                skipped.discard(id(frame))
                return
            if skipped:
                return
            module = _module(frame.f_back)
        if module is not None and (not stays or stays[-1] != module):
            stays.append(module)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return stays


def summary(title: str, stays: list[str], *, path: bool = True) -> None:
    climbs = sum(layer_of(b) > layer_of(a) for a, b in pairwise(stays))
    visits = Counter(stays)
    print(f"\n{title}: {len(stays)} stays in {len(visits)} rooms, {climbs} climbs back up")
    for module in ("attnscope.encode.meta", "attnscope.trace.labels", "attnscope.analysis.words"):
        print(f"  {module}: {visits.get(module, 0)} stays")
    if path:
        print("  path: " + " > ".join(m.removeprefix("attnscope.") for m in stays))


def sample() -> AttentionTrace:
    raw = ["[CLS]", "un", "##bel", "##ie", "##va", "##bly", ",", "[SEP]", "ok", "[SEP]"]
    att = np.random.default_rng(0).random((2, 2, len(raw), len(raw))).astype(np.float32)
    att /= att.sum(-1, keepdims=True)
    tokens = Tokens.from_strings(raw, segments=[0] * 8 + [1] * 2)
    return AttentionTrace(tokens, att)


def main() -> None:
    attnscope.show_head_view(sample(), display=False)  # imports done, not counted
    trace = sample()
    summary("show_head_view(trace)", follow(lambda: attnscope.show_head_view(trace, display=False)))
    fresh = sample()
    summary("build_meta(trace)", follow(lambda: meta_module.build_meta(fresh)))
    again = sample()
    every = follow(lambda: meta_module.build_meta(again), once=False)
    summary("build_meta(trace), every call", every, path=False)
    twice = follow(lambda: meta_module.build_meta(again), once=False)
    summary("build_meta(trace) again, same trace, every call", twice, path=False)


if __name__ == "__main__":
    main()
