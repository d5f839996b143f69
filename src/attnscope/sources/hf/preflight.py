"""What capture checks on the model and its inputs before the forward pass.

Each one catches a mismatch that would otherwise fail deep inside the model
(``IndexError: index out of range in self`` from an embedding, an error about
meta tensors) only after work was done, with a message that says which
argument is wrong and how to fix it.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain
from typing import Any

import torch

from attnscope.errors import AttnscopeError, AttnscopeTypeError


def preflight(model: Any, inputs: Mapping[str, torch.Tensor], tokens: Sequence[str] = ()) -> None:
    """Raise unless ``model`` has real weights and every id in ``inputs`` has an embedding.

    Parameters
    ----------
    model
        The loaded ``transformers`` model about to run.
    inputs
        The tokenizer's (or image processor's) output for it.
    tokens
        The tokenizer's strings for ``input_ids``, to name the token that does not fit.

    Examples
    --------
    >>> from transformers import BertConfig, BertModel
    >>> model = BertModel(BertConfig(vocab_size=10, hidden_size=8, num_hidden_layers=1,
    ...                              num_attention_heads=2, intermediate_size=8))
    >>> preflight(model, {"input_ids": torch.tensor([[1, 2]])})
    >>> preflight(model, {"input_ids": torch.tensor([[1, 42]])}, ["[CLS]", "cat"])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: the tokenizer gave token 'cat' id 42, but BertModel has ...
    """
    check_weights_loaded(model)
    check_ids_fit(model, inputs, tokens)


def check_tokenizer(tokenizer: Any) -> None:
    """Raise unless ``tokenizer`` looks like a ``transformers`` tokenizer (callable, maps ids back).

    Examples
    --------
    >>> check_tokenizer("bert-base-uncased")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeTypeError: tokenizer= must be a transformers tokenizer ...; got ...
    """
    if callable(tokenizer) and callable(getattr(tokenizer, "convert_ids_to_tokens", None)):
        return
    got = f"{type(tokenizer).__name__} {_short(tokenizer)}"
    hint = (
        " A tokenizers.Tokenizer needs wrapping: "
        "PreTrainedTokenizerFast(tokenizer_object=tokenizer)."
        if type(tokenizer).__module__.startswith("tokenizers")
        else ""
    )
    raise AttnscopeTypeError(
        "tokenizer= must be a transformers tokenizer (such as "
        f"AutoTokenizer.from_pretrained(path)); got {got}. Leave it out to load the one saved "
        f"with the model.{hint}"
    )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_weights_loaded(model: Any) -> None:
    """Raise when a weight of ``model`` is on the meta device (a shape with no values).

    Weights that accelerate offloads (a module with an ``_hf_hook`` moves them
    in at each forward) sit on the meta device legitimately and pass.

    Examples
    --------
    >>> with torch.device("meta"):
    ...     layer = torch.nn.Linear(2, 2)
    >>> check_weights_loaded(layer)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: Linear's weights are not loaded: ...
    """
    for name, tensor in _unhooked_tensors(model):
        if tensor.is_meta:
            raise AttnscopeError(
                f"{type(model).__name__}'s weights are not loaded: {name} is on the meta "
                "device (a shape with no values, as from torch.device('meta'), "
                "init_empty_weights or from_pretrained(..., device_map='meta')). Load real "
                "weights first: from_pretrained(path) without a meta device, or "
                "model.to_empty(device='cpu') followed by model.load_state_dict(weights)."
            )


def check_ids_fit(
    model: Any, inputs: Mapping[str, torch.Tensor], tokens: Sequence[str] = ()
) -> None:
    """Raise when a token id or token type id has no row in the model's embeddings.

    Examples
    --------
    >>> from transformers import BertConfig, BertModel
    >>> model = BertModel(BertConfig(vocab_size=10, hidden_size=8, num_hidden_layers=1,
    ...                              num_attention_heads=2, intermediate_size=8,
    ...                              type_vocab_size=1))
    >>> check_ids_fit(model, {"input_ids": torch.tensor([[1, 2]]),
    ...                       "token_type_ids": torch.tensor([[0, 1]])})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: the inputs give token type 1, ...
    """
    ids = inputs.get("input_ids")
    size = vocab_size(model)
    if isinstance(ids, torch.Tensor) and ids.numel() and size is not None:
        flat = ids.reshape(-1)
        outside = ((flat < 0) | (flat >= size)).nonzero()
        if len(outside):
            at = int(outside[0, 0])
            # ids is (batch, seq): token strings are for batch item 0, the row capture keeps.
            named = f"token {tokens[at]!r} id" if at < len(tokens) else "token id"
            raise AttnscopeError(
                f"the tokenizer gave {named} {int(flat[at])}, but {type(model).__name__} has "
                f"embeddings for ids 0..{size - 1} only (vocab_size {size}): the tokenizer "
                "does not belong to this model. Pass the model's own tokenizer as tokenizer= "
                "(AutoTokenizer.from_pretrained on the folder or name the model came from)."
            )
    types = inputs.get("token_type_ids")
    type_count = getattr(model.config, "type_vocab_size", None)
    if (
        isinstance(types, torch.Tensor)
        and types.numel()
        and isinstance(type_count, int)
        and type_count > 0  # 0: the model adds no token type embedding (DeBERTa-v2)
        and "token_type_ids" in inspect.signature(model.forward).parameters
    ):
        top = int(types.max())
        if top >= type_count:
            raise AttnscopeError(
                f"the inputs give token type {top}, but {type(model).__name__} knows types "
                f"0..{type_count - 1} only (type_vocab_size {type_count}): the tokenizer "
                "marks sentence B for a model that has no sentence B embedding. Pass the "
                "model's own tokenizer as tokenizer=, or put all the text in text= and "
                "leave out text_pair=."
            )


def vocab_size(model: Any) -> int | None:
    """How many token ids ``model``'s input embeddings have rows for, or None if unknown.

    Examples
    --------
    >>> from transformers import GPT2Config, GPT2Model
    >>> vocab_size(GPT2Model(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=10)))
    10
    """
    try:
        embeddings = model.get_input_embeddings()
    except (AttributeError, NotImplementedError):  # some model code does not implement it
        embeddings = None
    size = getattr(embeddings, "num_embeddings", None)
    if isinstance(size, int):
        return size
    size = getattr(model.config, "vocab_size", None)
    return size if isinstance(size, int) and size > 0 else None


def _unhooked_tensors(model: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """Parameters and buffers by name, skipping those under an accelerate hook."""
    hooked = [name for name, m in model.named_modules() if hasattr(m, "_hf_hook")]
    for name, tensor in chain(model.named_parameters(), model.named_buffers()):
        if not any(name.startswith(f"{h}.") or not h for h in hooked):
            yield name, tensor
