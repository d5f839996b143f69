"""The widget ranked by a scan (issue 24): ``AttentionWidget(trace, scan=df)``, open_strongest.

A real scan of the MiniLM over three texts; the ``stats:`` chunk is decoded
from the widget's own reply messages, as the browser reads them, and held to
means, spreads and argmaxes computed here from the DataFrame by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import traitlets

import attnscope
from attnscope import AttentionTrace, AttentionWidget
from attnscope.display.strongest import strongest_input
from attnscope.errors import AttnscopeError
from attnscope.trace import stream as stream_module

TEXTS = [
    "The cat sat on the mat.",
    "A dog ran home, and the dog slept by the door.",
    "Rain fell; rain fell again.",
]


@pytest.fixture(scope="module")
def scanned(minilm: tuple[Any, Any]) -> pd.DataFrame:
    model, tokenizer = minilm
    return attnscope.scan(model, TEXTS, tokenizer=tokenizer, statistics=["prev", "entropy"])


@pytest.fixture(scope="module")
def trace(minilm: tuple[Any, Any]) -> AttentionTrace:
    model, tokenizer = minilm
    return attnscope.capture(model, TEXTS[0], tokenizer=tokenizer)


def browser_arrays(widget: AttentionWidget, key: str) -> dict[str, np.ndarray]:
    """The chunk ``key`` as the browser decodes the widget's reply (descriptors + buffers)."""
    ((content, buffers),) = widget.answer({"type": "request", "keys": [key]})
    (chunk,) = content["chunks"]
    assert "error" not in chunk, chunk
    dtypes = {"f32": np.float32, "u8": np.uint8, "i32": np.int32}
    return {
        a["name"]: np.frombuffer(buffers[a["buffer"]], dtypes[a["dtype"]]).reshape(a["shape"])
        for a in chunk["arrays"]
    }


