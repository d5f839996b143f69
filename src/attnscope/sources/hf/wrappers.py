"""Models other libraries wrap: unwrap those holding a Hugging Face model, else say what to do.

- nnsight (``NNsight``, ``LanguageModel``) keeps the model it wraps as
  ``._module``; capture runs that model, with the wrapper's tokenizer when it
  has one. The wrapper is not touched.
- A TransformerLens ``TransformerBridge`` has replaced its model's submodules
  with its own, so there is no untouched model to capture: its
  ``run_with_cache`` output is the source (``AttentionTrace.from_transformer_lens``).

Neither library is imported here; wrappers are recognised by their class.
"""

from __future__ import annotations

from typing import Any

from attnscope.errors import AttnscopeTypeError


def _from(model: Any, package: str) -> bool:
    return any(c.__module__.split(".")[0] == package for c in type(model).__mro__)


def unwrap_model(model: Any, tokenizer: Any = None) -> tuple[Any, Any]:
    """The Hugging Face model inside an nnsight wrapper (and its tokenizer), else ``model``.

    Examples
    --------
    >>> unwrap_model("bert-base-uncased")
    ('bert-base-uncased', None)
    """
    if _from(model, "nnsight"):
        inner = getattr(model, "_module", None)
        if inner is None:
            raise AttnscopeTypeError(
                f"this nnsight {type(model).__name__} holds no model (._module); wrap a "
                "loaded transformers model, or pass that model to capture."
            )
        if tokenizer is None:
            # LanguageModel has its own tokenizer; a plain NNsight wrapper has none.
            tokenizer = getattr(model, "tokenizer", None)
        return inner, tokenizer
    if _from(model, "transformer_lens"):
        raise AttnscopeTypeError(
            f"attnscope.capture cannot run a TransformerLens {type(model).__name__}: it has "
            "replaced its model's attention with its own. Run it yourself and pass the "
            "cache: `logits, cache = model.run_with_cache(tokens)`, then "
            "AttentionTrace.from_transformer_lens(cache, model.to_str_tokens(tokens)) or "
            "show_head_view(cache, tokens=model.to_str_tokens(tokens))."
        )
    return model, tokenizer
