import { describe, expect, it } from "vitest";
import { isolate } from "../../js/label_text";
import { readTheme } from "../../js/colors";
import type { Painter } from "../../js/paint/painter";
import { cellOrigin, gridGeometry } from "../../js/views/model/model_grid";
import { barScale, layerRanking, paintBadges } from "../../js/views/model/model_stats";

interface Box { x: number; y: number; w: number; h: number; what: string }

/** A painter that keeps the box of every rect and (roughly, 6 px a character) every text. */
function recorder(): { p: Painter; boxes: Box[] } {
  const boxes: Box[] = [];
  const p: Painter = {
    rect: (x, y, w, h) => boxes.push({ x, y, w, h, what: "rect" }),
    strokeRect: (x, y, w, h) => boxes.push({ x, y, w, h, what: "stroke" }),
    text: (x, y, s, _f, align, baseline) => {
      const w = s.length * 6, h = 11;
      const left = align === "right" ? x - w : align === "center" ? x - w / 2 : x;
      boxes.push({ x: left, y: baseline === "top" ? y : y - h / 2, w, h, what: `text ${s}` });
    },
    segments: () => undefined,
    tiles: () => undefined,
  };
  return { p, boxes };
}

const overlaps = (a: Box, b: Box): boolean => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

describe("the ranking's badges", () => {
  const theme = readTheme(document.body, false);
  for (const width of [720, 260]) {
    it(`never cover a cell's heatmap (grid ${width} px wide)`, () => {
      const layers = 6, heads = 12;
      const values = Float32Array.from({ length: layers * heads }, (_, i) => (i * 7) % 13 / 13);
      const geo = gridGeometry(layers, heads, width, true);
      expect(geo.band).toBeGreaterThan(0);
      const { p, boxes } = recorder();
      paintBadges(p, geo, { values, order: layerRanking(values, layers, heads), layers, heads, name: "prev" }, theme);
      expect(boxes.length).toBeGreaterThan(layers * heads);
      for (let l = 0; l < layers; l++) {
        for (let c = 0; c < heads; c++) {
          const { x, y } = cellOrigin(geo, l, c);
          const cell = { x, y, w: geo.cell, h: geo.cell, what: "cell" };
          expect(boxes.filter((b) => overlaps(b, cell))).toEqual([]);
        }
      }
    });
  }

  it("state their scale, and draw no bars when every value shows alike", () => {
    const spread = barScale(Float32Array.from([0.12, 0.5, 0.95]), "prev");
    expect(spread).toMatchObject({ min: expect.closeTo(0.12, 6), max: expect.closeTo(0.95, 6) });
    expect(spread.legend).toBe(`bars: ${isolate("prev")}, empty at 0.12 (lowest head) → full at 0.95 (highest)`);
    // 4002-token GPT-2: every entropy within 1e-4, every label "7.30": bars would invent contrast.
    const flat = barScale(Float32Array.from([7.30001, 7.30009, 7.3]), "entropy");
    expect(flat.max).toBe(flat.min);
    expect(flat.legend).toContain("7.30 in every head");
    const geo = gridGeometry(1, 3, 720, true);
    const { p, boxes } = recorder();
    paintBadges(p, geo, { values: Float32Array.from([7.30001, 7.30009, 7.3]), order: [0, 1, 2], layers: 1, heads: 3, name: "entropy" }, theme);
    expect(boxes.filter((b) => b.what === "rect")).toEqual([]);
    expect(boxes.filter((b) => b.what.startsWith("text h"))).toHaveLength(3);
  });
});
