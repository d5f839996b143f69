"""What a saved notebook shows of a widget when no kernel is there to serve it.

A notebook output holds a widget as a reference to a live model. Opened
without a kernel (nbconvert's HTML, GitHub, a reopened file) that reference
leads nowhere, and the viewer falls back to the output's other mime types.
:func:`snapshot_bundle` gives it two: ``text/html`` with the current view as
a small self-contained page in an iframe (the exported page of
:mod:`attnscope.display.page`, one view, its data capped at
:data:`SNAPSHOT_BYTES`), and ``text/plain`` saying what the output is. A live
notebook ranks the widget's own mime type first, so nothing shows twice. An
untrusted notebook in JupyterLab shows the ``text/html`` sanitized, without
the frame: the frame's fallback text (:func:`undrawn_text`) says why and what
to do.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from attnscope.display.page import page_html
from attnscope.encode.embed import embed_chunks
from attnscope.encode.plan import HEAD_ROW_PX, Shown, shown_keys
from attnscope.errors import AttnscopeError
from attnscope.trace.label_text import isolate

if TYPE_CHECKING:
    from attnscope.display.shown import ShownWidget
    from attnscope.encode.selection import ViewName

SNAPSHOT_BYTES = 2_000_000
"""Most bytes of attention data (base64 text) one snapshot embeds.

The code of the one view it shows and the CSS add 57-75 kB (``display/page.py``).
"""

SMALL_SNAPSHOT_BYTES = 150_000
"""The data cap of ``set_snapshots("small")``: the current view's first screen, roughly."""

SNAPSHOT_MODES = ("view", "small", "none")
_mode = ["view"]  # the session's choice (set_snapshots)


def set_snapshots(mode: str) -> str:
    """How much of each widget an output keeps for kernel-less viewers; returns the old mode.

    Each attnscope output carries a snapshot (``text/html``): its current view
    as a small self-contained page, drawn by nbconvert, a reopened notebook or
    ``attnscope share --snapshots`` without a kernel. It is the bulk of a
    notebook's size (0.2 MB for a 22-token head view, 1.2 MB at 512 tokens).

    Parameters
    ----------
    mode
        ``"view"`` (default): the current view with up to 2 MB of its data.
        ``"small"``: the current view with up to 150 kB of data (its first
        screen: the layer shown; other layers say a kernel brings them).
        ``"none"``: no snapshot, a line of text only; a kernel-less render then
        comes from the saved widget state (``attnscope share``), not from the
        output. Applies to widgets displayed from then on.

    Examples
    --------
    >>> set_snapshots("small")
    'view'
    >>> set_snapshots("view")
    'small'
    """
    if mode not in SNAPSHOT_MODES:
        raise AttnscopeError(
            f"set_snapshots({mode!r}): the mode is one of {list(SNAPSHOT_MODES)} "
            "('view': the current view, 'small': its first screen, 'none': text only)."
        )
    old, _mode[0] = _mode[0], mode
    return old


SAVED_STATE_BYTES = 1_000_000
"""Most bytes of attention data (base64 text) the widget's saved state holds (``_saved``)."""

SNAPSHOT_HEIGHT_PX = 620
"""Most height of the snapshot's frame; the view scrolls inside it when it is taller."""

_HEAD_ROW_PX, _HEAD_CHROME_PX = 18, 110  # the head view's token rows and its bars above them
# The head view's height and the rows it draws past each edge (js/views/head/head_lines.ts:
# MAX_VIEW_H, OVERSCAN): its first draw reads the rows of that much.
_HEAD_VIEW_PX, _HEAD_OVERSCAN = 560, 4


def snapshot_text(widget: ShownWidget) -> str:
    """One line saying what the widget shows and how to get it back.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, AttentionWidget
    >>> w = AttentionWidget(AttentionTrace(["a", "b"], np.full((2, 4, 2, 2), 0.5, np.float32)))
    >>> print(snapshot_text(w))  # doctest: +ELLIPSIS
    attnscope AttentionWidget: head view, ... 2 tokens, layer 0 ...; re-run the cell ...
    """
    return (
        f"attnscope AttentionWidget: {_what_it_shows(widget)}; re-run the cell to interact "
        "(or widget.save_html(path) for an offline page)."
    )


