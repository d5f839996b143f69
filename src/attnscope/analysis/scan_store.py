"""``scan(..., out=folder)``: each input's rows on disk as soon as they exist, and a resume.

The folder holds ``scan.json`` (what was scanned: the model, tokenizer,
statistics, layers, stream, capture options and attnscope version, written
before any input) and one Parquet file per input, ``input-000012.parquet``,
whose metadata keeps the input's token count and a digest of the input itself.
Each file is written to a temporary name, flushed to disk and renamed into
place (``os.replace``), so a scan killed at any moment leaves whole files
only; a leftover temporary file is never read as data and is removed on the
next run. One file per input (not per rank) lets a resume use any number of
ranks.

A rerun with the same ``out=`` and the same settings skips the inputs whose
file is there and whose digest matches; other settings, other inputs, or a
folder that is not a scan's are refused before any work, naming the
difference, with nothing in the folder touched.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attnscope.errors import ScanFolderError

if TYPE_CHECKING:
    import pandas as pd

SETTINGS = "scan.json"
"""The settings file: written first, compared on every rerun."""

FORMAT = "attnscope.scan/1"
"""``scan.json``'s ``format``: what marks a folder as a scan's."""

PREFIX, SUFFIX = "input-", ".parquet"
TEMPORARY = ".partial-"
"""Prefix of a file being written (renamed into place when whole)."""

TOKENS_KEY, DIGEST_KEY = b"attnscope.tokens", b"attnscope.input_sha256"


def input_file(index: int) -> str:
    """The file name of input ``index``'s rows.

    Examples
    --------
    >>> input_file(12)
    'input-000012.parquet'
    """
    return f"{PREFIX}{index:06d}{SUFFIX}"


def _index_of(name: str) -> int | None:
    if not (name.startswith(PREFIX) and name.endswith(SUFFIX)):
        return None
    digits = name[len(PREFIX) : -len(SUFFIX)]
    return int(digits) if digits.isdigit() else None


def _sample(value: Any, count: int = 4096) -> bytes:
    """dtype, shape and up to ``count`` evenly spaced values of an array or tensor, as bytes."""
    if hasattr(value, "detach"):
        if value.device.type == "meta":
            return f"{value.dtype}{tuple(value.shape)}meta".encode()
        flat = value.detach().reshape(-1)
        step = max(1, flat.numel() // count)
        picked = flat[::step][:count].float().cpu().numpy()
        return f"{value.dtype}{tuple(value.shape)}".encode() + bytes(picked.tobytes())
    array = np.asarray(value)
    flat = array.reshape(-1)
    step = max(1, flat.size // count)
    return (
        f"{array.dtype}{array.shape}".encode()
        + np.ascontiguousarray(flat[::step][:count]).tobytes()
    )


def input_digest(item: Any, kind: str) -> str:
    """A SHA-256 of one input, to tell on a resume that ``inputs[i]`` is the one written.

    Arrays and traces are hashed from their shapes and up to 4096 evenly
    spaced values of each array.

    Examples
    --------
    >>> input_digest("The cat.", "text") == input_digest("The cat.", "text")
    True
    >>> input_digest("The cat.", "text") == input_digest("The dog.", "text")
    False
    """
    digest = hashlib.sha256(kind.encode())
    if kind == "text":
        digest.update(item.encode())
    elif kind == "chat":
        digest.update(json.dumps(item, sort_keys=True, default=repr).encode())
    elif kind == "trace":
        digest.update(json.dumps([item.tokens, list(item.streams)]).encode())
        for stream in item.streams.values():
            digest.update(repr(stream.layers).encode())
            for field in ("weights", "queries", "keys"):
                array = getattr(stream, field, None)
                if array is not None:
                    digest.update(_sample(array))
    elif isinstance(item, Mapping):  # token ids with their masks
        for key in sorted(item):
            digest.update(str(key).encode() + _sample(item[key], 1 << 20))
    else:
        digest.update(_sample(item, 1 << 20))
    return digest.hexdigest()


def _plain(value: Any) -> Any:
    """A JSON-able stand-in for a capture option (a repr for what JSON cannot hold)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "shape"):
        return {"array_sha256": hashlib.sha256(_sample(value, 1 << 20)).hexdigest()}
    return repr(value)


