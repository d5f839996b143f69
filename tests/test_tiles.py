"""Overview tiles (``tile:<stream>:<layer>:<head|mean>:<level>:<row>:<col>``) against attention."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from attnscope import AttentionStream, AttentionTrace, Tokens
from attnscope.encode.chunks import encode_chunk, parse_key
from attnscope.encode.keys import ChunkKey
from attnscope.encode.tiles import TILE, encode_tile, tile_grid, tile_levels, tile_span


def _causal_qk(n: int, heads: int = 2, d: int = 8, seed: int = 0) -> AttentionTrace:
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(1, heads, n, d)).astype(np.float32) * 2
    k = rng.normal(size=(1, heads, n, d)).astype(np.float32) * 2
    spans = np.stack([np.zeros(n), np.arange(1, n + 1)], axis=1).astype(np.int32)[None]
    stream = AttentionStream(queries=q, keys=k, scaling=np.float32(0.5), key_spans=spans)
    return AttentionTrace.from_streams(Tokens([f"t{i}" for i in range(n)]), [stream])


def _direct(attention: np.ndarray, span: int, q0: int, k0: int) -> np.ndarray:
    """Block max of every weight of the tile's cells, computed from the whole matrix."""
    q_len, k_len = attention.shape
    out = np.zeros((TILE, TILE), np.float32)
    for i in range(TILE):
        rows = attention[q0 + i * span : min(q_len, q0 + (i + 1) * span)]
        if not rows.size:
            break
        for j in range(TILE):
            block = rows[:, k0 + j * span : min(k_len, k0 + (j + 1) * span)]
            if block.size:
                out[i, j] = block.max()
    return out


def _tile(trace: AttentionTrace, key: str) -> np.ndarray:
    arrays = dict(encode_chunk(trace, parse_key(key, trace)))
    assert list(arrays) == ["tile"]
    assert arrays["tile"].shape == (TILE, TILE)
    return arrays["tile"]


def test_one_level_tile_is_every_weight_log_encoded() -> None:
    trace = _causal_qk(40)
    attention = trace.streams["self"].attention[0]
    assert tile_levels(40, 40) == 1
    for head in (0, 1):
        tile = _tile(trace, f"tile:self:0:{head}:0:0:0")
        np.testing.assert_array_equal(tile[:40, :40], encode_tile(attention[head]))
        assert tile[40:].max() == 0
        assert tile[:, 40:].max() == 0
        assert tile[3, 7] == 0
        assert tile[7, 3] > 0
    mean = _tile(trace, "tile:self:0:mean:0:0:0")
    np.testing.assert_array_equal(mean[:40, :40], encode_tile(attention.mean(axis=0)))


@pytest.mark.parametrize(("level", "row", "col"), [(0, 0, 0), (1, 1, 0), (1, 1, 1), (2, 2, 1)])
def test_tiles_are_block_maxima_at_every_level(level: int, row: int, col: int) -> None:
    n = 600  # level 0: 4 tokens a cell; every query of a cell is pooled (4 <= TILE_SAMPLE)
    trace = _causal_qk(n)
    attention = trace.streams["self"].attention[0]
    span = tile_span(n, n, level)
    assert (tile_levels(n, n), span) == (3, 4 >> level)
    for head, weights in (("0", attention[0]), ("1", attention[1]), ("mean", attention.mean(0))):
        tile = _tile(trace, f"tile:self:0:{head}:{level}:{row}:{col}")
        expected = encode_tile(_direct(weights, span, row * TILE * span, col * TILE * span))
        # float32 sums of the mean may round a byte the other way
        assert np.abs(tile.astype(int) - expected.astype(int)).max() <= (head == "mean")
        assert (tile > 0).sum() == (expected > 0).sum()


