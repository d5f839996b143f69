"""Bad input is refused with a message that names what was wrong and how to fix it.

Where the input can be checked before the model runs, nothing runs: every
module of the model counts its forward calls, and the model is compared with
a snapshot taken before (weights, modes, hooks, attention implementation).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from attnscope import AttentionTrace, Tokens
from attnscope.errors import AttnscopeError
from capture_models import TEXT, tiny_model


def snapshot(model: torch.nn.Module) -> dict[str, Any]:
    """What capture must leave as it was (no values read from meta tensors)."""
    return {
        "weights": {
            k: (v.device, v.dtype, v.shape, v.is_meta) for k, v in model.state_dict().items()
        }
        | {k: v.clone() for k, v in model.state_dict().items() if not v.is_meta},
        "training": [m.training for m in model.modules()],
        "hooks": [len(m._forward_pre_hooks) + len(m._forward_hooks) for m in model.modules()],
        "implementation": [
            m.config._attn_implementation for m in model.modules() if hasattr(m, "config")
        ],
    }


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def equal(x: Any, y: Any) -> bool:
        if isinstance(x, torch.Tensor):
            return bool(torch.equal(x, y))
        if isinstance(x, dict):
            return x.keys() == y.keys() and all(equal(x[k], y[k]) for k in x)
        return bool(x == y)

    return equal(a, b)


@contextmanager
def nothing_runs(model: torch.nn.Module) -> Iterator[None]:
    """Fail unless no module of ``model`` ran and the model is left as it was found."""
    calls: list[str] = []
    handles = [
        m.register_forward_pre_hook(lambda mod, args: calls.append(type(mod).__name__))
        for m in model.modules()
    ]
    before = snapshot(model)
    try:
        yield
    finally:
        after = snapshot(model)
        for handle in handles:
            handle.remove()
    assert calls == [], f"the model ran: {calls[:5]}"
    assert same(before, after), "the model changed"


# -- capture: checked before the forward pass --------------------------------------------


def test_tokenizer_ids_beyond_the_vocabulary(minilm: tuple[Any, Any]) -> None:
    _, tokenizer = minilm  # a 30522-token WordPiece vocabulary
    model = tiny_model("bert", 2000)  # [CLS] is 101, "the" 1996, "quick" 4248
    with nothing_runs(model), pytest.raises(AttnscopeError) as caught:
        attnscope.capture(model, "The quick brown fox", tokenizer=tokenizer)
    message = str(caught.value)
    assert "token 'quick' id 4248" in message
    assert "ids 0..1999 only (vocab_size 2000)" in message
    assert "does not belong to this model" in message
    assert "Pass the model's own tokenizer as tokenizer=" in message


def test_token_types_the_model_has_no_embedding_for(minilm: tuple[Any, Any]) -> None:
    from transformers import BertConfig, BertModel

    _, tokenizer = minilm  # marks sentence B with token type 1
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        type_vocab_size=1,  # as RoBERTa-style checkpoints have
    )
    model = BertModel(config).eval()
    with nothing_runs(model), pytest.raises(AttnscopeError) as caught:
        attnscope.capture(model, "The cat.", tokenizer=tokenizer, text_pair="A dog.")
    message = str(caught.value)
    assert "token type 1" in message
    assert "types 0..0 only (type_vocab_size 1)" in message
    assert "leave out text_pair=" in message


def test_model_on_the_meta_device(minilm: tuple[Any, Any]) -> None:
    _, tokenizer = minilm
    with torch.device("meta"):
        model = tiny_model("bert", tokenizer.vocab_size)
    with nothing_runs(model), pytest.raises(AttnscopeError) as caught:
        attnscope.capture(model, TEXT, tokenizer=tokenizer)
    message = str(caught.value)
    assert "BertModel's weights are not loaded" in message
    assert "embeddings.word_embeddings.weight is on the meta device" in message
    assert "model.to_empty(device='cpu')" in message
    assert "load_state_dict" in message


@pytest.mark.parametrize(
    ("tokenizer", "shown"),
    [(3, "got int 3"), ("bert-base-uncased", "got str 'bert-base-uncased'"), ([], "got list []")],
)
def test_tokenizer_that_is_not_a_tokenizer(
    minilm: tuple[Any, Any], tokenizer: Any, shown: str
) -> None:
    model, _ = minilm
    with nothing_runs(model), pytest.raises(TypeError) as caught:
        attnscope.capture(model, TEXT, tokenizer=tokenizer)
    message = str(caught.value)
    assert message.startswith("tokenizer= must be a transformers tokenizer")
    assert shown in message
    assert "AutoTokenizer.from_pretrained(path)" in message
    assert "Leave it out" in message


def test_a_rust_tokenizer_is_told_how_to_wrap_it(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    with nothing_runs(model), pytest.raises(TypeError, match=r"PreTrainedTokenizerFast\("):
        attnscope.capture(model, TEXT, tokenizer=tokenizer.backend_tokenizer)


@pytest.mark.parametrize(
    ("text", "pair", "where"),
    [
        ("The cat \ud800 sat", None, "text holds a lone surrogate U+D800 at index 8"),
        ("Split \ud83d emoji", None, "text holds a lone surrogate U+D83D at index 6"),
        ("The cat", "x\udcff", "text_pair holds a lone surrogate U+DCFF at index 1"),
    ],
)
def test_text_that_cannot_be_encoded(
    minilm: tuple[Any, Any], text: str, pair: str | None, where: str
) -> None:
    model, tokenizer = minilm
    with nothing_runs(model), pytest.raises(AttnscopeError) as caught:
        attnscope.capture(model, text, tokenizer=tokenizer, text_pair=pair)
    message = str(caught.value)
    assert where in message
    assert ".encode('utf-16', 'surrogatepass').decode('utf-16', 'replace')" in message


def test_the_suggested_mend_makes_text_capturable(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    text = "The cat \ud800 sat"
    mended = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    trace = attnscope.capture(model, mended, tokenizer=tokenizer, layers=[0])
    assert "sat" in trace.tokens


def test_model_path_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "model"
    with pytest.raises(AttnscopeError) as caught:
        attnscope.capture(str(missing), TEXT)
    message = str(caught.value)
    assert f"no model folder at {str(missing)!r}: the path does not exist" in message
    assert "Repo id" not in message
    assert "Check the path" in message


def test_model_folder_without_config(tmp_path: Path) -> None:
    with pytest.raises(AttnscopeError, match=r"holds no config\.json.*save_pretrained"):
        attnscope.capture(tmp_path, TEXT)
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(AttnscopeError, match=r"is a file; pass the folder"):
        attnscope.capture(tmp_path / "weights.bin", TEXT)


# -- traces --------------------------------------------------------------------------------


def uniform(n: int = 3) -> np.ndarray[Any, Any]:
    return np.full((1, 1, n, n), 1 / n, np.float32)


@pytest.mark.parametrize(
    "build",
    [
        lambda: AttentionTrace(None, uniform()),  # type: ignore[arg-type]
        lambda: AttentionTrace.from_tensors(uniform(), None),  # type: ignore[arg-type]
        lambda: Tokens(None),  # type: ignore[arg-type]
        lambda: attnscope.show_head_view((torch.tensor(uniform()),), tokens=None),
    ],
)
def test_tokens_none(build: Any) -> None:
    with pytest.raises(TypeError) as caught:
        build()
    message = str(caught.value)
    assert message.startswith("tokens must be a list of strings, one per position; got None.")
    assert "tokenizer.convert_ids_to_tokens(input_ids[0])" in message


def test_tokens_as_one_string() -> None:
    with pytest.raises(TypeError, match=r"got str 'abc'.*list\(text\)"):
        AttentionTrace("abc", uniform())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "build",
    [
        lambda: AttentionTrace([], uniform()),
        lambda: AttentionTrace([], np.zeros((1, 1, 0, 0), np.float32)),
        lambda: AttentionTrace.from_tensors(uniform(), []),
    ],
)
def test_zero_tokens(build: Any) -> None:
    with pytest.raises(AttnscopeError) as caught:
        build()
    message = str(caught.value)
    assert "tokens is empty: a trace needs one token per position" in message
    assert "Pass the strings the model saw" in message


def test_empty_attention_says_what_to_pass() -> None:
    with pytest.raises(AttnscopeError) as caught:
        AttentionTrace(["a"], np.zeros((1, 0, 1, 1), np.float32))
    message = str(caught.value)
    assert "attention is empty (shape (1, 0, 1, 1))" in message
    assert "Pass the weights of a non-empty input" in message


def test_rows_that_do_not_sum_to_one() -> None:
    with pytest.raises(AttnscopeError) as caught:
        AttentionTrace(list("abc"), np.full((1, 1, 3, 3), 0.2))
    message = str(caught.value)
    assert "row (layer, head, query) = (0, 0, 0) sums to 0.6, not 1" in message
    assert "3 of 3 rows are off by more than 0.001" in message
    assert "softmax over the last axis" in message


def test_rows_normalised_along_the_wrong_axis() -> None:
    scores = np.random.default_rng(0).normal(size=(1, 2, 5, 5))
    columns = np.exp(scores) / np.exp(scores).sum(-2, keepdims=True)  # columns sum to 1
    with pytest.raises(AttnscopeError, match=r"sums to [\d.]+, not 1"):
        AttentionTrace.from_tensors(columns, list("abcde"))


def test_rows_that_may_sum_to_less_than_one() -> None:
    att = np.tril(np.ones((4, 4), np.float32))
    att /= att.sum(-1, keepdims=True)
    att[0] = 0  # a fully masked query: no key to attend to
    AttentionTrace(list("abcd"), att[None, None])
    # attention sinks take part of each row's weight
    AttentionTrace(list("abcd"), att[None, None] * 0.7, sinks=np.zeros((1, 1)))
    with pytest.raises(AttnscopeError, match="not at most 1"):
        AttentionTrace(list("abcd"), att[None, None] * 1.5, sinks=np.zeros((1, 1)))


def test_bfloat16_rows_keep_their_tolerance() -> None:
    logits = 3 * torch.randn(2, 4, 30, 30, generator=torch.Generator().manual_seed(0))
    weights = torch.softmax(logits.to(torch.bfloat16), -1)  # a bfloat16 model's softmax
    off = (weights.float().sum(-1) - 1).abs().max().item()
    assert 1e-3 < off < 1e-2  # beyond float32's tolerance, within bfloat16's
    tokens = [str(i) for i in range(30)]
    trace = AttentionTrace.from_tensors([weights], tokens)
    assert trace.attention.dtype == np.float32
    AttentionTrace.load(trace.save(Path(tempfile.mkdtemp()) / "t"))  # and as float32 in a file
    # the same error in weights that are not bfloat16 numbers is refused
    with pytest.raises(AttnscopeError, match=r"off by more than 0\.001"):
        AttentionTrace.from_tensors(uniform(30) * np.float32(1 + off), tokens)


def test_float16_rows_keep_their_tolerance() -> None:
    row = np.array([[0.5, 0.503]], np.float32)  # 0.503 rounds to 0.50293 in float16
    AttentionTrace(["a", "b"], np.repeat(row.astype(np.float16), 2, 0)[None, None])
    with pytest.raises(AttnscopeError, match=r"sums to 1\.003, not 1"):
        AttentionTrace(["a", "b"], np.repeat(row, 2, 0)[None, None])


# -- save_html -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_bytes", "error", "expected"),
    [
        (None, TypeError, "max_bytes must be a number of bytes (such as 20_000_000); got None."),
        ("50MB", TypeError, "got '50MB'."),
        (float("inf"), TypeError, "got inf."),
        (0, AttnscopeError, "max_bytes=0 must be positive"),
        (-5, AttnscopeError, "max_bytes=-5 must be positive"),
    ],
)
def test_save_html_max_bytes(tmp_path: Path, max_bytes: Any, error: type, expected: str) -> None:
    with pytest.raises(error) as caught:
        attnscope.save_html(
            AttentionTrace(list("abc"), uniform()), tmp_path / "p", max_bytes=max_bytes
        )
    assert expected in str(caught.value)
    assert "default" in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_save_html_max_bytes_as_a_float(tmp_path: Path) -> None:
    out = attnscope.save_html(AttentionTrace(list("abc"), uniform()), tmp_path / "p", max_bytes=2e7)
    assert out.name == "p.html"


def test_save_html_into_an_existing_folder(tmp_path: Path) -> None:
    folder = tmp_path / "pages"
    folder.mkdir()
    with pytest.raises(AttnscopeError) as caught:
        attnscope.save_html(AttentionTrace(list("abc"), uniform()), folder)
    message = str(caught.value)
    assert f"{str(folder)!r} is a folder; pass a file name such as" in message
    assert repr(str(folder / "attention.html")) in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pages"]  # no pages.html beside it
    assert list(folder.iterdir()) == []
