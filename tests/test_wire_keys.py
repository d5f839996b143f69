"""Chunk keys are written and read in one module per language.

``src/attnscope/encode/keys.py`` and ``js/wire/keys.ts`` alone spell a key
(``top:<stream>:<layer>`` ...) or split one on ``:``. The patterns are made from
:data:`attnscope.encode.keys.KINDS`, so a kind added there is covered at once.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from attnscope.encode.keys import KINDS

ROOT = Path(__file__).resolve().parents[1]
PY_KEYS = ROOT / "src" / "attnscope" / "encode" / "keys.py"
JS_KEYS = {ROOT / "js" / "wire" / "keys.ts"}
SIDES = ("a", "b", "diff")


def _kinds(kinds: tuple[str, ...]) -> str:
    return "|".join(map(re.escape, sorted(kinds, key=len, reverse=True)))


def python_strays(source: str, kinds: tuple[str, ...] = KINDS) -> list[str]:
    """Key literals in Python ``source``: f-string keys, ``"top:"`` constants, ``split(":")``."""
    tree = ast.parse(source)
    either = _kinds(kinds)
    # An f-string part ending in "<kind>:" goes on with a value: a key written by hand.
    written = re.compile(rf"(?:^|[^\w-])(?:{either}):$")
    literal = re.compile(rf"^(?:(?:{'|'.join(SIDES)})/)?(?:{either}):")
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found: list[str] = []
    in_fstring: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            for part, after in zip(parts, [*parts[1:], None], strict=True):
                in_fstring.add(id(part))
                if (
                    isinstance(part, ast.Constant)
                    and isinstance(part.value, str)
                    and after is not None
                    and written.search(part.value)
                ):
                    found.append(f"line {node.lineno}: f-string key {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("split", "rsplit", "partition", "rpartition")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == ":"
        ):
            found.append(f"line {node.lineno}: key parsed by hand {ast.unparse(node)}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and id(node) not in in_fstring
            and literal.match(node.value)
        ):
            found.append(f"line {node.lineno}: key literal {node.value!r}")
    return found


def js_strays(source: str, kinds: tuple[str, ...] = KINDS) -> list[str]:
    """Key literals in TypeScript ``source``: `` `top:${...}` ``, ``"top:"``, ``split(":")``."""
    either = _kinds(kinds)
    patterns = [
        re.compile(rf"(?<![\w-])(?:{either}):\$\{{"),
        re.compile(rf"[\"'](?:(?:{'|'.join(SIDES)})/)?(?:{either}):"),
        re.compile(r"\.split\(\s*[\"'`]:[\"'`]\s*\)"),
    ]
    found = []
    for number, line in enumerate(source.splitlines(), 1):
        code = line.split("//", 1)[0] if line.lstrip().startswith("//") else line
        found += [f"line {number}: {m.group(0)!r}" for p in patterns for m in p.finditer(code)]
    return found


def test_only_encode_keys_writes_or_reads_chunk_keys_in_python() -> None:
    strays = {
        str(path.relative_to(ROOT)): found
        for path in sorted((ROOT / "src" / "attnscope").rglob("*.py"))
        if path != PY_KEYS and (found := python_strays(path.read_text(encoding="utf-8")))
    }
    assert not strays, (
        "chunk keys written or parsed outside src/attnscope/encode/keys.py; use ChunkKey, "
        f"read_key or the *_key functions there: {strays}"
    )


def test_only_chunk_keys_ts_writes_or_reads_chunk_keys_in_typescript() -> None:
    strays = {
        str(path.relative_to(ROOT)): found
        for path in sorted((ROOT / "js").rglob("*.ts"))
        if path not in JS_KEYS and (found := js_strays(path.read_text(encoding="utf-8")))
    }
    assert not strays, (
        "chunk keys written or parsed outside js/wire/keys.ts; use its builders, "
        f"parseChunkKey or keyParts: {strays}"
    )


def test_the_scanners_find_keys_written_by_hand() -> None:
    python = '''
def f(s, l):
    """A docstring may say top:self:0."""
    a = f"attn:{s}:{l}:0"
    b = f"its {side}/top:{s}:{l}."
    c = key.startswith("pseudo:")
    d = key.split(":")[1]
    e = f"layer {l}: ok", "top", "self:0", f"stop:{l}"
    return a, b, c, d, e
'''
    found = python_strays(python)
    assert [line.split(":")[0] for line in found] == ["line 4", "line 5", "line 7", "line 6"]
    typescript = """
// a comment may say `qk:self:3:0` and qk:${x}
const k = `qk:${stream}:${layer}:${h}`;
const t = key.startsWith("tile:");
const [kind] = key.split(":");
const fine = `rows ${a}:${b}`, words = "stop:";
"""
    assert len(js_strays(typescript)) == 3
    # A new kind is covered as soon as the key module lists it.
    assert python_strays('x = f"heatmap:{s}:{l}"') == []
    assert python_strays('x = f"heatmap:{s}:{l}"', (*KINDS, "heatmap"))
