// The overview's tile pyramid and canvas geometry (docs/protocol.md, "Overview tiles"):
// the same levels and spans as src/attnscope/encode/tiles.py, and the page's tiles from q/k.
import { tileKey } from "../../js/wire/keys";
import { qkParts, rowWeights } from "../../js/derive";
import { parseTileKey, tileByte, tileFromAttn, tileFromQk } from "../../js/derive_tiles";
import { createPageHost } from "../../js/host";
import type { Chunk, StreamMeta } from "../../js/wire/types";
import { causalQk } from "./helpers/causal_qk";
import {
  centreOn, clampView, fitView, levelCount, levelFor, parentOf, spanAt, TILE, tokenAt, topSpan, visibleTiles, zoomAt,
} from "../../js/views/overview/overview_geometry";

describe("overview geometry", () => {
  it("has Python's levels: level 0 fits the matrix in one tile, the last is one weight a cell", () => {
    expect([topSpan(200, 200), topSpan(32768, 32768), topSpan(257, 3)]).toEqual([1, 128, 2]);
    expect([levelCount(200, 200), levelCount(32768, 32768)]).toEqual([1, 8]);
    expect([0, 1, 2].map((z) => spanAt(1000, 1000, z))).toEqual([4, 2, 1]);
  });

  it("shows the whole matrix at first: one level-0 tile in 512 pixels, four level-1 tiles in 1024", () => {
    const v = fitView(32768, 32768, 512, 512);
    expect(v).toEqual({ x0: 0, y0: 0, scale: 512 / 32768 });
    expect(visibleTiles(32768, 32768, v, 512, 512)).toEqual([{ level: 0, row: 0, col: 0 }]);
    const big = fitView(32768, 32768, 1024, 1024);
    expect(levelFor(32768, 32768, big.scale)).toBe(1);
    expect(visibleTiles(32768, 32768, big, 1024, 1024)).toHaveLength(4);
  });

  it("zooms about the pointer: the token under it stays, finer tiles are asked for", () => {
    const fit = fitView(32768, 32768, 512, 512);
    const before = tokenAt(32768, 32768, fit, 300, 100);
    const v = zoomAt(32768, 32768, fit, 300, 100, 16, 512, 512);
    expect(tokenAt(32768, 32768, v, 300, 100)).toEqual(before);
    expect(v.scale).toBeCloseTo(0.25);
    const tiles = visibleTiles(32768, 32768, v, 512, 512);
    // a quarter pixel a token: cells of 8 tokens (two pixels), level 4 of 0..7
    expect(new Set(tiles.map((t) => t.level))).toEqual(new Set([4]));
    // 2048 tokens shown, tiles of 256 · 8 tokens: at most 2 × 2 tiles, each on screen
    expect(tiles.length).toBeLessThanOrEqual(4);
    expect(tiles.every((t) => t.row * 2048 < v.y0 + 2048 && (t.row + 1) * 2048 > v.y0)).toBe(true);
  });

  it("never zooms out past the whole nor pans off the matrix", () => {
    const v = clampView(4000, 4000, { x0: -50, y0: 9999, scale: 0.001 }, 400, 400);
    expect(v).toEqual({ x0: 0, y0: 0, scale: 0.1 });
    const close = clampView(4000, 4000, { x0: 3990, y0: 3990, scale: 1000 }, 400, 400);
    expect(close.scale).toBe(24);
    expect(close.x0 + 400 / close.scale).toBeCloseTo(4000);
  });

  it("centres a found token and maps a click to its query and key", () => {
    const v = centreOn(32768, 32768, 20000, 19900, 256, 512, 512);
    expect(v.scale).toBe(2);
    expect(tokenAt(32768, 32768, v, 256, 256)).toEqual({ query: 20000, key: 19900 });
    expect(levelFor(32768, 32768, v.scale)).toBe(levelCount(32768, 32768) - 1);
    expect(parentOf({ level: 3, row: 5, col: 2 })).toEqual({ level: 2, row: 2, col: 1 });
    expect(parentOf({ level: 0, row: 0, col: 0 })).toBeNull();
  });
});

