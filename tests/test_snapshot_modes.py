"""``attnscope.set_snapshots``: how much each notebook output keeps for kernel-less viewers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import attnscope
from attnscope.errors import AttnscopeError


@pytest.fixture
def mode() -> Iterator[None]:
    yield
    attnscope.set_snapshots("view")


def test_small_and_none_snapshots_are_smaller_and_say_what_they_are(
    minilm: tuple[Any, Any], mode: None
) -> None:
    model, tokenizer = minilm
    text = " ".join(["The cat sat on the mat while the dog slept by the door."] * 36)
    trace = attnscope.capture(model, text, tokenizer=tokenizer, max_tokens=512)
    sizes = {}
    for chosen in ("view", "small", "none"):
        attnscope.set_snapshots(chosen)
        data, _ = attnscope.AttentionWidget(trace)._repr_mimebundle_()
        sizes[chosen] = sum(len(v) for k, v in data.items() if k.startswith("text/"))
        assert data["text/plain"].startswith("attnscope AttentionWidget: head view")
        assert ("text/html" in data) == (chosen != "none")
    print(f"\n512-token MiniLM head view output: {sizes}")
    assert sizes["small"] < sizes["view"] / 2
    assert sizes["none"] < 1_000


def test_an_unknown_mode_is_refused_and_the_mode_kept(mode: None) -> None:
    with pytest.raises(AttnscopeError, match=r"set_snapshots\('tiny'\): the mode is one of"):
        attnscope.set_snapshots("tiny")
    assert attnscope.set_snapshots("view") == "view"
