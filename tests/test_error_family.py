"""Bad input raises attnscope's own error family, never a bare builtin.

Each member also subclasses the builtin a caller may catch (``AttnscopeError`` is
a ``ValueError``, ``AttnscopeTypeError`` a ``TypeError`` ...), so ``except
AttnscopeError`` catches everything attnscope refuses and old ``except`` clauses
keep working.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from attnscope.errors import AttnscopeError, AttnscopeIndexError, AttnscopeTypeError

SRC = Path(__file__).resolve().parent.parent / "src" / "attnscope"
BUILTINS = {"ValueError", "TypeError", "IndexError", "KeyError"}


def _raised_builtins(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id in BUILTINS:
                found.append(f"{path.relative_to(SRC)}:{node.lineno} raises {exc.id}")
    return found


def test_no_module_raises_a_bare_builtin_error() -> None:
    found = [hit for path in sorted(SRC.rglob("*.py")) for hit in _raised_builtins(path)]
    assert found == []


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (AttnscopeError, ValueError),
        (AttnscopeTypeError, TypeError),
        (AttnscopeIndexError, IndexError),
    ],
)
def test_each_member_is_also_the_builtin_callers_catch(error: type, builtin: type) -> None:
    assert issubclass(error, AttnscopeError)
    with pytest.raises(builtin):
        raise error("bad input")
