"""One self-contained HTML file that opens from disk, offline, and stays interactive.

The page (``docs/protocol.md``, "The exported page") inlines the CSS, the
``static/standalone.js`` bundle, the trait values with ``_meta``, and the
chunks, each deflate-raw compressed and base64 encoded. Nothing is fetched:
there is no URL in the file.
"""

from __future__ import annotations

import base64
import html
import json
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnscope.chunks import (
    VIEWS,
    ViewName,
    all_keys,
    check_views,
    encode_chunk,
    little_endian_bytes,
    parse_key,
)
from attnscope.encode import NamedArray, build_meta, dtype_code
from attnscope.trace import AttentionTrace

if TYPE_CHECKING:
    from attnscope.widget import AttentionWidget

STATIC = Path(__file__).parent / "static"
DEFAULT_MAX_BYTES = 50_000_000
"""Default budget for the embedded chunks of a page, in bytes of base64 text."""
ALIGN = 8


class MissingBundleError(ImportError):
    """The front-end bundle in ``attnscope/static/`` was not built."""


def static_file(name: str) -> Path:
    """Path of a built front-end file, or :class:`MissingBundleError` saying how to build it.

    Examples
    --------
    >>> static_file("widget.js").name
    'widget.js'
    """
    path = STATIC / name
    if not path.is_file():
        raise MissingBundleError(
            f"attnscope's front-end bundle {path} is missing. In a source checkout run "
            "`npm install && npm run build` (or `make build`); otherwise reinstall "
            "attnscope with `pip install --force-reinstall attnscope`."
        )
    return path


def default_state(trace: AttentionTrace) -> dict[str, Any]:
    """Return the trait values a new widget on ``trace`` starts with (head view, all heads).

    Examples
    --------
    >>> import numpy as np
    >>> default_state(AttentionTrace(["a"], np.ones((1, 2, 1, 1), np.float32)))["heads"]
    [0, 1]
    """
    name, stream = next(iter(trace.streams.items()))
    return {
        "view": "head",
        "stream": name,
        "layer": 0,
        "heads": list(range(stream.num_heads)),
        "head": 0,
        "query": None,
        "key": None,
        "pair_filter": "all",
        "theme": "auto",
    }


def pack_chunk(arrays: list[NamedArray]) -> dict[str, Any]:
    """Pack a chunk as the page embeds it: array specs, base64 of deflate-raw of the bytes.

    Each array starts at an 8-byte aligned offset of the concatenated bytes.
    The deflate settings follow the bytes (measured on MiniLM at 512 tokens):
    mostly float32 (q/k vectors) is Huffman-coded only, as LZ77 finds next to
    no repeats in float bytes and would take three times as long for the same
    size; mostly u8 (weights, thumbnails) uses the filtered strategy at level
    5, smaller than the default at level 6 and about 30% faster; the rest
    (top keys with their u16 indices) the default at level 6.

    Examples
    --------
    >>> import numpy as np
    >>> packed = pack_chunk([("a", np.zeros(3, np.uint8)), ("b", np.ones(1, np.float32))])
    >>> [a["dtype"] for a in packed["arrays"]], len(unpack_bytes(packed["data"]))
    (['u8', 'f32'], 12)
    """
    raw = bytearray()
    for _, array in arrays:
        raw += b"\0" * (-len(raw) % ALIGN)
        raw += little_endian_bytes(array)
    deflate = zlib.compressobj(*_deflate_settings(arrays, len(raw)))
    compressed = deflate.compress(bytes(raw)) + deflate.flush()
    return {
        "arrays": [
            {"name": name, "dtype": dtype_code(a.dtype), "shape": list(a.shape)}
            for name, a in arrays
        ],
        "data": base64.b64encode(compressed).decode("ascii"),
    }


def _deflate_settings(arrays: list[NamedArray], total: int) -> tuple[int, int, int, int, int]:
    # (level, method, wbits: -15 is raw deflate, memLevel, strategy)
    floats = sum(a.nbytes for _, a in arrays if a.dtype.kind == "f")
    if 2 * floats > total:
        return 1, zlib.DEFLATED, -15, 8, zlib.Z_HUFFMAN_ONLY
    if 2 * sum(a.nbytes for _, a in arrays if a.dtype.itemsize == 1) > total:
        return 5, zlib.DEFLATED, -15, 8, zlib.Z_FILTERED
    return 6, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY


def unpack_bytes(data: str) -> bytes:
    """Inverse of the page's encoding: base64, then inflate (deflate-raw)."""
    return zlib.decompress(base64.b64decode(data), -15)


