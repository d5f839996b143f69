"""The one error type attnscope raises for bad input, so callers can catch it once.

It subclasses :class:`ValueError`, so code written as ``except ValueError``
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
