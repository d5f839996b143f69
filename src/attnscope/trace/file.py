"""Write and read :class:`~attnscope.AttentionTrace` files (``.npz``, no pickle).

One JSON header (tokens, stream layout, metadata, notes) and one array per
stream field, named ``<stream>/<field>`` (``attention`` holds the stored
weights, absent when the stream keeps q and k only).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from attnscope.errors import TraceFileError
from attnscope.trace.images import ImageRegion
from attnscope.trace.npz_read import REWRITE, read_npz
from attnscope.trace.parts import TraceParts
from attnscope.trace.stream import ARRAY_FIELDS, AttentionStream
from attnscope.trace.tokens import Tokens

FORMAT = "attnscope.AttentionTrace"
FORMAT_VERSION = 2
_IMAGE_PREFIX = "image/pixels/"  # not a stream name's "<stream>/<field>": streams never read it
"""2: streams may hold q/k without weights, float16 weights, key spans and reference rows;
files of version 1 (float32 weights always) still load."""


def save_parts(trace: TraceParts, path: str | Path) -> Path:
    """Write a trace's parts to ``path`` (``.npz`` added when missing); return the path written.

    What :meth:`AttentionTrace.save <attnscope.AttentionTrace.save>` runs.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> s = AttentionStream(np.ones((1, 1, 1, 1), np.float32))
    >>> save_parts(TraceParts(Tokens(["a"]), [s]), os.path.join(tempfile.mkdtemp(), "t")).name
    't.npz'
    """
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_suffix(path.suffix + ".npz") if path.suffix else path.with_suffix(".npz")
    arrays: dict[str, np.ndarray[Any, Any]] = {}
    streams_meta = []
    for name, s in trace.streams.items():
        streams_meta.append(
            {
                "name": name,
                "query_side": s.query_side,
                "key_side": s.key_side,
                "layers": list(s.layers),
            }
        )
        for attr in ARRAY_FIELDS:
            value = s.weights if attr == "attention" else getattr(s, attr)
            if value is not None:
                arrays[f"{name}/{attr}"] = value
    header = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "source": trace.source.to_json(),
        "target": None if trace.target is None else trace.target.to_json(),
        "streams": streams_meta,
        "metadata": trace.metadata,
        "notes": trace.notes,
    }
    if trace.images:  # an optional field: files without images stay readable by older readers
        header["images"] = [region.to_json() for region in trace.images]
        arrays.update({f"{_IMAGE_PREFIX}{i}": r.pixels for i, r in enumerate(trace.images)})
    arrays["header"] = np.array(json.dumps(header))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]
    return path


def load_parts(path: str | Path) -> TraceParts:
    """Read a file written by :func:`save_parts`: the parts of the trace it holds.

    What :meth:`AttentionTrace.load <attnscope.AttentionTrace.load>` runs.

    Nothing in the file is unpickled or executed. A file that is missing
    raises :class:`FileNotFoundError`; any other file that is not a whole,
    valid trace raises :class:`~attnscope.errors.TraceFileError` naming what
    is wrong.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> s = AttentionStream(np.ones((1, 1, 1, 1), np.float32))
    >>> p = save_parts(TraceParts(Tokens(["a"]), [s]), os.path.join(tempfile.mkdtemp(), "t"))
    >>> load_parts(p).source.labels
    ('a',)
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"no trace file at {path}; check the path (AttentionTrace.save adds .npz when "
            "the name has no suffix)."
        )
    if path.is_dir():
        raise TraceFileError(
            f"{path} is a folder; pass the .npz file that AttentionTrace.save wrote."
        )
    arrays = read_npz(path)
    header = read_header(arrays, path)
    try:
        streams = [
            AttentionStream(
                name=sm["name"],
                query_side=sm["query_side"],
                key_side=sm["key_side"],
                layers=tuple(sm["layers"]),
                **{  # type: ignore[arg-type]
                    attr: arrays[f"{sm['name']}/{attr}"]
                    for attr in ARRAY_FIELDS
                    if f"{sm['name']}/{attr}" in arrays
                },
            )
            for sm in header["streams"]
        ]
        target = None if header["target"] is None else Tokens.from_json(header["target"])
        return TraceParts(
            Tokens.from_json(header["source"]),
            streams,
            target=target,
            metadata=header["metadata"],
            notes=header["notes"],
            images=[
                ImageRegion.from_json(data, arrays[f"{_IMAGE_PREFIX}{i}"])
                for i, data in enumerate(header.get("images") or [])
            ],
        )
    # What the constructors raise for values that do not fit (AttnscopeError is a ValueError).
    except (ValueError, TypeError, IndexError, KeyError, OverflowError) as err:
        raise TraceFileError(
            f"{path} holds a trace that does not check out: {err} The file was changed "
            f"after it was written, or not written by AttentionTrace.save; {REWRITE}."
        ) from None


