"""The report of a release track (``make test-latest`` / ``make test-oldest``).

``python tests/track_report.py TRACK ZOO_JSONL PYTEST_LOG`` prints a short
Markdown report: the versions the track ran, the capture and fidelity tiers'
result, and every model type whose zoo outcome differs from the supported-types table
(the locked run). It exits 1 when a type came out wrong, crashed or changed the
model: every moved type must land in exact, attention-only with a note, refused
with a clear error, or not built (then the range in pyproject.toml holds). On the
``latest`` track the tiers must pass as well (that release is the next lock); on
``oldest`` their failures are listed, and the range holds when no type is wrong.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import Any

from zoo_readme import FAILURES, OUTCOMES, SUPPORTED_TYPES_PAGE, section

LABELS = {label: key for key, (label, _) in OUTCOMES.items()}


def locked_outcomes(text: str) -> dict[str, str]:
    """``type -> outcome`` read back from the supported-types page (docs/guide/supported-models.md).

    Examples
    --------
    >>> from zoo_readme import render
    >>> text = render([{"type": "bert", "outcome": "exact", "detail": ""},
    ...                {"type": "xlnet", "outcome": "attention-only", "detail": "why"}])
    >>> locked_outcomes(text)
    {'bert': 'exact', 'xlnet': 'attention-only'}
    """
    found: dict[str, str] = {}
    for label, body in re.findall(r"<summary>(.+?) \(\d+\)</summary>(.*?)</details>", text, re.S):
        outcome = LABELS[label]
        if outcome in ("exact", "not built"):
            names = re.findall(r"`([^`]+)`", body)
        else:
            names = re.findall(r"^- `([^`]+)`", body, re.M)
        found.update(dict.fromkeys(names, outcome))
    return found


def moved(now: Iterable[dict[str, Any]], locked: dict[str, str]) -> list[tuple[str, str, str, str]]:
    """``(type, locked outcome, outcome now, detail)`` for each type whose outcome changed."""
    rows = []
    for item in sorted(now, key=lambda r: r["type"]):
        before = locked.get(item["type"], "new type")
        if before != item["outcome"]:
            rows.append((item["type"], before, item["outcome"], str(item.get("detail", ""))))
    return rows


def _summary(log: str) -> tuple[str, list[str]]:
    lines = [line for line in log.splitlines() if line.strip()]
    last = next((line for line in reversed(lines) if re.search(r"\d+ (passed|failed)", line)), "")
    failed = [line.split(" ", 1)[1] for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return last.strip("= "), failed


def report(track: str, results: list[dict[str, Any]], log: str) -> tuple[str, bool]:
    """The Markdown report and whether the track is green."""
    import torch
    import transformers

    summary, failed_tests = _summary(log)
    locked = locked_outcomes(section(SUPPORTED_TYPES_PAGE.read_text(encoding="utf-8")))
    changes = moved(results, locked)
    broken = [r for r in results if r["outcome"] in FAILURES]
    counts = {key: sum(r["outcome"] == key for r in results) for key in (*OUTCOMES, *FAILURES)}
    lines = [
        f"# Release track: {track}",
        "",
        f"Run on {date.today().isoformat()} with transformers {transformers.__version__}, "
        f"torch {torch.__version__} (the lock's table: docs/guide/supported-models.md).",
        "",
        f"- capture and fidelity tiers: {summary or 'no pytest summary line (see the log)'}",
        *[f"  - failed: `{name}`" for name in failed_tests],
        "- zoo: " + ", ".join(f"{key} {n}" for key, n in counts.items() if n),
        "",
    ]
    if changes:
        lines += ["| type | locked | now | detail |", "|---|---|---|---|"]
        for model_type, before, after, detail in changes:
            short = " ".join(detail.split()).replace("|", "/")[:140]
            lines.append(f"| `{model_type}` | {before} | **{after}** | {short} |")
    else:
        lines.append("No model type changed outcome against the lock.")
    if broken:
        lines += ["", "Wrong, crashed or changed the model:"]
        lines += [f"- `{r['type']}` ({r['outcome']}): {r.get('detail', '')}" for r in broken]
    holds = not broken
    tiers_green = not failed_tests and "failed" not in summary and bool(summary)
    lines += [
        "",
        f"Range holds: {'yes' if holds else 'NO'} (every type exact, attention only with a note, "
        "refused with attnscope's error, or not built; none wrong, crashed or changed).",
        f"Tiers: {'green' if tiers_green else 'red'} (they are written against the lock: on an "
        "older release a type that gains q/k or exists only later fails them, and is listed "
        "above).",
        "",
    ]
    # The newest release is the next lock, so its tiers must pass too; the oldest must be correct.
    return "\n".join(lines), holds and (tiers_green or track == "oldest")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    track, zoo_file, log_file = sys.argv[1:4]
    found = [json.loads(line) for line in Path(zoo_file).read_text().splitlines() if line]
    text, ok = report(track, found, Path(log_file).read_text(encoding="utf-8", errors="replace"))
    sys.stdout.write(text)
    sys.exit(0 if ok else 1)
