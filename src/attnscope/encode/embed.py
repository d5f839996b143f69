"""Packing a host's plan within its byte budget: the chunks a page, snapshot or saved state holds.

:mod:`attnscope.encode.plan` decides which keys and in which order; this
module encodes and packs them, most needed first, until the budget is
reached, cutting the head view's keys per query when its chunks would take
more than :data:`HEAD_SHARE` of it, and says in notes what was left out
(``docs/protocol.md``, "The exported page").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from attnscope._progress import progress
from attnscope.encode.arrays import NamedArray
from attnscope.encode.chunks import encode_chunk, parse_key
from attnscope.encode.comparison import ComparisonChunks
from attnscope.encode.from_logits import layer_top_keys
from attnscope.encode.keys import ChunkKey, bare_key, kind_of, read_key, split_side
from attnscope.encode.meta import stream_top_k
from attnscope.encode.pack import HALF_ARRAYS, pack_chunk
from attnscope.encode.plan import derived_streams, page_keys
from attnscope.encode.selection import VIEWS, ViewName
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionTrace


class Encoder(Protocol):
    """Makes a chunk's arrays: :func:`~attnscope.encode.chunks.encode_chunk` or a cache's."""

    def __call__(
        self, trace: AttentionTrace, key: ChunkKey, *, top_k: int | None = None
    ) -> list[NamedArray]:
        """The arrays of ``key``'s chunk.

        ``top_k`` asks a ``top:`` chunk for that many keys a row (a page that keeps
        fewer than the widget sends); an encoder may return more (the page cuts them).
        """


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
    half = HALF_ARRAYS if check_qk_dtype(qk_dtype) == "float16" else ()
    stream, layer = str(state["stream"]), int(state["layer"])
    if keys is not None or compared is not None:
        if keys is None:
            keys = page_keys(trace, stream=stream, layer=layer, views=views, compared=compared)
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
    planned = page_keys(
        trace, stream=stream, layer=layer, views=views, derived=derived, first=first
    )
    packed, notes, complete = _embed(
        trace, planned, max_bytes, compared=None, encode=encode, half=half, derived=derived
    )
    if derived and not complete:  # the q/k outgrew the estimate: the usual page instead
        standard = page_keys(trace, stream=stream, layer=layer, views=views, first=first)
        return _embed(
            trace, standard, max_bytes, compared=None, encode=encode, half=half, derived=set()
        )[:2]
    return packed, notes


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
                # The page keeps `slots` keys a row: it asks for those, not the widget's many.
                arrays = made.pop(key) if key in made else encode(trace, parsed, top_k=slots)
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


def check_qk_dtype(qk_dtype: object) -> str:
    """``qk_dtype`` is a precision q and k can travel in: ``"float16"`` or ``"float32"``.

    Examples
    --------
    >>> check_qk_dtype("float32")
    'float32'
    """
    if qk_dtype not in ("float16", "float32"):
        raise AttnscopeError(
            f"qk_dtype={qk_dtype!r} is not a precision the page can send q and k in; use "
            "'float16' (the default: half the bytes, within 0.05% of each value) or "
            "'float32' (exact)."
        )
    return str(qk_dtype)