def undrawn_text(widget: ShownWidget) -> str:
    """What the snapshot says where a sanitizer removed its frame: why nothing is drawn.

    JupyterLab and Notebook 7 show an untrusted notebook's outputs (one run by
    nbclient or received from someone, then opened) as sanitized HTML, without
    scripts and frames; GitHub does the same to every notebook. The text sits
    inside the snapshot's ``<iframe>`` as its fallback content, which a browser
    never shows where the frame is kept (and draws), and which the sanitizer
    leaves when it drops the frame.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, AttentionWidget
    >>> w = AttentionWidget(AttentionTrace(["a", "b"], np.full((2, 4, 2, 2), 0.5, np.float32)))
    >>> print(undrawn_text(w))  # doctest: +ELLIPSIS
    This attention view is not drawn here (attnscope AttentionWidget: head view, ... layer 0 ...
    """
    return (
        f"This attention view is not drawn here (attnscope AttentionWidget: "
        f"{_what_it_shows(widget)}): this viewer shows the output without its scripts, as "
        "JupyterLab does for a notebook it does not trust. In JupyterLab or Notebook 7, trust "
        "the notebook (command palette: \u201cTrust Notebook\u201d) to draw it from the "
        "notebook's saved widget state, if the notebook holds one, or re-run the cell."
    )


def _what_it_shows(widget: ShownWidget) -> str:
    trace = widget.trace
    stream = trace.streams[widget.stream]
    metadata = trace.metadata  # the model's own name ("all-MiniLM-L6-v2"), not its family ("bert")
    model = (
        metadata.get("display_name")
        or metadata.get("model_type")
        or metadata.get("source")
        or "trace"
    )
    return (  # the model's name is its card's or its folder's: isolated in our sentence
        f"{widget.view} view, {isolate(str(model))}, "
        f"{stream.num_layers} layers x {stream.num_heads} heads, {len(trace.source)} tokens, "
        f"layer {widget.layer} of stream {widget.stream!r}"
    )


def snapshot_html(widget: ShownWidget, *, max_bytes: int = SNAPSHOT_BYTES) -> str:
    """The widget's current view as an iframe holding a self-contained page.

    The page is :func:`~attnscope.display.page.page_html` for the current
    view only, with at most ``max_bytes`` of data (the current layer first);
    it runs from the notebook file with no kernel and no network. Where a
    sanitizer removes the frame, its content is left: :func:`undrawn_text`.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, AttentionWidget
    >>> w = AttentionWidget(AttentionTrace(["a", "b"], np.full((2, 4, 2, 2), 0.5, np.float32)))
    >>> frame = snapshot_html(w)
    >>> frame.startswith("<iframe"), "https://" in frame, len(frame) < 200_000
    (True, False, True)
    >>> frame.endswith("or re-run the cell.</iframe>")
    True
    """
    page = page_html(
        widget,
        views=(widget.view,),
        max_bytes=max_bytes,
        # A comparison's chunks are keyed by side: its page order, within the cap.
        keys=None if widget.comparison is not None else _shown_keys(widget),
        # Through the widget's cache: the browser asks for these same chunks first.
        encode=widget.chunk_cache.encode,
    )
    title = html.escape(snapshot_text(widget), quote=True)
    # The frame's content is never shown where the frame is kept; a sanitizer that drops
    # the frame (JupyterLab's, for an untrusted notebook) keeps it: plain text, no markup,
    # as a parser that reads a frame's content as raw text would show tags literally.
    return (
        f'<iframe class="attnscope-snapshot" title="{title}" '
        f'style="width: 100%; height: {_frame_height(widget)}px; border: 0" '
        f'srcdoc="{html.escape(page, quote=True)}">'
        f"{html.escape(undrawn_text(widget), quote=False)}</iframe>"
    )


