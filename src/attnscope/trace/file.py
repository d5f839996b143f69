"""Write and read :class:`~attnscope.AttentionTrace` files (``.npz``, no pickle).

One JSON header (tokens, stream layout, metadata, notes) and one array per
stream field, named ``<stream>/<field>`` (``attention`` holds the stored
weights, absent when the stream keeps q and k only).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attnscope.trace.stream import ARRAY_FIELDS, AttentionStream
from attnscope.trace.tokens import Tokens

if TYPE_CHECKING:
    from attnscope.trace.attention_trace import AttentionTrace

FORMAT = "attnscope.AttentionTrace"
FORMAT_VERSION = 2
"""2: streams may hold q/k without weights, float16 weights, key spans and reference rows;
files of version 1 (float32 weights always) still load."""


def save_trace(trace: AttentionTrace, path: str | Path) -> Path:
    """Write ``trace`` to ``path`` (``.npz`` added when missing); return the path written.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from attnscope import AttentionTrace
    >>> t = AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32))
    >>> save_trace(t, os.path.join(tempfile.mkdtemp(), "t")).name
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
    arrays["header"] = np.array(json.dumps(header))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]
    return path


def load_trace(cls: type[AttentionTrace], path: str | Path) -> AttentionTrace:
    """Read a file written by :func:`save_trace` as an instance of ``cls``.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from attnscope import AttentionTrace
    >>> p = save_trace(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)),
    ...                os.path.join(tempfile.mkdtemp(), "t"))
    >>> load_trace(AttentionTrace, p).tokens
    ['a']
    """
    try:
        opened = np.load(Path(path), allow_pickle=False)
    except ValueError:  # numpy's message for a non-numpy file talks about pickles
        raise ValueError(
            f"{path} is not an attnscope trace (not a .npz file); write one with "
            "AttentionTrace.save."
        ) from None
    if not isinstance(opened, np.lib.npyio.NpzFile):
        raise ValueError(
            f"{path} holds a single array, not an attnscope trace; write one with "
            "AttentionTrace.save."
        )
    with opened as data:
        if "header" not in data:
            raise ValueError(f"{path} is not an attnscope trace (no header).")
        header = json.loads(str(data["header"]))
        if header.get("format") != FORMAT:
            raise ValueError(f"{path} is not an attnscope trace.")
        if int(header.get("version", 0)) > FORMAT_VERSION:
            raise ValueError(
                f"{path} was written by a newer attnscope (format "
                f"{header['version']}); upgrade attnscope to read it."
            )
        streams = [
            AttentionStream(
                name=sm["name"],
                query_side=sm["query_side"],
                key_side=sm["key_side"],
                layers=tuple(sm["layers"]),
                **{  # type: ignore[arg-type]
                    attr: data[f"{sm['name']}/{attr}"]
                    for attr in ARRAY_FIELDS
                    if f"{sm['name']}/{attr}" in data
                },
            )
            for sm in header["streams"]
        ]
    target = None if header["target"] is None else Tokens.from_json(header["target"])
    return cls.from_streams(
        Tokens.from_json(header["source"]),
        streams,
        target=target,
        metadata=header["metadata"],
        notes=header["notes"],
    )
