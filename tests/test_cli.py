"""`python -m attnscope demo`: runs offline in seconds and prints a readable summary."""

from __future__ import annotations

import re

import pytest

from attnscope.__main__ import DEMO_TEXT, demo_trace, main, split_words


def _demo(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["demo", *argv]) == 0
    return capsys.readouterr().out


def test_demo_prints_one_row_per_word_and_one_column_per_head(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _demo(capsys)
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("query"))
    assert re.findall(r"head \d", lines[header]) == ["head 0", "head 1", "head 2", "head 3"]
    words = split_words(DEMO_TEXT)
    rows = lines[header + 1 : header + 1 + len(words)]
    assert [row.split()[0] for row in rows] == words
    # the first word can only see itself (causal): weight 1 in every head
    assert re.findall(r"\d\.\d\d", rows[0]) == ["1.00"] * 4
    for q, row in enumerate(rows):
        cells = re.findall(r"(\S+)\s+(\d\.\d\d)", row[12:])
        assert len(cells) == 4
        for key, weight in cells:
            assert key in words[: q + 1]  # never a later word
            assert 1 / (q + 1) - 0.005 <= float(weight) <= 1.0  # the top weight of q+1 keys


def test_demo_reports_a_tiny_check_error(capsys: pytest.CaptureFixture[str]) -> None:
    out = _demo(capsys)
    match = re.search(r"trace\.check\(\): max \|recomputed - recorded\| = (\S+)", out)
    assert match is not None
    assert float(match.group(1)) <= 1e-6


def test_demo_is_deterministic_and_follows_text_and_seed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    first, again = _demo(capsys), _demo(capsys)
    assert first == again
    other_seed = _demo(capsys, "--seed", "1")
    assert other_seed != first
    out = _demo(capsys, "--text", "Dogs bark, cats purr.")
    assert "input: 6 words" in out
    assert "purr" in out


def test_demo_trace_matches_what_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    trace = demo_trace("one two three")
    out = _demo(capsys, "--text", "one two three")
    last = next(line for line in out.splitlines() if line.startswith("three"))
    top = trace.attention[0, :, 2].max(-1)
    assert re.findall(r"\d\.\d\d", last) == [f"{w:.2f}" for w in top]


def test_demo_without_words_fails_with_a_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--text", "   "]) == 2
    assert "no words" in capsys.readouterr().err


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "demo" in capsys.readouterr().err


def test_unknown_command_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["nonsense"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