def by_hand(frame: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, population std and argmax input of ``column`` per (layer, head), (6, 12) each."""
    mean, std, best = np.zeros((6, 12)), np.zeros((6, 12)), np.zeros((6, 12), np.int64)
    for layer in range(6):
        for head in range(12):
            rows = frame[(frame["layer"] == layer) & (frame["head"] == head)]
            values = rows[column].to_numpy()
            mean[layer, head] = values.sum() / len(values)
            std[layer, head] = np.sqrt(((values - mean[layer, head]) ** 2).mean())
            best[layer, head] = rows["input"].to_numpy()[np.argmax(values)]
    return mean, std, best


def test_stats_chunk_and_meta_hold_the_scan_means_and_spreads(
    scanned: pd.DataFrame, trace: AttentionTrace
) -> None:
    widget = AttentionWidget(trace, scan=scanned, view="model")
    assert widget.rank_by == "scan:prev"  # ranked by the scan's first statistic
    entries = {s["name"]: s for s in widget._meta["statistics"]}
    assert entries["scan:prev"]["label"] == (
        "previous token: mean over 3 inputs (± spread across them)"
    )
    assert entries["scan:prev"]["spread"] == "scan:prev:spread"
    assert entries["scan:entropy"]["inputs"] == 3
    arrays = browser_arrays(widget, "stats:self")
    assert "prev" in arrays  # the trace's own statistics stay
    for column in ("prev", "entropy"):
        mean, std, best = by_hand(scanned, column)
        np.testing.assert_allclose(arrays[f"scan:{column}"], mean, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(arrays[f"scan:{column}:spread"], std, rtol=1e-5, atol=1e-7)
        np.testing.assert_array_equal(arrays[f"scan:{column}:strongest"], best)
    # The scan's means are not this one input's statistics.
    assert not np.allclose(arrays["scan:prev"], arrays["prev"])


def test_rank_by_takes_scan_names_and_refuses_others(
    scanned: pd.DataFrame, trace: AttentionTrace
) -> None:
    widget = AttentionWidget(trace, scan=scanned, view="model", rank_by="entropy")
    assert widget.rank_by == "entropy"
    widget.rank_by = "scan:entropy"
    with pytest.raises(traitlets.TraitError, match="scan:prev"):
        widget.rank_by = "scan:sink"  # not scanned
    assert widget.rank_by == "scan:entropy"
    with pytest.raises(traitlets.TraitError, match="'scan:prev'"):
        AttentionWidget(trace, rank_by="scan:prev")  # no scan= given


def test_strongest_input_is_the_scan_argmax_of_the_clicked_head(
    scanned: pd.DataFrame, trace: AttentionTrace
) -> None:
    widget = AttentionWidget(trace, scan=scanned, view="model")
    _, _, best = by_hand(scanned, "prev")
    _, _, best_entropy = by_hand(scanned, "entropy")
    assert len(set(best.ravel().tolist())) > 1  # the heads disagree: the test can fail
    for layer, head in [(0, 0), (2, 5), (5, 11), (3, 7)]:
        widget.layer, widget.head = layer, head  # what a click on the model-view cell syncs
        assert widget.strongest_input() == best[layer, head]
        assert widget.strongest_input("scan:entropy") == best_entropy[layer, head]
        assert strongest_input(scanned, layer=layer, head=head) == best[layer, head]


def test_open_strongest_captures_that_input_on_that_head(
    scanned: pd.DataFrame, minilm: tuple[Any, Any], trace: AttentionTrace
) -> None:
    model, tokenizer = minilm
    _, _, best = by_hand(scanned, "prev")
    layer, head = next((lay, hd) for lay in range(6) for hd in range(12) if best[lay, hd] != 0)
    opened = attnscope.open_strongest(
        scanned, TEXTS, model, tokenizer=tokenizer, layer=layer, head=head, display=False
    )
    own = attnscope.capture(model, TEXTS[best[layer, head]], tokenizer=tokenizer)
    assert opened.trace.tokens == own.tokens
    assert (opened.view, opened.layer, opened.head, opened.heads) == ("head", layer, head, [head])
    assert opened.rank_by == "scan:prev"
    assert opened.strongest_input() == best[layer, head]
    # From the widget, after a click on that cell: one call.
    widget = AttentionWidget(trace, scan=scanned, view="model", layer=layer, head=head)
    again = widget.open_strongest(TEXTS, model, tokenizer=tokenizer, display=False)
    assert again.trace.tokens == own.tokens
    assert again.head == head


def test_a_per_head_table_ranks_with_its_std_as_spread(trace: AttentionTrace) -> None:
    # The shape of needle_in_a_haystack(...).heads: mean over runs, its std, the run count.
    rng = np.random.default_rng(0)
    heads = pd.DataFrame(
        {
            "layer": np.repeat(np.arange(6), 12),
            "head": np.tile(np.arange(12), 6),
            "retrieval": rng.random(72),
            "retrieval_std": rng.random(72) / 10,
            "runs": 6,
        }
    )
    widget = AttentionWidget(trace, scan=heads, view="model")
    assert widget.scan_ranking is not None
    assert widget.scan_ranking.names == ["scan:retrieval"]
    (entry,) = [s for s in widget._meta["statistics"] if s["name"] == "scan:retrieval"]
    assert "mean over 6 runs" in entry["label"]
    arrays = browser_arrays(widget, "stats:self")
    np.testing.assert_allclose(
        arrays["scan:retrieval"], heads["retrieval"].to_numpy().reshape(6, 12), rtol=1e-6
    )
    np.testing.assert_allclose(
        arrays["scan:retrieval:spread"], heads["retrieval_std"].to_numpy().reshape(6, 12), rtol=1e-6
    )
    with pytest.raises(AttnscopeError, match="names no input"):
        widget.strongest_input()
    with pytest.raises(AttnscopeError, match="'input' column"):
        attnscope.open_strongest(heads, TEXTS, layer=0, head=0, display=False)


def test_a_stream_too_long_for_its_statistics_still_ranks_by_the_scan(
    scanned: pd.DataFrame, trace: AttentionTrace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_module, "MAX_ATTENTION_BYTES", 1024)
    widget = AttentionWidget(trace, scan=scanned, view="model")
    arrays = browser_arrays(widget, "stats:self")
    assert sorted(arrays) == [
        "scan:entropy",
        "scan:entropy:spread",
        "scan:entropy:strongest",
        "scan:prev",
        "scan:prev:spread",
        "scan:prev:strongest",
    ]


def test_pages_and_show_model_view_carry_the_scan(
    scanned: pd.DataFrame, trace: AttentionTrace, tmp_path: Path
) -> None:
    widget = attnscope.show_model_view(trace, scan=scanned, display=False)
    assert widget.rank_by == "scan:prev"
    page = widget.save_html(tmp_path / "scan.html", views=("model",)).read_text()
    assert '"name":"scan:prev"' in page
    assert '"rank_by":"scan:prev"' in page
    from attnscope.display.page import page_html

    own = page_html(trace, views=("model",))
    assert '"scan:prev"' not in own  # only a widget with scan= adds them


@pytest.mark.parametrize(
    ("scan", "match"),
    [
        ({"layer": [0]}, "not dict"),
        (pd.DataFrame({"input": [0], "head": [0], "prev": [0.1]}), "columns 'layer' and 'head'"),
        (pd.DataFrame({"input": [0], "layer": [0], "head": [0]}), "no numeric statistic"),
        (pd.DataFrame({"input": [0], "layer": [9], "head": [0], "prev": [0.1]}), "layer 9"),
        (pd.DataFrame({"input": [0], "layer": [0], "head": [12], "prev": [0.1]}), "head 12"),
        (pd.DataFrame({"layer": [0, 0], "head": [1, 1], "r": [0.1, 0.2]}), "two rows"),
        (pd.DataFrame({"layer": ["0"], "head": [0], "r": [0.1]}), r"layer '0' .* whole numbers"),
        (pd.DataFrame({"layer": [0.5], "head": [0], "r": [0.1]}), r"layer 0.5 .* whole numbers"),
    ],
)
def test_bad_scan_tables_are_refused_before_the_widget_exists(
    trace: AttentionTrace, scan: Any, match: str
) -> None:
    with pytest.raises(AttnscopeError, match=match):
        AttentionWidget(trace, scan=scan)


def test_whole_numbers_stored_as_floats_are_indices(trace: AttentionTrace) -> None:
    scan = pd.DataFrame({"input": [0.0], "layer": [0.0], "head": [1.0], "r": [0.1]})
    assert AttentionWidget(trace, scan=scan).scan_ranking is not None


def test_bad_open_strongest_calls_say_what_to_pass(
    scanned: pd.DataFrame, trace: AttentionTrace
) -> None:
    with pytest.raises(AttnscopeError, match="layer=7 is not in the scan"):
        attnscope.open_strongest(scanned, TEXTS, layer=7, head=0, display=False)
    with pytest.raises(AttnscopeError, match="not a statistic column"):
        attnscope.open_strongest(scanned, TEXTS, layer=0, head=0, statistic="sink", display=False)
    _, _, best = by_hand(scanned, "prev")
    layer, head = next((lay, hd) for lay in range(6) for hd in range(12) if best[lay, hd] != 0)
    with pytest.raises(AttnscopeError, match="inputs has 1 items"):
        attnscope.open_strongest(scanned, [trace], layer=layer, head=head, display=False)
    with pytest.raises(AttnscopeError, match="needs a model"):
        attnscope.open_strongest(scanned, TEXTS, layer=0, head=0, display=False)
    plain = AttentionWidget(trace, view="model")
    with pytest.raises(AttnscopeError, match="made with scan="):
        plain.strongest_input()
    ranked = AttentionWidget(trace, scan=scanned, rank_by="prev")
    with pytest.raises(AttnscopeError, match="not a statistic of this widget's scan"):
        ranked.open_strongest(TEXTS)
    with pytest.raises(TypeError, match="comparison"):
        AttentionWidget(attnscope.compare(trace, trace), scan=scanned)


def test_saved_widget_state_and_snapshot_keep_the_scan(
    scanned: pd.DataFrame, trace: AttentionTrace
) -> None:
    widget = AttentionWidget(trace, scan=scanned, view="model")
    data, _ = widget._repr_mimebundle_()
    names = [a["name"] for a in widget._saved["stats:self"]["arrays"]]
    assert names[-6:-3] == ["scan:prev", "scan:prev:spread", "scan:prev:strongest"]
    assert "scan:prev:spread" in data["text/html"]  # the kernel-less snapshot's _meta


def test_a_full_scan_starts_ranking_on_a_statistic_that_finds_a_kind_of_head(
    trace: AttentionTrace,
) -> None:
    columns = {"cls": [0.9, 0.8], "induction": [np.nan, np.nan], "prev": [0.1, 0.7]}
    scan = pd.DataFrame({"input": [0, 0], "layer": [0, 0], "head": [0, 1], **columns})
    widget = AttentionWidget(trace, scan=scan)
    assert widget.rank_by == "scan:prev"  # not the first column; induction has no value here
    assert AttentionWidget(trace, scan=scan[["input", "layer", "head", "cls"]]).rank_by == (
        "scan:cls"
    )
