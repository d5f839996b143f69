"""Show a trace: the anywidget (:class:`AttentionWidget`) and the offline page (``save_html``)."""

from attnscope.display.page import save_html
from attnscope.display.widget import AttentionWidget

__all__ = ["AttentionWidget", "save_html"]
