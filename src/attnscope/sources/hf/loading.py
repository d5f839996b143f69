"""Models and tokenizers from a name or a local path (offline works for local paths)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from attnscope.errors import AttnscopeError, AttnscopeTypeError, ModelNotFoundError

# A Hub repo id: "name" or "owner/name", letters, digits, "-", "_" and ".".
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


def load_model(model: Any, *, images: bool = False) -> Any:
    """``model`` itself, or the model that ``from_pretrained(model)`` loads for a string.

    Encoder–decoder checkpoints load with their language-model head, so that
    capture can generate a target; with ``images`` a vision-language checkpoint
    loads with its image-text-to-text head (it can generate). A Hub name found
    neither on disk nor in the cache raises
    :class:`~attnscope.errors.ModelNotFoundError`, whose first line says where
    attnscope looked and how to fix it, above transformers' own message: at once
    offline, and within seconds when the hub does not answer (one short request
    asks it first, so a cut-off network does not wait out transformers' retries). Loading
    shows no progress bar (in a notebook it would stay in the cell).

    Examples
    --------
    >>> load_model(3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeTypeError: model must be a transformers PreTrainedModel or a ...
    """
    if isinstance(model, str | os.PathLike):
        name = check_model_name(os.fspath(model))
        here = Path(name).is_dir() or _in_cache(name)
        if hub_offline() and not here:
            # No network wait (~23 s) for an answer known now.
            raise ModelNotFoundError(not_found(name, None)) from None
        if not here:
            _check_hub(name)
        offline = local_only(name)
        from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM
        from transformers import AutoModelForImageTextToText as ImageText

        try:
            with quiet_progress():
                config = AutoConfig.from_pretrained(name, local_files_only=offline)
                auto: Any = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModel
                if images and type(config) in ImageText._model_mapping:  # issue 25
                    auto = ImageText
                return auto.from_pretrained(name, local_files_only=offline)
        except OSError as err:
            if not Path(name).is_dir() and not _in_cache(name):
                # transformers' message is in ours, below attnscope's line: one error, not two.
                raise ModelNotFoundError(not_found(name, err)) from None
            raise _load_failed(name, err) from err
        except ValueError as err:
            raise _load_failed(name, err) from err
    from transformers import PreTrainedModel

    if not isinstance(model, PreTrainedModel):
        raise AttnscopeTypeError(
            "model must be a transformers PreTrainedModel or a model name/path; got "
            f"{type(model).__name__}. For your own attention module use "
            "AttentionTrace.from_module."
        )
    return model


def _check_hub(name: str) -> None:
    """Raise at once when the hub ``name`` must come from gives no answer (not after minutes)."""
    from huggingface_hub import constants

    from attnscope.sources.hf.hub_reach import hub_endpoint, hub_unreachable, unreachable_message

    reason = hub_unreachable(name)
    if reason is not None:
        message = unreachable_message(name, hub_endpoint(), reason, str(constants.HF_HUB_CACHE))
        raise ModelNotFoundError(message) from None


CACHED_WHILE_HUB_DOWN: set[str] = set()
"""Cached names whose hub gave no answer this session: they load from the cache alone."""
_HUB_ANSWERED: set[str] = set()
"""Cached names whose hub answered: the tokenizer and processor loads do not ask again."""


def local_only(name: str) -> bool:
    """Whether ``name`` loads from local files alone (``local_files_only=``), asking the hub once.

    True offline, for a folder, and for a name in the Hugging Face cache whose hub
    gives no answer within seconds: transformers would otherwise wait out its own
    timeouts and retries (minutes) to ask whether the cached copy is current.
    A cut-off hub is asked once per name and session; the model, its tokenizer
    and its processor then all load from the cache.

    Examples
    --------
    >>> local_only("no-such-org/no-such-model")  # attnscope's tests run offline
    True
    """
    if hub_offline() or Path(name).is_dir() or name in CACHED_WHILE_HUB_DOWN:
        return True
    if name in _HUB_ANSWERED or not _in_cache(name):
        return False  # a download, if any: load_model asked the hub first
    from attnscope.sources.hf.hub_reach import hub_unreachable

    if hub_unreachable(name) is None:
        _HUB_ANSWERED.add(name)
        return False
    CACHED_WHILE_HUB_DOWN.add(name)
    return True


def _load_failed(name: str, err: BaseException) -> AttnscopeError:
    where = "the folder" if Path(name).is_dir() else "the Hugging Face Hub"
    first = (str(err).strip().splitlines() or [""])[0][:200]
    return AttnscopeError(
        f"could not load a model from {name!r} ({where}): {type(err).__name__}: "
        f"{first} Check the name, pass the folder that save_pretrained wrote, or load "
        "the model yourself and pass it (offline, only local folders and models "
        "already in the Hugging Face cache load)."
    )


_TRUE = {"1", "on", "yes", "true"}


def hub_offline() -> bool:
    """Whether the Hugging Face Hub is off limits, as the environment says now.

    huggingface_hub reads ``HF_HUB_OFFLINE`` once, at import: a kernel that sets
    it later (``os.environ["HF_HUB_OFFLINE"] = "1"``) is still offline here.

    Examples
    --------
    >>> hub_offline() in (True, False)  # True in attnscope's tests, which run offline
    True
    """
    from huggingface_hub import constants

    flags = (
        os.environ.get(v, "").strip().lower() for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )
    return bool(constants.HF_HUB_OFFLINE) or any(f in _TRUE for f in flags)


def _in_cache(name: str) -> bool:
    """Whether the Hugging Face cache holds ``name``'s config (then another error is the cause)."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(name, "config.json")
    except Exception:  # a name the hub library refuses: not in the cache
        return False
    return isinstance(found, str)


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


@contextmanager
def quiet_progress() -> Iterator[None]:
    """Hide transformers' progress bars ("Loading weights") for the block, then restore them.

    Examples
    --------
    >>> from transformers.utils import logging
    >>> with quiet_progress():
    ...     logging.is_progress_bar_enabled()
    False
    """
    from transformers.utils import logging

    was_enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if was_enabled:
            logging.enable_progress_bar()  # type: ignore[no-untyped-call]


def not_found(name: str, err: BaseException | None) -> str:
    """Attnscope's line on a name that did not load: where it looked, how to fix it.

    Then transformers' own message, on the lines below; with ``err`` None (offline
    and not in the cache: transformers was not asked) a line that says so.

    Examples
    --------
    >>> print(not_found("no-such/model", OSError("We couldn't connect")))  # doctest: +ELLIPSIS
    attnscope found no model 'no-such/model': no local folder ..., not in the Hugging Face cache ...
    transformers said: OSError: We couldn't connect
    """
    from huggingface_hub import constants

    folder = Path(name).expanduser().resolve()
    cache = Path(constants.HF_HUB_CACHE)
    offline = hub_offline()
    why = "HF_HUB_OFFLINE=1 forbids downloading it" if offline else "downloading it failed"
    looked = f"no local folder {folder}, not in the Hugging Face cache ({cache}), and {why}"
    fix = (
        f"download it once where there is internet (hf download {name}), check the "
        "spelling, or pass a local folder that holds config.json"
    )
    said = (
        "transformers was not asked: offline, a name not in the cache cannot load"
        if err is None
        else f"transformers said: {type(err).__name__}: {err}"
    )
    return f"attnscope found no model {name!r}: {looked}. Fix: {fix}.\n{said}"


def load_tokenizer(model: Any) -> Any:
    """The tokenizer saved with ``model`` (found by its ``name_or_path``).

    Examples
    --------
    >>> from transformers import BertConfig, BertModel
    >>> load_tokenizer(BertModel(BertConfig(num_hidden_layers=1, hidden_size=8,
    ...     num_attention_heads=2, intermediate_size=8)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: no tokenizer found for BertModel: it has no name_or_path; ...
    """
    from transformers import AutoTokenizer

    name = str(getattr(model, "name_or_path", "") or "")
    reason = "it has no name_or_path"
    if name:
        try:
            return AutoTokenizer.from_pretrained(name, local_files_only=local_only(name))
        except Exception as err:  # any loader failure means the same thing to the user
            reason = f"loading one from {name!r} failed ({type(err).__name__})"
    raise AttnscopeError(
        f"no tokenizer found for {type(model).__name__}: {reason}; "
        "pass tokenizer= to attnscope.capture."
    )
