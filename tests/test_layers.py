"""The package's import contract: data flows one way, and nothing imports in a circle.

Layers, bottom to top; a module may import from its own layer or any below it,
never above. Imports inside functions count (a lazy import back up is still an
upward dependency); imports under ``if TYPE_CHECKING:`` are exempt from the layer
order but not from the circle check: the import map, type-only imports included,
has no circle (a circle hidden behind TYPE_CHECKING is still two modules that
cannot be read, moved or tested one without the other).
"""

from __future__ import annotations

import ast
from pathlib import Path

import attnscope

PACKAGE = Path(attnscope.__file__).parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("attnscope.errors", "attnscope._static", "attnscope._progress"),
    ("attnscope.nn",),
    ("attnscope.trace",),
    ("attnscope.sources",),
    ("attnscope.analysis",),
    ("attnscope.encode",),
    ("attnscope.display",),
    ("attnscope.show", "attnscope.bertviz_compat", "attnscope.__main__", "attnscope"),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer_of(module: str) -> int:
    best = (-1, -1)  # (length of the matching prefix, layer)
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[0]:
                best = (len(prefix), rank)
    assert best[1] >= 0, f"{module} is in no layer: add it to LAYERS"
    return best[1]


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skipped


def imports_of(module: str, *, type_only: bool = False) -> set[str]:
    """Modules of the package that ``module`` imports, at any depth.

    Imports under ``if TYPE_CHECKING:`` count only with ``type_only``.
    """
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = set() if type_only else _type_checking_nodes(tree)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package[: len(package) - node.level + 1]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            candidates = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        for name in candidates:
            if name in MODULES and name != module:
                found.add(name)
    return found


GRAPH = {m: imports_of(m) for m in MODULES}
IMPORT_MAP = {m: imports_of(m, type_only=True) for m in MODULES}
"""Every import, type-only ones included: the map that must have no circle."""


def test_every_module_sits_in_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_no_module_imports_upward() -> None:
    upward = [
        f"{m} (layer {LAYERS[layer_of(m)][0]}) imports {t} (layer {LAYERS[layer_of(t)][0]})"
        for m, targets in GRAPH.items()
        for t in sorted(targets)
        if layer_of(t) > layer_of(m)
    ]
    assert not upward, "imports against the flow:\n" + "\n".join(upward)


def _cycles(graph: dict[str, set[str]] | None = None) -> list[list[str]]:
    # Tarjan's strongly connected components; any with more than one module is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    graph = GRAPH if graph is None else graph

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _circle_paths(graph: dict[str, set[str]]) -> list[str]:
    """One concrete circle per strongly connected component, as ``a -> b -> a``."""
    paths = []
    for component in _cycles(graph):
        members = set(component)
        start = component[0]
        # Breadth-first from start back to start, inside the component.
        parents: dict[str, str] = {}
        frontier = [start]
        while frontier and start not in parents:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v] & members):
                    if w not in parents:
                        parents[w] = v
                        nxt.append(w)
            frontier = nxt
        path = [start]
        v = parents[start]
        while v != start:
            path.append(v)
            v = parents[v]
        path.append(start)
        paths.append(" -> ".join(reversed(path)) + f"  (component: {component})")
    return paths


def test_no_import_circles() -> None:
    assert not _cycles(), f"import circles: {_cycles()}"


def test_no_import_circles_counting_type_only_imports() -> None:
    # The import map, TYPE_CHECKING imports and function-local imports included.
    circles = _circle_paths(IMPORT_MAP)
    assert not circles, "import circles (type-only imports count):\n" + "\n".join(circles)


def test_the_import_map_sees_type_only_and_local_imports() -> None:
    # show.py imports the widget inside functions and under TYPE_CHECKING only.
    assert "attnscope.display.widget" in IMPORT_MAP["attnscope.show"]
    type_only = {m: IMPORT_MAP[m] - GRAPH[m] for m in MODULES if IMPORT_MAP[m] - GRAPH[m]}
    assert type_only, "no module has a TYPE_CHECKING import: the map would not see them"
    made_up = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circle_paths(made_up) == ["a -> b -> c -> a  (component: ['a', 'b', 'c'])"]


def test_the_contract_catches_what_it_should() -> None:
    # The checker itself: an upward import and a circle, in a made-up graph.
    assert layer_of("attnscope.trace.stream") < layer_of("attnscope.display.widget")
    saved = dict(GRAPH)
    try:
        GRAPH["attnscope.trace.stream"] = {*GRAPH["attnscope.trace.stream"], "attnscope.trace.file"}
        assert _cycles(), "a circle through stream -> file -> stream was not found"
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


def test_only_sources_reaches_into_sources_hf() -> None:
    # Issue 38: the rest of the package reaches a model through sources' front doors
    # (sources.session, sources.inputs, sources.resolve, attnscope.capture), never through
    # sources/hf's own files. Type-only imports count too.
    inside = "attnscope.sources."
    reaching = [
        f"{m} imports {t}"
        for m, targets in IMPORT_MAP.items()
        if m != "attnscope.sources" and not m.startswith(inside)
        for t in sorted(targets)
        if t == "attnscope.sources.hf" or t.startswith("attnscope.sources.hf.")
    ]
    assert not reaching, "go through sources.session or sources.inputs:\n" + "\n".join(reaching)


def test_the_widget_module_stays_small() -> None:
    # Issue 38: the widget keeps its traits, their assembly and its messages; a feature's
    # work goes in a part of its own (display/widget_parts.py, encode/dispatch.py, ...).
    lines = len(MODULES["attnscope.display.widget"].read_text(encoding="utf-8").splitlines())
    assert lines <= 650, f"display/widget.py has {lines} lines (at most 650): move a part out"
