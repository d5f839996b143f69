"""Models and tokenizers from a name or a local path (offline works for local paths)."""

from __future__ import annotations

import os
from typing import Any


def load_model(model: Any) -> Any:
    """``model`` itself, or the model that ``from_pretrained(model)`` loads for a string.

    Encoder–decoder checkpoints load with their language-model head, so that
    capture can generate a target.

    Examples
    --------
    >>> load_model(3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: model must be a transformers PreTrainedModel or a model name/path; got int. ...
    """
    if isinstance(model, str | os.PathLike):
        model = os.fspath(model)
        from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM

        config = AutoConfig.from_pretrained(model)
        auto = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModel
        return auto.from_pretrained(model)
    from transformers import PreTrainedModel

    if not isinstance(model, PreTrainedModel):
        raise TypeError(
            "model must be a transformers PreTrainedModel or a model name/path; got "
            f"{type(model).__name__}. For your own attention module use "
            "AttentionTrace.from_module."
        )
    return model


def load_tokenizer(model: Any) -> Any:
    """The tokenizer saved with ``model`` (found by its ``name_or_path``).

    Examples
    --------
    >>> from transformers import BertConfig, BertModel
    >>> load_tokenizer(BertModel(BertConfig(num_hidden_layers=1, hidden_size=8,
    ...     num_attention_heads=2, intermediate_size=8)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: no tokenizer found for BertModel: it has no name_or_path; pass tokenizer= ...
    """
    from transformers import AutoTokenizer

    name = str(getattr(model, "name_or_path", "") or "")
    reason = "it has no name_or_path"
    if name:
        try:
            return AutoTokenizer.from_pretrained(name)
        except Exception as err:  # any loader failure means the same thing to the user
            reason = f"loading one from {name!r} failed ({type(err).__name__})"
    raise ValueError(
        f"no tokenizer found for {type(model).__name__}: {reason}; "
        "pass tokenizer= to attnscope.capture."
    )
