"""Token ids as an input, like text: read, checked and labelled before any work.

TransformerLens users pass tokens (``run_with_cache(tokens)``), and protocols
such as induction's (BOS + random tokens, repeated) have no text form. An id
input is a 1-D or ``(1, N)`` torch tensor or numpy array, a list of ints, or
a ``BatchEncoding`` / dict with ``input_ids`` (and optionally
``attention_mask`` and ``token_type_ids``). Labels come from the tokenizer, or
are the ids themselves (``"#1234"``) when there is none.

A trace holds one sequence, so :func:`attnscope.capture` refuses a
``(B, N)`` batch with ``B > 1`` and says how to capture each row;
:func:`attnscope.scan` takes a batch as one input per row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.sources.hf.tokenize import Encoded, tokens_for_ids
from attnscope.trace import TokenKind, Tokens

ID_KEYS = ("input_ids", "attention_mask", "token_type_ids")
"""What an id input may carry; other keys of a mapping are refused by name."""


def is_token_ids(value: object) -> bool:
    """True when ``value`` is meant as token ids (any tensor, array, list of ints, encoding).

    Whether the ids are good is :func:`read_token_ids`'s to say; this only
    tells them from text, chat messages and images.

    Examples
    --------
    >>> is_token_ids([1, 2, 3]), is_token_ids({"input_ids": [[1, 2]]}), is_token_ids("Hi")
    (True, True, False)
    >>> is_token_ids([{"role": "user", "content": "Hi"}])
    False
    """
    if isinstance(value, torch.Tensor | np.ndarray):
        return True
    if isinstance(value, Mapping):
        return "input_ids" in value
    if isinstance(value, list | tuple) and value:
        # numbers of any kind count, so that floats are refused as ids with the fix
        return all(
            isinstance(v, int | float | np.number | list | tuple | np.ndarray) for v in value
        )
    return False


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _as_tensor(value: Any, name: str) -> torch.Tensor:
    """``value`` as an int64 tensor; floats, bools and ragged lists refused with the fix."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
            raise AttnscopeTypeError(
                f"{name} must hold integer token ids; got a {value.dtype} tensor. Convert it "
                f"with {name}.long() if its values are ids (they come from tokenizer(...)"
                "['input_ids'] or model.to_tokens(...))."
            )
        return value.detach().to("cpu", torch.int64)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iu":
            raise AttnscopeTypeError(
                f"{name} must hold integer token ids; got a numpy array of {value.dtype}. "
                f"Convert it with {name}.astype('int64') if its values are ids."
            )
        return torch.from_numpy(value.astype(np.int64))
    nested = bool(value) and isinstance(value[0], list | tuple | np.ndarray)
    rows = [_row(r) for r in value] if nested else [list(value)]
    flat = [v for row in rows for v in row]
    bad = next((v for v in flat if not _is_int(v)), None)
    if bad is not None or not all(len(r) == len(rows[0]) for r in rows):
        what = f"a {type(bad).__name__} ({bad!r})" if bad is not None else "rows of unequal length"
        raise AttnscopeTypeError(
            f"{name} must be a list of int token ids (or equal-length lists of them); it holds "
            f"{what}. Pass the ids a tokenizer gives (tokenizer(text)['input_ids'])."
        )
    return torch.tensor([[int(v) for v in r] for r in rows], dtype=torch.int64).reshape(
        len(rows), -1
    )


def _row(value: Any) -> list[Any]:
    if isinstance(value, np.ndarray):
        return list(value.tolist()) if value.ndim == 1 else [value]
    return list(value) if isinstance(value, list | tuple) else [value]


def _two_d(tensor: torch.Tensor, name: str) -> torch.Tensor:
    if tensor.dim() == 1:
        return tensor.unsqueeze(0)
    if tensor.dim() != 2:
        raise AttnscopeError(
            f"{name} must be 1-D (N,) or 2-D (batch, N) token ids; got shape "
            f"{tuple(tensor.shape)}. Pass one sequence, e.g. ids.reshape(1, -1)."
        )
    return tensor


