"""``_meta`` is typed once per language and both types name the same fields.

The TypedDicts of :mod:`attnscope.encode.meta_types` and the interfaces of
``js/wire/types.ts`` are compared by field name, read from the TypeScript text, and
what :func:`~attnscope.encode.meta.build_meta` sends holds only typed fields.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from attnscope import AttentionTrace, Tokens, compare
from attnscope.encode.comparison import ComparisonChunks
from attnscope.encode.meta import build_meta
from attnscope.encode.meta_types import MIRRORED, Meta, SideMeta, StreamMeta

TYPES_TS = Path(__file__).resolve().parents[1] / "js" / "wire" / "types.ts"


def ts_interfaces(source: str) -> dict[str, set[str]]:
    """Each ``export interface``'s field names (its own lines, two spaces in)."""
    found: dict[str, set[str]] = {}
    for match in re.finditer(r"^export interface (\w+)[^{]*\{\n(.*?)^\}", source, re.M | re.S):
        fields = re.findall(r"^  (\w+)\??:", match.group(2), re.M)
        found[match.group(1)] = set(fields)
    return found


def test_each_typeddict_names_the_fields_of_its_typescript_interface() -> None:
    interfaces = ts_interfaces(TYPES_TS.read_text(encoding="utf-8"))
    differ = {}
    for name, typed in MIRRORED.items():
        assert name in interfaces, f"js/wire/types.ts has no interface {name}"
        python = set(typed.__annotations__)
        if python != interfaces[name]:
            differ[name] = {
                "only in Python": sorted(python - interfaces[name]),
                "only in js/wire/types.ts": sorted(interfaces[name] - python),
            }
    assert not differ, f"_meta types differ (encode/meta_types.py vs js/wire/types.ts): {differ}"


def test_the_reader_sees_fields_and_nested_lines_apart() -> None:
    source = """export interface A {
  one: number;
  /** two */
  two?: string[];
  nested: { inner: number }[];
}

export interface B extends A {
  three: boolean;
}
"""
    assert ts_interfaces(source) == {"A": {"one", "two", "nested"}, "B": {"three"}}


def _only_typed(value: dict[str, Any], typed: type) -> list[str]:
    return sorted(set(value) - set(typed.__annotations__))


def test_what_python_sends_holds_only_typed_fields() -> None:
    q = np.random.default_rng(0).normal(size=(2, 2, 3, 4)).astype(np.float32)
    trace = AttentionTrace(Tokens(["a", "b", "c"], segments=[0, 0, 1]), None, queries=q, keys=q)
    metas = [build_meta(trace), build_meta(trace, embedded=True)]
    metas.append(ComparisonChunks(compare(trace, trace)).meta())
    for meta in metas:
        assert _only_typed(dict(meta), Meta) == []
        assert set(Meta.__required_keys__) <= set(meta)
        for side in meta["sides"].values():
            assert side is None or _only_typed(dict(side), SideMeta) == []
        for stream in meta["streams"].values():
            assert _only_typed(dict(stream), StreamMeta) == []
            assert set(StreamMeta.__required_keys__) <= set(stream)
