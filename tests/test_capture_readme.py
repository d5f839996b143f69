"""The README's capture examples that run offline (MiniLM from a local folder) really run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).parent.parent / "README.md"


def _sources_examples() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("<!-- section: sources -->", 1)[1].split("<!-- section:", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    # Examples naming hub models need the internet; the MiniLM ones run here.
    return [b for b in blocks if "from_pretrained" not in b and "microsoft/" not in b]


def test_offline_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    examples = _sources_examples()
    assert len(examples) >= 2
    namespace: dict[str, object] = {}
    for code in examples:
        exec(compile(code, str(README), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "(6, 12, 9, 9)" in printed
    assert "True" in printed
    assert "(0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1)" in printed