describe("tiles derived in a page", () => {
  const n = 300, d = 4;
  const qk = (head: number): Chunk => causalQk(head, n, d);
  const sm = { q_len: n, k_len: n, num_heads: 2 } as StreamMeta;

  it("spells keys as Python parses them", () => {
    expect(tileKey("self", 1, "mean", 3, 2, 5)).toBe("tile:self:1:mean:3:2:5");
    expect(parseTileKey("tile:self:0:mean:1:1:0", sm)).toEqual({ layer: 0, heads: [0, 1], level: 1, row: 1, col: 0 });
    expect(parseTileKey("tile:self:0:2:0:0:0", sm)).toBeNull();
  });

  it("encodes a weight as Python's encode_tile does", () => {
    expect([0, 1e-9, 1e-3, 1].map(tileByte)).toEqual([0, 1, 128, 255]);
  });

  it("holds the block maxima of the rows' weights (every query of a 2-token cell)", () => {
    const heads = [qk(0), qk(1)];
    const tile = tileFromQk("tile:self:0:mean:0:0:0", heads, sm).arrays.tile?.data as Uint8Array;
    const rows = Array.from({ length: n }, (_, q) => {
      const a = rowWeights(qkParts(heads[0] as Chunk), q, new Float64Array(n));
      const b = rowWeights(qkParts(heads[1] as Chunk), q, new Float64Array(n));
      return Array.from(a, (w, j) => (w + (b[j] as number)) / 2);
    });
    for (const [i, j] of [[0, 0], [10, 3], [149, 149], [149, 0], [120, 37]] as const) {
      let m = 0;
      for (const r of [2 * i, 2 * i + 1]) for (const c of [2 * j, 2 * j + 1]) m = Math.max(m, rows[r]?.[c] ?? 0);
      expect(tile[i * TILE + j]).toBe(tileByte(m));
    }
    expect(tile[3 * TILE + 10]).toBe(0); // causal: above the diagonal
    expect(tile[200 * TILE + 3]).toBe(0); // past the 150 cell rows of 300 tokens
  });

  it("comes from a short page's one-byte weights when the page keeps no q/k", () => {
    const small = { q_len: 3, k_len: 3, num_heads: 1 } as StreamMeta;
    const attn: Chunk = {
      key: "attn:self:0:0",
      arrays: {
        weight: { dtype: "u8", shape: [3, 3], data: Uint8Array.from([255, 0, 0, 255, 85, 0, 255, 255, 0]) },
        rowmax: { dtype: "f32", shape: [3], data: Float32Array.from([1, 0.75, 0.5]) },
      },
    };
    const tile = tileFromAttn("tile:self:0:0:0:0:0", [attn], small).arrays.tile?.data as Uint8Array;
    expect([tile[0], tile[1], tile[TILE], tile[TILE + 1], tile[2 * TILE + 1], tile[2 * TILE + 2]]).toEqual(
      [255, 0, tileByte(0.75), tileByte(0.25), tileByte(0.5), 0],
    );
  });

  it("are made by the page host from what the page keeps, or refused as left out", async () => {
    const meta = { streams: { self: { ...sm, layers: [0], head_dim: d } } };
    const ask = async (chunks: Record<string, unknown>): Promise<{ error?: string; arrays: Record<string, unknown> }> => {
      const host = createPageHost({ _meta: meta }, chunks as never);
      const reply = new Promise<{ error?: string; arrays: Record<string, unknown> }>((done) =>
        host.on("msg:custom", (msg: { chunks: { error?: string; arrays: Record<string, unknown> }[] }) => done(msg.chunks[0] as never)));
      host.send({ type: "request", keys: ["tile:self:0:mean:0:0:0"] });
      return reply;
    };
    const none = await ask({});
    expect(none.error).toMatch(/not included in this exported page/);
  });
});
