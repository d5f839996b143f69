"""The supported-types table (docs/guide/supported-models.md), written from the zoo tier's results.

``python tests/zoo_readme.py`` runs every type (:mod:`zoo_run`, a few minutes on
two cores) and rewrites that page's section between the markers;
``tests/test_capture_zoo.py`` checks that the section is what its own run renders.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SUPPORTED_TYPES_PAGE = (
    Path(__file__).resolve().parent.parent / "docs" / "guide" / "supported-models.md"
)
START = "<!-- supported-types: written by tests/zoo_readme.py from tests/test_capture_zoo.py -->"
END = "<!-- supported-types: end -->"

OUTCOMES = {
    "exact": (
        "exact",
        "every stream within 1e-5 of the model's eager attention, and `trace.check()` "
        "recomputes it from q and k within 1e-5",
    ),
    "attention-only": (
        "attention only",
        "the model's own weights (within 1e-5 of eager); `trace.notes` says why there is no q·k",
    ),
    "refused": ("refused", "capture raises attnscope's error saying what is wrong and what to do"),
    "not built": (
        "not built here",
        "the tier cannot build or run the type tiny from text or one image (the reason is listed)",
    ),
}
FAILURES = ("wrong", "crash", "changed")


def _short(text: str, limit: int = 110) -> str:
    """One line, no addresses, at most ``limit`` characters."""
    line = re.sub(r"0x[0-9a-f]+", "0x…", " ".join(str(text).split()))
    line = line.replace("|", "/")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _why_not_built(detail: str) -> str:
    head = detail.split(":", 1)[0]
    return head if head.startswith(("reads ", "tiny ", "eager ")) else "does not import here"


def render(results: Iterable[dict[str, Any]]) -> str:
    """The page's section (between the markers) for the tier's ``results``.

    Examples
    --------
    >>> text = render([{"type": "bert", "outcome": "exact", "detail": ""}])
    >>> "| exact | 1 |" in text
    True
    """
    import transformers

    by: dict[str, list[dict[str, Any]]] = {}
    for item in sorted(results, key=lambda r: r["type"]):
        by.setdefault(item["outcome"], []).append(item)
    total = sum(len(v) for v in by.values())
    lines = [
        START,
        "",
        f"Every model type of transformers {transformers.__version__} with a base, causal-LM "
        f"or seq2seq-LM Auto mapping ({total} types), built tiny and random and captured once "
        "by `tests/test_capture_zoo.py`; each stream is compared with the model's own eager "
        "attention.",
        "",
        "| outcome | types | meaning |",
        "|---|---|---|",
    ]
    for key, (label, meaning) in OUTCOMES.items():
        lines.append(f"| {label} | {len(by.get(key, []))} | {meaning} |")
    failed = [item for key in FAILURES for item in by.get(key, [])]
    if failed:
        lines.append(f"| **failing** | {len(failed)} | wrong numbers, a crash or a changed model |")
    lines.append("")
    for key, (label, _) in OUTCOMES.items():
        items = by.get(key, [])
        if not items:
            continue
        lines += ["<details>", f"<summary>{label} ({len(items)})</summary>", ""]
        if key == "exact":
            lines.append(", ".join(f"`{item['type']}`" for item in items))
        elif key == "not built":
            groups: dict[str, list[str]] = {}
            for item in items:
                groups.setdefault(_why_not_built(item["detail"]), []).append(item["type"])
            for why, types in sorted(groups.items()):
                lines.append(f"- {why}: " + ", ".join(f"`{t}`" for t in types))
        else:
            for item in items:
                lines.append(f"- `{item['type']}`: {_short(item['detail'])}")
        lines += ["", "</details>", ""]
    if failed:
        for item in failed:
            lines.append(f"- **{item['outcome']}** `{item['type']}`: {_short(item['detail'])}")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def section(text: str) -> str:
    """The part of ``text`` from the start marker to the end marker (both included)."""
    start, end = text.index(START), text.index(END) + len(END)
    return text[start:end]


def write(results: Iterable[dict[str, Any]], page: Path = SUPPORTED_TYPES_PAGE) -> None:
    """Replace the page's section with one rendered from ``results``."""
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace(section(text), render(results)), encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import json

    from zoo_models import model_types
    from zoo_run import run_pool

    if sys.argv[1:2] == ["--from"]:  # results a run already printed, one JSON line each
        found = [json.loads(line) for line in Path(sys.argv[2]).read_text().splitlines()]
    else:
        found = run_pool(model_types())
    write(found)
    print(f"docs/guide/supported-models.md: supported types written from {len(found)} results")