def read_token_ids(value: Any, what: str = "text") -> dict[str, torch.Tensor]:
    """The ``(B, N)`` int64 tensors of an id input, checked; nothing is run.

    Refused with the fix: float, bool or complex ids, ragged lists, shapes
    other than 1-D/2-D, no tokens, negative ids, an ``attention_mask`` of
    another shape or with values other than 0/1, a row the mask hides
    entirely, and mapping keys other than :data:`ID_KEYS`.

    Parameters
    ----------
    value
        A tensor, numpy array, list of ints (or of equal-length lists), or a
        mapping (``BatchEncoding``) with ``input_ids``.
    what
        The argument's name for messages.

    Returns
    -------
    dict
        ``input_ids`` and whichever of ``attention_mask`` / ``token_type_ids``
        were given, each ``(B, N)`` int64 on the CPU.

    Examples
    --------
    >>> read_token_ids([5, 6, 7])["input_ids"]
    tensor([[5, 6, 7]])
    >>> read_token_ids(torch.tensor([[1.0, 2.0]]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeTypeError: text must hold integer token ids; got a torch.float32 ...
    """
    if isinstance(value, Mapping):
        allowed = (*ID_KEYS, "offset_mapping", "special_tokens_mask")
        extra = sorted(str(k) for k in value if k not in allowed)
        if extra:
            raise AttnscopeTypeError(
                f"{what} is a mapping with {extra}; token ids in a mapping take only "
                f"{list(ID_KEYS)}. Pass other model inputs (pixel_values ...) as text or "
                "images= instead."
            )
        given = {k: (f"{what}[{k!r}]", value[k]) for k in ID_KEYS if value.get(k) is not None}
    else:
        given = {"input_ids": (what, value)}
    found = {key: _two_d(_as_tensor(v, name), name) for key, (name, v) in given.items()}
    ids = found["input_ids"]
    if ids.shape[1] == 0:
        raise AttnscopeError(
            f"{what} holds no token ids (shape {tuple(ids.shape)}); pass at least one token."
        )
    negative = (ids < 0).nonzero()
    if len(negative):
        row, at = int(negative[0, 0]), int(negative[0, 1])
        raise AttnscopeError(
            f"{what} holds a negative token id ({int(ids[row, at])} at position {at}); token "
            "ids are 0..vocab_size-1. Padding marked -100 (the labels' convention) belongs in "
            "attention_mask: put the pad token's id there and mask it with 0."
        )
    for key in ("attention_mask", "token_type_ids"):
        if key in found and found[key].shape != ids.shape:
            raise AttnscopeError(
                f"{what}'s {key} has shape {tuple(found[key].shape)} but input_ids has "
                f"{tuple(ids.shape)}; give one value per token."
            )
    mask = found.get("attention_mask")
    if mask is not None:
        if not bool(((mask == 0) | (mask == 1)).all()):
            raise AttnscopeError(
                f"{what}'s attention_mask must hold 0 (padding) and 1 (token) only."
            )
        empty = (mask.sum(dim=1) == 0).nonzero()
        if len(empty):
            raise AttnscopeError(
                f"{what}'s attention_mask hides every token of row {int(empty[0, 0])}; "
                "mark the tokens to run with 1."
            )
    return found


def check_one_sequence(found: Mapping[str, torch.Tensor], what: str = "text") -> None:
    """Refuse a batch of more than one sequence: a trace holds one.

    Examples
    --------
    >>> check_one_sequence({"input_ids": torch.zeros(2, 3, dtype=torch.long)})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: text holds a batch of 2 sequences ...
    """
    rows = int(found["input_ids"].shape[0])
    if rows != 1:
        raise AttnscopeError(
            f"{what} holds a batch of {rows} sequences (shape "
            f"{tuple(found['input_ids'].shape)}), but a trace holds one. Capture each row "
            "(capture(model, ids[i])), or pass the batch to attnscope.scan(model, ids), "
            "which takes one input per row."
        )


