// The image view's geometry and colours (js/views/image/image_geometry.ts): panels, hit tests,
// a query's weights from an `image:` chunk, the tokens that weigh a patch most, the overlay.
import { imageKey, parseChunkKey, pixelsKey, writeChunkKey } from "../../js/wire/keys";
import { isolate } from "../../js/label_text";
import { offeredViews } from "../../js/offered_views";
import type { ImagesMeta } from "../../js/wire/types";
import {
  CAPTION_H, EXTRA_SIDE, GAP, MAIN_SIDE, gridTitle, heatAlpha, heatColor, heatOf, hitTest, layoutPanels, overlay, queryWeights, rangeOf, topQueries, weightAt,
  type ImageRows,
} from "../../js/views/image/image_geometry";
import { panelRanges } from "../../js/views/image/image_paint";
import { makeFixture } from "./helpers/fixture";

const grid = (rows: number, cols: number, first: number, name = "image", tiles: [number, number] | null = null) => ({
  name, rows, cols, tiles, positions: Array.from({ length: rows * cols }, (_, i) => first + i),
});

// Image 0: a wide picture, a 2 x 4 grid in 1 x 2 tiles and a 1 x 2 overview; image 1: a tall one, 3 x 1.
const META: ImagesMeta = {
  stream: "self",
  queries: [0, 11, 15],
  images: [
    { height: 40, width: 80, grids: [grid(2, 4, 1, "image", [1, 2]), grid(1, 2, 9, "overview")] },
    { height: 90, width: 30, grids: [grid(3, 1, 12)] },
  ],
};

describe("image view layout", () => {
  const { panels, width, height } = layoutPanels(META);

  it("gives each image a row: its grid at MAIN_SIDE, extra grids at EXTRA_SIDE, in chunk-column order", () => {
    expect(panels.map((p) => [p.image, p.grid, p.column])).toEqual([[0, 0, 0], [0, 1, 8], [1, 0, 10]]);
    const [main, over, tall] = panels as [typeof panels[0], typeof panels[0], typeof panels[0]];
    expect([main.w, main.h]).toEqual([MAIN_SIDE, MAIN_SIDE / 2]); // the picture's aspect kept
    expect([over.x, over.w, over.h]).toEqual([MAIN_SIDE + GAP, EXTRA_SIDE, EXTRA_SIDE / 2]);
    expect([tall.x, tall.y, tall.w, tall.h]).toEqual([0, CAPTION_H + MAIN_SIDE / 2 + GAP + CAPTION_H, MAIN_SIDE / 3, MAIN_SIDE]);
    expect(width).toBe(MAIN_SIDE + GAP + EXTRA_SIDE);
    expect(height).toBe(tall.y + tall.h);
  });

  it("names grids by their patches, tiles and extra names", () => {
    expect(gridTitle(META, 0, 0)).toBe("img0 · 2×4 patches in 1×2 tiles");
    expect(gridTitle(META, 0, 1)).toBe(`img0 · ${isolate("overview")} 1×2`); // the grid's name isolated
    expect(gridTitle(META, 1, 0)).toBe("img1 · 3×1 patches");
  });

  it("finds the cell under a point, and the chunk column it is", () => {
    const main = panels[0]!;
    const hit = hitTest({ panels, width, height }, main.x + main.w * 0.8, main.y + main.h * 0.7);
    expect(hit && [hit.row, hit.col, hit.column]).toEqual([1, 3, 7]);
    const tall = panels[2]!;
    expect(hitTest({ panels, width, height }, tall.x + 1, tall.y + tall.h - 1)?.column).toBe(12);
    expect(hitTest({ panels, width, height }, main.x + main.w + GAP / 2, main.y + 1)).toBeNull(); // the gap
    expect(hitTest({ panels, width, height }, main.x + 1, main.y - 2)).toBeNull(); // the caption
  });
});

