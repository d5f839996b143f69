"""Scans of a model that lives elsewhere (issue 37): statistics reduced where nnsight runs it.

nnsight's ``remote="local"`` serialises the request as it would for NDIF, hides
the user's own modules, deserialises and runs it here. Made stricter here:
attnscope's source folder is hidden too (nnsight keeps folders named ``src``
importable), so attnscope can only reach the "server" inside the request, as
on NDIF, where it is not installed. Real parts: a tiny random Llama with
MiniLM's WordPiece tokenizer, nnsight 0.8's LanguageModel around it.
"""

from __future__ import annotations

import pickle
import re
import sys
from pathlib import Path
from typing import Any

import nnsight
import numpy as np
import pandas as pd
import pytest

import attnscope
from attnscope.analysis.remote_stats import remote_statistic_table
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from scan_worker import TEXTS, tiny_llama

SOURCE = str(Path(attnscope.__file__).resolve().parents[1])
TOLERANCE = {"check_exact": False, "rtol": 1e-5, "atol": 1e-6}


@pytest.fixture(scope="module")
def served() -> tuple[Any, Any, Any]:
    """(nnsight LanguageModel, the model it wraps, tokenizer)."""
    import warnings

    model, tokenizer = tiny_llama()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LanguageModel's own deprecation notice
        wrapper = nnsight.LanguageModel(model, tokenizer=tokenizer)
    return wrapper, model, tokenizer


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """nnsight's local simulation with attnscope's own folder hidden as well; what it hid."""
    from nnsight.intervention.backends.local import LocalSimulationBackend

    hidden_runs: list[dict[str, Any]] = []
    real = LocalSimulationBackend._hide_local_modules

    def hide(self: Any) -> dict[str, Any]:
        hidden: dict[str, Any] = real(self)
        for path in [p for p in sys.path if str(Path(p or ".").resolve()) == SOURCE]:
            sys.path.remove(path)
            hidden["paths"].append(path)
        for name in [n for n in sys.modules if n.split(".")[0] == "attnscope"]:
            # nnsight keeps modules whose name holds "nnsight" (attnscope.sources.nnsight_remote)
            hidden["modules"][name] = sys.modules.pop(name)
        hidden_runs.append(hidden)
        return hidden

    monkeypatch.setattr(LocalSimulationBackend, "_hide_local_modules", hide)
    return hidden_runs


def test_a_remote_scan_equals_the_scan_of_the_captured_model(
    served: tuple[Any, Any, Any], server: list[dict[str, Any]]
) -> None:
    wrapper, model, tokenizer = served
    df = attnscope.scan(wrapper, TEXTS[:3], remote="local")
    assert len(server) == 3  # one request per input, each through the simulated server
    local = attnscope.scan(model, TEXTS[:3], tokenizer=tokenizer)
    pd.testing.assert_frame_equal(df, local, **TOLERANCE)  # type: ignore[arg-type]
    assert df.attrs["tokens"] == local.attrs["tokens"]
    one = attnscope.scan(wrapper, TEXTS[:2], remote="local", layers=[1], statistics=["sink"])
    expected = local[(local["input"] < 2) & (local["layer"] == 1)][
        ["input", "layer", "head", "sink"]
    ]
    pd.testing.assert_frame_equal(one, expected.reset_index(drop=True), **TOLERANCE)  # type: ignore[arg-type]


def test_without_its_code_in_the_request_the_server_cannot_run_it(
    served: tuple[Any, Any, Any], server: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The strict simulation is what makes the test above mean something: attnscope sent
    # by reference (not registered to travel by value) is not found on the "server".
    monkeypatch.setattr(nnsight, "register", lambda module: None)
    with pytest.raises(ModuleNotFoundError, match="attnscope"):
        remote_statistic_table(served[0], TEXTS[0], remote="local")


def _request_bytes(
    capsys: pytest.CaptureFixture[str], wrapper: Any, text: str
) -> tuple[int, int, int]:
    """(tokens, bytes sent, bytes of what comes back) of one remote reduction."""
    capsys.readouterr()
    table, tokens = remote_statistic_table(wrapper, text, remote="local", verbose=True)
    sent = re.search(r"\[local\] payload: ([\d,]+) bytes", capsys.readouterr().out)
    assert sent is not None
    return len(tokens), int(sent.group(1).replace(",", "")), len(pickle.dumps(table))


def test_what_travels_grows_by_bytes_per_token_and_what_returns_does_not(
    served: tuple[Any, Any, Any], server: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    wrapper, model, _ = served
    short = _request_bytes(capsys, wrapper, "a b c d e f g h")
    long = _request_bytes(capsys, wrapper, " ".join(["a b c d e f g h"] * 12))
    per_token_sent = (long[1] - short[1]) / (long[0] - short[0])
    layers = model.config.num_hidden_layers
    config = model.config
    qk_per_token = (
        layers
        * (config.num_attention_heads + config.num_key_value_heads)
        * (config.hidden_size // config.num_attention_heads)
        * 4
    )
    print(
        f"tokens {short[0]} -> {long[0]}: sent {short[1]} -> {long[1]} bytes "
        f"({per_token_sent:.1f} per token; q/k would be {qk_per_token}), "
        f"back {short[2]} -> {long[2]} bytes"
    )
    # Sent: the token ids and each layer's token sets, some tens of bytes a token a layer.
    assert 0 < per_token_sent < 64 * layers
    # Back: 12 statistics x heads a layer, whatever the length.
    assert long[2] == short[2]
    assert short[2] < 12 * config.num_attention_heads * layers * 8 + 4096


def test_what_a_remote_scan_refuses(served: tuple[Any, Any, Any]) -> None:
    wrapper, model, tokenizer = served
    with pytest.raises(AttnscopeTypeError, match=r"needs an nnsight model that can run remotely"):
        attnscope.scan(nnsight.NNsight(model), TEXTS[:1], tokenizer=tokenizer, remote="local")
    with pytest.raises(AttnscopeError, match=r"inputs\[1\] is a chat input; a remote scan takes"):
        attnscope.scan(wrapper, ["a", [{"role": "user", "content": "Hi"}]], remote="local")
    with pytest.raises(AttnscopeError, match=r"takes no capture options; got \['max_tokens'\]"):
        attnscope.scan(wrapper, TEXTS[:1], remote="local", max_tokens=4)
    with pytest.raises(AttnscopeError, match=r"names layer 7, but the model has 2"):
        remote_statistic_table(wrapper, TEXTS[0], remote="local", layers=[7])
    assert np.isfinite(remote_statistic_table(wrapper, "ok", remote="local")[0]["sink"]).all()
