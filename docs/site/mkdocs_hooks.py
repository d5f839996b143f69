"""MkDocs hooks of the docs site: the front page from the README, the API reference from code.

- ``index.md`` is the project's ``README.md`` (one text, two places), its links to files
  under ``docs/`` made relative to the site.
- ``api.md`` lists every name of ``attnscope.__all__`` (the whole public API), each rendered
  by mkdocstrings from its docstring at the module that defines it, so a new public name
  appears without editing a page, and a name cannot be left out.
- Sphinx roles in the docstrings (``:func:`compare```, ``:data:`~a.b.C```) are drawn as
  code (the last part where the target starts with ``~``), not as raw role text.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parents[2]


def public_names() -> list[tuple[str, str]]:
    """``(name, dotted path of its definition)`` for each name of ``attnscope.__all__``."""
    attnscope = importlib.import_module("attnscope")
    found: list[tuple[str, str]] = []
    for name in attnscope.__all__:
        if name.startswith("__"):
            continue
        value = getattr(attnscope, name)
        module = getattr(value, "__module__", None) or "attnscope"
        qualname = getattr(value, "__qualname__", name)
        found.append((name, f"{module}.{qualname}"))
    return found


def api_page() -> str:
    """The API reference's Markdown: one mkdocstrings block per public name."""
    lines = [
        "# API reference",
        "",
        "Every public name of `attnscope` (`attnscope.__all__`), from its docstring.",
        "Import them from the package itself: `from attnscope import capture`.",
        "",
    ]
    for name, path in public_names():
        lines += [f"::: {path}", "    options:", f"      heading: {name}", ""]
    return "\n".join(lines)


def index_page() -> str:
    """The README as the site's front page, its ``docs/`` links made site-relative."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return text.replace("](docs/", "](").replace('src="docs/', 'src="')


def on_files(files: Files, config: Any) -> Files:
    """Add the generated pages (they are not files in ``docs/``)."""
    for name, content in (("index.md", index_page()), ("api.md", api_page())):
        existing = files.get_file_from_path(name)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, name, content=content))
    return files


_ROLE = re.compile(r":(?:func|meth|class|data|attr|mod|obj|exc|const):<code>(~?)([^<]*)</code>")


def _role_as_code(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return f"<code>{target.rsplit('.', 1)[-1] if short else target}</code>"


def plain_roles(html: str) -> str:
    """Sphinx roles as mkdocstrings leaves them (``:func:<code>x</code>``) drawn as code.

    Examples
    --------
    >>> plain_roles(":func:<code>compare</code> and :data:<code>~a.b.LIMIT</code>")
    '<code>compare</code> and <code>LIMIT</code>'
    """
    return _ROLE.sub(_role_as_code, html)


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    """Every page's HTML with the docstrings' Sphinx roles drawn as code."""
    return plain_roles(html)
