"""Capture attention from Hugging Face models: :func:`capture`, one file per route."""

from attnscope.adapters.capture import capture

__all__ = ["capture"]
