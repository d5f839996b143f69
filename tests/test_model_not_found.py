"""A model name that is nowhere on this machine gets attnscope's one line first:
where it looked (a local folder, the cache), why it could not download, how to fix it."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnscope import capture, show_head_view
from attnscope.errors import AttnscopeError, ModelNotFoundError


def test_an_unknown_hub_name_offline_says_where_it_looked() -> None:
    name = "attnscope-tests/no-such-model"
    with pytest.raises(ModelNotFoundError) as caught:
        show_head_view(name, "The cat sat.")
    first, *rest = str(caught.value).splitlines()
    assert first.startswith(f"attnscope found no model {name!r}: no local folder ")
    assert "Hugging Face cache" in first
    assert "HF_HUB_OFFLINE=1" in first  # tests run offline (tests/conftest.py)
    assert f"hf download {name}" in first
    # Offline and not in the cache: no network wait, transformers is not asked.
    assert rest[0].startswith("transformers was not asked: offline")
    # Code that caught transformers' error, or attnscope's, still catches it.
    assert isinstance(caught.value, OSError)
    assert isinstance(caught.value, AttnscopeError)
    assert caught.value.__suppress_context__  # one error on screen, not two


def test_offline_set_after_import_fails_at_once_without_asking_transformers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # huggingface_hub read HF_HUB_OFFLINE at import; a kernel sets it later.
    import transformers
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    asked: list[str] = []
    monkeypatch.setattr(
        transformers.AutoConfig, "from_pretrained", lambda name, **_: asked.append(name)
    )
    with pytest.raises(ModelNotFoundError, match="HF_HUB_OFFLINE=1 forbids downloading"):
        capture("attnscope-tests/not-here", "The cat sat.")
    assert asked == []  # refused before any download was tried (~23 s offline)


def test_a_cached_or_local_model_still_loads_when_offline_is_set_late(
    monkeypatch: pytest.MonkeyPatch, minilm_path: Path
) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert capture(minilm_path, "The cat sat.").stream.num_layers == 6


def test_a_folder_without_config_says_so(tmp_path: Path) -> None:
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(AttnscopeError, match=r"holds no config\.json"):
        capture(tmp_path, "The cat sat.")


def test_loading_by_path_restores_the_progress_bar_setting(minilm_path: Path) -> None:
    from transformers.utils import logging

    was = logging.is_progress_bar_enabled()  # another test (the demo) may have turned it off
    try:
        for setting in (True, False):
            (logging.enable_progress_bar if setting else logging.disable_progress_bar)()
            capture(minilm_path, "The cat sat.")
            assert logging.is_progress_bar_enabled() is setting
    finally:
        (logging.enable_progress_bar if was else logging.disable_progress_bar)()
