"""Models and tokenizers from a name or a local path (offline works for local paths)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from attnscope.errors import AttnscopeError

# A Hub repo id: "name" or "owner/name", letters, digits, "-", "_" and ".".
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


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
        name = check_model_name(os.fspath(model))
        from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM

        try:
            config = AutoConfig.from_pretrained(name)
            auto = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModel
            return auto.from_pretrained(name)
        except (OSError, ValueError) as err:
            where = "the folder" if Path(name).is_dir() else "the Hugging Face Hub"
            first = (str(err).strip().splitlines() or [""])[0][:200]
            raise AttnscopeError(
                f"could not load a model from {name!r} ({where}): {type(err).__name__}: "
                f"{first} Check the name, pass the folder that save_pretrained wrote, or load "
                "the model yourself and pass it (offline, only local folders and models "
                "already in the Hugging Face cache load)."
            ) from err
    from transformers import PreTrainedModel

    if not isinstance(model, PreTrainedModel):
        raise TypeError(
            "model must be a transformers PreTrainedModel or a model name/path; got "
            f"{type(model).__name__}. For your own attention module use "
            "AttentionTrace.from_module."
        )
    return model


def check_model_name(name: str) -> str:
    """The name to load (``~`` expanded); raises unless it is a saved model's folder or a Hub id.

    Examples
    --------
    >>> check_model_name("bert-base-uncased")
    'bert-base-uncased'
    >>> check_model_name("/no/such/folder")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: no model folder at '/no/such/folder': ...
    """
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise AttnscopeError(
                f"the folder {name!r} holds no config.json, so it is not a saved model; pass "
                "the folder that model.save_pretrained(...) wrote (config.json and the weights)."
            )
        return str(path)
    if path.exists():
        raise AttnscopeError(
            f"{name!r} is a file; pass the folder that model.save_pretrained(...) wrote, or a "
            "Hugging Face Hub name such as 'bert-base-uncased'."
        )
    if not _HUB_ID.fullmatch(name) or name.count("/") > 1:
        raise AttnscopeError(
            f"no model folder at {name!r}: the path does not exist, and it is not a Hugging "
            "Face Hub name ('name' or 'owner/name'). Check the path, or pass the model "
            "itself (AutoModel.from_pretrained(...))."
        )
    return name


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
