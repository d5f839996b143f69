"""Where traces come from: :func:`capture` runs a Hugging Face model (``hf/``: a file a route).

:mod:`attnscope.sources.resolve` is the front door for every kind of source
(model, model name, module, trace, raw tensors, TransformerLens cache): it says
which kind a value is, which options build its trace (read from the builders'
signatures) and builds it.
"""

from attnscope.sources.hf.capture import capture

__all__ = ["capture"]
