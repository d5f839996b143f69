"""One source of truth for the selection: the widget's traits follow selection.json.

The front end bundles the same file (``js/selection.ts``, checked by tsc and
vitest), so when this test and the TypeScript checks pass, both sides agree.
"""

from __future__ import annotations

import json
from importlib import resources

import numpy as np

from attnscope import AttentionTrace, AttentionWidget
from attnscope.encode.selection import PAIR_FILTERS, SELECTION_FIELDS, THEMES, VIEWS

SCHEMA = json.loads(resources.files("attnscope.encode").joinpath("selection.json").read_text())


def test_synced_traits_are_the_schema_fields() -> None:
    # The widget's own traits: those anywidget and ipywidgets add are not the selection.
    synced = set(AttentionWidget.class_own_traits(sync=True)) - {
        "_meta",
        "_saved",
        "_bundle",
        "_esm",
        "_css",
    }
    assert synced == set(SCHEMA["fields"])
    assert tuple(SCHEMA["fields"]) == SELECTION_FIELDS


def test_trait_values_and_defaults_follow_the_schema() -> None:
    traits = AttentionWidget.class_traits()
    assert tuple(traits["view"].values) == tuple(SCHEMA["views"]) == VIEWS
    assert tuple(traits["pair_filter"].values) == tuple(SCHEMA["pair_filters"]) == PAIR_FILTERS
    assert tuple(traits["theme"].values) == tuple(SCHEMA["themes"]) == THEMES
    trace = AttentionTrace(["a", "b"], np.full((2, 3, 2, 2), 0.5, np.float32))
    widget = AttentionWidget(trace)
    for name, field in SCHEMA["fields"].items():
        default = field["default"]
        if name == "stream":
            assert default is None
            assert widget.stream == "self"
        elif name == "heads":
            assert default == []
            assert widget.heads == [0, 1, 2]
        else:
            assert getattr(widget, name) == default, name


def test_every_trait_is_documented_once() -> None:
    for name, trait in AttentionWidget.class_own_traits(sync=True).items():
        assert not trait.help, f"{name} has help= text beside its docstring"
    for name in SCHEMA["fields"]:
        assert SCHEMA["fields"][name]["doc"], f"{name} has no doc in selection.json"
