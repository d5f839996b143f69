"""``attnscope.induction_sweep``: the induction score papers and courses quote.

The TransformerLens/ARENA protocol (ARENA 1.2, "Finding induction heads";
TransformerLens's induction-head demos), followed exactly:

1. tokens: ``batch`` rows of BOS + ``seq_len`` tokens drawn uniformly from
   ``0..d_vocab-1`` (``torch.manual_seed(seed); torch.randint(0, d_vocab,
   (batch, seq_len))``), the random half repeated once: ``2 * seq_len + 1``
   tokens a row, ``d_vocab`` the rows of the model's input embeddings;
2. per head, the score is the mean over rows of the attention pattern's
   diagonal at offset ``-(seq_len - 1)`` (``pattern.diagonal(offset=1 - seq_len)``),
   the key just after the query token's earlier copy. As in ARENA's code, the
   diagonal's ``seq_len + 2`` entries include the first copy's last two
   queries (at the BOS and the first random token); ``score_second_copy``
   averages the ``seq_len`` queries of the second copy only;
3. the loss (mean negative log-probability of the next token) on the first
   copy (predicting tokens ``1..seq_len``) and on the second (``seq_len+1..2 seq_len``):
   a model with induction heads predicts the second copy far better.

Attention comes from :func:`attnscope.capture` of each row (the model's own
computation, recorded), the loss from one plain forward of the batch; the
model is left as it was found.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from attnscope.analysis.frames import pandas_for
from attnscope.errors import AttnscopeError, AttnscopeTypeError

if TYPE_CHECKING:
    import pandas as pd

PROTOCOL = "TransformerLens/ARENA induction (BOS + random tokens repeated once)"
ABOUT = {
    "score": (
        "induction (TransformerLens/ARENA repeated random tokens)",
        "mean over rows of the attention diagonal at offset -(seq_len-1) of BOS + seq_len "
        "random tokens repeated once (pattern.diagonal(offset=1-seq_len))",
        "ARENA 1.2 / TransformerLens induction-head protocol (attnscope.induction_sweep)",
    ),
    "score_second_copy": (
        "induction, second copy only (repeated random tokens)",
        "the same stripe averaged over the seq_len queries of the second copy only",
        "ARENA 1.2 protocol restricted to the repeated half (attnscope.induction_sweep)",
    ),
}
"""Label, formula and source of the sweep's columns (``frame.attrs["about"]``)."""


