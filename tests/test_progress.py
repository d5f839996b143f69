"""A long page write shows tqdm's bar while it runs and leaves nothing behind."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

import attnscope
from attnscope import _progress


def _trace() -> attnscope.AttentionTrace:
    rng = np.random.default_rng(0)
    q = rng.normal(size=(3, 2, 10, 4)).astype(np.float32)
    return attnscope.AttentionTrace([str(i) for i in range(10)], None, queries=q, keys=q)


def test_a_long_page_write_shows_a_bar_and_clears_it(monkeypatch: Any, tmp_path: Path) -> None:
    out = io.StringIO()
    monkeypatch.setattr(_progress, "FILE", out)
    monkeypatch.setattr(_progress, "DELAY", 0.0)  # every write counts as long
    attnscope.save_html(_trace(), tmp_path / "page.html")
    text = out.getvalue()
    assert "attnscope page" in text
    assert "chunk" in text
    last = text.rsplit("\r", 2)
    assert last[-1] == ""  # ends on a carriage return ...
    assert last[-2].strip() == ""  # ... after blanking the bar's line: nothing is left


def test_a_write_shorter_than_the_delay_prints_nothing(monkeypatch: Any, tmp_path: Path) -> None:
    out = io.StringIO()
    monkeypatch.setattr(_progress, "FILE", out)
    monkeypatch.setattr(_progress, "DELAY", 3600.0)
    attnscope.save_html(_trace(), tmp_path / "page.html")
    assert out.getvalue() == ""


def test_a_reset_before_the_delay_draws_nothing(monkeypatch: Any) -> None:
    # capture resets its bar for each pass; tqdm's reset() draws at once, whatever the delay
    out = io.StringIO()
    monkeypatch.setattr(_progress, "FILE", out)
    monkeypatch.setattr(_progress, "DELAY", 3600.0)
    with _progress.progress(2, "attnscope capture") as bar:
        bar.update(2)
        bar.reset()
        bar.update(1)
    assert out.getvalue() == ""


def test_a_long_capture_ticks_each_layer_and_leaves_the_model_as_found(monkeypatch: Any) -> None:
    from capture_models import bpe_tokenizer, tiny_model

    tokenizer = bpe_tokenizer()
    model = tiny_model("gpt2", len(tokenizer))
    hooks = [dict(m._forward_hooks) for m in model.modules()]
    out = io.StringIO()
    monkeypatch.setattr(_progress, "FILE", out)
    monkeypatch.setattr(_progress, "DELAY", 0.0)  # every capture counts as long
    attnscope.capture(model, "The cat sat on the mat.", tokenizer=tokenizer)
    text = out.getvalue()
    assert "attnscope capture" in text
    assert f"/{model.config.n_layer} " in text  # a bar over the model's layers
    assert text.rsplit("\r", 2)[-2].strip() == ""  # the bar's line is blanked at the end
    assert [dict(m._forward_hooks) for m in model.modules()] == hooks


def test_the_layer_bar_counts_the_pass_that_records_not_the_probe_before_it(
    monkeypatch: Any,
) -> None:
    from attnscope.sources.hf import layer_progress
    from capture_models import bpe_tokenizer, tiny_model

    tokenizer = bpe_tokenizer()
    model = tiny_model("gpt2", len(tokenizer))
    ends: list[tuple[int, int]] = []
    real = layer_progress.progress

    @contextmanager
    def noting_the_end(*args: Any, **options: Any) -> Iterator[Any]:
        with real(*args, **options) as bar:
            yield bar
            ends.append((bar.n, bar.total))

    monkeypatch.setattr(layer_progress, "progress", noting_the_end)
    monkeypatch.setattr(_progress, "FILE", io.StringIO())
    # layers= runs a short probe pass first, to learn which call is which layer.
    attnscope.capture(model, "The cat sat on the mat.", tokenizer=tokenizer, layers=[1])
    layers = model.config.n_layer
    assert ends == [(layers, layers)]  # 2/2 for 2 layers, not 4/4


def test_in_a_kernel_the_bar_is_a_widget_and_nothing_of_it_stays(tmp_path: Path) -> None:
    import nbformat

    from notebook_runner import execute

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "import numpy as np, attnscope\n"
            "from attnscope import _progress\n"
            "_progress.DELAY = 0.0  # every write counts as long\n"
            "q = np.random.default_rng(0).normal(size=(3, 2, 10, 4)).astype(np.float32)\n"
            "trace = attnscope.AttentionTrace([str(i) for i in range(10)], None, queries=q, keys=q)"
        ),
        nbformat.v4.new_code_cell(
            "shown = []\n"
            "from IPython import get_ipython\n"
            "get_ipython().display_pub.register_hook(\n"
            "    lambda msg: shown.append(sorted(msg['content'].get('data', {}))) or msg)\n"
            "attnscope.save_html(trace, 'page.html')\n"
            "with _progress.progress(3, 'work') as bar:  # drawn now, on any machine\n"
            "    _ = bar.update(3)\n"
            "    bar.refresh()\n"
            "    left, line, right = bar.container.children  # made when it showed\n"
            "    print('shown bar:', left.value, line.max, line.value)\n"
            "print(shown)"
        ),
        nbformat.v4.new_code_cell(
            "from ipywidgets.widgets.widget import _instances as open_widgets\n"
            "_progress.DELAY = 60.0  # quick work: the bar never shows\n"
            "before = len(open_widgets)\n"
            "with _progress.progress(3, 'quick') as quick:\n"
            "    _ = quick.update(1)\n"
            "    quick.reset(5)\n"
            "    _ = quick.update(5)\n"
            "    during = len(open_widgets)\n"
            "print('made by a bar never shown:', during - before, len(open_widgets) - before)"
        ),
    ]
    *_, cell, quick = execute(notebook, tmp_path)  # in place
    # A bar that never shows makes no widget (each one a comm the front end builds a model for).
    assert "made by a bar never shown: 0 0" in quick.outputs[-1]["text"], quick.outputs
    # The bar was shown as a widget while it ran ...
    assert "application/vnd.jupyter.widget-view+json" in cell.outputs[-1]["text"]
    assert "shown bar: work:\u2007100% 3.0 3.0" in cell.outputs[-2]["text"], cell.outputs
    # ... and its output is empty afterwards: nothing but the printed line stays. (The page
    # write's bar shows too when the machine is slow enough for tqdm to draw it: emptied too.)
    shown = [o.get("data") for o in cell.outputs if o.output_type == "display_data"]
    assert shown
    assert all(data == _progress.EMPTIED for data in shown), shown  # empty: drawn as nothing
    # nbconvert writes the page without a word: an output with no data at all made it warn
    # "Your element with mimetype(s) dict_keys([]) is not able to be represented".
    import warnings

    from nbconvert import HTMLExporter

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        HTMLExporter().from_notebook_node(notebook)
    assert not [w for w in said if "represented" in str(w.message)], [str(w.message) for w in said]
