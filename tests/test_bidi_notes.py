"""Notes quote untrusted text as isolates: a bidi control in a token cannot reorder a note.

``attnscope.trace.label_text`` is the Python twin of ``js/label_text.ts``:
``balance_bidi`` closes what a string opens (and drops closers with nothing to
close), ``isolate`` wraps it in FSI … PDI. A comparison's note names the
tokens that have no partner; with U+202E in one of them, the rest of the note
keeps its order (``bidi_leaks`` runs the bidi algorithm's explicit rules).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import torch

import attnscope
from attnscope import AttentionTrace, AttentionWidget, MultiHeadAttention
from attnscope.display.scan_ranking import scan_ranking
from attnscope.trace.label_text import FSI, PDI, balance_bidi, isolate
from hostile_tokens import BIDI_CONTROLS, HOSTILE, bidi_leaks, without_bidi

RLO = "\u202e"


def test_every_hostile_string_is_contained_between_two_words() -> None:
    for text in HOSTILE:
        quoted = f"before {isolate(text)} after"
        assert not bidi_leaks(quoted), ascii(text)
        assert quoted.startswith(f"before {FSI}")
        assert quoted.endswith(f"{PDI} after")
        assert without_bidi(isolate(text)) == without_bidi(text), ascii(text)


def test_balance_closes_what_is_open_and_drops_what_closes_nothing() -> None:
    assert balance_bidi(f"a{RLO}b") == f"a{RLO}b\u202c"
    assert balance_bidi("\u2067x") == "\u2067x\u2069"
    assert balance_bidi("x\u202c\u2069y") == "xy"  # a PDF and a PDI with nothing open
    assert balance_bidi("\u2066\u202bx\u2069\u202c") == "\u2066\u202bx\u2069"  # PDI closed both
    assert balance_bidi("line\nbreak") == "line break"  # one paragraph
    assert balance_bidi("שלום") == "שלום"  # no controls: unchanged
    # the mirror of js/label_text.ts's balanceBidi on every control alone
    for ch in BIDI_CONTROLS:
        assert not bidi_leaks(f"x{isolate(ch)}y"), ascii(ch)


def test_a_comparison_note_isolates_the_left_out_tokens() -> None:
    torch.manual_seed(1)
    mha = MultiHeadAttention(8, 2, causal=True)
    x = torch.randn(1, 4, 8)
    y = torch.cat([x[:, :2], torch.randn(1, 1, 8), x[:, 2:]], dim=1)
    evil = f"big{RLO}gib"
    a = AttentionTrace.from_module(mha, x, ["the", "cat", "sat", "down"])
    b = AttentionTrace.from_module(mha, y, ["the", "cat", evil, "sat", "down"])
    meta = json.loads(json.dumps(AttentionWidget(attnscope.compare(a, b))._meta))
    [note] = [n for n in meta["notes"] if "left out" in n]
    assert f"“{FSI}big{RLO}gib\u202c{PDI}” (#2)" in note
    assert not bidi_leaks(note)
    assert without_bidi(note).endswith("Pass alignment= to pair the tokens yourself.")


def test_a_scan_columns_name_is_isolated_in_its_label() -> None:
    column = f"col{RLO}umn"
    trace = AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32))
    frame = pd.DataFrame({"input": [0, 0, 1, 1], "layer": 0, "head": [0, 1, 0, 1], column: 0.5})
    [entry] = scan_ranking(frame, trace).statistics
    assert entry["label"].startswith(isolate(column) + ": mean over 2 inputs")
    assert not bidi_leaks(entry["label"])
    assert "\\u202e" in entry["formula"]  # the formula quotes it escaped (repr)
    known = pd.DataFrame({"input": [0, 0, 1, 1], "layer": 0, "head": [0, 1, 0, 1], "prev": 0.5})
    assert FSI not in scan_ranking(known, trace).statistics[0]["label"]  # attnscope's own words


def test_a_comparison_note_names_at_most_32_left_out_tokens() -> None:
    torch.manual_seed(1)
    mha = MultiHeadAttention(8, 2, causal=True)
    x = torch.randn(1, 4, 8)
    y = torch.cat([x[:, :2], torch.randn(1, 300, 8), x[:, 2:]], dim=1)
    extra = ["w" * 500 for _ in range(300)]  # long tokens, none with a partner
    a = AttentionTrace.from_module(mha, x, ["the", "cat", "sat", "down"])
    b = AttentionTrace.from_module(mha, y, ["the", "cat", *extra, "sat", "down"])
    meta = json.loads(json.dumps(AttentionWidget(attnscope.compare(a, b))._meta))
    [note] = [n for n in meta["notes"] if "left out" in n]
    assert note.count("“") == 32
    assert "and 268 more" in note
    assert len(note) < 3000  # 40 characters of each named token
