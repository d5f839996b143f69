"""Scans beyond one process (issue 37): torchrun ranks share a scan, ``out=`` survives a kill.

Real parts: a tiny random Llama with MiniLM's real WordPiece tokenizer (seeded
and read from files, so every process builds the same pair), ``torchrun`` with 2
gloo ranks on this CPU, a
scan killed with SIGKILL in its own process and resumed. The worker is
tests/scan_worker.py. Ranks run with one thread each (torchrun's default), so
their float32 statistics are compared with a float32 tolerance.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch

import attnscope
import attnscope.sources
from attnscope.analysis.scan_store import SETTINGS, TEMPORARY, input_file
from attnscope.errors import AttnscopeError, ScanFolderError
from scan_worker import FAILING, NEEDLE, TEXTS, tiny_llama

HERE = Path(__file__).resolve().parent
WORKER = HERE / "scan_worker.py"
TOLERANCE = {"check_exact": False, "rtol": 1e-5, "atol": 1e-6}
"""float32 statistics from processes with other thread counts: equal within float32."""


@pytest.fixture(scope="module")
def llama() -> tuple[Any, Any]:
    return tiny_llama()


@pytest.fixture(scope="module")
def one_process(llama: tuple[Any, Any]) -> pd.DataFrame:
    """The uninterrupted one-process scan every other run must equal."""
    model, tokenizer = llama
    return attnscope.scan(model, TEXTS, tokenizer=tokenizer)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The inputs scan captures in this process."""
    calls: list[Any] = []
    real = attnscope.sources.capture

    @functools.wraps(real)
    def spy(model: Any, text: Any, **kwargs: Any) -> Any:
        calls.append(text)
        return real(model, text, **kwargs)

    monkeypatch.setattr(attnscope.sources, "capture", spy)
    return calls


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _environment() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(HERE)}


