"""Read the arrays of a ``.npz`` file that may be damaged or hostile, without numpy's loader.

Every member's ``.npy`` header is parsed and checked before any data is read:
object arrays are refused (nothing is ever unpickled), and a shape that asks
for more bytes than the member holds is caught before memory is allocated.
Any fault of the bytes ends in one :class:`~attnscope.errors.TraceFileError`.
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path
from typing import IO, Any

import numpy as np

from attnscope.errors import AttnscopeError, TraceFileError

ALLOWED_KINDS = {"b": "boolean", "f": "float", "i": "integer", "u": "integer", "U": "text"}
"""Array kinds a trace file may hold (numpy ``dtype.kind``): no objects, bytes or records."""

REWRITE = "save the trace again with AttentionTrace.save"
"""The fix every message about a bad file ends with."""
# What decoding damaged bytes may raise: zipfile, zlib and numpy's header parser raise
# many types (BadZipFile, zlib.error, EOFError, ValueError, SyntaxError, even
# tokenize.TokenError). Each means the same to the reader, so all of them are caught
# around the decoding steps only, and turned into one TraceFileError.
_DAMAGE = Exception


def read_npz(path: Path) -> dict[str, np.ndarray[Any, Any]]:
    """Every array of the ``.npz`` file at ``path``, by name (``.npy`` dropped).

    Raises
    ------
    TraceFileError
        The file is not a zip archive, is truncated or damaged, or holds a
        member that is not a plain numeric or text ``.npy`` array.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a.npz")
    >>> np.savez(path, x=np.arange(3, dtype=np.float32))
    >>> read_npz(Path(path))["x"]
    array([0., 1., 2.], dtype=float32)
    >>> _ = open(path, "wb").write(b"not a zip")
    >>> read_npz(Path(path))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.TraceFileError: ... is not an attnscope trace: not a .npz (zip) file...
    """
    if path.stat().st_size == 0:
        raise TraceFileError(f"{path} is empty (0 bytes), not an attnscope trace; {REWRITE}.")
    try:
        archive = zipfile.ZipFile(path)
    except _DAMAGE as err:
        raise TraceFileError(
            f"{path} is not an attnscope trace: not a .npz (zip) file, or cut short "
            f"({_reason(err)}); {REWRITE}."
        ) from None
    arrays: dict[str, np.ndarray[Any, Any]] = {}
    with archive:
        for info in archive.infolist():
            name = info.filename.removesuffix(".npy")
            try:
                with archive.open(info) as member:
                    arrays[name] = _read_member(member, info.file_size, path, name)
            except TraceFileError:
                raise
            except _DAMAGE as err:
                raise TraceFileError(
                    f"{path} is damaged: its array {name!r} cannot be read ({_reason(err)}); "
                    f"the file was cut short or changed after it was written; {REWRITE}."
                ) from None
    return arrays


def _read_member(member: IO[bytes], size: int, path: Path, name: str) -> np.ndarray[Any, Any]:
    version = np.lib.format.read_magic(member)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
    else:
        raise AttnscopeError(f".npy format version {version} is not one attnscope writes")
    if dtype.hasobject or dtype.kind not in ALLOWED_KINDS or dtype.fields is not None:
        raise TraceFileError(
            f"{path} holds array {name!r} of dtype {dtype}, which an attnscope trace never "
            "holds (only numbers and text; object arrays would need unpickling, which "
            f"attnscope never does); {REWRITE}."
        )
    count = math.prod(shape)  # Python ints: a damaged shape cannot overflow into a small one
    nbytes = count * dtype.itemsize
    if count < 0 or nbytes > size:
        raise AttnscopeError(f"shape {shape} needs {nbytes} bytes but the member holds {size}")
    data = member.read(nbytes)
    if len(data) != nbytes:
        raise EOFError(f"{len(data)} of {nbytes} bytes of data")
    if member.read(1):  # reading to the end also makes zipfile check the CRC
        raise AttnscopeError("bytes after the array's data")
    if dtype.kind == "U":  # UCS-4 code units above U+10FFFF crash str() with SystemError
        order = dtype.byteorder if dtype.byteorder in "<>" else "="
        if np.any(np.frombuffer(data, dtype=np.dtype(np.uint32).newbyteorder(order)) > 0x10FFFF):
            raise AttnscopeError("its text holds code points beyond U+10FFFF")
    array = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    return array.copy()  # writable and owning its memory, like np.load's arrays


def _reason(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:120]}" if text else type(err).__name__