describe("image view weights", () => {
  // 2 heads, 2 queries, 3 columns: w = byte / 255 * rowmax.
  const d: ImageRows = {
    heads: 2, queries: 2, columns: 3,
    weight: Uint8Array.from([255, 0, 51, /* q1 */ 0, 255, 255, /* head 1 */ 255, 255, 0, /* q1 */ 0, 0, 255]),
    rowmax: Float32Array.from([0.5, 0.2, 0.1, 0.4]),
  };

  it("dequantises one head and averages several", () => {
    expect(weightAt(d, [0], 0, 2)).toBeCloseTo(0.1);
    expect(Array.from(queryWeights(d, [0, 1], 0))).toEqual([0.3, 0.05, 0.05].map((v) => expect.closeTo(v, 6)));
    expect(weightAt(d, [], 0, 0)).toBe(0);
  });

  it("ranks the queries that weigh a patch most, largest first, zero weights left out", () => {
    expect(topQueries(d, [0, 1], 2, 5).map((e) => e.row)).toEqual([1, 0]);
    expect(topQueries(d, [1], 0, 5).map((e) => e.row)).toEqual([0]);
    expect(topQueries(d, [0, 1], 2, 1)).toHaveLength(1);
  });
});

describe("image view colours", () => {
  it("spreads a grid's weights from its smallest (0) to its largest (1)", () => {
    const w = Float32Array.from([9, 0.1, 0.3, 0.2, 9]);
    const range = rangeOf(w, 1, 3);
    expect(range).toEqual({ min: expect.closeTo(0.1, 6), max: expect.closeTo(0.3, 6) });
    expect(Array.from(w.subarray(1, 4), (v) => heatOf(v, range))).toEqual([0, 1, expect.closeTo(0.5, 5)]);
    expect(heatOf(0.2, { min: 0.2, max: 0.2 })).toBe(1); // all equal, above 0
    expect(heatOf(0, { min: 0, max: 0 })).toBe(0); // a query that cannot see the image
    expect(rangeOf(w, 0, 0)).toEqual({ min: 0, max: 0 });
  });

  it("leaves the picture dimmed where the query gives no weight", () => {
    expect(heatAlpha(0)).toBe(0);
    expect(overlay([200, 100, 0], 0)).toEqual([120, 60, 0]);
  });

  it("covers more of the picture, in a brighter colour, the larger the weight", () => {
    expect(heatAlpha(1)).toBeCloseTo(0.75);
    expect(heatAlpha(0.25)).toBeLessThan(heatAlpha(0.5));
    const bright = (c: number[]) => c.reduce((a, b) => a + b, 0);
    expect(bright(heatColor(1))).toBeGreaterThan(bright(heatColor(0.5)));
    expect(bright(heatColor(0.5))).toBeGreaterThan(bright(heatColor(0)));
    expect(heatColor(2)).toEqual(heatColor(1)); // clamped
    // A black picture under the largest weight turns the ramp's top colour (75 %).
    expect(overlay([0, 0, 0], 1)).toEqual(heatColor(1).map((v) => Math.round(v * 0.75)));
  });
});

describe("image view offered", () => {
  it("only where _meta has images", () => {
    const meta = makeFixture().meta;
    expect(offeredViews({ ...meta, views: ["head", "image"] })).toEqual(["head"]);
    expect(offeredViews({ ...meta, views: ["head", "image"], images: META })).toEqual(["head", "image"]);
    expect(offeredViews({ ...meta, images: META })).toEqual(["head", "model", "neuron", "image"]);
  });
});

describe("image view chunk keys", () => {
  it("are read and written back like every other kind (encode/keys.py image_key, pixels_key)", () => {
    expect(imageKey("self", 1)).toBe("image:self:1");
    expect(pixelsKey("self")).toBe("pixels:self");
    for (const key of [imageKey("self", 1), pixelsKey("self")]) expect(writeChunkKey(parseChunkKey(key)!)).toBe(key);
    expect(parseChunkKey("image:self")).toBeNull();
  });
});

describe("image view colour scales", () => {
  const layout = layoutPanels(META);
  // Columns 0..7 the tiled grid, 8..9 the overview, 10..12 the tall image.
  const weights = Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8, 20, 30, 0.5, 0.6, 0.7]);

  it("gives each grid its own range, or one range shared by all", () => {
    const own = panelRanges({ layout, weights });
    expect(own.slice(0, 2)).toEqual([{ min: 1, max: 8 }, { min: 20, max: 30 }]);
    expect([own[2]!.min, own[2]!.max]).toEqual([expect.closeTo(0.5, 6), expect.closeTo(0.7, 6)]);
    const shared = panelRanges({ layout, weights, shared: true });
    expect(shared.every((r) => r === shared[0] && r.min === 0.5 && r.max === 30)).toBe(true);
    expect(panelRanges({ layout, weights: null }).every((r) => r.max === 0)).toBe(true);
  });
});
