"""Where traces come from: :func:`capture` runs a Hugging Face model (``hf/``: a file a route)."""

from attnscope.sources.hf.capture import capture

__all__ = ["capture"]