def check_vocabulary(model: Any, ids: torch.Tensor, what: str = "text") -> None:
    """Refuse an id with no row in ``model``'s input embeddings.

    Examples
    --------
    >>> from transformers import GPT2Config, GPT2Model
    >>> gpt = GPT2Model(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=10))
    >>> check_vocabulary(gpt, torch.tensor([[3, 12]]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: text holds token id 12 at position 1, but GPT2Model ...
    """
    from attnscope.sources.hf.preflight import vocab_size

    size = vocab_size(model)
    if size is None:
        return
    outside = (ids >= size).nonzero()
    if len(outside):
        row, at = int(outside[0, 0]), int(outside[0, 1])
        where = f"position {at}" if ids.shape[0] == 1 else f"row {row}, position {at}"
        raise AttnscopeError(
            f"{what} holds token id {int(ids[row, at])} at {where}, but {type(model).__name__} "
            f"has embeddings for ids 0..{size - 1} only (vocab_size {size}): the ids come from "
            "another model's tokenizer. Tokenize with this model's own tokenizer."
        )


def id_tokens(tokenizer: Any, ids: Sequence[int], mask: Sequence[int] | None = None) -> Tokens:
    """:class:`Tokens` for ids: the tokenizer's labels, or ``"#id"`` with no tokenizer.

    Positions where ``mask`` is 0 are padding. An id beyond the tokenizer's
    vocabulary (a model whose embeddings are padded) is labelled ``"#id"``.

    Examples
    --------
    >>> id_tokens(None, [17, 4], mask=[1, 0]).labels, id_tokens(None, [17, 4], [1, 0]).kinds
    (('#17', '#4'), ('token', 'padding'))
    """
    if tokenizer is None:
        raw = [f"#{i}" for i in ids]
        kinds: list[TokenKind] = ["token"] * len(raw)
        labels = list(raw)
    else:
        named = tokens_for_ids(tokenizer, ids)
        raw = [r if r != "None" else f"#{i}" for r, i in zip(named.raw, ids, strict=True)]
        labels = [
            label if r != "None" else f"#{i}"
            for label, r, i in zip(named.labels, named.raw, ids, strict=True)
        ]
        kinds = list(named.kinds)
    if mask is not None:
        kinds = ["padding" if not m else k for k, m in zip(kinds, mask, strict=True)]
    return Tokens(labels, raw, kinds)


def encode_ids(
    model: Any,
    tokenizer: Any,
    found: Mapping[str, torch.Tensor],
    *,
    max_tokens: int | None = None,
    what: str = "text",
) -> Encoded:
    """One sequence of checked ids (from :func:`read_token_ids`) as capture's :class:`Encoded`.

    ``max_tokens`` keeps the first tokens, as a tokenizer's truncation does.

    Examples
    --------
    >>> from transformers import GPT2Config, GPT2Model
    >>> gpt = GPT2Model(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=10))
    >>> enc = encode_ids(gpt, None, read_token_ids([1, 2, 3]), max_tokens=2)
    >>> enc.tokens.labels, enc.length, enc.untruncated
    (('#1', '#2'), 2, 3)
    """
    check_one_sequence(found, what)
    check_vocabulary(model, found["input_ids"], what)
    untruncated = int(found["input_ids"].shape[1])
    length = untruncated if max_tokens is None else min(untruncated, max_tokens)
    inputs = {k: v[:, :length] for k, v in found.items()}
    if "attention_mask" not in inputs:
        inputs["attention_mask"] = torch.ones_like(inputs["input_ids"])
    ids = [int(i) for i in inputs["input_ids"][0]]
    mask = [int(m) for m in inputs["attention_mask"][0]]
    tokens = id_tokens(tokenizer, ids, mask)
    types = inputs.get("token_type_ids")
    if types is not None and bool(types.any()):
        tokens = Tokens(tokens.labels, tokens.raw, tokens.kinds, [int(t) for t in types[0]])
    keep = [i for i, m in enumerate(mask) if m]
    return Encoded(inputs, tokens, keep, length, untruncated)
