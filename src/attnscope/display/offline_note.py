"""The note after a cell's first widget: why a kernel-less page shows no view, and what to do.

``jupyter nbconvert --execute --to html`` stores the widgets' state, and its page
then renders each widget through the Jupyter widget manager, which it fetches
from a CDN (require.js, ``@jupyter-widgets/html-manager``); the output's
``text/html`` snapshot is not used. Opened offline, nothing loads and the
output is blank. The widget's own output cannot say so (nbconvert renders only
its widget view), so :func:`offline_note_bundle` is a second, small output
shown after a cell's first widget (once a cell:
:func:`~attnscope.display.where_called.first_note_of_cell`): hidden, with a
script that unhides it only on such a page
(saved widget state in the page, this widget rendered as a widget view, and
the manager's loader missing or failed). In a live notebook the script keeps
it hidden; where scripts are stripped (an untrusted notebook in JupyterLab)
``hidden="hidden"`` stays (JupyterLab's sanitizer drops a bare, empty
``hidden``); a renderer that strips both shows a text that is true there too
("If no attention view appears above, ...").
"""

from __future__ import annotations

import html
import json

NOTE_CLASS = "attnscope-offline-note"
"""The class of the note's element (tests find the note by it)."""

SHARE_COMMAND = "python -m attnscope share NOTEBOOK.ipynb -o page.html"
"""The command the note names: a page of the notebook that draws offline."""

NOTE_TEXT = (
    "If no attention view appears above, this page could not load the Jupyter widget "
    "manager, which it fetches from the internet. For a page that draws offline, run",
    "(or open this page online, or the notebook in Jupyter).",
)
"""The note's words before and after :data:`SHARE_COMMAND`."""

_STYLE = (
    "margin:4px 0;padding:6px 10px;border-left:3px solid #c2410c;"
    "font:13px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;unicode-bidi:isolate"
)
_CODE_STYLE = "user-select:all;white-space:nowrap"

# Runs where the output is drawn. In nbconvert's page it runs while the page is parsed:
# the saved widget state sits in the page's footer, after it, so it decides at `load`,
# by which time require.js (a <script> in the head) and the manager (a script added at
# DOMContentLoaded, which delays `load`) have loaded or failed. A live notebook runs it
# long after `load`: it never fires, and the note stays hidden.
_SCRIPT = """(function () {
  var note = document.currentScript && document.currentScript.previousElementSibling;
  if (!note || document.readyState === "complete") return;
  var model = %(model)s, failed = false;
  var state = 'script[type="application/vnd.jupyter.widget-state+json"]';
  var view = 'script[type="application/vnd.jupyter.widget-view+json"]';
  function managerScript(el) {
    return el && el.tagName === "SCRIPT" && /html-manager|require(\\.min)?\\.js/.test(el.src || "");
  }
  window.addEventListener("error", function (e) {
    if (managerScript(e.target)) failed = true;
  }, true);
  window.addEventListener("load", function () {
    if (!document.querySelector(state)) return;
    var views = document.querySelectorAll(view), ours = false;
    for (var i = 0; i < views.length; i++) {
      try { ours = ours || JSON.parse(views[i].textContent).model_id === model; } catch (_) {}
    }
    if (ours && (failed || typeof window.require !== "function")) note.hidden = false;
  });
})();"""


def _script_text(value: str) -> str:
    """``value`` as a JS string literal that cannot end the ``<script>`` it sits in."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def offline_note_html(model_id: str) -> str:
    """The note after widget ``model_id``'s output, hidden until its view cannot draw.

    Examples
    --------
    >>> note = offline_note_html("abc123")
    >>> note.startswith('<div class="attnscope-offline-note" hidden="hidden"')
    True
    >>> SHARE_COMMAND in note, "https://" in note
    (True, False)
    >>> "</script>" in offline_note_html("</script><b>")[:-9]  # the id cannot end the script
    False
    """
    before, after = (html.escape(part) for part in NOTE_TEXT)
    command = html.escape(SHARE_COMMAND)
    script = _SCRIPT % {"model": _script_text(model_id)}
    note = f'class="{NOTE_CLASS}" hidden="hidden" dir="ltr" lang="en" role="note"'
    code = f'<code dir="ltr" style="{_CODE_STYLE}">{command}</code>'
    return f'<div {note} style="{_STYLE}">{before} {code} {after}</div><script>{script}</script>'


def offline_note_bundle(model_id: str) -> dict[str, str]:
    """The note's output data: ``text/html`` only (nothing for plain-text viewers).

    Examples
    --------
    >>> list(offline_note_bundle("abc123"))
    ['text/html']
    """
    return {"text/html": offline_note_html(model_id)}