def read_header(arrays: Mapping[str, np.ndarray[Any, Any]], path: Path) -> dict[str, Any]:
    """The file's JSON header, checked field by field against what :func:`save_parts` writes.

    Examples
    --------
    >>> read_header({"x": np.zeros(1)}, Path("t.npz"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.TraceFileError: t.npz is not an attnscope trace: it has no header array...
    """
    if "header" not in arrays:
        raise TraceFileError(
            f"{path} is not an attnscope trace: it has no header array (arrays found: "
            f"{sorted(arrays)[:8]}); {REWRITE}."
        )
    raw = arrays["header"]
    if raw.dtype.kind != "U" or raw.shape != ():
        raise _bad_header(path, f"it is a {raw.dtype} array of shape {raw.shape}, not one string")
    try:
        header = json.loads(str(raw))
    except ValueError as err:
        raise _bad_header(path, f"it is not JSON ({err})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise TraceFileError(
            f"{path} is not an attnscope trace: its header does not say format "
            f"{FORMAT!r}; {REWRITE}."
        )
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _bad_header(path, f"its version is {version!r}, not a positive integer")
    if version > FORMAT_VERSION:
        raise TraceFileError(
            f"{path} was written by a newer attnscope (format {version}, this one reads "
            f"up to {FORMAT_VERSION}); upgrade attnscope to read it."
        )
    for side in ("source", "target"):
        tokens = _expect(header, side, dict if side == "source" else (dict, type(None)), path)
        if tokens is not None:
            _expect(tokens, "labels", list, path, f"{side}.")
    _expect(header, "metadata", dict, path)
    _expect(header, "notes", list, path)
    streams = _expect(header, "streams", list, path)
    if not streams:
        raise _bad_header(path, "it lists no streams of attention")
    for i, sm in enumerate(streams):
        if not isinstance(sm, dict):
            raise _bad_header(path, f"streams[{i}] is {type(sm).__name__}, not an object")
        name = _expect(sm, "name", str, path, f"streams[{i}].")
        for side in ("query_side", "key_side"):
            if sm.get(side) not in ("source", "target"):
                raise _bad_header(path, f"streams[{i}].{side} is {sm.get(side)!r}")
        layers = _expect(sm, "layers", list, path, f"streams[{i}].")
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in layers):
            raise _bad_header(path, f"streams[{i}].layers holds {layers!r}, not layer indices")
        has_qk = f"{name}/queries" in arrays and f"{name}/keys" in arrays
        if f"{name}/attention" not in arrays and not has_qk:
            raise TraceFileError(
                f"{path} is incomplete: stream {name!r} has no attention array "
                f"('{name}/attention' is missing) and no queries and keys to compute it "
                f"from; {REWRITE}."
            )
    return header


def _expect(
    header: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: Path, where: str = ""
) -> Any:
    value = header.get(key)
    if key not in header or not isinstance(value, kind):
        raise _bad_header(
            path, f"{where}{key} is {type(value).__name__ if key in header else 'missing'}"
        )
    return value


def _bad_header(path: Path, what: str) -> TraceFileError:
    return TraceFileError(f"{path} has a damaged header: {what}; {REWRITE}.")
