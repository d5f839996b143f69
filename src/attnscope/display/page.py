"""One self-contained HTML file that opens from disk, offline, and stays interactive.

The page (``docs/protocol.md``, "The exported page") inlines the CSS, the
``static/standalone.js`` bundle, the trait values with ``_meta``, and the
chunks, each deflate-raw compressed and base64 encoded. Nothing is fetched:
there is no URL in the file.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnscope._progress import progress
from attnscope._static import static_file
from attnscope.analysis.compare import AttentionComparison
from attnscope.encode.arrays import NamedArray
from attnscope.encode.chunks import all_keys, encode_chunk, parse_key
from attnscope.encode.comparison import ComparisonChunks
from attnscope.encode.from_logits import layer_top_keys
from attnscope.encode.keys import ChunkKey, bare_key, kind_of, qk_key, read_key, split_side
from attnscope.encode.meta import build_meta, stream_top_block, stream_top_k
from attnscope.encode.pack import HALF_ARRAYS, pack_chunk
from attnscope.encode.selection import (
    VIEWS,
    ViewName,
    check_image_view,
    check_views,
    default_selection,
    views_of,
)
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionStream, AttentionTrace

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


Encoder = Callable[[AttentionTrace, ChunkKey], list[NamedArray]]
"""Makes a chunk's arrays: :func:`~attnscope.encode.chunks.encode_chunk` or a cache's ``encode``."""


def embed_chunks(
    trace: AttentionTrace,
    state: Mapping[str, Any],
    max_bytes: int,
    views: Sequence[ViewName] = VIEWS,
    compared: ComparisonChunks | None = None,
    *,
    keys: Sequence[str] | None = None,
    encode: Encoder = encode_chunk,
    qk_dtype: str = "float16",
    first: Sequence[str] = (),
) -> tuple[dict[str, Any], list[str]]:
    """Pack the chunks ``views`` need, in order of need, until ``max_bytes`` is reached.

    The page holds a prefix of :func:`~attnscope.encode.chunks.all_keys` for
    ``views`` (thumbnails, then the current layer, then layers outward from
    it), or of ``keys`` when given: the first chunk that does not fit ends
    it, so nothing past it is encoded. Returns the packed chunks by key and
    notes naming what was left out. With ``compared`` the chunks are the
    comparison's sides, interleaved
    (:meth:`~attnscope.encode.comparison.ComparisonChunks.all_keys`).
    ``qk_dtype`` is how the neuron view's q and k travel (:func:`save_html`).
    Streams that :func:`derived_streams` picks hold ``qk:`` chunks (with each
    row's largest weight, to check against) in place of ``top:`` and ``attn:``.
    ``first`` are a widget's own chunks (its ``segments=``), packed before the trace's.
    """
    half = HALF_ARRAYS if _check_qk_dtype(qk_dtype) == "float16" else ()
    stream, layer = str(state["stream"]), int(state["layer"])
    if keys is not None or compared is not None:
        if keys is None and compared is not None:
            keys = compared.all_keys(stream=stream, layer=layer, views=views)
        return _embed(
            trace,
            list(keys or ()),
            max_bytes,
            compared=compared,
            encode=encode,
            half=half,
            derived=set(),
        )[:2]
    derived = derived_streams(trace, views, max_bytes, half=bool(half))
    planned = [*first, *all_keys(trace, stream=stream, layer=layer, views=views, derived=derived)]
    packed, notes, complete = _embed(
        trace, planned, max_bytes, compared=None, encode=encode, half=half, derived=derived
    )
    if derived and not complete:  # the q/k outgrew the estimate: the usual page instead
        standard = [*first, *all_keys(trace, stream=stream, layer=layer, views=views)]
        return _embed(
            trace, standard, max_bytes, compared=None, encode=encode, half=half, derived=set()
        )[:2]
    return packed, notes


DERIVE_SHARE = 0.5
"""Share of a page's budget the ``qk:`` chunks of streams that derive may take."""


def derived_streams(
    trace: AttentionTrace, views: Sequence[ViewName], max_bytes: float, *, half: bool = True
) -> set[str]:
    """Streams whose page computes ``top:`` and ``attn:`` from ``qk:`` (protocol.md).

    A page with the neuron view holds every head's q and k anyway; at one
    byte per weight the ``top:`` and ``attn:`` chunks repeat what they say
    (and grow as N²: at 4000 tokens one head's weights are 16 MB, its q and
    k a few hundred kB). A stream derives when it keeps q and k and its q/k
    (estimated before encoding) fit in :data:`DERIVE_SHARE` of the budget,
    whatever its length: the head view asks for blocks of rows
    (:func:`derive_block`), so the browser computes a screenful at a time.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> q = np.ones((2, 4, 8, 16), np.float32)
    >>> sorted(derived_streams(AttentionTrace(["a"] * 8, None, queries=q, keys=q), VIEWS, 5e7))
    ['self']
    >>> derived_streams(AttentionTrace(["a"] * 8, None, queries=q, keys=q), ("head",), 5e7)
    set()
    """
    if "neuron" not in check_views(views):
        return set()
    chosen: set[str] = set()
    budget = DERIVE_SHARE * max_bytes
    for name, s in trace.streams.items():
        if not s.has_qk or s.head_dim is None:
            continue
        per_head = (2 if half else 4) * (s.q_len + s.k_len) * s.head_dim + 4 * s.q_len
        if s.bias is not None:
            per_head += 4 * s.q_len * s.k_len
        estimate = per_head * s.num_heads * s.num_layers * 4 / 3  # base64
        if estimate <= budget:
            chosen.add(name)
            budget -= estimate
    return chosen


DERIVE_BLOCK_SCORES = 2**24
"""Most q·k multiply-adds of one block of query rows a derived page computes for the
head view (12 heads of size 32 at 512 tokens: 64 rows, about 40 ms)."""


def derive_block(stream: AttentionStream) -> int | None:
    """Query rows per ``top:`` block a page that derives offers the head view, or None.

    The head view asks for the blocks of the rows it draws, so a layer
    switch computes a screenful of rows, not the layer. None (whole layers)
    when one block would hold every row.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> long, short = np.zeros((1, 12, 512, 32), np.float32), np.zeros((1, 12, 64, 32), np.float32)
    >>> derive_block(AttentionStream(queries=long, keys=long))
    64
    >>> print(derive_block(AttentionStream(queries=short, keys=short)))
    None
    """
    per_row = stream.num_heads * stream.k_len * (stream.head_dim or 1)
    rows = max(1, DERIVE_BLOCK_SCORES // max(per_row, 1))
    block = max(MIN_DERIVE_BLOCK, 1 << (rows.bit_length() - 1))
    return block if block < stream.q_len else None


MIN_DERIVE_BLOCK = 16
"""Fewest query rows of a derived page's ``top:`` block."""


def _offered_blocks(trace: AttentionTrace, chunks: Mapping[str, Any]) -> dict[str, int | None]:
    """``top_block`` of each stream whose ``top:`` the page offers in blocks of rows.

    A stream whose ``qk:`` chunks carry row maxima is computed in the page
    (:func:`derive_block` rows a block); one whose ``top:`` chunks the page
    holds as blocks (a snapshot's first rows of a long layer) has Python's.
    """
    offered: dict[str, int | None] = {}
    for key, chunk in chunks.items():
        if split_side(key) is not None:
            continue  # a comparison's sides hold whole layers
        parsed = read_key(key)
        kind, name = parsed.kind, parsed.stream
        if kind == "qk" and any(a["name"] == "rowmax" for a in chunk.get("arrays", ())):
            offered[name] = derive_block(trace.streams[name])
        elif kind == "top" and parsed.first_row is not None:
            offered[name] = stream_top_block(trace.streams[name])
    return offered


def qk_missing(trace: AttentionTrace, chunks: Mapping[str, Any]) -> dict[str, list[list[int]]]:
    """Per stream that keeps q/k and left some out: for each layer position, the heads without them.

    The neuron view's head picker marks those heads (``_meta.streams[s].qk_missing``).

    Examples
    --------
    >>> import numpy as np
    >>> q = np.ones((2, 2, 3, 4), np.float32)
    >>> trace = AttentionTrace(["a"] * 3, None, queries=q, keys=q)
    >>> qk_missing(trace, {"qk:self:0:0": {}, "qk:self:0:1": {}, "qk:self:1:1": {}})
    {'self': [[], [0]]}
    """
    out: dict[str, list[list[int]]] = {}
    for name, s in trace.streams.items():
        if not s.has_qk:
            continue
        heads = [
            [h for h in range(s.num_heads) if qk_key(name, p, h) not in chunks]
            for p in range(s.num_layers)
        ]
        if any(heads):
            out[name] = heads
    return out


def _embed(
    trace: AttentionTrace,
    keys: list[str],
    max_bytes: int,
    *,
    compared: ComparisonChunks | None,
    encode: Encoder,
    half: Any,
    derived: set[str],
) -> tuple[dict[str, Any], list[str], bool]:
    """Pack ``keys`` in order until ``max_bytes``; also says whether every key fit."""
    # A page that derives every top: chunk has none to cut (and would encode a pseudo: twice).
    has_top = any(_kind(k) == "top" for k in keys)
    made: dict[str, list[NamedArray]] = {}  # the chunk the estimate encoded, not encoded twice
    slots = (
        _head_slots(trace, keys, encode, max_bytes, half, made=made)
        if has_top and not compared
        else None
    )
    packed: dict[str, Any] = {}
    left_out: list[str] = []
    used = 0
    rowmax: dict[tuple[str, int], Any] = {}
    with progress(len(keys), "attnscope page", unit="chunk") as bar:
        for i, key in enumerate(keys):
            if compared:
                arrays = compared.encode(key)
            else:
                parsed = parse_key(key, trace)
                arrays = made.pop(key) if key in made else encode(trace, parsed)
                if parsed.kind == "qk" and parsed.stream in derived:
                    arrays = [*arrays, ("rowmax", _row_maxima(trace, parsed, rowmax))]
            if slots is not None and _kind(key) in ("top", "pseudo"):
                arrays = _fewer_slots(arrays, slots)
            chunk = pack_chunk(arrays, half=half)
            size = len(chunk["data"]) + 200
            if used + size > max_bytes:
                left_out = keys[i:]
                break
            packed[key] = chunk
            used += size
            bar.update(1)
    notes = []
    if slots is not None:
        notes.append(
            f"To hold every layer within {max_bytes / 1e6:g} MB, the head view keeps each "
            f"query's {slots} strongest keys (the widget sends {_slots_of(trace, keys)}); save "
            "with save_html(..., views=('head',)) or a larger max_bytes for more."
        )
    if left_out:
        notes.append(_left_out_note(trace, keys, left_out, max_bytes))
    return packed, notes, not left_out


def _row_maxima(trace: AttentionTrace, key: ChunkKey, cache: dict[tuple[str, int], Any]) -> Any:
    """The largest weight of each query row of ``key``'s head, f32 ``(Q,)``: the page's check."""
    assert key.layer is not None  # a qk: key names its layer
    assert key.head is not None  # and its head
    at = (key.stream, key.layer)
    if at not in cache:
        cache.clear()  # one layer at a time: the page walks layer by layer
        cache[at] = layer_top_keys(trace.streams[key.stream], key.layer, 1)[2]
    return cache[at][key.head]


def _kind(key: str) -> str | None:
    """The kind of a key of one trace; None for a comparison's side keys (never cut)."""
    return None if split_side(key) is not None else kind_of(key)


HEAD_SHARE = 0.5
"""Share of a page's budget the head view's ``top:``/``pseudo:`` chunks may take before
they keep fewer keys per query, so that every layer fits."""
MIN_SLOTS = 4
"""Fewest keys per query a page's head view keeps."""


def _slots_of(trace: AttentionTrace, keys: list[str]) -> int:
    first = next(k for k in keys if _kind(k) == "top")
    return stream_top_k(trace.streams[read_key(first).stream])


def _head_slots(
    trace: AttentionTrace,
    keys: list[str],
    encode: Encoder,
    max_bytes: float,
    half: Any,
    *,
    made: dict[str, list[NamedArray]],
) -> int | None:
    """Keys per query the page's ``top:`` chunks keep, or None for all of them.

    The first ``top:`` chunk is packed to estimate all of them (its arrays
    are left in ``made`` for the page); when they would pass
    :data:`HEAD_SHARE` of the budget, fewer slots (a power of two, at
    least :data:`MIN_SLOTS`) are kept: the strongest keys come first, so the
    first slots of a row are its strongest.
    """
    heads = [k for k in keys if _kind(k) in ("top", "pseudo")]
    if len(heads) < 2:
        return None
    arrays = made[heads[0]] = encode(trace, parse_key(heads[0], trace))
    names = [name for name, _ in arrays]
    if "index" not in names:
        return None  # every key in key order: nothing to cut
    slots = int(dict(arrays)["index"].shape[-1])
    estimate = (len(pack_chunk(arrays, half=half)["data"]) + 200) * len(heads)
    if estimate <= HEAD_SHARE * max_bytes:
        return None
    fit = slots * HEAD_SHARE * max_bytes / estimate
    return max(MIN_SLOTS, 1 << max(0, int(fit).bit_length() - 1))


def _fewer_slots(arrays: list[NamedArray], slots: int) -> list[NamedArray]:
    """A ``top:`` chunk's arrays keeping the first ``slots`` keys of each row."""
    if not any(name == "index" for name, _ in arrays):
        return arrays
    return [(n, a[..., :slots] if n in ("index", "weight") else a) for n, a in arrays]


def _left_out_note(
    trace: AttentionTrace, keys: list[str], left_out: list[str], max_bytes: float
) -> str:
    """What each view misses, and how to get it."""
    missing: list[str] = []
    views: list[str] = []
    counts = {kind: sum(_kind(k) == kind for k in keys) for kind in _KIND_VIEW}
    for kind, (view, what) in _KIND_VIEW.items():
        gone = [k for k in left_out if _kind(k) == kind]
        if gone:
            where = _layers_of(trace, gone) if kind in ("qk", "attn", "top", "pseudo") else ""
            missing.append(
                f"{view} view: {what} of {len(gone)} of {counts[kind]} {_UNIT[kind]}{where}"
            )
            if view not in views:
                views.append(view)
    chosen = ", ".join(repr(v) for v in views)
    return (
        f"To keep the page under {max_bytes / 1e6:g} MB, these were left out: "
        f"{'; '.join(missing)}. "
        "Views show a message where data is missing. To include them, save with "
        f"save_html(..., views=({chosen},), max_bytes=...) (a larger budget), or capture "
        "fewer layers (attnscope.capture(..., layers=[...]))."
    )


def _layers_of(trace: AttentionTrace, keys: list[str]) -> str:
    """`` (layers 2, 3)``: the model's layers that ``keys`` (``kind:stream:position...``) are of."""
    parsed = [read_key(bare_key(k)) for k in keys]
    numbers = sorted({trace.streams[p.stream].layers[p.layer or 0] for p in parsed})
    return f" (layer{'s' * (len(numbers) > 1)} {', '.join(map(str, numbers))})"


_KIND_VIEW = {
    "thumbs": ("model", "thumbnails"),
    "stats": ("model", "statistics"),
    "top": ("head", "lines"),
    "pseudo": ("head", "pseudo-heads"),
    "qk": ("neuron", "q/k"),
    "attn": ("neuron", "weights (and the model view's hover preview)"),
}
_UNIT = {
    "thumbs": "streams",
    "stats": "streams",
    "top": "layers",
    "pseudo": "layers",
    "qk": "heads",
    "attn": "heads",
}


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
    _check_qk_dtype(qk_dtype)
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
    script = static_file("standalone.js").read_text(encoding="utf-8")
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
    if compared is None:
        meta = build_meta(trace, embedded=True, notes=tuple(notes))
        shown_meta = getattr(trace_or_widget, "_meta", None)
        if isinstance(shown_meta, dict) and "statistics" in shown_meta:
            meta["statistics"] = shown_meta["statistics"]  # with a widget's scan= statistics
        if isinstance(shown_meta, dict) and shown_meta.get("segments"):
            meta["segments"] = shown_meta["segments"]  # a widget's segments=
        for name, block in _offered_blocks(trace, chunks).items():
            meta["streams"][name]["top_block"] = block
        if "neuron" in shown:
            for name, missing in qk_missing(trace, chunks).items():
                meta["streams"][name]["qk_missing"] = missing
    else:
        meta = compared.meta(embedded=True, notes=tuple(notes))
    meta["views"] = list(shown)
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
        f"<script>\n{_js_for_script(script)}\n</script>\n</body>\n</html>\n"
    )


def _check_qk_dtype(qk_dtype: object) -> str:
    if qk_dtype not in ("float16", "float32"):
        raise AttnscopeError(
            f"qk_dtype={qk_dtype!r} is not a precision the page can send q and k in; use "
            "'float16' (the default: half the bytes, within 0.05% of each value) or "
            "'float32' (exact)."
        )
    return str(qk_dtype)


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
