"""AttentionTrace, AttentionStream and Tokens: validation, save/load, from_tensors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from attnscope import AttentionStream, AttentionTrace, Tokens
from attnscope.trace.recompute import recompute_attention

RNG = np.random.default_rng(0)


def _uniform(layers: int = 1, heads: int = 2, q: int = 3, k: int = 3) -> np.ndarray[Any, Any]:
    return np.full((layers, heads, q, k), 1.0 / k, dtype=np.float32)


def _qk(
    layers: int, heads: int, kv_heads: int, q: int, k: int, d: int = 4
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    queries = RNG.standard_normal((layers, heads, q, d)).astype(np.float32)
    keys = RNG.standard_normal((layers, kv_heads, k, d)).astype(np.float32)
    return queries, keys


# -- validation: each error names what was wrong -----------------------------------------

QUERIES, KEYS = _qk(1, 2, 2, 3, 3)

STREAM_ERRORS = [
    ({"attention": np.ones((2, 3, 3)) / 3}, ValueError, r"must be 4-D.*attention\[None\]"),
    ({"attention": np.ones((1, 1, 1, 2, 2))}, ValueError, "must be 4-D"),
    ({"attention": np.zeros((1, 0, 3, 3))}, ValueError, "attention is empty"),
    (
        {"attention": np.where(np.eye(3) > 0, np.nan, 0.5)[None, None]},
        ValueError,
        r"non-finite value\(s\) \(NaN first",
    ),
    ({"attention": np.full((1, 1, 2, 2), np.inf)}, ValueError, r"non-finite.*inf first"),
    ({"attention": np.full((1, 1, 2, 2), -0.5)}, ValueError, "negative weight -0.5"),
    ({"attention": np.full((1, 1, 2, 2), 1.5)}, ValueError, r"weight 1.5 > 1"),
    ({"attention": "abc"}, TypeError, "attention must be a numeric array"),
    ({"queries": QUERIES}, ValueError, "queries and keys come together"),
    ({"keys": KEYS}, ValueError, "queries and keys come together"),
    ({"queries": QUERIES[0], "keys": KEYS}, ValueError, "queries must be 4-D"),
    ({"queries": QUERIES[:, :1], "keys": KEYS}, ValueError, r"queries has shape \(1, 1, 3, 4\)"),
    ({"queries": QUERIES, "keys": KEYS[..., :3]}, ValueError, r"keys has shape \(1, 2, 3, 3\)"),
    ({"queries": QUERIES, "keys": KEYS[:, :, :2]}, ValueError, "keys has shape"),
    (
        {"attention": _uniform(heads=3), "queries": _qk(1, 3, 2, 3, 3)[0], "keys": KEYS},
        ValueError,
        "3 query heads cannot share 2 key heads",
    ),
    (
        {"queries": QUERIES, "keys": KEYS, "scaling": [0.5, 0.5, 0.5]},
        ValueError,
        "scaling has 3 values",
    ),
    ({"bias": np.zeros((1, 2, 3, 4))}, ValueError, r"bias has shape \(1, 2, 3, 4\)"),
    ({"bias": np.zeros((3, 3))}, ValueError, "must be 4-D and broadcastable"),
    ({"mask": np.zeros((1, 3, 3, 3), bool)}, ValueError, "mask has shape"),
    ({"mask": np.zeros((1, 1, 3, 3), np.float32)}, TypeError, "mask must be boolean"),
    ({"softcap": [1.0, 2.0]}, ValueError, "softcap needs one value per layer"),
    ({"sinks": np.zeros((1, 3))}, ValueError, r"sinks has shape \(1, 3\)"),
    ({"layers": (0, 1)}, ValueError, "layers lists 2 indices"),
    ({"layers": (-1,)}, ValueError, "distinct non-negative"),
    ({"query_side": "left"}, ValueError, "query_side and key_side"),
]


@pytest.mark.parametrize(("kwargs", "error", "message"), STREAM_ERRORS)
def test_stream_errors(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    fields = {"attention": _uniform(), **kwargs}
    with pytest.raises(error, match=message):
        AttentionStream(**fields)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"raw": ["a"]}, "raw tokens has 1 entries but labels has 2"),
        ({"kinds": ["token"]}, "kinds has 1 entries"),
        ({"kinds": ["token", "word"]}, r"unknown token kind\(s\) \['word'\]"),
        ({"segments": [0]}, "segments has 1 entries"),
        ({"segments": [0, 2]}, "segments must be 0 .* or 1"),
    ],
)
def test_token_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Tokens(["a", "b"], **kwargs)


def test_mismatched_token_count() -> None:
    with pytest.raises(ValueError, match=r"3 rows \(queries\) but there are 2 source tokens"):
        AttentionTrace(["a", "b"], _uniform())


def test_cross_stream_without_target_tokens() -> None:
    cross = AttentionStream(_uniform(q=2), name="cross", query_side="target")
    with pytest.raises(ValueError, match="uses target tokens but the trace has none"):
        AttentionTrace.from_streams(Tokens(["a", "b", "c"]), [cross])


def test_trace_needs_tokens_and_streams() -> None:
    with pytest.raises(ValueError, match="tokens is empty: a trace needs one token per position"):
        AttentionTrace([], _uniform())
    with pytest.raises(ValueError, match="at least one stream"):
        AttentionTrace.from_streams(Tokens(["a"]), [])


def test_metadata_must_be_json() -> None:
    with pytest.raises(ValueError, match="metadata must be JSON-serialisable"):
        AttentionTrace(["a", "b", "c"], _uniform(), metadata={"model": object()})


def test_check_without_queries_says_why() -> None:
    with pytest.raises(ValueError, match="no queries/keys"):
        AttentionTrace(["a", "b", "c"], _uniform()).check()


def test_check_catches_attention_that_does_not_fit_q_and_k() -> None:
    right = recompute_attention(QUERIES, KEYS, np.array([0.5], np.float32))
    good = AttentionTrace(["a", "b", "c"], right, queries=QUERIES, keys=KEYS, scaling=0.5)
    assert good.check() <= 1e-6
    wrong = AttentionTrace(["a", "b", "c"], _uniform(), queries=QUERIES, keys=KEYS, scaling=0.5)
    assert wrong.check() > 0.01


def test_layer_position_of_an_uncaptured_layer() -> None:
    stream = AttentionStream(_uniform(layers=2), layers=(3, 7))
    assert stream.layer_position(7) == 1
    with pytest.raises(IndexError, match=r"layer 5 was not captured.*\[3, 7\]"):
        stream.layer_position(5)


# -- save and load -------------------------------------------------------------------------


def _full_stream(
    name: str, layers: int, heads: int, kv_heads: int, q: int, k: int, **sides: Any
) -> AttentionStream:
    """A stream with every optional field, whose attention really comes from its q and k."""
    queries, keys = _qk(layers, heads, kv_heads, q, k)
    scaling = np.linspace(0.3, 0.6, layers, dtype=np.float32)
    bias = RNG.standard_normal((1, heads, q, k)).astype(np.float32)
    mask = np.zeros((layers, 1, q, k), bool)
    mask[..., 0, -1] = True
    softcap = np.full(layers, 5.0, np.float32)
    sinks = RNG.standard_normal((layers, heads)).astype(np.float32)
    optional = {"bias": bias, "mask": mask, "softcap": softcap, "sinks": sinks}
    attention = recompute_attention(queries, keys, scaling, **optional)
    return AttentionStream(
        attention,
        name=name,
        layers=tuple(range(1, 2 * layers, 2)),
        queries=queries,
        keys=keys,
        scaling=scaling,
        **optional,
        **sides,
    )


def _assert_same(a: AttentionTrace, b: AttentionTrace) -> None:
    assert a.source == b.source
    assert a.target == b.target
    assert a.metadata == b.metadata
    assert a.notes == b.notes
    assert list(a.streams) == list(b.streams)
    for name, sa in a.streams.items():
        sb = b.streams[name]
        assert (sa.query_side, sa.key_side, sa.layers) == (sb.query_side, sb.key_side, sb.layers)
        for attr in ("attention", "queries", "keys", "scaling", "bias", "mask", "softcap", "sinks"):
            va, vb = getattr(sa, attr), getattr(sb, attr)
            assert (va is None) == (vb is None), attr
            if va is not None:
                assert va.dtype == vb.dtype, attr
                np.testing.assert_array_equal(va, vb, err_msg=attr)


def test_single_stream_round_trip_keeps_every_field(tmp_path: Path) -> None:
    stream = _full_stream("self", 2, 4, 2, 5, 5)
    trace = AttentionTrace(
        Tokens(
            ["[CLS]", "play", "ing", "[SEP]", "[PAD]"],
            raw=["[CLS]", "play", "##ing", "[SEP]", "[PAD]"],
            kinds=["special", "token", "token", "special", "padding"],
            segments=[0, 0, 0, 0, 1],
        ),
        stream.attention,
        queries=stream.queries,
        keys=stream.keys,
        scaling=stream.scaling,
        bias=stream.bias,
        mask=stream.mask,
        softcap=stream.softcap,
        sinks=stream.sinks,
        layers=stream.layers,
        metadata={"source": "test", "model_type": "bert", "nested": {"a": [1, 2]}},
        notes=["a note for the reader"],
    )
    path = trace.save(tmp_path / "sub" / "trace")
    assert path.name == "trace.npz"
    loaded = AttentionTrace.load(path)
    _assert_same(trace, loaded)
    assert loaded.check() <= 1e-6


def test_multi_stream_round_trip_with_target_tokens(tmp_path: Path) -> None:
    source = Tokens(["▁The", "▁cat", "</s>"], kinds=["token", "token", "special"])
    target = Tokens(["<pad>", "▁Die", "▁Katze", "</s>"])
    streams = [
        _full_stream("encoder", 2, 2, 2, 3, 3),
        _full_stream("decoder", 2, 2, 1, 4, 4, query_side="target", key_side="target"),
        _full_stream("cross", 2, 2, 2, 4, 3, query_side="target", key_side="source"),
    ]
    trace = AttentionTrace.from_streams(
        source, streams[::-1], target=target, metadata={"model_type": "t5"}
    )
    assert list(trace.streams) == ["encoder", "decoder", "cross"]
    loaded = AttentionTrace.load(trace.save(tmp_path / "t5.npz"))
    _assert_same(trace, loaded)
    assert loaded.check() <= 1e-6
    assert repr(loaded).startswith("<AttentionTrace t5: 3 tokens; encoder: 2x2 heads, 3x3 +qk")


def test_loading_an_npz_that_is_not_a_trace(tmp_path: Path) -> None:
    np.savez(tmp_path / "other.npz", x=np.ones(3))
    with pytest.raises(ValueError, match="not an attnscope trace"):
        AttentionTrace.load(tmp_path / "other.npz")
    np.savez(tmp_path / "fake.npz", header=np.array('{"format": "something else"}'))
    with pytest.raises(ValueError, match="not an attnscope trace"):
        AttentionTrace.load(tmp_path / "fake.npz")


def test_loading_other_files(tmp_path: Path) -> None:
    np.save(tmp_path / "array.npy", np.ones(3))
    with pytest.raises(ValueError, match=r"not a \.npz \(zip\) file"):
        AttentionTrace.load(tmp_path / "array.npy")
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(ValueError, match=r"not a \.npz \(zip\) file"):
        AttentionTrace.load(tmp_path / "text.npz")


def test_loading_a_newer_format(tmp_path: Path) -> None:
    header = '{"format": "attnscope.AttentionTrace", "version": 99}'
    np.savez(tmp_path / "new.npz", header=np.array(header))
    with pytest.raises(ValueError, match="newer attnscope"):
        AttentionTrace.load(tmp_path / "new.npz")


# -- from_tensors: what Hugging Face and bertviz users already have ------------------------


def test_from_tensors_with_torch_layers() -> None:
    g = torch.Generator().manual_seed(0)
    layers = tuple(torch.softmax(torch.randn(2, 3, 4, 4, generator=g), -1) for _ in range(2))
    tokens = ["[CLS]", "Ġhello", "##s", "[SEP]"]
    trace = AttentionTrace.from_tensors(layers, tokens, batch_index=1, sentence_b_start=2)
    assert trace.attention.shape == (2, 3, 4, 4)
    np.testing.assert_allclose(trace.attention[1], layers[1][1].numpy(), atol=1e-7)
    assert trace.raw_tokens == tokens
    assert trace.source.kinds == ("special", "token", "token", "special")
    assert trace.source.segments == (0, 0, 1, 1)
    assert trace.metadata == {"source": "tensors"}


def test_from_tensors_with_an_empty_tuple_names_the_sdpa_trap() -> None:
    with pytest.raises(ValueError, match=r"empty tuple.*sdpa.*eager"):
        AttentionTrace.from_tensors((), ["a"])


@pytest.mark.parametrize(
    ("attention", "tokens", "kwargs", "error", "message"),
    [
        ((torch.full((1, 1, 3, 3), 1 / 3),), ["a", "b"], {}, ValueError, "3x3 positions"),
        (
            (torch.full((1, 1, 3, 3), 1 / 3),),
            list("abc"),
            {"batch_index": 1},
            IndexError,
            r"batch_index=1 but the batch has 1 item",
        ),
        (
            (torch.full((1, 1, 3, 3), 1 / 3), torch.full((1, 2, 3, 3), 1 / 3)),
            list("abc"),
            {},
            ValueError,
            "layers differ in shape",
        ),
        (
            (torch.full((1, 1, 3, 3), 1 / 3),),
            list("abc"),
            {"sentence_b_start": 3},
            ValueError,
            "sentence_b_start=3",
        ),
    ],
)
def test_from_tensors_errors(
    attention: Any, tokens: list[str], kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        AttentionTrace.from_tensors(attention, tokens, **kwargs)


def test_metadata_rejects_nan_because_the_browser_cannot_parse_it() -> None:
    att = np.ones((1, 1, 1, 1), np.float32)
    with pytest.raises(ValueError, match="no NaN or inf"):
        AttentionTrace(["a"], att, metadata={"x": float("nan")})


def test_scaling_without_queries_is_refused() -> None:
    att = np.ones((1, 1, 1, 1), np.float32)
    with pytest.raises(ValueError, match="scaling was given without queries"):
        AttentionTrace(["a"], att, scaling=[1.0])
