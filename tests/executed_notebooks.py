"""Each example notebook run once per test session, shared by the tests that need it run.

``tests/test_notebooks.py`` (it runs top to bottom) and the docs-site browser test (its
pages are the executed notebooks) read the same run: the way ``make docs`` runs them
(``docs/site/build_site.py``: a fresh kernel, widget state stored, an error output fails),
so each notebook loads its model and executes once, not twice, in ``make test``.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
import tempfile
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def build_site() -> ModuleType:
    """``docs/site/build_site.py`` as a module."""
    spec = importlib.util.spec_from_file_location("build_site", REPO / "docs/site/build_site.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up while it is made
    spec.loader.exec_module(module)
    return module


@cache
def _run(name: str) -> Any:
    with tempfile.TemporaryDirectory(prefix="attnscope-example-") as workdir:
        return build_site().run_notebook(EXAMPLES / name, Path(workdir))


def executed(name: str) -> Any:
    """A copy of ``examples/<name>`` as this session's one run left it (outputs, widget state)."""
    return copy.deepcopy(_run(name))


def run_from_session(path: Path, workdir: Path) -> Any:
    """``build_site.run_notebook``'s signature, answered from the session's runs."""
    return executed(path.name)
