"""The sources guide's capture examples that run offline (MiniLM from a local folder) really run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SOURCES_GUIDE = Path(__file__).parent.parent / "docs" / "guide" / "sources.md"


def _sources_examples() -> list[str]:
    text = SOURCES_GUIDE.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    # Examples naming hub models need the internet; the MiniLM ones run here.
    return [b for b in blocks if "from_pretrained" not in b and "microsoft/" not in b]


def test_offline_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    examples = _sources_examples()
    assert len(examples) >= 2
    namespace: dict[str, object] = {}
    for code in examples:
        exec(compile(code, str(SOURCES_GUIDE), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "(6, 12, 9, 9)" in printed
    assert "True" in printed
    assert "(0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1)" in printed
