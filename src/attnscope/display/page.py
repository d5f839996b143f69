"""One self-contained HTML file that opens from disk, offline, and stays interactive.

The page (``docs/protocol.md``, "The exported page") inlines the CSS, the
code of the views it shows (``static/code/``: the page's modules, each deflate-raw
compressed and base64 encoded, and
``static/page_loader.js`` that checks and imports them), the trait values with
``_meta``, and the chunks, each deflate-raw compressed and base64 encoded. Nothing is fetched:
there is no URL in the file.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnscope._static import code_texts, packed_code, static_file, view_units
from attnscope.analysis.compare import AttentionComparison
from attnscope.display.why_sources import page_why
from attnscope.encode.chunks import encode_chunk
from attnscope.encode.comparison import ComparisonChunks
from attnscope.encode.embed import Encoder, check_qk_dtype, embed_chunks
from attnscope.encode.plan import page_meta
from attnscope.encode.selection import (
    ViewName,
    check_image_view,
    check_views,
    default_selection,
    views_of,
)
from attnscope.encode.value_chunks import page_value_chunks
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionTrace

if TYPE_CHECKING:
    from attnscope.display.shown import ShownWidget

DEFAULT_MAX_BYTES = 50_000_000
"""Default budget for the embedded chunks of a page, in bytes of base64 text."""


def _json_for_script(value: Any) -> str:
    # "<" as \u003c keeps "</script" and "<!--" out of the element; still valid JSON.
    return json.dumps(value, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def _js_for_script(code: str) -> str:
    # Inside JS strings and regexes "<\/" means "</", so the element cannot end early.
    return code.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")


def page_html(
    trace_or_widget: AttentionTrace | AttentionComparison | ShownWidget,
    *,
    views: Sequence[ViewName] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    keys: Sequence[str] | None = None,
    encode: Encoder = encode_chunk,
    qk_dtype: str = "float16",
) -> str:
    """Render the exported page as a string (what :func:`save_html` writes).

    ``keys`` and ``encode`` go to :func:`embed_chunks` (a notebook snapshot
    embeds only the current view's chunks, made through the widget's cache).

    Examples
    --------
    >>> import numpy as np
    >>> trace = AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32))
    >>> page = page_html(trace, views=("model",))
    >>> page.startswith("<!doctype html>"), "https://" in page, '"views":["model"]' in page
    (True, False, True)
    """
    check_max_bytes(max_bytes)
    check_qk_dtype(qk_dtype)
    trace, state, offered, compared = _trace_and_state(trace_or_widget)
    shown = offered if views is None else check_views(views)
    check_image_view(shown, None if compared is not None else trace)
    if state["view"] not in shown and isinstance(trace_or_widget, AttentionTrace):
        state = default_selection(trace, shown[0])  # the neuron view opens on a stream with q/k
    elif state["view"] not in shown:
        state["view"] = shown[0]
    if encode is encode_chunk:  # a widget ranked by a scan adds its statistics (scan=)
        encode = getattr(trace_or_widget, "_page_encode", encode_chunk)
    css = static_file("widget.css").read_text(encoding="utf-8")
    script = static_file("page_loader.js").read_text(encoding="utf-8")
    code = packed_code(code_texts("page", view_units(shown, comparison=compared is not None)))
    own = getattr(trace_or_widget, "_page_keys", None)  # a widget's segments= chunks
    first = own(shown) if own is not None and keys is None and compared is None else []
    chunks, notes = embed_chunks(
        trace,
        state,
        max_bytes,
        shown,
        compared,
        keys=keys,
        encode=encode,
        qk_dtype=qk_dtype,
        first=first,
    )
    # The neuron view's why panel: the pairs split in the notebook (not the trace's chunks).
    why_chunks, why_notes = page_why(trace_or_widget, max_bytes) if "neuron" in shown else ({}, [])
    # Weighting by value norm (value_weighted): the layers' vnorm: chunks, when the trace has them.
    value_chunks, value_notes = (
        page_value_chunks(trace, shown, state["stream"], state["layer"], max_bytes)
        if compared is None
        else ({}, [])
    )
    notes = [*notes, *why_notes, *value_notes]
    meta = page_meta(trace, chunks, shown, notes=notes, compared=compared)
    chunks = {**chunks, **why_chunks, **value_chunks}
    shown_meta = getattr(trace_or_widget, "_meta", None)
    if compared is None and isinstance(shown_meta, dict):
        if "statistics" in shown_meta:
            meta["statistics"] = shown_meta["statistics"]  # with a widget's scan= statistics
        if shown_meta.get("segments"):
            meta["segments"] = shown_meta["segments"]  # a widget's segments=
    title = html.escape(f"attnscope · {meta['title']}")
    style = css.replace("</style", "<\\/style")
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n<style>\n{style}\n</style>\n"
        "</head>\n<body>\n"
        '<div id="attnscope-root" class="attnscope-page"></div>\n'
        '<script type="application/json" id="attnscope-state">'
        f"{_json_for_script({**state, '_meta': meta})}</script>\n"
        '<script type="application/json" id="attnscope-chunks">'
        f"{_json_for_script(chunks)}</script>\n"
        '<script type="application/json" id="attnscope-code">'
        f"{_json_for_script(code)}</script>\n"
        f"<script>\n{_js_for_script(script)}\n</script>\n</body>\n</html>\n"
    )


def check_max_bytes(max_bytes: object) -> None:
    """``max_bytes`` is a positive, finite number of bytes (an int, or a float such as ``2e7``).

    Examples
    --------
    >>> check_max_bytes(None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeTypeError: max_bytes must be a number of bytes (such as ...
    """
    if (
        not isinstance(max_bytes, int | float)
        or isinstance(max_bytes, bool)
        or not math.isfinite(max_bytes)
    ):
        raise AttnscopeTypeError(
            f"max_bytes must be a number of bytes (such as 20_000_000); got {max_bytes!r}. "
            f"Leave it out for the default of {DEFAULT_MAX_BYTES:_} bytes; there is no "
            "unlimited setting, pass a large number to embed everything."
        )
    if max_bytes <= 0:
        raise AttnscopeError(
            f"max_bytes={max_bytes} must be positive: it is the budget in bytes for the "
            f"attention data the page embeds (default {DEFAULT_MAX_BYTES:_})."
        )


def page_path(path: str | Path) -> Path:
    """The file :func:`save_html` writes for ``path``: ``.html`` added when it has no suffix.

    Examples
    --------
    >>> page_path("attention").name
    'attention.html'
    >>> import tempfile
    >>> page_path(tempfile.mkdtemp())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: ... is a folder; pass a file name such as ...
    """
    given = Path(path)
    if given.is_dir():
        raise AttnscopeError(
            f"{str(given)!r} is a folder; pass a file name such as "
            f"{str(given / 'attention.html')!r} to write the page into it."
        )
    out = given if given.suffix else given.with_suffix(".html")
    if out.is_dir():
        raise AttnscopeError(
            f"{str(out)!r} is a folder, so the page cannot be written there; pass another "
            "file name."
        )
    return out


def _trace_and_state(
    source: AttentionTrace | AttentionComparison | ShownWidget,
) -> tuple[AttentionTrace, dict[str, Any], tuple[ViewName, ...], ComparisonChunks | None]:
    if isinstance(source, AttentionTrace):
        return source, default_selection(source), views_of(source), None
    if isinstance(source, AttentionComparison):
        compared = ComparisonChunks(source)
        state = {**default_selection(compared.a), "compare_side": "diff"}
        return compared.a, state, views_of(None), compared
    trace = getattr(source, "trace", None)
    if not isinstance(trace, AttentionTrace):
        raise AttnscopeTypeError(
            f"save_html takes an AttentionTrace, an AttentionComparison or an "
            f"AttentionWidget, not {type(source).__name__}; build a trace with "
            "attnscope.capture(...) or AttentionTrace.from_tensors(...)."
        )
    # A widget (duck-typed: this module sits below the widget class) keeps its selection.
    state = {name: getattr(source, name) for name in default_selection(trace)}
    state["heads"] = list(state["heads"])
    comparison = getattr(source, "comparison", None)
    sides = None if comparison is None else ComparisonChunks(comparison)
    return trace, state, tuple(source.views), sides


def save_html(
    trace_or_widget: AttentionTrace | AttentionComparison | ShownWidget,
    path: str | Path,
    *,
    views: Sequence[ViewName] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    qk_dtype: str = "float16",
) -> Path:
    """Write one self-contained, offline, interactive HTML page; return its path.

    Parameters
    ----------
    trace_or_widget
        An :class:`~attnscope.AttentionTrace`, an
        :class:`~attnscope.AttentionComparison` (the page opens on ``A − B``
        and toggles A / B / A − B like the widget), or an
        :class:`~attnscope.AttentionWidget` (its current view and selection are kept).
    path
        File to write; ``.html`` is added when there is no suffix.
    views
        The views the page offers, from ``"head"``, ``"model"`` and
        ``"neuron"``, in tab order; only the chunks they need are embedded
        (head: top keys of every layer; model: thumbnails, plus full-resolution
        weights for its hover preview; neuron: q/k and full-resolution weights).
        ``None``: the widget's views, or all three for a trace. A page whose
        widget was on a view not listed opens on the first one listed.
    max_bytes
        Budget for the embedded attention data. Everything is embedded when it
        fits; otherwise thumbnails and the current layer come first and
        ``_meta.notes`` (shown on the page) says what was left out.
    qk_dtype
        How the neuron view's query and key vectors travel: ``"float16"``
        (default; half the bytes, each value within 2^-11 of itself, and the
        view's check against the model's weights widens by what that rounding
        can move a weight) or ``"float32"`` (the vectors exactly as recorded).

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> from attnscope import AttentionTrace, save_html
    >>> trace = AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> save_html(trace, os.path.join(tempfile.mkdtemp(), "attention")).name
    'attention.html'
    >>> save_html(trace, os.path.join(tempfile.mkdtemp(), "head.html"), views=("head",)).name
    'head.html'
    >>> from attnscope import compare
    >>> save_html(compare(trace, trace), os.path.join(tempfile.mkdtemp(), "ab.html")).name
    'ab.html'
    """
    out = page_path(path)
    page = page_html(trace_or_widget, views=views, max_bytes=max_bytes, qk_dtype=qk_dtype)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
