"""Where tests/test_capture_zoo.py leaves its results for conftest's summary.

A module of its own: ``from conftest import`` would find tests/browser/conftest.py
when the whole suite runs.
"""

from __future__ import annotations

from typing import Any

import pytest

ZOO = pytest.StashKey[dict[str, dict[str, Any]]]()
"""Results of tests/test_capture_zoo.py, by model type, for the summary."""
ZOO_SECONDS = pytest.StashKey[float]()