def model_facts(model: Any, tokenizer: Any) -> dict[str, Any]:
    """What identifies a model and its tokenizer in ``scan.json``.

    Class, name, dtype, a SHA-256 of its config, and one of a sample of every
    weight (dtype, shape and up to 64 values each: a fine-tune or another seed
    differs; cheap for a large model).

    Examples
    --------
    >>> model_facts(None, None)
    {'model': None, 'tokenizer': None}
    """
    if model is None:
        return {"model": None, "tokenizer": None}
    weights = hashlib.sha256()
    for name, tensor in model.state_dict(keep_vars=True).items():
        weights.update(name.encode() + _sample(tensor, 64))
    config = model.config.to_json_string(use_diff=False)
    facts: dict[str, Any] = {
        "model": {
            "class": type(model).__name__,
            "name": getattr(model.config, "name_or_path", "") or "",
            "dtype": str(getattr(model, "dtype", "")),
            "config_sha256": hashlib.sha256(config.encode()).hexdigest(),
            "weights_sample_sha256": weights.hexdigest(),
        },
        "tokenizer": None,
    }
    if tokenizer is not None:
        vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
        facts["tokenizer"] = {
            "class": type(tokenizer).__name__,
            "name": getattr(tokenizer, "name_or_path", "") or "",
            "vocab_sha256": hashlib.sha256(json.dumps(sorted(vocab.items())).encode()).hexdigest(),
            "chat_template": getattr(tokenizer, "chat_template", None),
        }
    return facts


def scan_settings(
    model: Any,
    tokenizer: Any,
    *,
    statistics: Sequence[str],
    layers: Sequence[int] | None,
    stream: str | None,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    """The settings a scan's folder records, compared field by field on a resume.

    Examples
    --------
    >>> settings = scan_settings(None, None, statistics=["prev"], layers=None, stream=None,
    ...                          options={"max_tokens": 64})
    >>> settings["statistics"], settings["capture_options"]
    (['prev'], {'max_tokens': 64})
    """
    package = sys.modules["attnscope"]  # loaded with this module; imported, a layer upward

    return {
        "format": FORMAT,
        "attnscope_version": package.__version__,
        **model_facts(model, tokenizer),
        "statistics": list(statistics),
        "layers": None if layers is None else list(layers),
        "stream": stream,
        "capture_options": _plain(dict(options)),
    }


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):  # an empty one adds no field
        found: dict[str, Any] = {}
        for key, inner in value.items():
            found |= _flat(inner, f"{prefix}{key}.")
        return found
    return {prefix.rstrip("."): value}


def differences(held: Mapping[str, Any], asked: Mapping[str, Any]) -> list[str]:
    """``field: X there, Y now`` for each setting that differs.

    Examples
    --------
    >>> differences({"statistics": ["prev"], "stream": None},
    ...             {"statistics": ["prev", "sink"], "stream": None})
    ["statistics: ['prev'] there, ['prev', 'sink'] now"]
    """
    there, now = _flat(dict(held)), _flat(dict(asked))
    return [
        f"{key}: {there.get(key)!r} there, {now.get(key)!r} now"
        for key in sorted(set(there) | set(now), key=lambda k: (k not in now, k))
        if there.get(key) != now.get(key)
    ]