def test_weights_trace_tiles_and_keys() -> None:
    rng = np.random.default_rng(1)
    w = rng.random((2, 3, 300, 300)).astype(np.float32)
    w /= w.sum(-1, keepdims=True)
    trace = AttentionTrace([str(i) for i in range(300)], w)
    tile = _tile(trace, "tile:self:1:2:1:1:0")
    np.testing.assert_array_equal(tile, encode_tile(_direct(w[1, 2], 1, 256, 0)))
    assert ChunkKey("tile", "self", 1, 2, tile=(1, 1, 0)).key == "tile:self:1:2:1:1:0"
    assert parse_key("tile:self:1:mean:0:0:0", trace).head is None
    assert tile_grid(300, 300, 1) == (2, 2)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("tile:self:0:0:2:0:0", "level 2 in 'tile:self:0:0:2:0:0' is out of range"),
        ("tile:self:0:0:1:2:0", "level 1 has 2 x 2 tiles"),
        ("tile:self:0:4:0:0:0", "head 4 in 'tile:self:0:4:0:0:0' is out of range"),
        ("tile:self:0:avg:0:0:0", "'avg' in 'tile:self:0:avg:0:0:0' is not a non-negative"),
        ("tile:self:0:0:0:0", "expected tile:<stream>:<layer>:<head|mean>:<level>:<row>:<col>"),
    ],
)
def test_bad_tile_keys_say_what_is_wrong(key: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" if not message else None) as info:
        parse_key(key, _causal_qk(300))
    assert message in str(info.value)


def test_a_tile_at_32768_tokens_needs_no_n_squared_memory() -> None:
    """Two tiles at 32768 tokens in a fresh process: far less memory than N² floats (4 GiB)."""
    script = textwrap.dedent(
        """
        import resource
        import numpy as np
        from attnscope import AttentionStream, AttentionTrace, Tokens
        from attnscope.encode.chunks import encode_chunk, parse_key
        n = 32768
        rng = np.random.default_rng(0)
        q = rng.normal(size=(1, 2, n, 8)).astype(np.float32)
        spans = np.stack([np.zeros(n), np.arange(1, n + 1)], 1).astype(np.int32)[None]
        s = AttentionStream(queries=q, keys=q.copy(), scaling=np.float32(0.3), key_spans=spans)
        t = AttentionTrace.from_streams(Tokens(["x"] * n), [s])
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        top = dict(encode_chunk(t, parse_key("tile:self:0:mean:0:0:0", t)))["tile"]
        fine = dict(encode_chunk(t, parse_key("tile:self:0:1:7:127:127", t)))["tile"]
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) // 1024, int((top > 0).sum()), int(top[0, 0]), int(top[255, 0]),
              int(fine[255, 255]), int(fine[0, 255]), int(fine[255, 0]))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    grown_mb, inked, first, corner, diagonal, above, below = map(int, out.stdout.split())
    assert grown_mb < 512, f"a 32768-token tile grew the process by {grown_mb} MB"
    print(f"two 32768-token tiles grew the process by {grown_mb} MB")
    # causal: the lower triangle of 256 x 256 cells and the diagonal are inked, the rest is 0
    assert inked == TILE * (TILE + 1) // 2
    assert first > 0
    assert corner > 0
    assert diagonal > 0
    assert below > 0
    assert above == 0


def test_the_widget_answers_tile_requests() -> None:
    from attnscope.display.widget import AttentionWidget

    trace = _causal_qk(300)
    keys = ["tile:self:0:mean:1:1:1", "tile:self:0:1:9:0:0"]
    [(content, buffers)] = AttentionWidget(trace).answer({"type": "request", "keys": keys})
    good, bad = content["chunks"]
    assert good["key"] == keys[0]
    assert good["arrays"] == [{"name": "tile", "dtype": "u8", "shape": [TILE, TILE], "buffer": 0}]
    tile = np.frombuffer(buffers[0], np.uint8).reshape(TILE, TILE)
    np.testing.assert_array_equal(tile, _tile(trace, keys[0]))
    assert "level 9" in bad["error"]
