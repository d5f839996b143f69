"""AttentionTrace.load: every malformed file raises TraceFileError, and nothing is unpickled.

Named cases check the message (what is wrong, and to save the trace again);
a seeded fuzz loop truncates good files at many lengths and flips bytes in
them, and never sees another exception type or a call into pickle.
"""

from __future__ import annotations

import json
import pickle
import random
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from attnscope import AttentionStream, AttentionTrace, MultiHeadAttention, Tokens
from attnscope.errors import AttnscopeError, TraceFileError

FIX = "save the trace again with AttentionTrace.save"
HEADER = {
    "format": "attnscope.AttentionTrace",
    "version": 1,
    "source": {"labels": ["a", "b"], "raw": ["a", "b"], "kinds": ["token", "token"]},
    "target": None,
    "streams": [{"name": "self", "query_side": "source", "key_side": "source", "layers": [0]}],
    "metadata": {},
    "notes": [],
}
HALF = np.full((1, 1, 2, 2), 0.5, np.float32)


@pytest.fixture
def no_pickle(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Record every call into pickle's loaders (the test asserts there are none)."""
    calls: list[str] = []

    def refuse(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            raise AssertionError(f"pickle.{name} was called")

        return call

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse(name))
    yield calls
    assert calls == [], f"something was unpickled: {calls}"


def write(path: Path, **arrays: Any) -> Path:
    np.savez(path, **arrays)
    return path


def load_error(path: Path) -> str:
    with pytest.raises(TraceFileError) as caught:
        AttentionTrace.load(path)
    assert isinstance(caught.value, AttnscopeError)
    assert isinstance(caught.value, ValueError)
    message = str(caught.value)
    assert str(path) in message
    return message


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return AttentionTrace(["a", "b"], HALF).save(tmp_path / "good.npz")


def test_truncated_file(tmp_path: Path, good: Path, no_pickle: list[str]) -> None:
    cut = tmp_path / "cut.npz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    message = load_error(cut)
    assert "not a .npz (zip) file, or cut short" in message
    assert FIX in message


def test_empty_file(tmp_path: Path, no_pickle: list[str]) -> None:
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    assert f"{empty} is empty (0 bytes)" in load_error(empty)


def test_file_without_header(tmp_path: Path, no_pickle: list[str]) -> None:
    message = load_error(write(tmp_path / "f.npz", **{"self/attention": HALF}))
    assert "it has no header array (arrays found: ['self/attention'])" in message
    assert FIX in message


@pytest.mark.parametrize(
    ("header", "what"),
    [
        (np.array("{not json"), "damaged header: it is not JSON"),
        (np.array(["a", "b"]), "damaged header: it is a <U1 array of shape (2,), not one string"),
        (np.array(json.dumps({**HEADER, "streams": []})), "it lists no streams of attention"),
        (np.array(json.dumps({**HEADER, "streams": None})), "streams is NoneType"),
        (
            np.array(json.dumps({k: v for k, v in HEADER.items() if k != "streams"})),
            "streams is missing",
        ),
        (
            np.array(json.dumps({**HEADER, "streams": [{"name": "self"}]})),
            "streams[0].query_side is None",
        ),
        (np.array(json.dumps({**HEADER, "version": "1"})), "its version is '1'"),
        (np.array(json.dumps({**HEADER, "source": ["a"]})), "source is list"),
        (np.array(json.dumps([1, 2])), "its header does not say format 'attnscope.AttentionTrace'"),
    ],
)
def test_bad_headers(tmp_path: Path, header: Any, what: str, no_pickle: list[str]) -> None:
    message = load_error(write(tmp_path / "f.npz", header=header, **{"self/attention": HALF}))
    assert what in message
    assert FIX in message


def test_file_missing_the_attention_array(tmp_path: Path, no_pickle: list[str]) -> None:
    message = load_error(write(tmp_path / "f.npz", header=np.array(json.dumps(HEADER))))
    assert (
        "is incomplete: stream 'self' has no attention array ('self/attention' is missing)"
        in message
    )
    assert "and no queries and keys to compute it from" in message


class Flag:
    """Unpickling an instance would set ``Flag.ran``."""

    ran = False

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (setattr, (Flag, "ran", True))


def test_file_holding_object_arrays(tmp_path: Path) -> None:
    objects = np.empty((1,), dtype=object)
    objects[0] = Flag()
    path = write(
        tmp_path / "f.npz", header=np.array(json.dumps(HEADER)), **{"self/attention": objects}
    )
    message = load_error(path)
    assert Flag.ran is False
    assert "holds array 'self/attention' of dtype object" in message
    assert "would need unpickling" in message
    assert FIX in message
    assert "allow_pickle" not in message  # not numpy's message


def test_file_with_invalid_contents(tmp_path: Path, no_pickle: list[str]) -> None:
    path = write(
        tmp_path / "f.npz",
        header=np.array(json.dumps(HEADER)),
        **{"self/attention": np.full((1, 1, 2, 2), 0.2)},
    )
    message = load_error(path)
    assert "holds a trace that does not check out: self: attention row" in message
    assert FIX in message


def test_folder_and_missing_file(tmp_path: Path) -> None:
    assert "is a folder; pass the .npz file" in load_error(tmp_path)
    with pytest.raises(FileNotFoundError, match="no trace file at"):
        AttentionTrace.load(tmp_path / "nothing.npz")


# -- fuzzing -------------------------------------------------------------------------------


def rich_trace() -> AttentionTrace:
    """Two streams' worth of fields: q, k, scaling, mask and bias, text tokens and notes."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, causal=True)
    trace = AttentionTrace.from_module(mha, torch.randn(1, 4, 8), ["<b>", "é", "\u202e", "x"])
    cross = AttentionStream(
        np.full((1, 2, 2, 4), 0.25, np.float32),
        name="cross",
        query_side="target",
        key_side="source",
    )
    decoder = AttentionStream(
        np.full((1, 2, 2, 2), 0.5, np.float32),
        name="decoder",
        query_side="target",
        key_side="target",
    )
    return AttentionTrace.from_streams(
        Tokens(trace.tokens),
        [trace.stream, decoder, cross],
        target=Tokens(["y", "z"]),
        metadata={"source": "fuzz"},
        notes=["a note"],
    )


def outcomes(path: Path) -> str:
    """``"ok"`` or ``"TraceFileError"``; any other exception fails the test."""
    try:
        AttentionTrace.load(path)
    except TraceFileError:
        return "TraceFileError"
    return "ok"


def flipped(data: bytes, rng: random.Random) -> bytes:
    """``data`` with 1, 2 or 8 random bits flipped."""
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 8))):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def test_fuzzed_files_raise_only_trace_file_errors(tmp_path: Path, no_pickle: list[str]) -> None:
    good = rich_trace().save(tmp_path / "good.npz")
    with zipfile.ZipFile(good) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    rng = random.Random(11)
    seen = {"ok": 0, "TraceFileError": 0}
    target = tmp_path / "fuzzed.npz"

    def attempt(data: bytes) -> None:
        target.write_bytes(data)
        seen[outcomes(target)] += 1

    original = good.read_bytes()
    for cut in sorted({rng.randrange(len(original)) for _ in range(150)} | {0, 1, 4, 30}):
        attempt(original[:cut])  # truncated files
    for _ in range(400):
        attempt(flipped(original, rng))  # damaged archives (zip's CRC sees most of it)
    for _ in range(600):
        # damaged members in a sound archive (CRC recomputed): reaches the .npy
        # headers, the JSON header and the values themselves
        name = rng.choice(sorted(members))
        data = members[name]
        damaged = flipped(data, rng) if rng.random() < 0.8 else data[: rng.randrange(len(data))]
        with zipfile.ZipFile(target, "w") as archive:
            for member, content in members.items():
                archive.writestr(member, damaged if member == name else content)
        seen[outcomes(target)] += 1
    assert seen["TraceFileError"] > 700
    assert seen["ok"] > 20  # flips that change nothing a trace checks still load