def saved_chunks(widget: ShownWidget, *, max_bytes: int = SAVED_STATE_BYTES) -> dict[str, Any]:
    """The chunks of the widget's current view, packed as the exported page packs them.

    The widget's ``_saved`` trait holds them, so a notebook saved with its
    widget state (nbclient, papermill, "Save Widget State") draws its first
    screen in any kernel-less widget manager (nbconvert, nbviewer, docs
    builds). Deflate-raw compressed base64 text, never binary buffers (Colab
    drops those from a widget's initial state); at most ``max_bytes``, the
    current layer first (``docs/protocol.md``, "Saved widget state").

    Never empty for a shown view: when the current view's first chunk alone
    is larger than ``max_bytes`` (the neuron view's q and k of a long input),
    the state holds a smaller first screen instead, that of another view the
    widget offers (the model view's thumbnails and overview tile, or the
    overview tile alone), and the front end's note says what it holds.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, AttentionWidget
    >>> w = AttentionWidget(AttentionTrace(["a", "b"], np.full((2, 4, 2, 2), 0.5, np.float32)))
    >>> sorted(saved_chunks(w)), sorted(saved_chunks(w)["top:self:0"])
    (['top:self:0'], ['arrays', 'data'])
    >>> sorted(saved_chunks(w, max_bytes=230))  # no room for the head view's: the model view's
    ['thumbs:self']
    """
    comparison = widget.comparison
    state = {"stream": widget.stream, "layer": widget.layer}
    packed, _ = embed_chunks(
        widget.trace,
        state,
        max_bytes,
        (widget.view,),
        None if comparison is None else widget.compared_chunks,
        keys=None if comparison is not None else _shown_keys(widget),
        encode=widget.chunk_cache.encode,
    )
    if packed or "model" not in widget.views:
        return packed
    if comparison is not None:  # the model view's thumbnails of A − B, A and B first
        return embed_chunks(widget.trace, state, max_bytes, ("model",), widget.compared_chunks)[0]
    for keys in _smaller_first_screens(widget):
        packed, _ = embed_chunks(
            widget.trace, state, max_bytes, keys=keys, encode=widget.chunk_cache.encode
        )
        if packed:
            return packed
    return packed


def _smaller_first_screens(widget: ShownWidget) -> list[list[str]]:
    """First screens to save, smallest last, when the current view's does not fit.

    The model view's (its thumbnails and the head's overview tile), then the
    overview tile alone: 256 x 256 bytes at most, whatever the input's length.
    """
    model = _shown_keys(widget, view="model")
    return [model, [model[-1]]]


def _shown_keys(widget: ShownWidget, view: ViewName | None = None) -> list[str]:
    # The plan (encode/plan.py) of what the current view (or `view`) draws first.
    view = widget.view if view is None else view
    own = getattr(widget, "_page_keys", None)  # segments=, or collapsed images
    rows = own is not None and view == "head" and getattr(widget, "segment_rows", True)
    shown = Shown(
        view=view,
        stream=widget.stream,
        layer=widget.layer,
        head=widget.head,
        query=widget.query,
        pseudo_heads=bool(widget.pseudo_heads),
        generated_only=bool(widget.generated_only),
        rank_by=widget.rank_by or None,
        segment_keys=tuple(own(("head",))) if own is not None and rows else (),
    )
    return shown_keys(widget.trace, shown)


def _frame_height(widget: ShownWidget) -> int:
    # A frame cannot follow its content's height without a script in the host page,
    # which GitHub and JupyterLab strip: the head view's height is known from its rows.
    if widget.view != "head":
        return SNAPSHOT_HEIGHT_PX
    stream = widget.trace.streams[widget.stream]
    rows = max(stream.q_len, stream.k_len)
    return min(SNAPSHOT_HEIGHT_PX, _HEAD_CHROME_PX + HEAD_ROW_PX * rows)


def snapshot_bundle(widget: ShownWidget) -> dict[str, str]:
    """``text/html`` and ``text/plain`` for the widget's mime bundle.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, AttentionWidget
    >>> w = AttentionWidget(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)))
    >>> sorted(snapshot_bundle(w))
    ['text/html', 'text/plain']
    """
    mode = _mode[0]
    if mode == "none":
        return {"text/plain": snapshot_text(widget)}
    cap = SMALL_SNAPSHOT_BYTES if mode == "small" else SNAPSHOT_BYTES
    return {"text/html": snapshot_html(widget, max_bytes=cap), "text/plain": snapshot_text(widget)}
