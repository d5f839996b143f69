"""The selection both sides share: its fields, their defaults, and the view names.

``selection.json`` beside this module is the one source of truth; the front
end (``js/selection.ts``) bundles the same file, so Python and TypeScript
cannot disagree on a field, a default or a view name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal, cast

from attnscope.errors import AttnscopeError

if TYPE_CHECKING:
    from attnscope.trace import AttentionTrace

ViewName = Literal["head", "model", "neuron", "image"]
CompareSide = Literal["a", "b", "diff"]

_SCHEMA: dict[str, Any] = json.loads(
    resources.files("attnscope.encode").joinpath("selection.json").read_text(encoding="utf-8")
)

VIEWS: tuple[ViewName, ...] = tuple(cast("list[ViewName]", _SCHEMA["views"]))
"""The views a widget or page can offer, in their default tab order."""
PAIR_FILTERS: tuple[str, ...] = tuple(_SCHEMA["pair_filters"])
"""Values of the ``pair_filter`` trait: all, or queries-in/keys-in sentence A or B."""
THEMES: tuple[str, ...] = tuple(_SCHEMA["themes"])
"""Values of the ``theme`` trait."""
COMPARE_SIDES: tuple[CompareSide, ...] = tuple(cast("list[CompareSide]", _SCHEMA["compare_sides"]))
"""Values of the ``compare_side`` trait for a comparison: input A, input B, or ``A − B``."""
SELECTION_FIELDS: tuple[str, ...] = tuple(_SCHEMA["fields"])
"""The synced selection traits, in protocol order."""
SELECTION_DOCS: dict[str, str] = {k: str(v["doc"]) for k, v in _SCHEMA["fields"].items()}
"""One sentence per selection field, as ``docs/protocol.md`` gives it."""
WIDGET_OPTIONS: tuple[str, ...] = (
    "views",
    "scan",
    "segments",
    *(f for f in SELECTION_FIELDS if f != "view"),
)
"""Keywords :class:`~attnscope.AttentionWidget` takes besides ``view`` (``scan``: a table of
heads to rank by; ``segments``: sentences, turns or positions as head-view rows)."""


def views_of(trace: AttentionTrace | None) -> tuple[ViewName, ...]:
    """The views a widget or page on ``trace`` offers by default: the image view only with images.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> views_of(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)))
    ('head', 'model', 'neuron')
    """
    shows = trace is not None and bool(trace.images)
    return tuple(v for v in VIEWS if v != "image" or shows)


def check_image_view(views: Sequence[ViewName], trace: AttentionTrace | None) -> None:
    """Raise AttnscopeError when ``views`` offers the image view of a trace without images.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> check_image_view(("head", "image"), AttentionTrace(["a"], np.ones((1, 1, 1, 1))))
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: views=('head', 'image') offers the image view, but ...
    """
    if "image" in views and "image" not in views_of(trace):
        raise AttnscopeError(
            f"views={tuple(views)!r} offers the image view, but this trace has no images "
            "(trace.images is empty); capture a vision-language model with "
            "attnscope.capture(model, text, images=..., processor=...), or leave 'image' out."
        )


def default_selection(trace: AttentionTrace, view: str | None = None) -> dict[str, Any]:
    """Return the selection a new widget on ``trace`` starts with (all heads).

    The schema's ``null`` stream becomes the trace's first stream, or, for
    the neuron view, its first stream that holds query and key vectors (the
    neuron view draws them); its empty ``heads`` every head of that stream.
    ``view`` (default: the schema's, the head view) is the view opened. This
    is the one place a widget's starting stream is chosen, however the widget
    is made (``AttentionWidget(trace, view=...)`` or ``show_<view>_view``).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> trace = AttentionTrace(["a"], np.ones((1, 2, 1, 1), np.float32))
    >>> default_selection(trace)["heads"], default_selection(trace, "neuron")["view"]
    ([0, 1], 'neuron')
    """
    state = {k: json.loads(json.dumps(v["default"])) for k, v in _SCHEMA["fields"].items()}
    if view is not None:
        state["view"] = view
    names = list(trace.streams)
    if state["view"] == "neuron":
        names = [n for n, s in trace.streams.items() if s.has_qk] or names
    if state["stream"] is None:
        state["stream"] = names[0]
    if not state["heads"]:
        state["heads"] = list(range(trace.streams[state["stream"]].num_heads))
    return state


def check_views(views: object, *, name: str = "views") -> tuple[ViewName, ...]:
    """Return ``views`` as a tuple, or raise AttnscopeError saying what is wrong with it.

    ``views`` must be a non-empty sequence of distinct names from :data:`VIEWS`.

    Examples
    --------
    >>> check_views(["model", "head"])
    ('model', 'head')
    >>> check_views(("head", "attention"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: views=('head', 'attention') has unknown view(s) ...
    """
    if isinstance(views, str):
        raise AttnscopeError(
            f"{name}={views!r} is a string; pass a tuple of view names, e.g. ({views!r},)."
        )
    if not isinstance(views, Sequence) or not views:
        raise AttnscopeError(
            f"{name}={views!r} must be a non-empty tuple of view names from {VIEWS}, e.g. "
            "('head',)."
        )
    unknown = [v for v in views if v not in VIEWS]
    if unknown:
        raise AttnscopeError(
            f"{name}={views!r} has unknown view(s) {unknown}; use a non-empty subset of {VIEWS}."
        )
    repeated = sorted({str(v) for v in views if views.count(v) > 1})
    if repeated:
        raise AttnscopeError(
            f"{name}={views!r} names {repeated} more than once; list each view once."
        )
    return tuple(views)
