"""The error family attnscope raises for bad input, so callers can catch it once.

:class:`AttnscopeError` subclasses :class:`ValueError`, and each member also
subclasses the builtin a caller may already catch (``TypeError``, ``IndexError``,
``OSError``), so code written as ``except ValueError`` or ``except TypeError``
keeps working.
"""


class AttnscopeError(ValueError):
    """Something given to attnscope was wrong; the message says what and how to fix it.

    Examples
    --------
    >>> from attnscope.errors import AttnscopeError
    >>> issubclass(AttnscopeError, ValueError)
    True
    """


class AttnscopeTypeError(AttnscopeError, TypeError):
    """A value of the wrong kind was given to attnscope; the message says what it takes.

    Also a :class:`TypeError`, so ``except TypeError`` keeps working.

    Examples
    --------
    >>> from attnscope.errors import AttnscopeError, AttnscopeTypeError
    >>> issubclass(AttnscopeTypeError, AttnscopeError), issubclass(AttnscopeTypeError, TypeError)
    (True, True)
    """


class AttnscopeIndexError(AttnscopeError, IndexError):
    """An index (layer, head, token, row) outside what the trace holds.

    Also an :class:`IndexError`, so ``except IndexError`` keeps working.

    Examples
    --------
    >>> from attnscope.errors import AttnscopeIndexError
    >>> issubclass(AttnscopeIndexError, IndexError)
    True
    """


class TraceFileError(AttnscopeError):
    """A file given to :meth:`~attnscope.AttentionTrace.load` is not a readable trace.

    Raised for every malformed file (truncated, damaged, not a ``.npz``, no or a
    bad header, arrays missing or of the wrong kind); the message names the
    file, what is wrong with it, and how to get a good one.

    Examples
    --------
    >>> from attnscope.errors import AttnscopeError, TraceFileError
    >>> issubclass(TraceFileError, AttnscopeError)
    True
    """


class ModelNotFoundError(AttnscopeError, OSError):
    """A model name or path that names nothing on this machine (and could not be fetched).

    Also an :class:`OSError`, as transformers' own error is, so ``except OSError``
    keeps working.

    Examples
    --------
    >>> from attnscope.errors import ModelNotFoundError
    >>> issubclass(ModelNotFoundError, OSError), issubclass(ModelNotFoundError, ValueError)
    (True, True)
    """


class ScanFolderError(AttnscopeError):
    """``scan(..., out=folder)`` was given a folder that is not this scan's to resume.

    The folder is a file, holds other files and no ``scan.json``, or holds a
    scan with other settings or other inputs; the message names the difference
    and the fixes (a new folder, or ``overwrite=True``). Nothing in it is touched.

    Examples
    --------
    >>> from attnscope.errors import AttnscopeError, ScanFolderError
    >>> issubclass(ScanFolderError, AttnscopeError)
    True
    """


class ScanRankError(AttnscopeError, RuntimeError):
    """An input failed on one rank of a distributed scan; every rank raises this, naming both.

    Also a :class:`RuntimeError`: the input was fine to start, its run failed.

    Examples
    --------
    >>> from attnscope.errors import ScanRankError
    >>> issubclass(ScanRankError, RuntimeError), issubclass(ScanRankError, ValueError)
    (True, True)
    """