class ScanStore:
    """One scan's folder: each input's ``(rows, tokens)`` written atomically, read back.

    Open one with :meth:`open`, which checks the folder and says which inputs
    are already there.

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> folder = Path(tempfile.mkdtemp()) / "run"
    >>> store, done = ScanStore.open(folder, {"format": FORMAT}, ["d0", "d1"])
    >>> store.write(1, (pd.DataFrame({"input": [1], "prev": [0.5]}), 7))
    >>> ScanStore.open(folder, {"format": FORMAT}, ["d0", "d1"])[1]
    [1]
    >>> store.read(1)[0]["prev"].tolist(), store.read(1)[1]
    ([0.5], 7)
    """

    def __init__(self, folder: Path, digests: Sequence[str]) -> None:
        self.folder = folder
        self.digests = list(digests)

    @classmethod
    def open(
        cls,
        out: str | os.PathLike[str],
        settings: Mapping[str, Any],
        digests: Sequence[str],
        *,
        overwrite: bool = False,
    ) -> tuple[ScanStore, list[int]]:
        """Check ``out`` (create it, or resume it), write its settings; the store and inputs done.

        ``overwrite=True`` first deletes a previous scan's files there (its
        ``scan.json`` and input files only).
        """
        try:
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            raise ImportError(
                "scan(..., out=) writes Parquet files through pyarrow, which is not installed; "
                'run `pip install "attnscope[analysis]"` (or `pip install pyarrow`).'
            ) from None
        folder = Path(out).expanduser()
        if folder.exists() and not folder.is_dir():
            raise ScanFolderError(
                f"out={str(out)!r} is a file, not a folder; scan writes a folder of Parquet "
                "files there. Give a folder path (it is created if missing)."
            )
        held = _read_settings(folder, out) if folder.is_dir() else None
        if held is not None and overwrite:
            _clear(folder)
            held = None
        store = cls(folder, digests)
        if held is None:
            folder.mkdir(parents=True, exist_ok=True)
            store._atomic(SETTINGS, json.dumps(settings, indent=1, sort_keys=True).encode())
            return store, []
        differ = differences(held, settings)
        if differ:
            raise ScanFolderError(
                f"out={str(out)!r} holds a scan with other settings ({'; '.join(differ)}). "
                "Rerun with the settings it was made with to resume it, point out= at a new "
                "folder, or pass overwrite=True to delete its inputs and start again."
            )
        return store, store._done(out)

    def _done(self, out: Any) -> list[int]:
        """Inputs whose file is here, each checked to be the input given now at that index."""
        import pyarrow.parquet as pq

        done = []
        for path in sorted(self.folder.iterdir()):
            if path.name.startswith(TEMPORARY):
                path.unlink()  # a write cut short: never data
                continue
            index = _index_of(path.name)
            if index is None:
                continue
            if index >= len(self.digests):
                raise ScanFolderError(
                    f"out={str(out)!r} holds inputs[{index}], but inputs has "
                    f"{len(self.digests)}; it is the folder of a scan of other inputs. Pass the "
                    "same inputs to resume, a new folder, or overwrite=True."
                )
            meta = pq.read_schema(path).metadata or {}
            if meta.get(DIGEST_KEY, b"").decode() != self.digests[index]:
                raise ScanFolderError(
                    f"out={str(out)!r} holds inputs[{index}] of another input than the "
                    f"inputs[{index}] given now ({path.name}); pass the inputs in the order "
                    "the scan was started with, use a new folder, or overwrite=True."
                )
            done.append(index)
        return done

    def write(self, index: int, result: tuple[pd.DataFrame, int]) -> None:
        """Write input ``index``'s rows and token count, atomically."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        frame, tokens = result
        table = pa.Table.from_pandas(frame, preserve_index=False)
        meta = dict(table.schema.metadata or {})
        meta[TOKENS_KEY] = str(int(tokens)).encode()
        meta[DIGEST_KEY] = self.digests[index].encode()
        sink = pa.BufferOutputStream()
        pq.write_table(table.replace_schema_metadata(meta), sink)
        self._atomic(input_file(index), sink.getvalue().to_pybytes())

    def read(self, index: int) -> tuple[pd.DataFrame, int]:
        """Input ``index``'s rows and token count, as written."""
        import pyarrow.parquet as pq

        table = pq.read_table(self.folder / input_file(index))
        tokens = int((table.schema.metadata or {})[TOKENS_KEY])
        frame: pd.DataFrame = table.to_pandas()
        return frame, tokens

    def _atomic(self, name: str, data: bytes) -> None:
        """``data`` as ``name``: written under a temporary name, synced, then renamed into place."""
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = self.folder / f"{TEMPORARY}{os.getpid()}-{name}"
        with open(partial, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, self.folder / name)


def _read_settings(folder: Path, out: Any) -> dict[str, Any] | None:
    """The folder's settings; None for a new or empty folder; refused if not a scan's."""
    path = folder / SETTINGS
    if not path.exists():
        others = sorted(p.name for p in folder.iterdir() if not p.name.startswith(TEMPORARY))
        if not others:
            return None
        raise ScanFolderError(
            f"out={str(out)!r} is not a scan's folder: it holds {others[:3]} and no {SETTINGS}. "
            "Point out= at a new or empty folder (nothing here was touched)."
        )
    try:
        held = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ScanFolderError(
            f"out={str(out)!r} has a {SETTINGS} that is not readable JSON ({err}); it is not a "
            "scan's folder. Point out= at a new folder."
        ) from None
    if not isinstance(held, dict) or held.get("format") != FORMAT:
        raise ScanFolderError(
            f"out={str(out)!r} has a {SETTINGS} that is not an attnscope scan's (format "
            f"{held.get('format') if isinstance(held, dict) else None!r}, expected {FORMAT!r}). "
            "Point out= at a new folder."
        )
    return held


def _clear(folder: Path) -> None:
    """Delete a scan's own files (settings, inputs, partial writes), nothing else."""
    for path in folder.iterdir():
        if (
            path.name == SETTINGS
            or path.name.startswith(TEMPORARY)
            or _index_of(path.name) is not None
        ):
            path.unlink()
