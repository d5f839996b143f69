"""examples/generation.ipynb in a real JupyterLab 4: step through a generation, both ways."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from browser_kit import Screenshots, wait_for_widget
from jupyter_driver import JupyterPage
from jupyter_server_process import JupyterServer
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "generation.ipynb"
HEAD_VIEW = '[data-testid="head-view"]'
PLAY_TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def generation(jupyter_server: JupyterServer) -> str:
    shutil.copy(NOTEBOOK, jupyter_server.notebook_path("generation.ipynb"))
    return "generation.ipynb"


def python(lab: JupyterPage, code: str) -> str:
    return lab.output_text(lab.run_code(code)).strip()


def test_stepping_through_a_generation_in_jupyterlab(
    lab: JupyterPage, generation: str, screenshots: Screenshots
) -> None:
    lab.open(generation)
    lab.run_all()
    index = int(
        lab.page.evaluate(
            """() => window.jupyterapp.shell.currentWidget.content.widgets
                .findIndex((c) => c.model.sharedModel.getSource().trim().endsWith("\\nw"))"""
        )
    )
    assert index >= 0, "the notebook has no cell that ends by displaying `w`"
    output = lab.cell_output(index)
    wait_for_widget(output, root=HEAD_VIEW)
    prompt = int(python(lab, "print(trace.prompt_length)"))
    count = int(python(lab, "print(len(trace.generated_ids))"))

    # Generated tokens are marked, the output starts under a rule, the prompt is not.
    keys = output.locator('[data-side="key"] .attnscope-tok')
    expect(keys.nth(prompt)).to_have_class(_has("is-output-start"))
    expect(keys.nth(prompt + 1)).to_have_class(_has("is-generated"))
    expect(keys.nth(prompt - 1)).not_to_have_class(_has("is-generated"))
    control = output.locator('[data-testid="step-control"]')
    expect(output.locator('[data-testid="step-caption"]')).to_have_text(f"{count} generated")

    # Browser -> Python: the next-step button moves the step and the query.
    output.locator('[data-testid="step-next"]').click()
    expect(control).to_have_attribute("data-step", "0")
    # Step 0 generated the first token: its query is the prompt's last token.
    assert python(lab, "print(w.step, w.query)") == f"0 {prompt - 1}"
    expect(keys.nth(prompt)).to_have_class(_has("is-future"))  # being generated
    expect(keys.nth(prompt + 1)).to_have_class(_has("is-future"))  # not generated yet

    # Python -> browser: a step set in the kernel moves the query row in the view.
    lab.run_code("w.step = 2")
    expect(control).to_have_attribute("data-step", "2")
    query_rows = output.locator('[data-side="query"] .attnscope-tok.is-selected')
    expect(query_rows).to_have_attribute("data-i", str(prompt + 1))
    lab.page.mouse.move(0, 0)
    screenshots.take("jupyterlab-generation-step", output)

    # Play runs to the last generated token and stops there; the kernel follows.
    output.locator('[data-testid="step-play"]').click()
    expect(control).to_have_attribute("data-step", str(count - 1), timeout=PLAY_TIMEOUT_MS)
    expect(control).to_have_attribute("data-playing", "false")
    assert python(lab, "print(w.step, w.query)") == f"{count - 1} {prompt + count - 2}"

    # Another prompt token clicked as the query ends the step.
    output.locator('[data-side="query"] .attnscope-tok[data-i="1"]').click()
    expect(control).to_have_attribute("data-step", "")
    assert python(lab, "print(w.step, w.query)") == "None 1"
    assert lab.errors() == ""


def _has(name: str) -> re.Pattern[str]:
    """A class attribute that holds ``name`` among its classes."""
    return re.compile(rf"(^|\s){name}(\s|$)")