def _json_for_script(value: Any) -> str:
    # "<" as \u003c keeps "</script" and "<!--" out of the element; still valid JSON.
    return json.dumps(value, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def _js_for_script(code: str) -> str:
    # Inside JS strings and regexes "<\/" means "</", so the element cannot end early.
    return code.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")


def embed_chunks(
    trace: AttentionTrace,
    state: Mapping[str, Any],
    max_bytes: int,
    views: Sequence[ViewName] = VIEWS,
) -> tuple[dict[str, Any], list[str]]:
    """Pack the chunks ``views`` need, in order of need, until ``max_bytes`` is reached.

    The page holds a prefix of :func:`~attnscope.chunks.all_keys` for
    ``views`` (thumbnails, then the current layer, then layers outward from
    it): the first chunk that does not fit ends it, so nothing past it is
    encoded. Returns the packed chunks by key and notes naming what was left out.
    """
    keys = all_keys(trace, stream=str(state["stream"]), layer=int(state["layer"]), views=views)
    packed: dict[str, Any] = {}
    left_out: list[str] = []
    used = 0
    for i, key in enumerate(keys):
        chunk = pack_chunk(encode_chunk(trace, parse_key(key, trace)))
        size = len(chunk["data"]) + 200
        if used + size > max_bytes:
            left_out = keys[i:]
            break
        packed[key] = chunk
        used += size
    notes = []
    if left_out:
        kinds = sorted({k.split(":")[0] for k in left_out})
        notes.append(
            f"{len(left_out)} of {len(keys)} chunks ({', '.join(kinds)}) were left out to keep "
            f"the page under {max_bytes / 1e6:g} MB, e.g. {', '.join(left_out[:4])}; save "
            "with a larger max_bytes, or fewer layers, to include them."
        )
    return packed, notes


def page_html(
    trace_or_widget: AttentionTrace | AttentionWidget,
    *,
    views: Sequence[ViewName] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> str:
    """Render the exported page as a string (what :func:`save_html` writes).

    Examples
    --------
    >>> import numpy as np
    >>> trace = AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32))
    >>> page = page_html(trace, views=("model",))
    >>> page.startswith("<!doctype html>"), "https://" in page, '"views":["model"]' in page
    (True, False, True)
    """
    trace, state, offered = _trace_and_state(trace_or_widget)
    shown = offered if views is None else check_views(views)
    if max_bytes <= 0:
        raise ValueError(f"max_bytes={max_bytes} must be positive (bytes of embedded data).")
    if state["view"] not in shown:
        state["view"] = shown[0]
    css = static_file("widget.css").read_text(encoding="utf-8")
    script = static_file("standalone.js").read_text(encoding="utf-8")
    chunks, notes = embed_chunks(trace, state, max_bytes, shown)
    meta = {**build_meta(trace, embedded=True, notes=tuple(notes)), "views": list(shown)}
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


def _trace_and_state(
    source: AttentionTrace | AttentionWidget,
) -> tuple[AttentionTrace, dict[str, Any], tuple[ViewName, ...]]:
    if isinstance(source, AttentionTrace):
        return source, default_state(source), VIEWS
    trace = getattr(source, "trace", None)
    if not isinstance(trace, AttentionTrace):
        raise TypeError(
            f"save_html takes an AttentionTrace or an AttentionWidget, not "
            f"{type(source).__name__}; build a trace with attnscope.capture(...) or "
            "AttentionTrace.from_tensors(...)."
        )
    state = {name: getattr(source, name) for name in default_state(trace)}
    state["heads"] = list(state["heads"])
    return trace, state, tuple(source.views)


def save_html(
    trace_or_widget: AttentionTrace | AttentionWidget,
    path: str | Path,
    *,
    views: Sequence[ViewName] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Path:
    """Write one self-contained, offline, interactive HTML page; return its path.

    Parameters
    ----------
    trace_or_widget
        An :class:`~attnscope.AttentionTrace`, or an
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

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> from attnscope import AttentionTrace, save_html
    >>> trace = AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> save_html(trace, os.path.join(tempfile.mkdtemp(), "attention")).name
    'attention.html'
    >>> save_html(trace, os.path.join(tempfile.mkdtemp(), "head.html"), views=("head",)).name
    'head.html'
    """
    page = page_html(trace_or_widget, views=views, max_bytes=max_bytes)
    out = Path(path)
    if not out.suffix:
        out = out.with_suffix(".html")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