def _count(value: object, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise AttnscopeTypeError(f"{name} must be an int; got {value!r}.")
    if int(value) < least:
        raise AttnscopeError(f"{name} must be at least {least}; got {value}.")
    return int(value)


def _bos_id(model: Any, tokenizer: Any) -> int:
    """The BOS id: the tokenizer's, else the model's config or generation config."""
    places = (tokenizer, model.config, getattr(model, "generation_config", None))
    found = [getattr(place, "bos_token_id", None) for place in places]
    ids = [i for i in found if isinstance(i, int) and not isinstance(i, bool)]
    if ids:
        return ids[0]
    raise AttnscopeError(
        f"{type(model).__name__} names no BOS token (neither its tokenizer nor its config has "
        "bos_token_id), and the protocol starts every row with it; pass tokenizer= (one with "
        "a bos_token_id) or set model.config.bos_token_id."
    )


def repeated_tokens(bos: int, vocab: int, seq_len: int, batch: int, seed: int) -> Any:
    """The protocol's ``(batch, 2 * seq_len + 1)`` tokens: BOS, random, the random repeated.

    Examples
    --------
    >>> repeated_tokens(bos=1, vocab=10, seq_len=3, batch=1, seed=0).tolist()
    [[1, 4, 9, 3, 4, 9, 3]]
    """
    import torch

    generator = torch.Generator().manual_seed(seed)
    half = torch.randint(0, vocab, (batch, seq_len), dtype=torch.int64, generator=generator)
    prefix = torch.full((batch, 1), bos, dtype=torch.int64)
    return torch.cat([prefix, half, half], dim=-1)


def _losses(model: Any, tokens: Any, seq_len: int) -> tuple[float, float]:
    """Mean next-token loss on the first and on the second copy (NaN without logits)."""
    import torch

    from attnscope.sources.session import preserved

    with preserved(model), torch.no_grad():
        model.eval()
        device = model.device
        out = model(input_ids=tokens.to(device), attention_mask=torch.ones_like(tokens).to(device))
    logits = getattr(out, "logits", None)
    if logits is None:
        return float("nan"), float("nan")
    log_probs = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    picked = log_probs.gather(-1, tokens[:, 1:, None].to(log_probs.device))[..., 0].cpu()
    return float(-picked[:, :seq_len].mean()), float(-picked[:, seq_len:].mean())


def induction_sweep(
    model: Any,
    tokenizer: Any = None,
    seq_len: int = 50,
    batch: int = 4,
    seed: int = 0,
) -> pd.DataFrame:
    """Every head's induction score by the TransformerLens/ARENA protocol, with the losses.

    Parameters
    ----------
    model
        A causal ``transformers`` model (or a name to load).
    tokenizer
        Its tokenizer, for the BOS id and token labels; None loads it (or reads
        ``bos_token_id`` from the config when there is none).
    seq_len
        Random tokens per copy (ARENA: 50).
    batch
        Rows of random tokens; scores and losses are means over them.
    seed
        ``torch.manual_seed(seed)`` before drawing the tokens (the caller's
        random state is untouched).

    Returns
    -------
    pandas.DataFrame
        One row per (layer, head): ``layer``, ``head``, ``score`` (the
        protocol's stripe mean) and ``score_second_copy`` (the second copy's
        queries only). ``attrs``: ``loss_first_copy`` and ``loss_second_copy``
        (mean next-token loss in nats; NaN for a model with no logits),
        ``tokens`` (the rows run), ``seq_len``, ``batch``, ``seed``,
        ``protocol`` and ``about`` (each column's label, formula and source,
        which :class:`~attnscope.AttentionWidget` shows when ranking by it).

    Examples
    --------
    >>> import torch
    >>> from transformers import GPT2Config, GPT2LMHeadModel
    >>> _ = torch.manual_seed(0)
    >>> gpt = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=50,
    ...                                  bos_token_id=0)).eval()
    >>> df = induction_sweep(gpt, seq_len=10, batch=2)
    >>> df.shape, list(df.columns)
    ((4, 4), ['layer', 'head', 'score', 'score_second_copy'])
    >>> len(df.attrs["tokens"][0]), df.attrs["loss_second_copy"] > 0
    (21, True)
    """
    from attnscope.sources import capture
    from attnscope.sources.session import ModelSession

    seq_len = _count(seq_len, "seq_len", 2)
    batch = _count(batch, "batch", 1)
    seed = _count(seed, "seed", 0)
    pandas = pandas_for("attnscope.induction_sweep")
    session = ModelSession(model, tokenizer)
    model = session.model
    tokenizer = session.find_tokenizer(required=False)  # None: the config's BOS, labels "#id"
    bos = _bos_id(model, tokenizer)
    vocab = session.vocab_size
    if vocab is None:
        raise AttnscopeError(
            f"cannot tell {type(model).__name__}'s vocabulary size (no input embeddings, no "
            "config.vocab_size), which the random tokens are drawn from."
        )
    session.check_length(2 * seq_len + 1, f"BOS + 2 x seq_len={seq_len}")
    tokens = repeated_tokens(bos, vocab, seq_len, batch, seed)
    offset = seq_len - 1
    stripes = []
    layers: list[int] = []
    for row in tokens:
        trace = capture(model, row[None], tokenizer=tokenizer)
        stream = trace.stream
        layers = list(stream.layers)
        attention = np.stack([stream.layer_attention(p) for p in range(stream.num_layers)]).astype(
            np.float64
        )
        stripes.append(np.diagonal(attention, offset=-offset, axis1=-2, axis2=-1))
    stripe = np.stack(stripes)  # (batch, layers, heads, seq_len + 2)
    score = stripe.mean(axis=(0, -1))
    second = stripe[..., 2:].mean(axis=(0, -1))  # queries seq_len+1 .. 2 seq_len
    loss_first, loss_second = _losses(model, tokens, seq_len)
    heads = score.shape[1]
    frame = pandas.DataFrame(
        {
            "layer": np.repeat(np.array(layers, np.int64), heads),
            "head": np.tile(np.arange(heads, dtype=np.int64), len(layers)),
            "score": score.reshape(-1),
            "score_second_copy": second.reshape(-1),
        }
    )
    frame.attrs.update(
        loss_first_copy=loss_first,
        loss_second_copy=loss_second,
        tokens=tokens.tolist(),
        seq_len=seq_len,
        batch=batch,
        seed=seed,
        protocol=PROTOCOL,
        about={k: list(v) for k, v in ABOUT.items()},
    )
    result: pd.DataFrame = frame
    return result
