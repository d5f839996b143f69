"""The README stays short and points into docs/guide/; every relative link there resolves."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "docs" / "guide"
README_MAX_LINES = 400
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _relative_links(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return [t for t in LINK.findall(text) if not t.startswith(("http://", "https://", "mailto:"))]


def test_readme_is_short() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to docs/guide/"


def test_every_relative_link_resolves() -> None:
    pages = [REPO / "README.md", *sorted(GUIDE.glob("*.md"))]
    missing = [
        f"{page.relative_to(REPO)} -> {target}"
        for page in pages
        for target in _relative_links(page)
        if not (page.parent / target).exists()
    ]
    assert missing == []


def test_readme_and_site_list_every_guide_page() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    for page in sorted(GUIDE.glob("*.md")):
        assert f"docs/guide/{page.name}" in readme, page.name
        assert f"guide/{page.name}" in nav, page.name