def test_two_ranks_equal_one_process_and_share_the_inputs(
    tmp_path: Path, llama: tuple[Any, Any], one_process: pd.DataFrame, counted: list[Any]
) -> None:
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nnodes=1",
        "--nproc-per-node=2",
        "--master-addr=127.0.0.1",
        f"--master-port={_free_port()}",
        str(WORKER),
        "ranks",
        str(tmp_path),
    ]
    done = subprocess.run(
        command, env=_environment(), capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    captured = []
    for rank in (0, 1):
        for name in ("rank", "written", "resumed"):
            df = pd.read_parquet(tmp_path / f"{name}{rank}.parquet")
            attrs = json.loads((tmp_path / f"{name}{rank}.json").read_text())
            pd.testing.assert_frame_equal(df, one_process, **TOLERANCE)  # type: ignore[arg-type]
            assert attrs["world_size"] == 2
            assert attrs["tokens"] == one_process.attrs["tokens"]
            assert attrs["resumed_inputs"] == (len(TEXTS) if name == "resumed" else 0)
            if name == "resumed":
                assert attrs["captured"] == []
        captured.append(json.loads((tmp_path / f"rank{rank}.json").read_text())["captured"])
    # Each input was captured once, on one rank; both ranks worked.
    assert sorted(captured[0] + captured[1]) == list(range(len(TEXTS)))
    assert captured[0]
    assert captured[1]
    # Shares are balanced by tokens, not by count.
    tokens = one_process.attrs["tokens"]
    loads = [sum(tokens[i] for i in share) for share in captured]
    assert abs(loads[0] - loads[1]) <= max(tokens)
    # The input that raised stopped both ranks, each naming the rank and the input.
    errors = [(tmp_path / f"error{rank}.txt").read_text() for rank in (0, 1)]
    assert errors[0] == errors[1]
    assert "inputs[5] failed on rank " in errors[0]
    assert "RuntimeError: the model ran out of patience" in errors[0]
    # A folder refused on rank 0 is refused on every rank, with the same words.
    refused = [(tmp_path / f"folder_error{rank}.txt").read_text() for rank in (0, 1)]
    assert refused[0] == refused[1]
    assert "is not a scan's folder: it holds ['cat.jpg']" in refused[0]
    # needle_in_a_haystack shares its runs too.
    model, tokenizer = llama
    needle = attnscope.needle_in_a_haystack(model, tokenizer=tokenizer, **NEEDLE).heads
    for rank in (0, 1):
        shared = pd.read_parquet(tmp_path / f"needle{rank}.parquet")
        pd.testing.assert_frame_equal(shared, needle, **TOLERANCE)  # type: ignore[arg-type]
        assert json.loads((tmp_path / f"needle{rank}.json").read_text()) == {"world_size": 2}
    assert needle.attrs["world_size"] == 1
    counted.clear()
    # A folder written by 2 ranks resumes in one process (the rank count may change).
    resumed = attnscope.scan(model, TEXTS, tokenizer=tokenizer, out=tmp_path / "folder")
    assert counted == []
    assert resumed.attrs["resumed_inputs"] == len(TEXTS)
    assert resumed.attrs["world_size"] == 1
    pd.testing.assert_frame_equal(resumed, one_process, **TOLERANCE)  # type: ignore[arg-type]


def test_a_killed_scan_resumes_without_losing_or_repeating_an_input(
    tmp_path: Path, llama: tuple[Any, Any], one_process: pd.DataFrame, counted: list[Any]
) -> None:
    out = tmp_path / "scan"
    child = subprocess.Popen(
        [sys.executable, str(WORKER), "kill", str(out), "3"],
        env=_environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    lines = []
    while len(lines) < 3:  # the child holds after its 3rd file is in place
        line = child.stdout.readline()
        assert line, f"the scan ended early: {child.communicate()[1][-3000:]}"
        lines.append(line.strip())
    child.send_signal(signal.SIGKILL)
    child.communicate()
    assert child.returncode == -signal.SIGKILL
    on_disk = sorted(p.name for p in out.iterdir())
    assert on_disk == sorted([SETTINGS, *(input_file(int(x.split()[1])) for x in lines)])

    model, tokenizer = llama
    df = attnscope.scan(model, TEXTS, tokenizer=tokenizer, out=out)
    assert df.attrs["resumed_inputs"] == 3
    assert len(counted) == len(TEXTS) - 3  # nothing written was captured again
    assert sorted(TEXTS.index(text) for text in counted) == sorted(
        set(range(len(TEXTS))) - {int(x.split()[1]) for x in lines}
    )
    pd.testing.assert_frame_equal(df, one_process, **TOLERANCE)  # type: ignore[arg-type]
    assert df.attrs["tokens"] == one_process.attrs["tokens"]
    assert len(list(out.glob("input-*.parquet"))) == len(TEXTS)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_an_input_that_fails_keeps_what_was_written(
    tmp_path: Path, llama: tuple[Any, Any], one_process: pd.DataFrame, counted: list[Any]
) -> None:
    model, tokenizer = llama
    out = tmp_path / "scan"
    real = attnscope.sources.capture

    def failing(model: Any, text: Any, **kwargs: Any) -> Any:
        if text == FAILING:
            raise RuntimeError("the model ran out of patience")
        return real(model, text, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(attnscope.sources, "capture", failing)
        with pytest.raises(RuntimeError, match="out of patience"):
            attnscope.scan(model, [*TEXTS[:3], FAILING], tokenizer=tokenizer, out=out)
    assert sorted(p.name for p in out.glob("input-*")) == [input_file(i) for i in range(3)]
    counted.clear()
    # The failing input replaced by a good one: the three written inputs are not captured again.
    df = attnscope.scan(model, TEXTS[:4], tokenizer=tokenizer, out=out)
    assert df.attrs["resumed_inputs"] == 3
    assert counted == [TEXTS[3]]
    expected = one_process[one_process["input"] < 4]
    pd.testing.assert_frame_equal(df, expected, **TOLERANCE)  # type: ignore[arg-type]


def test_bad_folders_are_refused_before_any_capture_and_left_untouched(
    tmp_path: Path, llama: tuple[Any, Any], counted: list[Any]
) -> None:
    model, tokenizer = llama
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    with pytest.raises(ScanFolderError, match=r"notes.txt' is a file, not a folder"):
        attnscope.scan(model, TEXTS[:2], tokenizer=tokenizer, out=a_file)
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "cat.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(ScanFolderError, match=r"is not a scan's folder: it holds \['cat.jpg'\]"):
        attnscope.scan(model, TEXTS[:2], tokenizer=tokenizer, out=foreign)
    for text, match in [
        ("{not json", r"not readable JSON"),
        ('{"format": "other/1"}', r"not an attnscope scan's \(format 'other/1'"),
    ]:
        (foreign / SETTINGS).write_text(text)
        with pytest.raises(ScanFolderError, match=match):
            attnscope.scan(model, TEXTS[:2], tokenizer=tokenizer, out=foreign)
    assert (foreign / "cat.jpg").read_bytes() == b"\xff\xd8"
    assert counted == []

    out = tmp_path / "scan"
    attnscope.scan(model, TEXTS[:2], tokenizer=tokenizer, out=out, statistics=["prev"])
    counted.clear()
    before = _snapshot(out)
    with pytest.raises(
        ScanFolderError, match=r"statistics: \['prev'\] there, \['prev', 'sink'\] now"
    ) as refused:
        attnscope.scan(model, TEXTS[:2], tokenizer=tokenizer, out=out, statistics=["sink", "prev"])
    assert "new folder" in str(refused.value)
    assert "overwrite=True" in str(refused.value)
    with pytest.raises(ScanFolderError, match=r"capture_options.max_tokens: None there, 5 now"):
        attnscope.scan(model, TEXTS[:2], tokenizer=tokenizer, out=out, statistics=["prev"],
                       max_tokens=5)  # fmt: skip
    with pytest.raises(ScanFolderError, match=r"holds inputs\[1\] of another input"):
        attnscope.scan(model, [TEXTS[0], "Another."], tokenizer=tokenizer, out=out,
                       statistics=["prev"])  # fmt: skip
    with pytest.raises(ScanFolderError, match=r"holds inputs\[1\], but inputs has 1"):
        attnscope.scan(model, TEXTS[:1], tokenizer=tokenizer, out=out, statistics=["prev"])
    other, _ = tiny_llama()
    with torch.no_grad():
        other.model.layers[0].self_attn.q_proj.weight.mul_(2)  # same config, other weights
    with pytest.raises(ScanFolderError, match=r"model.weights_sample_sha256: '"):
        attnscope.scan(other, TEXTS[:2], tokenizer=tokenizer, out=out, statistics=["prev"])
    assert _snapshot(out) == before
    assert counted == []
    # More inputs than before extend the scan; overwrite=True starts again.
    df = attnscope.scan(model, TEXTS[:3], tokenizer=tokenizer, out=out, statistics=["prev"])
    assert df.attrs["resumed_inputs"] == 2
    assert counted == [TEXTS[2]]
    df = attnscope.scan(
        model, TEXTS[:1], tokenizer=tokenizer, out=out, statistics=["sink"], overwrite=True
    )
    assert df.attrs["resumed_inputs"] == 0
    assert list(df.columns) == [
        "input",
        "layer",
        "head",
        "sink",
    ]
    assert sorted(p.name for p in out.iterdir()) == sorted([SETTINGS, input_file(0)])


def test_a_partial_write_is_never_read_as_data(tmp_path: Path, llama: tuple[Any, Any]) -> None:
    model, tokenizer = llama
    out = tmp_path / "scan"
    attnscope.scan(model, TEXTS[:1], tokenizer=tokenizer, out=out, statistics=["prev"])
    whole = (out / input_file(0)).read_bytes()
    (out / f"{TEMPORARY}99-{input_file(1)}").write_bytes(whole[: len(whole) // 2])
    df = attnscope.scan(model, TEXTS[:2], tokenizer=tokenizer, out=out, statistics=["prev"])
    assert df.attrs["resumed_inputs"] == 1
    assert sorted(p.name for p in out.iterdir()) == sorted([SETTINGS, *map(input_file, (0, 1))])


def test_out_is_checked_before_the_model_is_captured(tmp_path: Path) -> None:
    with pytest.raises(AttnscopeError, match=r"inputs must be a list"):
        attnscope.scan(None, "text", out=tmp_path / "x")
    assert not (tmp_path / "x").exists()
