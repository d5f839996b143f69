"""What a capture takes as input, told without a model: chat messages, token ids, their labels.

The analyses that take many inputs (:func:`attnscope.scan`,
:func:`attnscope.head_detector`) and the live view sort and label their inputs
with these, as :func:`attnscope.capture` does; they come from ``sources/hf``'s
own files through this door only.

Examples
--------
>>> is_chat([{"role": "user", "content": "Hi"}]), is_token_ids([101, 102]), is_token_ids("Hi")
(True, True, False)
>>> read_token_ids([5, 6])["input_ids"].tolist(), id_tokens(None, [5, 6]).labels
([[5, 6]], ('#5', '#6'))
>>> check_generation_options(None, None, {"do_sample": True})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
attnscope.errors.AttnscopeTypeError: ['do_sample'] only apply when capture generates; pass ...
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnscope.sources.hf.chat import is_chat
from attnscope.sources.hf.generate import plan_generation
from attnscope.sources.hf.token_ids import id_tokens, is_token_ids, read_token_ids

__all__ = ["check_generation_options", "id_tokens", "is_chat", "is_token_ids", "read_token_ids"]


def check_generation_options(
    max_new_tokens: int | None, seed: int | None, settings: Mapping[str, Any]
) -> None:
    """Refuse generation arguments capture would refuse for any model, before a model is loaded.

    What depends on the model (an encoder–decoder, no language-model head) is
    :meth:`~attnscope.sources.session.ModelSession.check_generation`'s.

    Examples
    --------
    >>> check_generation_options(3, 0, {"do_sample": True})
    """
    plan_generation(None, max_new_tokens, seed, settings)
