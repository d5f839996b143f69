"""How a widget meets a notebook: its front-end code, display, static snapshot and saved state.

A live notebook renders the widget's view mime type; nbconvert, GitHub and other
kernel-less viewers read the ``text/html`` snapshot beside it
(:mod:`attnscope.display.snapshot`), and a notebook saved with its widget state
draws the ``_saved`` chunks (``docs/protocol.md``, "Saved widget state"), which
follow every selection change made from Python after the display.
"""

from __future__ import annotations

from typing import Any

import traitlets as t

from attnscope._progress import take_emptied_output
from attnscope._static import code_texts, packed_code, static_text, view_units, widget_module
from attnscope.display.lifetime import close_when_cell_reruns
from attnscope.display.offline_note import offline_note_bundle
from attnscope.display.selection_rules import SelectionRules
from attnscope.display.snapshot import saved_chunks, snapshot_bundle
from attnscope.display.where_called import first_note_of_cell, kernel_shell, shown_this_cell

SAVED_FOLLOWS = (
    "view", "stream", "layer", "head", "query", "pseudo_heads", "rank_by",
    "generated_only", "compare_side", "step", "segment_rows",
)  # fmt: skip
"""Selection traits that change which chunks the current view draws: ``_saved`` follows them."""


class NotebookOutput(SelectionRules):
    """A widget's display in a notebook, its snapshot and its saved state; the widget's base.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, AttentionWidget
    >>> w = AttentionWidget(AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32)))
    >>> isinstance(w, NotebookOutput), w._saved
    (True, {})
    >>> _ = w._repr_mimebundle_()  # as a notebook displays it
    >>> sorted(w._saved)
    ['top:self:0']
    """

    # As text, not as paths: anywidget would watch the files for hot reload and keep
    # every widget, and its trace, alive through the watcher (anywidget issue #929).
    # The module is a small loader that imports the bundle once per page (anywidget #613).
    _esm = widget_module()
    _css = static_text("widget.css")
    _bundle = t.Dict(read_only=True).tag(sync=True)
    """The front end's modules for this widget's views, which :attr:`_esm` imports; fixed.

    ``{file: deflate-raw base64 of its text}`` from ``attnscope/static/code/``: the
    widget's entry and the views it offers, each imported once per page after its
    SHA-256 matches the loader's, a view's when it is first shown.
    Type: dict[str, str]. Default: the modules of the widget's views.
    """

    @t.default("_bundle")
    def _bundle_of_views(self) -> dict[str, str]:
        units = view_units(self._views, comparison=self._compared is not None)
        return packed_code(code_texts("widget", units))

    _saved = t.Dict().tag(sync=True)
    """The current view's chunks as the widget was displayed, so saved widget state draws.

    Deflate-raw base64 text in the exported page's format, capped at
    :data:`~attnscope.display.snapshot.SAVED_STATE_BYTES`; the browser reads
    them before asking the kernel (``docs/protocol.md``, "Saved widget state").
    Type: dict. Default: ``{}``, set at each display.
    """

    def _ipython_display_(self) -> None:
        # show_* already displayed this widget where it was called: the same cell's last
        # line (`w`) must not show it a second time. A later cell shows it again.
        if shown_this_cell(self):
            return
        from IPython.display import display

        bundle = self._repr_mimebundle_()
        if bundle is not None:
            data, metadata = bundle
            emptied = take_emptied_output()  # a capture's closed bar: take its place
            if emptied is not None:
                emptied.update(data, metadata=metadata, raw=True)
            else:
                display(data, metadata=metadata, raw=True)  # type: ignore[no-untyped-call]
            # nbconvert's page draws the output above only through the widget manager it
            # fetches online: this hidden note (once a cell) says why it is blank when it cannot.
            shell = kernel_shell()
            if first_note_of_cell(shell):
                display(offline_note_bundle(self.model_id), raw=True)  # type: ignore[no-untyped-call]
            close_when_cell_reruns(self, shell)

    # -- what a notebook saves ---------------------------------------------------------
    @t.observe(*SAVED_FOLLOWS)
    def _saved_follows_python(self, change: t.Bunch) -> None:
        # A cell that changes the selection after the display (w.layer = 3) must leave saved
        # widget state that draws what it now shows; a change the browser made is applied
        # under ipywidgets' property lock and is not the kernel's to save.
        if self._saved and change["name"] not in getattr(self, "_property_lock", {}):
            self._saved = saved_chunks(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The widget's mime bundle, plus a static snapshot for viewers without a kernel.

        A live notebook renders the widget view mime type; nbconvert, GitHub
        and other kernel-less viewers fall back to ``text/html`` (the current
        view as a small self-contained page) or ``text/plain``
        (:mod:`attnscope.display.snapshot`).

        Examples
        --------
        >>> import numpy as np
        >>> from attnscope import AttentionTrace, AttentionWidget
        >>> w = AttentionWidget(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)))
        >>> data, metadata = w._repr_mimebundle_()
        >>> sorted(data)
        ['application/vnd.jupyter.widget-view+json', 'text/html', 'text/plain']
        """
        # anywidget answers (data, metadata), or None once the widget is closed.
        bundle: tuple[dict[str, Any], dict[str, Any]] | None = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        # Before the output exists: a notebook that stores widget state keeps this update.
        self._saved = saved_chunks(self)
        return {**data, **snapshot_bundle(self)}, metadata
