"""A marimo app for tests/browser/test_marimo.py: each cell's last expression is its output."""

import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
    import numpy as np

    from attnscope import AttentionTrace, AttentionWidget

    weights = np.random.default_rng(0).dirichlet(np.ones(5), size=(3, 2, 5)).astype("float32")
    trace = AttentionTrace(["The", "cat", "sat", "on", "it"], weights)
    widget = AttentionWidget(trace, view="head")
    view = mo.ui.anywidget(widget)
    view  # noqa: B018
    return mo, view, widget


@app.cell
def _(mo, view):
    mo.md(f"python sees layer {view.value['layer']}")
    return


@app.cell
def _(mo, widget):
    def move(_):
        widget.layer = 2

    mo.ui.button(label="python moves the view", on_click=move)
    return


if __name__ == "__main__":
    app.run()
